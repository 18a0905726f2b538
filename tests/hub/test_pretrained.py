"""Tests for nasx.hub.pretrained: building searched models, weights from files/cache/URL, safety."""

import hashlib

import pytest
import torch

from nasx.hub import available_models, configure_weights, load_searched_model
from nasx.hub import pretrained as pt


@pytest.fixture
def entry(monkeypatch):
    """darts-v2's download settings, restored after the test (its shipped weights hidden, so
    the download and cache paths are what runs)."""
    monkeypatch.setattr(pt, "PACKAGED_WEIGHTS", {})
    e = pt.SEARCHED_MODELS["darts-v2"]
    saved = (e.url, e.sha256, e.filename)
    yield e
    e.url, e.sha256, e.filename = saved


@pytest.fixture(scope="module")
def trained_file(tmp_path_factory):
    """A darts-v2 state_dict with recognisable values, and its sha256."""
    model = load_searched_model("darts-v2")
    with torch.no_grad():
        model.classifier.bias.fill_(0.25)
    path = tmp_path_factory.mktemp("w") / "darts-v2.pth"
    torch.save(model.state_dict(), path)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def test_unknown_name_lists_available():
    with pytest.raises(ValueError, match=r"unknown searched model 'darts-v3'.*darts-v2"):
        load_searched_model("darts-v3")
    assert {
        "darts-v1",
        "darts-v2",
        "pc-darts",
        "p-darts",
        "nasnet-a",
        "amoebanet-a",
        "enas",
    } <= set(available_models())


def test_weights_file_is_loaded(trained_file):
    path, sha = trained_file
    model = load_searched_model("darts-v2", weights=path, sha256=sha[:12])
    assert torch.all(model.classifier.bias == 0.25)


def test_wrong_checksum_is_refused(trained_file):
    path, _ = trained_file
    with pytest.raises(ValueError, match="checksum mismatch"):
        load_searched_model("darts-v2", weights=path, sha256="0" * 64)


@pytest.mark.parametrize("sha256", ["", "abc", "not-hex!"])
def test_an_empty_or_short_checksum_is_refused_not_skipped(trained_file, sha256):
    path, _ = trained_file
    with pytest.raises(ValueError, match=r"sha256 must be .* at least 8 hex digits .*got"):
        load_searched_model("darts-v2", weights=path, sha256=sha256)


def test_mismatched_shapes_are_refused_with_the_keys(tmp_path, trained_file):
    path, _ = trained_file
    with pytest.raises(ValueError, match=r"shape mismatch.*missing key.*unexpected key"):
        # P-DARTS has different cells: same key names in places, other shapes, missing keys
        load_searched_model("p-darts", weights=path)
    state = torch.load(path, weights_only=True)
    state["classifier.weight"] = torch.zeros(3, 3)
    bad = tmp_path / "bad.pth"
    torch.save(state, bad)
    with pytest.raises(ValueError, match=r"classifier.weight: file \(3, 3\) vs model \(10, 576\)"):
        load_searched_model("darts-v2", weights=bad)


class Payload:
    """Any non-tensor object: weights_only loading must refuse to unpickle it."""


def test_pickled_objects_are_not_executed(tmp_path):
    bad = tmp_path / "evil.pth"
    torch.save({"state_dict": {"x": torch.zeros(1)}, "obj": Payload()}, bad)
    with pytest.raises(Exception, match="(?i)weights_only|unsupported|global"):
        load_searched_model("darts-v2", weights=bad)


def test_offline_without_weights_names_the_path(tmp_path, entry):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "darts-v2.pth")):
        load_searched_model("darts-v2", pretrained=True, cache_dir=tmp_path)


def test_cache_is_verified(tmp_path, entry, trained_file):
    path, sha = trained_file
    (tmp_path / "darts-v2.pth").write_bytes(path.read_bytes())
    configure_weights("darts-v2", sha256=sha)
    model = load_searched_model("darts-v2", pretrained=True, cache_dir=tmp_path)
    assert torch.all(model.classifier.bias == 0.25)
    configure_weights("darts-v2", sha256="deadbeef")
    with pytest.raises(ValueError, match="checksum mismatch for cached weights"):
        load_searched_model("darts-v2", pretrained=True, cache_dir=tmp_path)


def test_download_goes_through_a_verified_temp_file(tmp_path, entry, trained_file):
    # A file:// URL exercises the download path without any network.
    path, sha = trained_file
    cache = tmp_path / "cache"
    configure_weights("darts-v2", url=path.as_uri(), sha256=sha)
    model = load_searched_model("darts-v2", pretrained=True, cache_dir=cache, progress=False)
    assert torch.all(model.classifier.bias == 0.25)
    assert sorted(p.name for p in cache.iterdir()) == ["darts-v2.pth"]


def test_bad_download_leaves_the_cache_untouched(tmp_path, entry, trained_file):
    path, sha = trained_file
    cache = tmp_path / "cache"
    cache.mkdir()
    corrupt = tmp_path / "corrupt.pth"
    corrupt.write_bytes(b"not the weights")
    configure_weights("darts-v2", url=corrupt.as_uri(), sha256=sha)
    with pytest.raises(ValueError, match="checksum mismatch for download"):
        load_searched_model("darts-v2", pretrained=True, cache_dir=cache, progress=False)
    assert list(cache.iterdir()) == []  # no partial file, no bad file under the cached name


def test_unreachable_url_says_where_to_put_the_file(tmp_path, entry):
    configure_weights("darts-v2", url=(tmp_path / "nowhere.pth").as_uri(), sha256=None)
    with pytest.raises(FileNotFoundError, match="put the file at"):
        load_searched_model("darts-v2", pretrained=True, cache_dir=tmp_path / "c", progress=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["darts-v1", "pc-darts", "nasnet-a", "amoebanet-a", "enas"])
def test_searched_models_build_and_run(name):
    model = load_searched_model(name).eval()
    assert model(torch.randn(1, 3, 32, 32)).shape == (1, 10)


def test_mnasnet_and_spinenet_entries_build_published_models():
    from nasx.profiler import count_parameters

    assert count_parameters(load_searched_model("mnasnet-a1")) == pytest.approx(3.9e6, rel=0.015)
    assert count_parameters(load_searched_model("mobilenetv2")) == 3_504_872  # torchvision's count
    backbone = load_searched_model("spinenet-49s")
    assert backbone.scaling == "49S" and backbone.out_channels == 128
    assert {"spinenet-49", "spinenet-96", "spinenet-143"} <= set(available_models())


def test_nni_style_classmethod():
    from nasx.hub import DARTS, ENAS, MnasNet

    model = DARTS.load_searched_model("darts-v2")
    assert type(model) is DARTS and sum(p.numel() for p in model.parameters()) == 3_349_342
    assert type(ENAS.load_searched_model("enas")) is ENAS
    with pytest.raises(
        ValueError, match=r"'mnasnet-a1' is a MnasNet model, not a DARTS one; DARTS has: \["
    ):
        DARTS.load_searched_model("mnasnet-a1")
    assert type(MnasNet.load_searched_model("mobilenetv2")) is MnasNet


def test_download_false_never_downloads(tmp_path, entry, trained_file):
    path, sha = trained_file
    configure_weights("darts-v2", url=path.as_uri(), sha256=sha)
    with pytest.raises(FileNotFoundError, match="put the state_dict file at"):
        load_searched_model("darts-v2", pretrained=True, cache_dir=tmp_path, download=False)
    assert list(tmp_path.iterdir()) == []


def test_base_space_classmethod_accepts_subclass_models():
    from nasx.hub import NDS

    assert type(NDS.load_searched_model("enas")).__name__ == "ENAS"


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """An empty stand-in for nasx/hub/weights and the registry of shipped weights."""
    folder = tmp_path / "weights"
    folder.mkdir()
    monkeypatch.setattr(pt, "_packaged_weights_dir", lambda: folder)
    monkeypatch.setattr(pt, "PACKAGED_WEIGHTS", {})
    return folder


def test_shipped_fp16_weights_load_offline_as_fp32(tmp_path, shipped, entry, trained_file):
    path, _ = trained_file
    half = {k: v.half() if v.is_floating_point() else v for k, v in torch.load(path).items()}
    torch.save(half, shipped / "darts-v2.pt")
    sha = hashlib.sha256((shipped / "darts-v2.pt").read_bytes()).hexdigest()
    pt.PACKAGED_WEIGHTS["darts-v2"] = ("darts-v2.pt", sha)  # the one line a shipped file needs
    configure_weights("darts-v2", url=(tmp_path / "never-fetched.pth").as_uri())
    cache = tmp_path / "cache"
    model = load_searched_model("darts-v2", pretrained=True, cache_dir=cache)
    weight = model.classifier.weight
    assert weight.dtype == torch.float32 and torch.equal(weight, half["classifier.weight"].float())
    assert torch.all(model.classifier.bias == 0.25)
    assert not cache.exists()  # nothing downloaded, nothing cached


def test_shipped_weights_are_verified(shipped, entry, trained_file):
    path, _ = trained_file
    (shipped / "darts-v2.pt").write_bytes(path.read_bytes())
    pt.PACKAGED_WEIGHTS["darts-v2"] = ("darts-v2.pt", "0" * 64)
    with pytest.raises(ValueError, match="checksum mismatch for shipped weights of 'darts-v2'"):
        load_searched_model("darts-v2", pretrained=True)
    pt.PACKAGED_WEIGHTS["darts-v2"] = ("absent.pt", "0" * 64)
    with pytest.raises(FileNotFoundError, match=r"absent.pt in nasx/hub/weights\) are missing"):
        load_searched_model("darts-v2", pretrained=True)


def test_every_shipped_file_is_in_the_package_and_matches_its_checksum():
    for name, (filename, sha) in pt.PACKAGED_WEIGHTS.items():
        assert name in available_models()
        path = pt._packaged_weights_dir().joinpath(filename)
        assert filename.endswith(".pt") and path.is_file(), f"{filename} is not in nasx/hub/weights"
        assert hashlib.sha256(path.read_bytes()).hexdigest().startswith(sha), name


def test_package_data_ships_the_weights_folder():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    package_data = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"]
    assert "weights/*.pt" in package_data["nasx.hub"]


# sha256= with pretrained=True: checked against whichever file is loaded, on every path.
def test_sha256_argument_refuses_shipped_weights_that_differ(shipped, entry, trained_file):
    path, sha = trained_file
    (shipped / "darts-v2.pt").write_bytes(path.read_bytes())
    pt.PACKAGED_WEIGHTS["darts-v2"] = ("darts-v2.pt", sha)  # the shipped file itself is fine
    with pytest.raises(ValueError, match=r"shipped weights of 'darts-v2' \(sha256= argument\)"):
        load_searched_model("darts-v2", pretrained=True, sha256="0" * 64)
    model = load_searched_model("darts-v2", pretrained=True, sha256=sha[:10].upper())
    assert torch.all(model.classifier.bias == 0.25)


def test_sha256_argument_refuses_the_real_shipped_weights_when_wrong():
    with pytest.raises(ValueError, match="checksum mismatch for shipped weights of 'darts-v2'"):
        load_searched_model("darts-v2", pretrained=True, sha256="deadbeef")
    shipped_sha = pt.PACKAGED_WEIGHTS["darts-v2"][1]
    load_searched_model("darts-v2", pretrained=True, sha256=shipped_sha[:8])


@pytest.mark.parametrize("configured", [False, True], ids=["no-configured-sha", "configured-sha"])
def test_sha256_argument_refuses_cached_weights_that_differ(
    tmp_path, entry, trained_file, configured
):
    path, sha = trained_file
    (tmp_path / "darts-v2.pth").write_bytes(path.read_bytes())
    configure_weights("darts-v2", sha256=sha if configured else None)
    with pytest.raises(ValueError, match=r"cached weights of 'darts-v2' \(sha256= argument\)"):
        load_searched_model("darts-v2", pretrained=True, cache_dir=tmp_path, sha256="1" * 64)
    model = load_searched_model("darts-v2", pretrained=True, cache_dir=tmp_path, sha256=sha)
    assert torch.all(model.classifier.bias == 0.25)


def test_sha256_argument_checks_a_download_without_configured_checksum(
    tmp_path, entry, trained_file
):
    path, sha = trained_file
    cache = tmp_path / "cache"
    configure_weights("darts-v2", url=path.as_uri(), sha256=None)
    with pytest.raises(ValueError, match="checksum mismatch for download"):
        load_searched_model(
            "darts-v2", pretrained=True, cache_dir=cache, progress=False, sha256="2" * 64
        )
    assert not cache.exists() or list(cache.iterdir()) == []  # the mismatch kept nothing
    model = load_searched_model(
        "darts-v2", pretrained=True, cache_dir=cache, progress=False, sha256=sha[:8]
    )
    assert torch.all(model.classifier.bias == 0.25)


def test_sha256_argument_checks_a_download_with_a_configured_checksum(
    tmp_path, entry, trained_file
):
    path, sha = trained_file
    configure_weights("darts-v2", url=path.as_uri(), sha256=sha)
    with pytest.raises(ValueError, match=r"downloaded weights of 'darts-v2' \(sha256= argument\)"):
        load_searched_model(
            "darts-v2", pretrained=True, cache_dir=tmp_path, progress=False, sha256="3" * 64
        )


@pytest.mark.parametrize("sha256", ["", "abc", "not-hex-at-all", 12345678])
def test_a_malformed_sha256_argument_is_refused_before_anything_loads(tmp_path, entry, sha256):
    with pytest.raises(ValueError, match="sha256 must be the file's checksum"):
        load_searched_model("darts-v2", pretrained=True, cache_dir=tmp_path, sha256=sha256)
