"""The dashboard in a real browser (Debian's headless Chromium, driven over the DevTools
protocol): a running experiment shows up, its table and charts update as trials finish, HTML in
labels, values, errors and logs stays text, and a screenshot is saved."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nasx.dashboard.server import make_server
from nasx.experiment.storage.readonly import ExperimentReadError, read_experiment

from .cdp import Browser, chromium_path

pytestmark = [
    pytest.mark.skipif(
        chromium_path() is None, reason="Chromium is not installed (apt-get install chromium)"
    ),
    pytest.mark.timeout(300),
]
pytest.importorskip("aiohttp", reason="the DevTools client uses aiohttp")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
N_TRIALS = 6
SCREENSHOT_DIR = Path(os.environ.get("NASX_SCREENSHOT_DIR", ""))


def _trials(workdir: Path) -> int:
    try:
        return len(read_experiment(workdir).trials)
    except ExperimentReadError:
        return 0


@pytest.mark.slow  # end to end: make test-slow runs it (and CI)
def test_dashboard_follows_a_running_experiment(tmp_path):
    workdir = tmp_path / "html-exp"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen(
        # 1.5 s per trial: on a loaded machine Chromium takes seconds to start, and the page must
        # still find the experiment running
        [sys.executable, str(HERE / "slow_experiment.py"), str(workdir), str(N_TRIALS), "1.5"],
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        # the page opens on an experiment in progress, once trial 2 (the URL's trial) exists
        while _trials(workdir) < 3:
            assert run.poll() is None and time.monotonic() < deadline, (
                "the experiment did not start"
            )
            time.sleep(0.2)
        srv = make_server([workdir], port=0)
        threading.Thread(
            target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        ).start()
        try:
            url = f"http://127.0.0.1:{srv.server_address[1]}/?exp=0&trial=2"
            asyncio.run(_watch(url, run, tmp_path))
        finally:
            srv.shutdown()
            srv.server_close()
    finally:
        run.wait(timeout=120)
    assert run.returncode == 0


async def _watch(url: str, run: subprocess.Popen, tmp_path: Path) -> None:
    async with Browser() as b:
        await b.goto(url)
        first = int(await b.wait_for("document.body.dataset.trials"))
        assert 3 <= first < N_TRIALS
        rows_first = await b.eval("document.querySelectorAll('#trials tbody tr[data-id]').length")
        assert rows_first == first
        # The page updates itself: wait (in real time) until it shows every trial.
        await b.wait_for(f"document.body.dataset.trials === '{N_TRIALS}'", timeout=120)
        await b.wait_for(
            f"document.querySelectorAll('#trials tbody tr[data-id]').length === {N_TRIALS}"
        )
        # Charts are loaded images of the latest version, with real sizes.
        for chart in ("history", "pareto", "curves"):
            await b.wait_for(
                f"(() => {{ const i = document.getElementById('chart-{chart}');"
                " return i.dataset.loaded === i.getAttribute('src') && i.naturalWidth > 100; })()"
            )
        # Charts follow the data at most every few seconds (so drawing them never competes with
        # a fast experiment) and end on the final version once the experiment is done.
        await b.wait_for(
            "document.body.dataset.chartVersion === document.body.dataset.version", timeout=30
        )
        await b.wait_for(
            "document.getElementById('chart-history').dataset.loaded"
            " === document.getElementById('chart-history').getAttribute('src')"
            " && document.getElementById('chart-history').getAttribute('src')"
            ".includes(encodeURIComponent(document.body.dataset.version))"
        )
        # HTML in a label, a value, an error and a log is shown as text, never run.
        text = await b.eval("document.getElementById('trials').innerText")
        assert '<img src=x onerror=alert(1)>="<b>8"' in text
        assert "RuntimeError: <script>window.pwned = 1</script>" in text
        assert await b.eval(
            "window.pwned === undefined"
            " && document.querySelectorAll('main img:not([id^=chart]):not([id^=trial])').length === 0"
        )
        assert (
            await b.eval(
                "document.querySelectorAll('#trials script, #trials b, #detail script').length"
            )
            == 0
        )
        # Every trial finished (the table lists a trial while it runs, without its metric yet)
        await b.wait_for(
            "document.querySelectorAll('#trials tbody tr.running, #trials tbody tr.waiting')"
            ".length === 0",
            timeout=120,
        )
        # Sorting by metric: a first click sorts high to low (widths grow along the grid, so the
        # last trial is best), a second low to high; failed trials (no metric) stay last.
        # (The server sorts; the page shows the answer once it arrives.)
        ends = (
            "(() => { const r = document.querySelectorAll('#trials tbody tr[data-id]');"
            " return r[0].dataset.id + ',' + r[r.length - 1].dataset.id; })()"
        )
        await b.eval("document.querySelector('th[data-key=metric]').click()")
        await b.wait_for(f"{ends} === '{N_TRIALS - 1},2'", timeout=30)
        await b.eval("document.querySelector('th[data-key=metric]').click()")
        await b.wait_for(f"{ends} === '0,2'", timeout=30)
        # The trial opened from the URL (?trial=2, the failed one) shows its error and log as text.
        await b.wait_for("document.getElementById('trial-error') !== null")
        error = await b.eval("document.getElementById('trial-error').textContent")
        assert error.startswith("RuntimeError: <script>window.pwned = 1</script>")
        assert "<script>window.pwned = 1</script>" in await b.eval(
            "document.getElementById('trial-log').textContent"
        )
        shot = (SCREENSHOT_DIR if SCREENSHOT_DIR.name else tmp_path) / "dashboard.png"
        await b.screenshot(shot)
        assert shot.stat().st_size > 20_000
    assert run.wait(timeout=60) == 0


@pytest.mark.slow
def test_a_large_experiment_is_paged_scrolled_and_sorted_by_the_server(tmp_path):
    """3,000 trials: the page holds a screenful of rows (not 3,000), scrolling shows the rows
    in view, sorting and filtering come back from the server, and the charts are summaries."""
    import random

    from nasx.experiment.storage.store import TrialStore
    from nasx.trial import Trial

    n, rng = 3000, random.Random(0)
    store = TrialStore.create(tmp_path / "large", {"direction": "maximize", "space": "Big"})
    for i in range(n):
        if i % 50 == 7:
            store.add(Trial(i, {"op": "x"}, "failed", error=f"RuntimeError: <b>{i}</b>"))
            continue
        acc = rng.random()
        metrics = {"default": acc, "latency_ms": rng.uniform(1, 30)}
        store.add(
            Trial(
                i,
                {"op": rng.choice("abc")},
                "succeeded",
                metric=acc,
                metrics=metrics,
                intermediates=[acc / 2, acc],
            )
        )
    store.close()
    best = max(read_experiment(tmp_path / "large").trials, key=lambda t: t.metric or -1).id
    srv = make_server([tmp_path / "large"], port=0)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    try:
        asyncio.run(_large(f"http://127.0.0.1:{srv.server_address[1]}/", n, best, tmp_path))
    finally:
        srv.shutdown()
        srv.server_close()


async def _large(url: str, n: int, best: int, tmp_path: Path) -> None:
    rows = "document.querySelectorAll('#trials tbody tr[data-id]')"
    ids = f"Array.from({rows}, (r) => +r.dataset.id)"
    async with Browser() as b:
        await b.goto(url)
        await b.wait_for(f"{rows}.length > 0", timeout=60)
        assert await b.eval("document.getElementById('table-count').textContent") == (
            f"{n} of {n} trials"
        )
        assert 10 <= await b.eval(f"{rows}.length") <= 200  # a page, not every trial
        # the table is as tall as every row: the scroll bar means what it shows
        height = await b.eval("document.getElementById('trials').offsetHeight")
        assert height >= n * 24
        # scroll to the middle: the rows in view are fetched and drawn
        await b.eval(
            "(() => { const s = document.getElementById('trials-scroll');"
            " s.scrollTop = s.scrollHeight / 2; })()"
        )
        await b.wait_for(f"{ids}.includes({n // 2})", timeout=30)
        shown = await b.eval(ids)
        assert shown == list(range(shown[0], shown[0] + len(shown))) and len(shown) <= 200
        # sort: the best trial first (the view goes back to the top)
        await b.eval("document.querySelector('th[data-key=metric]').click()")
        await b.wait_for(f"{rows}.length > 0 && {rows}[0].dataset.id === '{best}'", timeout=30)
        # filter: only failed trials, counted by the server
        await b.eval(
            "(() => { const f = document.getElementById('status-filter'); f.value = 'failed';"
            " f.dispatchEvent(new Event('change')); })()"
        )
        await b.wait_for(
            f"document.getElementById('table-count').textContent === '{n // 50} of {n} trials'",
            timeout=30,
        )
        assert await b.eval(f"Array.from({rows}).every((r) => r.classList.contains('failed'))")
        assert await b.eval("document.querySelectorAll('#trials b').length") == 0  # text, not HTML
        for chart in ("history", "pareto", "curves"):
            await b.wait_for(
                f"(() => {{ const i = document.getElementById('chart-{chart}');"
                " return i.dataset.loaded === i.getAttribute('src') && i.naturalWidth > 100; })()",
                timeout=60,
            )
        shot = (SCREENSHOT_DIR if SCREENSHOT_DIR.name else tmp_path) / "dashboard_large.png"
        await b.screenshot(shot)
