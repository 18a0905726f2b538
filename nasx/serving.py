"""Export a chosen model for serving: a head that returns class probabilities and the class id.

As the TPU guide's ``export_outputs`` does, the served model answers with what a client wants
rather than logits: :class:`ServingModel` wraps a classifier so that ``model(images)`` returns
``(probabilities [B, C], class_id [B])``. :func:`export_for_serving` writes it as a
``torch.export`` program (``.pt2``, loaded with ``torch.export.load``), an ONNX file (``.onnx``,
for ONNX Runtime; needs ``pip install 'nasx[onnx]'``) or TorchScript (``.pt``), with a dynamic
batch dimension, and checks the exported outputs against PyTorch's on a random batch.

    >>> import tempfile, torch, torch.nn as nn
    >>> net = nn.Sequential(nn.Flatten(), nn.Linear(12, 3))
    >>> path = export_for_serving(net, (3, 2, 2), tempfile.mkdtemp() + '/model.pt2')
    >>> probs, ids = torch.export.load(path).module()(torch.randn(5, 3, 2, 2))
    >>> probs.shape, ids.dtype, bool(torch.allclose(probs.sum(1), torch.ones(5)))
    (torch.Size([5, 3]), torch.int64, True)
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn as nn

__all__ = ["ServingModel", "export_for_serving"]

FORMATS = {".pt2": "torch.export", ".onnx": "onnx", ".pt": "torchscript"}


class ServingModel(nn.Module):
    """``images -> (softmax probabilities [B, C], argmax class id [B] int64)``.

    Args:
        model: a classifier returning logits ``[B, C]``.
        temperature: logits are divided by it before the softmax (calibration).
    """

    def __init__(self, model: nn.Module, temperature: float = 1.0):
        super().__init__()
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.model = model
        self.temperature = float(temperature)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.model(x)  # [B, C]
        probs = torch.softmax(logits / self.temperature, dim=-1)
        return probs, probs.argmax(dim=-1)


def export_for_serving(
    model: nn.Module,
    input_shape: Sequence[int],
    path: str | os.PathLike[str],
    *,
    temperature: float = 1.0,
    check: bool = True,
    atol: float = 1e-5,
) -> Path:
    """Write ``ServingModel(model)`` to ``path``; the format follows the suffix (``.pt2``:
    torch.export, ``.onnx``: ONNX, ``.pt``: TorchScript). The batch dimension stays dynamic.

    With ``check`` the exported program is run on a random batch of 3 and its probabilities must
    match PyTorch's within ``atol`` and its class ids exactly (an AssertionError otherwise).
    The model is exported in eval mode on the CPU (its mode and device are restored).
    """
    p = Path(path)
    if p.suffix not in FORMATS:
        raise ValueError(f"export to {', '.join(FORMATS)} (by suffix), got {p.name!r}")
    p.parent.mkdir(parents=True, exist_ok=True)
    device = next((q.device for q in model.parameters()), torch.device("cpu"))
    was_training = model.training
    serving = ServingModel(model.cpu().eval(), temperature)
    example = torch.randn(3, *input_shape)
    try:
        with torch.no_grad():
            expected = serving(example)
            if p.suffix == ".pt2":
                batch = torch.export.Dim("batch", min=1)
                program = torch.export.export(serving, (example,), dynamic_shapes=({0: batch},))
                torch.export.save(program, str(p))
                got = torch.export.load(str(p)).module()(example) if check else None
            elif p.suffix == ".onnx":
                got = _export_onnx(serving, example, p, check)
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # torch.jit is deprecated; still served widely
                    torch.jit.save(torch.jit.trace(serving, example), str(p))
                    got = torch.jit.load(str(p))(example) if check else None
        if check and got is not None:
            probs, ids = (torch.as_tensor(g) for g in got)
            if not torch.allclose(probs, expected[0], atol=atol):
                diff = float((probs - expected[0]).abs().max())
                raise AssertionError(f"exported probabilities differ from PyTorch's by {diff:.2e}")
            if not torch.equal(ids.to(torch.int64), expected[1]):
                raise AssertionError("exported class ids differ from PyTorch's")
    finally:
        model.to(device).train(was_training)
    return p


def _export_onnx(
    serving: nn.Module, example: torch.Tensor, path: Path, check: bool
) -> tuple[torch.Tensor, torch.Tensor] | None:
    from nasx._optional import optional_import

    optional_import("onnx", "onnx", "ONNX export")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter's deprecation notice
        torch.onnx.export(
            serving,
            (example,),
            str(path),
            input_names=["images"],
            output_names=["probabilities", "class_id"],
            dynamic_axes={
                "images": {0: "batch"},
                "probabilities": {0: "batch"},
                "class_id": {0: "batch"},
            },
            dynamo=False,
        )
    if not check:
        return None
    ort = optional_import("onnxruntime", "onnx", "checking an ONNX export")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    probs, ids = session.run(None, {"images": example.numpy()})
    return torch.from_numpy(probs), torch.from_numpy(ids)
