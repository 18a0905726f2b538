"""Pre-searched models: ``load_searched_model(name)`` builds one at its published size, with weights.

Weights are plain ``state_dict`` files loaded with ``torch.load(..., weights_only=True)``; fp16
or bf16 files are upcast to the model's fp32 on load. ``pretrained=True`` looks in two places:

1. weights shipped in the package (:data:`PACKAGED_WEIGHTS`: a file under ``nasx/hub/weights/``
   and its SHA-256), loaded offline, never downloaded;
2. the ``hub/`` folder of nasx's cache root (``$NASX_CACHE_DIR/hub``, else
   ``$XDG_CACHE_HOME/nasx/hub``, else ``~/.cache/nasx/hub``), verified against the SHA-256 when
   one is configured; when missing, downloaded from a configured URL with torch.hub's
   ``download_url_to_file`` (a progress bar, the checksum checked on the way, a temporary file
   moved into place only when complete and verified, so a bad download overwrites nothing).
   nasx hosts no weight URLs yet: :func:`configure_weights` sets them.

    >>> from nasx.hub import load_searched_model
    >>> model = load_searched_model('darts-v2')
    >>> sum(p.numel() for p in model.parameters())
    3349342
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

from ..datasets.files import file_sha256  # noqa: F401  (public here too: hub users check weights)
from .searched_models import (  # the registry; re-exported: part of this module's API
    SEARCHED_MODELS,
    SearchedModel,
    _space_class,
    available_models,
)

# Weights shipped inside the package: model name -> (file under nasx/hub/weights/, its sha256).
# Adding a model's shipped weights is one line here plus the file (package data: *.pt).
PACKAGED_WEIGHTS: dict[str, tuple[str, str]] = {
    # Trained by benchmarks/train_pretrained.py: 14 epochs on an H100, then 18 more from those
    # weights on an H200 (recipe and accuracy in benchmarks/train_pretrained.results.md): 90.1% on
    # CIFAR-10's test set.
    "darts-v2": (
        "darts-v2-cifar10.pt",
        "562c92926280a68566d2ea6ecdcf4e68de3783c37620e59bc92c88866de85324",
    ),
}


def configure_weights(
    name: str, url: str | None = None, sha256: str | None = None, filename: str | None = None
) -> None:
    """Set (or, with no arguments, clear) where the published weights of ``name`` come from.

    ``sha256`` is the file's checksum or a prefix of at least 8 hex digits (torch.hub style).

    Example:
        >>> configure_weights('darts-v2', url='https://example.org/darts-v2.pth', sha256='5465b0d2')
        >>> SEARCHED_MODELS['darts-v2'].sha256
        '5465b0d2'
        >>> configure_weights('darts-v2')  # back to "no published weights"
    """
    entry = _entry(name)
    if sha256 is not None and (
        len(sha256) < 8 or any(c not in "0123456789abcdef" for c in sha256.lower())
    ):
        raise ValueError(f"sha256 must be at least 8 hex digits, got {sha256!r}")
    entry.url, entry.sha256 = url, sha256.lower() if sha256 else None
    if filename:
        entry.filename = filename


def default_cache_dir() -> Path:
    """Where published weights are cached: the ``hub/`` folder of nasx's one cache root
    (``$NASX_CACHE_DIR/hub``, else ``$XDG_CACHE_HOME/nasx/hub``, else ``~/.cache/nasx/hub``)."""
    from nasx._cache import cache_dir

    return cache_dir("hub")


def _entry(name: str) -> SearchedModel:
    if name not in SEARCHED_MODELS:
        raise ValueError(f"unknown searched model {name!r}; available: {available_models()}")
    return SEARCHED_MODELS[name]


def _check_digest(expected: str | None) -> None:
    """Refuse a checksum that is not 8+ hex digits (None: no check asked for)."""
    if expected is None:
        return
    if (
        not isinstance(expected, str)
        or len(expected) < 8
        or any(c not in "0123456789abcdef" for c in expected.lower())
    ):
        # An empty string would match every file: a check that silently checks nothing.
        raise ValueError(
            f"sha256 must be the file's checksum or a prefix of at least 8 hex digits (or None "
            f"to skip the check), got {expected!r}"
        )


def _verify(path: Path, expected: str | None, what: str) -> None:
    if expected is None:
        return
    _check_digest(expected)
    actual = file_sha256(path)
    if not actual.startswith(expected.lower()):
        raise ValueError(
            f"checksum mismatch for {what} {str(path)!r}: expected sha256 {expected}, got {actual}; "
            "the file is corrupt or not the published weights"
        )


def _download(url: str, target: Path, expected: str | None, progress: bool) -> None:
    """Download with torch.hub's helper: into a temporary file beside ``target``, checked against
    the sha256 prefix ``expected`` on the way, moved to ``target`` only when complete and verified."""
    from torch.hub import download_url_to_file

    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        download_url_to_file(url, str(target), hash_prefix=expected, progress=progress)
    except RuntimeError as err:
        if "invalid hash value" not in str(err):
            raise
        raise ValueError(
            f"checksum mismatch for download from {url}: {err}; nothing was written to "
            f"{str(target)!r}"
        ) from None


def _packaged_weights_dir() -> Any:
    """The package's ``nasx/hub/weights`` folder (a Traversable: the package may be zipped)."""
    return resources.files("nasx.hub").joinpath("weights")


@contextmanager
def _packaged_weights(name: str) -> Iterator[Path | None]:
    """The verified path of the weights shipped for ``name``, or None when none are shipped."""
    if name not in PACKAGED_WEIGHTS:
        yield None
        return
    filename, sha256 = PACKAGED_WEIGHTS[name]
    shipped = _packaged_weights_dir().joinpath(filename)
    if not shipped.is_file():
        raise FileNotFoundError(
            f"the weights shipped for {name!r} ({filename} in nasx/hub/weights) are missing from "
            "this installation of nasx: reinstall it, or pass weights='path/to/file.pt'"
        )
    with resources.as_file(shipped) as path:
        _verify(path, sha256, f"shipped weights of {name!r}")
        yield path


def _published_weights(
    entry: SearchedModel,
    directory: Path,
    progress: bool,
    download: bool = True,
    sha256: str | None = None,
) -> Path:
    """The cached (or freshly downloaded) weights of ``entry``, checked against its configured
    checksum and ``sha256`` (the caller's), each when given."""
    path = directory / entry.filename
    if path.exists():
        _verify(path, entry.sha256, f"cached weights of {entry.name!r}")
        _verify(path, sha256, f"cached weights of {entry.name!r} (sha256= argument)")
        return path
    if entry.url is None or not download:
        raise FileNotFoundError(
            f"no weights for {entry.name!r}: put the state_dict file at {str(path)!r} (set NASX_CACHE_DIR "
            f"to use another directory), pass weights='path/to/file.pth', or configure a URL with "
            f"nasx.hub.configure_weights({entry.name!r}, url=..., sha256=...)"
        )
    try:  # checked on the way against one checksum, the other after (a mismatch keeps nothing)
        _download(entry.url, path, entry.sha256 or sha256, progress)
    except OSError as err:  # no network, HTTP error, unwritable cache
        raise FileNotFoundError(
            f"could not download weights of {entry.name!r} from {entry.url} ({err}); "
            f"download them yourself and put the file at {str(path)!r}"
        ) from err
    # kept even when this fails: it matched the configured checksum, the one nasx publishes
    _verify(path, sha256, f"downloaded weights of {entry.name!r} (sha256= argument)")
    return path


def load_weights(model: nn.Module, path: str | os.PathLike, sha256: str | None = None) -> nn.Module:
    """Load a ``state_dict`` file into ``model`` with ``weights_only=True``, refusing any mismatch.

    A checkpoint dict holding ``'state_dict'`` (Lightning) or ``'model'`` is unwrapped. The error
    lists missing keys, unexpected keys and shape mismatches, so a file for another width or
    another arch says why it does not fit.

    Example:
        >>> import tempfile, os
        >>> net = nn.Linear(2, 2)
        >>> path = os.path.join(tempfile.mkdtemp(), 'w.pth')
        >>> torch.save(net.state_dict(), path)
        >>> load_weights(nn.Linear(2, 2), path, sha256=file_sha256(path)[:8]).weight.shape
        torch.Size([2, 2])
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"weights file {str(path)!r} does not exist")
    _verify(path, sha256, "weights file")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(state, Mapping) and not any(isinstance(v, torch.Tensor) for v in state.values()):
        for key in ("state_dict", "model"):
            if isinstance(state.get(key), Mapping):
                state = state[key]
                break
    if not isinstance(state, Mapping):
        raise ValueError(f"{str(path)!r} does not hold a state_dict (got {type(state).__name__})")
    own = model.state_dict()
    # Half-precision files (half the size to ship) train and run as the model's own dtype.
    state = {
        k: v.to(own[k].dtype)
        if k in own
        and isinstance(v, torch.Tensor)
        and v.dtype in (torch.float16, torch.bfloat16)
        and own[k].is_floating_point()
        else v
        for k, v in state.items()
    }
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    mismatched = [
        f"{k}: file {tuple(state[k].shape)} vs model {tuple(own[k].shape)}"
        for k in own
        if k in state and isinstance(state[k], torch.Tensor) and state[k].shape != own[k].shape
    ]
    if missing or unexpected or mismatched:
        parts = []
        if mismatched:
            parts.append(f"{len(mismatched)} shape mismatch(es), e.g. {mismatched[:3]}")
        if missing:
            parts.append(f"{len(missing)} missing key(s), e.g. {missing[:3]}")
        if unexpected:
            parts.append(f"{len(unexpected)} unexpected key(s), e.g. {unexpected[:3]}")
        raise ValueError(f"weights in {str(path)!r} do not fit the model: " + "; ".join(parts))
    model.load_state_dict(state)
    return model


def load_searched_model(
    name: str,
    pretrained: bool = False,
    weights: str | os.PathLike | None = None,
    progress: bool = True,
    *,
    cache_dir: str | os.PathLike | None = None,
    sha256: str | None = None,
    download: bool = True,
) -> nn.Module:
    """Build a pre-searched model at its published width/depth, optionally with weights.

    Args:
        name: one of :func:`available_models` (``'darts-v2'``, ``'enas'``, ``'mnasnet-a1'``, ...).
        pretrained: load the published weights: those shipped in the package when there are
            (offline), else from the cache directory (verified by checksum when one is
            configured), downloading them first when a URL is configured.
        weights: a ``state_dict`` file of your own to load instead (``pretrained`` is ignored).
        progress: show torch.hub's download progress bar on stderr.
        cache_dir: the cache directory (default: the ``hub/`` folder of nasx's cache root,
            ``$NASX_CACHE_DIR/hub``, else ``$XDG_CACHE_HOME/nasx/hub``, else
            ``~/.cache/nasx/hub``).
        sha256: expected checksum (or an 8+ digit prefix) of the file loaded: ``weights``, or
            with ``pretrained=True`` the shipped, cached or downloaded file (checked as well as
            the checksum nasx knows for it); a mismatch refuses to load.
        download: allow downloading missing published weights (when a URL is configured).

    Raises ValueError for an unknown name (listing the known ones), a checksum mismatch or weights
    that do not fit; FileNotFoundError, naming the expected path, when weights are unavailable.

    Example:
        >>> model = load_searched_model('enas')
        >>> type(model).__name__
        'ENAS'
    """
    entry = _entry(name)
    _check_digest(sha256)
    model = entry.build()
    if weights is not None:
        load_weights(model, weights, sha256)
    elif pretrained:
        with _packaged_weights(name) as shipped:
            if shipped is not None:
                _verify(shipped, sha256, f"shipped weights of {name!r} (sha256= argument)")
                return load_weights(model, shipped)
        directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        load_weights(model, _published_weights(entry, directory, progress, download, sha256))
    return model


def searched_model_of(
    cls: type, name: str, pretrained: bool = False, download: bool = True, progress: bool = True
) -> nn.Module:
    """``Space.load_searched_model(name, ...)`` (NNI's classmethod): refuses names of other spaces."""
    entry = _entry(name)
    space_cls = entry.space.split(":")[1]
    if not issubclass(_space_class(entry), cls):  # NDS accepts DARTS, ENAS, ... models
        own = [n for n in available_models() if issubclass(_space_class(SEARCHED_MODELS[n]), cls)]
        raise ValueError(
            f"{name!r} is a {space_cls} model, not a {cls.__name__} one; {cls.__name__} has: {own}"
        )
    return load_searched_model(name, pretrained, progress=progress, download=download)
