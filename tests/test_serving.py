"""Export for serving: probabilities + class id, checked against PyTorch for every format."""

from __future__ import annotations

import sys
import warnings

import pytest
import torch
import torch.nn as nn

from nasx.hub.mnasnet import MnasLayer
from nasx.serving import ServingModel, export_for_serving


@pytest.fixture(scope="module")
def model():
    """A small CNN with the ops of a mobile network (conv, batch norm, SE-style gate, pooling)."""
    torch.manual_seed(0)
    layer = MnasLayer(8, 8, 1, "mbconv", 3, 3, 0.25, "identity")
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, 2, 1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        layer,
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 10),
    ).eval()


def reference(model, x):
    with torch.no_grad():
        logits = model(x)
    return logits.softmax(-1), logits.argmax(-1)


def test_serving_head_returns_probabilities_and_class_ids(model):
    x = torch.randn(4, 3, 32, 32)
    probs, ids = ServingModel(model)(x)
    want_p, want_ids = reference(model, x)
    torch.testing.assert_close(probs, want_p)
    assert torch.equal(ids, want_ids)
    sharp, _ = ServingModel(model, temperature=0.5)(x)
    assert sharp.max() >= probs.max()
    with pytest.raises(ValueError, match="temperature must be positive"):
        ServingModel(model, temperature=0)


def test_torch_export_program_matches_pytorch_on_another_batch_size(model, tmp_path):
    path = export_for_serving(model, (3, 32, 32), tmp_path / "m.pt2")
    x = torch.randn(7, 3, 32, 32)
    probs, ids = torch.export.load(str(path)).module()(x)
    want_p, want_ids = reference(model, x)
    torch.testing.assert_close(probs, want_p, atol=1e-5, rtol=1e-4)
    assert torch.equal(ids, want_ids)


def test_torchscript_export_and_the_model_mode_is_restored(model, tmp_path):
    model.train()
    path = export_for_serving(model, (3, 32, 32), tmp_path / "m.pt")
    assert model.training
    model.eval()
    x = torch.randn(2, 3, 32, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit is deprecated, still served
        probs, ids = torch.jit.load(str(path))(x)
    torch.testing.assert_close(probs, reference(model, x)[0], atol=1e-5, rtol=1e-4)


def test_onnx_export_runs_in_onnxruntime_like_pytorch(model, tmp_path):
    ort = pytest.importorskip("onnxruntime", reason="needs nasx[onnx]")
    pytest.importorskip("onnx", reason="needs nasx[onnx]")
    path = export_for_serving(model, (3, 32, 32), tmp_path / "m.onnx")
    x = torch.randn(5, 3, 32, 32)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == ["probabilities", "class_id"]
    probs, ids = session.run(None, {"images": x.numpy()})
    want_p, want_ids = reference(model, x)
    torch.testing.assert_close(torch.from_numpy(probs), want_p, atol=1e-5, rtol=1e-4)
    assert torch.equal(torch.from_numpy(ids), want_ids)


def test_missing_onnx_names_the_extra(model, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    with pytest.raises(ImportError, match=r'pip install "nasx\[onnx\]"'):
        export_for_serving(model, (3, 32, 32), tmp_path / "m.onnx")


def test_unknown_suffix(model, tmp_path):
    with pytest.raises(ValueError, match=r"export to \.pt2, \.onnx, \.pt"):
        export_for_serving(model, (3, 32, 32), tmp_path / "m.tflite")
