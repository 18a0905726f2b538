"""The NAS-Bench-201 table built from the benchmark's release format, offline: a small release
folder is written here in NATS-Bench's "simple" format (bz2-compressed pickles of per-seed runs),
converted, and read back by the evaluator."""

from __future__ import annotations

import bz2
import collections
import hashlib
import io
import os
import pickle
import tarfile

import numpy as np
import pytest

from nasx.evaluator import NasBench201Evaluator
from nasx.evaluator.nasbench201 import default_table_path
from nasx.evaluator.nasbench201_fetch import (
    ChecksumMismatchError,
    download,
    release_folder,
    unpack_release,
)
from nasx.evaluator.nasbench201_release import COLUMNS, TABLE_SHA256, convert_release, main
from nasx.hub.nasbench201 import nb201_string_to_arch

ARCHS = [
    "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|",
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|",
]
SPLITS = {"cifar10-valid": ("x-valid", "ori-test"), "cifar10": ("ori-test",)}
SPLITS |= {d: ("x-valid", "x-test", "ori-test") for d in ("cifar100", "ImageNet16-120")}


def _run(epochs: int, accuracy: float) -> dict:
    """One seed's run: accuracies per split and epoch; the last epoch's value is ``accuracy``
    plus an offset per split, earlier epochs lower (so reading the wrong epoch shows)."""
    offsets = {"x-valid": 0.0, "x-test": 1.0, "ori-test": 2.0}
    return {
        "epochs": epochs,
        "eval_acc1es": collections.OrderedDict(
            (f"{split}@{e}", np.float64(accuracy + offset - (epochs - 1 - e)))
            for split, offset in offsets.items()
            for e in range(epochs)
        ),
    }


def _schedule(index: int, epochs: int, seeds: dict[str, list[int]]) -> dict:
    # accuracy = 10 * index + 1000 / epochs + seed / 100 + dataset number: every source differs
    runs = {
        (dataset, seed): _run(epochs, 10 * index + 1000 / epochs + seed / 100 + number)
        for number, dataset in enumerate(SPLITS)
        for seed in seeds[dataset]
    }
    return {
        "arch_index": index,
        "arch_str": ARCHS[index],
        "all_results": runs,
        "dataset_seed": seeds,
    }


def write_release(folder, indexes=(0, 1)):
    """Files named and shaped as NATS-tss-v1_0-3ffb9-simple's (meta + one file per arch)."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"meta_archs": ARCHS, "total_archs": len(ARCHS), "arch2infos": None}
    (folder / "meta.pickle.pbz2").write_bytes(bz2.compress(pickle.dumps(meta)))
    for i in indexes:
        arch = collections.OrderedDict(
            [
                ("12", _schedule(i, 12, {d: [111, 777] for d in SPLITS})),
                ("200", _schedule(i, 200, {d: [777, 888, 999] for d in SPLITS})),
            ]
        )
        (folder / f"{i:06d}.pickle.pbz2").write_bytes(bz2.compress(pickle.dumps(arch)))
    return folder


def _expected_row(index: int) -> list[str]:
    """By hand: the mean over seeds of the last epoch, where each column reads it."""

    def value(epochs, dataset, offset, seeds):
        base = 10 * index + 1000 / epochs + list(SPLITS).index(dataset) + offset
        return f"{base + sum(seeds) / len(seeds) / 100:.4f}"

    s12, s200 = [111, 777], [777, 888, 999]
    return [
        str(index),
        ARCHS[index],
        value(12, "cifar10-valid", 0.0, s12),  # cifar10_valid_12ep: x-valid of cifar10-valid
        value(12, "cifar10", 2.0, s12),  # cifar10_test_12ep: ori-test of cifar10
        value(12, "cifar100", 0.0, s12),
        value(12, "cifar100", 1.0, s12),  # x-test
        value(12, "ImageNet16-120", 0.0, s12),
        value(12, "ImageNet16-120", 1.0, s12),
        value(200, "cifar10", 2.0, s200),  # cifar10_test_200ep: ori-test of cifar10
        value(200, "cifar100", 1.0, s200),
        value(200, "ImageNet16-120", 1.0, s200),
    ]


def test_a_release_converts_to_the_columns_the_evaluator_reads(tmp_path):
    out = convert_release(
        write_release(tmp_path / "release"), tmp_path / "nb201.csv", allow_partial=True
    )
    lines = out.read_text().splitlines()
    assert lines[0].split(",") == list(COLUMNS)
    assert [line.split(",") for line in lines[1:]] == [_expected_row(0), _expected_row(1)]
    # the evaluator reads the converted table: 12-epoch validation is the metric
    ev = NasBench201Evaluator("cifar100", path=out)
    got = ev.evaluate(None, arch=nb201_string_to_arch(ARCHS[1]))
    assert got["default"] == pytest.approx(float(_expected_row(1)[4]))
    assert got["test_200ep"] == pytest.approx(float(_expected_row(1)[9]))


def test_an_incomplete_release_is_refused_unless_asked(tmp_path):
    release = write_release(tmp_path / "release", indexes=(1,))
    with pytest.raises(ValueError, match=r"holds 1 of the 15625 archs"):
        convert_release(release, tmp_path / "nb201.csv")
    assert not (tmp_path / "nb201.csv").exists()


def test_a_folder_that_is_not_a_release_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no meta.pickle.pbz2.*NATS-tss-v1_0-3ffb9-simple"):
        convert_release(tmp_path, tmp_path / "nb201.csv")


def test_a_release_file_with_code_in_it_is_refused(tmp_path):
    release = write_release(tmp_path / "release", indexes=(0,))
    # a pickle that would call os.getcwd when loaded by plain pickle.load
    (release / "000001.pickle.pbz2").write_bytes(bz2.compress(pickle.dumps(os.getcwd)))
    with pytest.raises(pickle.UnpicklingError, match=r"posix.getcwd|os.getcwd|nt.getcwd"):
        convert_release(release, tmp_path / "nb201.csv", allow_partial=True)


def test_an_arch_that_disagrees_with_the_meta_file_is_refused(tmp_path):
    release = write_release(tmp_path / "release", indexes=(0,))
    (release / "000000.pickle.pbz2").rename(release / "000001.pickle.pbz2")
    with pytest.raises(ValueError, match=r"is not entry 1 of"):
        convert_release(release, tmp_path / "nb201.csv", allow_partial=True)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """nasx's data cache in tmp_path, and a "full release" of two archs (NUM_ARCHS patched)."""
    import nasx.evaluator.nasbench201_release as release_module

    monkeypatch.setenv("NASX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NASX_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setattr("nasx.datasets.locate._repo_root", lambda: tmp_path / "repo")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(release_module, "NUM_ARCHS", 2)
    return tmp_path / "cache" / "data" / "nb201" / "nb201.csv"


def _small_table_sha256(tmp_path):
    """The SHA-256 of the two-arch table (converted once aside, as a user would learn it)."""
    aside = convert_release(
        write_release(tmp_path / "aside"), tmp_path / "aside.csv", allow_partial=True
    )
    return hashlib.sha256(aside.read_bytes()).hexdigest()


def test_the_command_installs_only_the_table_it_expects(tmp_path, cache, capsys):
    release = str(write_release(tmp_path / "release"))
    # by default only the table nasx was measured on is installed: this one differs
    with pytest.raises(SystemExit) as stop:
        main([release])
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert f"not {TABLE_SHA256}: not written to {cache}" in err
    assert not cache.exists()
    # told which table to expect, it installs it where the evaluator finds it
    digest = _small_table_sha256(tmp_path)
    assert main([release, "--expect-sha256", digest]) == 0
    md5 = hashlib.md5(cache.read_bytes()).hexdigest()
    out = capsys.readouterr().out
    assert f"wrote {cache}: 2 archs, SHA-256 {digest} (not {TABLE_SHA256}), md5 {md5}" in out
    assert default_table_path() == cache
    assert main([release, "--expect-sha256", "any"]) == 0


def _tar_of(folder, tar_path, extra=()):
    """The release folder as NATS-Bench ships it: a tar with one top folder; ``extra``:
    (TarInfo, bytes or None) members added as they are (hostile ones)."""
    with tarfile.open(tar_path, "w") as tar:
        for file in sorted(folder.iterdir()):
            tar.add(file, arcname=f"NATS-tss-v1_0-3ffb9-simple/{file.name}")
        for info, data in extra:
            tar.addfile(info, None if data is None else io.BytesIO(data))
    return tar_path


def test_a_tar_is_read_and_nothing_outside_its_release_files_is_written(tmp_path, cache):
    folder = write_release(tmp_path / "release")
    evil = tarfile.TarInfo("../../000009.pickle.pbz2")  # a path out of the folder
    evil.size = 4
    link = tarfile.TarInfo("NATS-tss-v1_0-3ffb9-simple/000007.pickle.pbz2")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"  # a link to read through
    other = tarfile.TarInfo("NATS-tss-v1_0-3ffb9-simple/run.sh")  # not a release file
    other.size = 3
    tar = _tar_of(
        folder, tmp_path / "release.tar", [(evil, b"evil"), (link, None), (other, b"ls\n")]
    )
    unpacked = unpack_release(tar, tmp_path / "unpacked")
    names = sorted(p.name for p in unpacked.iterdir())
    # the escaping member lands inside, under its base name; the link and script are skipped
    assert names == [
        "000000.pickle.pbz2",
        "000001.pickle.pbz2",
        "000009.pickle.pbz2",
        "meta.pickle.pbz2",
    ]
    assert not (tmp_path.parent / "000009.pickle.pbz2").exists()
    assert not any(p.is_symlink() for p in unpacked.iterdir())
    # the command takes the tar (a clean one) and, with its SHA-256, checks it first
    clean = _tar_of(folder, tmp_path / "clean.tar")
    digest = hashlib.sha256(clean.read_bytes()).hexdigest()
    table = _small_table_sha256(tmp_path)
    assert main([str(clean), "--sha256", digest, "--expect-sha256", table]) == 0
    assert cache.is_file()


def test_a_tar_with_another_checksum_is_refused_unread(tmp_path, cache, capsys):
    clean = _tar_of(write_release(tmp_path / "release"), tmp_path / "clean.tar")
    with pytest.raises(SystemExit):
        main([str(clean), "--sha256", "ab" * 32, "--expect-sha256", "any"])
    assert "has SHA-256" in capsys.readouterr().err and not cache.exists()
    with pytest.raises(ValueError, match=r"64 hexadecimal digits"):
        release_folder(str(clean), tmp_path / "w", sha256="abc")


def test_something_else_is_named(tmp_path, cache, capsys):
    not_tar = tmp_path / "notes.txt"
    not_tar.write_text("hello")
    with pytest.raises(ValueError, match=r"notes.txt is not a tar archive"):
        release_folder(str(not_tar), tmp_path / "w")
    with pytest.raises(FileNotFoundError, match=r"nowhere.tar: no such file or folder"):
        release_folder(str(tmp_path / "nowhere.tar"), tmp_path / "w")
    with pytest.raises(ValueError, match=r"only http://, https:// and file://"):
        release_folder("ftp://example.org/x.tar", tmp_path / "w")


class _Server:
    """A local HTTP server (127.0.0.1, no network) serving ``body`` at every path; with
    ``claim`` it announces a longer Content-Length than it sends (a download cut short)."""

    def __init__(self, body: bytes, claim: int | None = None):
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                self.send_response(200)
                self.send_header("Content-Length", str(claim or len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/NATS-tss-v1_0-3ffb9-simple.tar"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_download_is_checked_before_it_is_read(tmp_path, cache, capsys):
    tar = _tar_of(write_release(tmp_path / "release"), tmp_path / "served.tar")
    body = tar.read_bytes()
    digest = hashlib.sha256(body).hexdigest()
    table = _small_table_sha256(tmp_path)
    server = _Server(body)
    try:
        # a wrong checksum: refused, and no download left behind to be mistaken for a good one
        with pytest.raises(ChecksumMismatchError, match=r"is deleted"):
            download(server.url, tmp_path / "dl" / "release.tar", sha256="0" * 64)
        assert list((tmp_path / "dl").iterdir()) == []
        # the right one: downloaded, unpacked, converted, installed
        assert main([server.url, "--sha256", digest, "--expect-sha256", table]) == 0
        assert "downloaded 0 of 0 MiB" in capsys.readouterr().out and cache.is_file()
    finally:
        server.close()
    # file:// URLs too
    cache.unlink()
    assert main([tar.as_uri(), "--sha256", digest, "--expect-sha256", table]) == 0


def test_a_download_cut_short_leaves_nothing_and_says_so(tmp_path, cache, capsys):
    server = _Server(b"x" * 100, claim=10_000)
    try:
        with pytest.raises(SystemExit) as stop:
            main([server.url, "--expect-sha256", "any", "--timeout", "10"])
    finally:
        server.close()
    assert stop.value.code == 1
    assert "error:" in capsys.readouterr().err
    assert not cache.exists()
