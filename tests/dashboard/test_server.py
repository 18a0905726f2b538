"""The dashboard server over HTTP: read-only, no way out of the experiment directory, loopback
and token checks, escaped JSON, charts as SVG."""

from __future__ import annotations

import http.client
import json
import os
import threading
from pathlib import Path

import pytest

from nasx.dashboard.server import make_server

from ..toy_experiment import make_experiment


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    return make_experiment(tmp_path_factory.mktemp("dash") / "exp", max_trials=8, seed=3)


@pytest.fixture
def server(experiment):
    srv = make_server([experiment.workdir], port=0)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def request(srv, path: str, method: str = "GET", headers: dict | None = None):
    host, port = srv.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.request(method, path, headers={"Host": f"127.0.0.1:{port}", **(headers or {})})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), body


def test_page_and_static_assets_ship_in_the_package(server):
    status, headers, body = request(server, "/")
    assert status == 200 and b'<script src="/static/app.js"' in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    for name in ("app.js", "style.css"):
        assert request(server, f"/static/{name}")[0] == 200


def test_api_lists_the_experiment_and_its_trials(server, experiment):
    status, _, body = request(server, "/api/experiments")
    (summary,) = json.loads(body)
    assert status == 200 and summary["n_trials"] == 8 and summary["strategy"] == "Random"
    best = experiment.export_top_models(top_k=1)[0]
    detail = json.loads(request(server, "/api/exp/0")[2])
    assert next(t for t in detail["trials"] if t["id"] == detail["best"]["id"])["arch"] == best
    trial = json.loads(request(server, "/api/exp/0/trial/0")[2])
    assert trial["cells"] == ["normal", "reduce"] and "trial 0 arch" in trial["log"]


@pytest.mark.parametrize(
    "name",
    [
        "history.svg",
        "pareto.svg",
        "pareto.svg?x=latency_ms",
        "curves.svg",
        "cells.svg?trial=1",
        "trial_curve.svg?trial=2",
    ],
)
def test_charts_are_svg(server, name):
    status, headers, body = request(server, f"/api/exp/0/chart/{name}")
    assert status == 200 and headers["Content-Type"] == "image/svg+xml" and b"<svg" in body[:500]


@pytest.mark.parametrize(
    "path",
    [
        "/static/../../../../etc/passwd",
        "/static/..%2f..%2fcli.py",
        "/static//etc/passwd",
        "//etc/passwd",
        "/etc/passwd",
        "/api/exp/0/trial/../../nasx.db",
        "/api/exp/0/trial/-1",
        "/api/exp/1",
        "/api/exp/0/trial/999",
        "/api/exp/0/chart/nope.svg",
        "/static/server.py",
        "/" + os.path.abspath(__file__),
    ],
)
def test_no_path_leaves_the_experiment_or_the_package(server, path):
    status, _, body = request(server, path)
    assert status == 404, body
    assert b"root:" not in body and b"import" not in body


def test_a_log_symlinked_outside_is_refused(experiment, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    log = Path(experiment.workdir) / "trials" / "7" / "trial.log"
    saved = log.read_bytes()
    log.unlink()
    log.symlink_to(secret)
    srv = make_server([experiment.workdir], port=0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        trial = json.loads(request(srv, "/api/exp/0/trial/7")[2])
        assert (
            "top secret" not in trial["log"] and "outside the experiment directory" in trial["log"]
        )
    finally:
        srv.shutdown()
        srv.server_close()
        log.unlink()
        log.write_bytes(saved)


def test_nothing_writes(server, experiment):
    before = {p.name: p.read_bytes() for p in Path(experiment.workdir).glob("nasx.db*")}
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert request(server, "/api/experiments", method)[0] == 405
    for path in (
        "/",
        "/api/experiments",
        "/api/exp/0",
        "/api/exp/0/trial/3",
        "/api/exp/0/chart/history.svg",
    ):
        assert request(server, path)[0] == 200
    assert {p.name: p.read_bytes() for p in Path(experiment.workdir).glob("nasx.db*")} == before


def test_other_hosts_are_refused_on_loopback(server):
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends Host: evil.example.
    assert request(server, "/api/experiments", headers={"Host": "evil.example:80"})[0] == 403


def test_remote_binding_needs_the_flag_and_a_token(experiment):
    with pytest.raises(ValueError, match="allow_remote=True"):
        make_server([experiment.workdir], host="0.0.0.0", port=0)
    srv = make_server([experiment.workdir], host="0.0.0.0", port=0, allow_remote=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        assert srv.token and len(srv.token) >= 20
        assert request(srv, "/api/experiments")[0] == 403
        status, headers, _ = request(srv, f"/?token={srv.token}")
        assert status == 200 and "HttpOnly" in headers["Set-Cookie"]
        cookie = headers["Set-Cookie"].split(";")[0]
        assert request(srv, "/api/experiments", headers={"Cookie": cookie})[0] == 200
        assert request(srv, "/api/experiments", headers={"Cookie": "nasx_token=wrong"})[0] == 403
    finally:
        srv.shutdown()
        srv.server_close()


def _one_shot_dir(root: Path) -> Path:
    """What a one-shot NasExperiment leaves: a supernet checkpoint and Lightning's CSV log."""
    (root / "checkpoints").mkdir(parents=True)
    (root / "checkpoints" / "last.ckpt").write_bytes(b"")
    logs = root / "lightning_logs" / "version_0"
    logs.mkdir(parents=True)
    (logs / "metrics.csv").write_text("arch/op/conv,arch/op/pool,step\n0.5,0.5,0\n0.9,0.1,50\n")
    return root


def test_one_shot_runs_show_their_arch_weights(tmp_path):
    srv = make_server([_one_shot_dir(tmp_path / "darts")], port=0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        detail = json.loads(request(srv, "/api/exp/0")[2])
        assert detail["kind"] == "one-shot" and detail["trials"] == []
        status, headers, body = request(srv, "/api/exp/0/chart/arch_weights.svg")
        assert status == 200 and b"<svg" in body[:500]
    finally:
        srv.shutdown()
        srv.server_close()


def test_non_finite_metrics_become_null(tmp_path):
    from nasx.experiment.storage.store import TrialStore
    from nasx.trial import Trial

    store = TrialStore.create(tmp_path, {"space": "Net", "direction": "maximize"})
    store.add(
        Trial(0, {"k": 1}, "succeeded", metric=0.5, metrics={"default": 0.5, "loss": float("nan")})
    )
    store.close()
    srv = make_server([tmp_path], port=0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        status, _, body = request(srv, "/api/exp/0")
        assert status == 200, body
        assert json.loads(body)["trials"][0]["metrics"] == {"default": 0.5, "loss": None}
    finally:
        srv.shutdown()
        srv.server_close()


def test_charts_follow_the_data_at_most_every_interval(experiment):
    import time

    from nasx.dashboard.experiments import Experiments

    exps = Experiments([experiment.workdir], chart_interval=0.3, quiet_after=float("inf"))
    assert exps.chart_version(0, "v1") == "v1"
    assert exps.chart_version(0, "v2") == "v1"  # too soon: the old charts stay
    time.sleep(0.35)
    assert exps.chart_version(0, "v3") == "v3"  # then they catch up with the latest data
