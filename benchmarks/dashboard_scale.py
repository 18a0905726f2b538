"""Does the dashboard stay responsive with 20,000 trials and a live run? Measured in headless
Chromium (Debian's ``chromium``, driven over the DevTools protocol by tests/dashboard/cdp.py).

    PYTHONPATH=. python benchmarks/dashboard_scale.py [--trials 20000] [--live 30] [--server-root DIR]

1. Writes an experiment of ``--trials`` finished trials (8-label archs, two metrics, 10 reports
   each, one in 50 failed) through the trial store, and starts ``nasx serve`` on it (its own
   process, as a user would).
2. Opens the page and reports when the trial table and each chart first showed (ms after the
   navigation started), then how long scrolling to the middle and one sort take.
3. Starts a "live run" (another process adding a trial a second through the trial store, each
   stored as running, then as succeeded 0.5 s later) for ``--live`` seconds, records every task
   that blocked the page's main thread for 50 ms or more (the browser's Long Tasks API), and
   reports the longest, and how long after the run's last write the page showed it (table and
   status; charts separately).

``--server-root`` serves from another checkout (e.g. the previous release) for a comparison on
the same machine; the measurements look only at the DOM, not at the page's own code. The figures
depend on the machine's load: the script prints the load average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nasx.experiment.storage.store import TrialStore  # noqa: E402
from nasx.trial import Trial  # noqa: E402
from tests.dashboard.cdp import Browser, chromium_path  # noqa: E402

LABELS = [f"cell/op_{i}" for i in range(8)]
OPS = ["sep_conv_3x3", "sep_conv_5x5", "dil_conv_3x3", "max_pool_3x3", "skip_connect"]
# Every task of 50 ms and more that blocked the main thread, from the page's very start.
LONG_TASKS = """
window.__longTasks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__longTasks.push([e.startTime, e.duration]);
}).observe({ type: "longtask", buffered: true });
"""
CHARTS = ("chart-history", "chart-pareto", "chart-curves")


def make_trial(rng: random.Random, i: int, now: float, status: str = "succeeded") -> Trial:
    arch = {label: rng.choice(OPS) for label in LABELS}
    if status == "running":
        return Trial(i, arch, "running", start_time=now)
    if i % 50 == 7:
        return Trial(
            i,
            arch,
            "failed",
            error="RuntimeError: out of memory\n...",
            duration=1.0,
            start_time=now - 1,
            end_time=now,
        )
    acc = 0.6 + 0.3 * rng.random() * min(1.0, 0.3 + i / 20_000)
    curve = [acc * (1 - 0.5 ** (e + 1)) for e in range(10)]
    return Trial(
        i,
        arch,
        "succeeded",
        metric=acc,
        duration=1.0,
        start_time=now - 1,
        end_time=now,
        metrics={"default": acc, "latency_ms": rng.uniform(2, 30)},
        intermediates=curve,
    )


def make_experiment(workdir: Path, n: int) -> float:
    rng = random.Random(0)
    store = TrialStore.create(
        workdir,
        {
            "space": "DartsSpace",
            "strategy": "Random",
            "direction": "maximize",
            "search_space": dict.fromkeys(LABELS, "choice"),
        },
    )
    now = time.time() - n
    best = None
    for i in range(n):
        t = make_trial(rng, i, now + i)
        store.add(t)
        if t.metric is not None and (best is None or t.metric > best[1]):
            best = (i, t.metric)
    store.close()
    return best


# The live run: a trial a second, stored as running and then finished, through the trial store.
LIVE = """
import random, sys, time
sys.path.insert(0, sys.argv[4])
from nasx.experiment.storage.store import TrialStore
from benchmarks.dashboard_scale import make_trial
workdir, first, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = TrialStore(workdir)
rng = random.Random(1)
start = time.time()
for k in range(seconds):
    time.sleep(max(0.0, start + k - time.time()))
    store.add(make_trial(rng, first + k, time.time(), "running"))
    time.sleep(0.5)
    store.update(make_trial(rng, first + k, time.time()))
print(time.time(), flush=True)
store.close()
"""


def start_server(workdir: Path, server_root: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(server_root)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nasx.cli", "serve", str(workdir), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=server_root,
    )
    line = proc.stdout.readline()
    m = re.search(r"(http://\S+)", line)
    if not m:
        proc.kill()
        raise RuntimeError(f"nasx serve printed {line!r}")
    return proc, m.group(1)


async def page_time(b: Browser) -> float:
    return await b.eval("performance.now()")


async def first_seen(b: Browser, conditions: dict[str, str], timeout: float) -> dict:
    """For each named JavaScript condition, the page's clock (ms since navigation) when it was
    first seen true, polled every 20 ms; None for those not seen within ``timeout`` s. A page
    whose main thread is frozen answers late: the time is when it answered."""
    out: dict = dict.fromkeys(conditions)
    pending = dict(conditions)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        checks = "[" + ", ".join(f"!!({c})" for c in pending.values()) + ", performance.now()]"
        try:
            *seen, now = await b.eval(checks)
        except (TimeoutError, asyncio.TimeoutError, RuntimeError):
            continue  # the page did not answer within 30 s: ask again
        for name, ok in zip(list(pending), seen, strict=True):
            if ok:
                out[name] = now
                del pending[name]
        await asyncio.sleep(0.02)
    return out


async def wait_page(b: Browser, condition: str, timeout: float = 120.0) -> float | None:
    return (await first_seen(b, {"c": condition}, timeout))["c"]


def since(t: float | None, t0: float, scale: float = 1.0, minus: float = 0.0) -> float | None:
    return None if t is None else (t - t0) * scale - minus


def chart_loaded(chart: str) -> str:
    return (
        f"(() => {{ const i = document.getElementById('{chart}'); return !!i && "
        "i.getAttribute('src') && i.dataset.loaded === i.getAttribute('src') && "
        "i.complete && i.naturalWidth > 0; })()"
    )


DATA_ROWS = "document.querySelectorAll('#trials tbody tr[data-id]')"


async def measure(url: str, n: int, best_id: int, workdir: Path, live: int, wait: float) -> dict:
    out: dict = {}
    async with Browser() as b:
        await b.call("Page.addScriptToEvaluateOnNewDocument", source=LONG_TASKS)
        await b.call("Page.navigate", url=url)
        await asyncio.sleep(0.05)
        # each of the table and the charts: when it was first seen on the page
        out.update(
            await first_seen(
                b,
                {
                    "table_ms": f"{DATA_ROWS}.length > 0 && "
                    "document.getElementById('status').textContent.length > 0",
                    **{f"{chart}_ms": chart_loaded(chart) for chart in CHARTS},
                },
                wait,
            )
        )
        out["rows_in_page"] = await b.eval(f"{DATA_ROWS}.length")
        # scroll to the middle of the table (sorted by id): until trial n/2 is drawn
        mid = n // 2
        t0 = await page_time(b)
        await b.eval(
            f"(() => {{ const s = document.querySelector('#trials').closest('div'); "
            f"const r = document.querySelector('#trials tbody tr[data-id]'); "
            f"s.scrollTop = (r ? r.offsetTop : 0) + {mid} * (r ? r.offsetHeight : 24); }})()"
        )
        row = f"!!document.querySelector('#trials tbody tr[data-id=\"{mid}\"]')"
        out["scroll_ms"] = since(await wait_page(b, row, wait), t0)
        t0 = await page_time(b)
        await b.eval("document.querySelector('th[data-key=metric]').click()")
        best_first = f"{DATA_ROWS}.length > 0 && {DATA_ROWS}[0].dataset.id === '{best_id}'"
        out["sort_ms"] = since(await wait_page(b, best_first, wait), t0)
        await asyncio.sleep(2)
        # the live run
        live_start = await page_time(b)
        wall_start = time.time()
        writer = subprocess.Popen(
            [sys.executable, "-c", LIVE, str(workdir), str(n), str(live), str(ROOT)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        end_line = await asyncio.get_running_loop().run_in_executor(None, writer.stdout.readline)
        writer.wait()
        run_end = float(end_line)
        ran_for = run_end - wall_start
        # when did the page show the last trial, finished (status and table), and charts of it?
        shown = (
            f"document.body.dataset.trials === '{n + live}' && "
            "!document.getElementById('status').textContent.includes('running')"
        )
        t_shown = await wait_page(b, shown, wait)
        out["caught_up_s"] = since(t_shown, live_start, 1 / 1000, ran_for)
        if TRACE:  # what the page showed, every 100 ms, for 6 s after the run's last write
            t_end = time.time() + 6
            while time.time() < t_end:
                state = await b.eval(
                    "[document.body.dataset.version, document.body.dataset.chartVersion,"
                    + ",".join(f"!!({chart_loaded(c)})" for c in CHARTS)
                    + "]"
                )
                print(f"  +{time.time() - run_end:5.2f} s", *state, flush=True)
                await asyncio.sleep(0.1)
        charts_done = " && ".join(chart_loaded(c) for c in CHARTS)
        t_charts = await wait_page(
            b,
            f"{charts_done} && document.getElementById('chart-history').getAttribute('src')"
            ".includes(encodeURIComponent(document.body.dataset.version))",
            wait,
        )
        out["charts_caught_up_s"] = since(t_charts, live_start, 1 / 1000, ran_for)
        tasks = await b.eval("window.__longTasks")
        live_end = live_start + ran_for * 1000
        during = [d for s, d in tasks if live_start <= s <= live_end]
        out["live_longest_task_ms"] = max(during, default=0.0)
        out["live_tasks_over_200ms"] = sum(d > 200 for d in during)
        out["live_tasks_over_50ms"] = len(during)
        out["load_longest_task_ms"] = max((d for s, d in tasks if s < live_start), default=0.0)
        if SCREENSHOT:
            await b.screenshot(SCREENSHOT)
    return out


SCREENSHOT: Path | None = None
TRACE = bool(os.environ.get("NASX_BENCH_TRACE"))


def shown(value: float | None, unit: str, wait: float, digits: int = 0) -> str:
    return f"not within {wait:.0f} s" if value is None else f"{value:.{digits}f} {unit}"


def main() -> None:
    global SCREENSHOT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument(
        "--live", type=int, default=30, help="seconds of live run (a trial a second)"
    )
    parser.add_argument(
        "--server-root",
        type=Path,
        default=ROOT,
        help="checkout whose nasx serves the page (default: this one)",
    )
    parser.add_argument("--screenshot", type=Path, help="save the page after the run as a PNG")
    parser.add_argument("--workdir", type=Path, help="create the experiment here")
    parser.add_argument(
        "--wait", type=float, default=60.0, help="seconds to wait for each thing to show"
    )
    args = parser.parse_args()
    if chromium_path() is None:
        sys.exit("needs Chromium: apt-get install chromium")
    SCREENSHOT = args.screenshot
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    workdir = args.workdir or Path(tempfile.mkdtemp()) / "scale"
    t = time.perf_counter()
    best_id, _ = make_experiment(workdir, args.trials)
    print(
        f"experiment of {args.trials} trials written in {time.perf_counter() - t:.1f} s: {workdir}"
    )
    server, url = start_server(workdir, args.server_root.resolve())
    try:
        r = asyncio.run(measure(url, args.trials, best_id, workdir, args.live, args.wait))
    finally:
        server.terminate()
        server.wait()
    w = args.wait
    print(f"server: {args.server_root.resolve()}")
    print(
        f"first render, table and status       {shown(r['table_ms'], 'ms', w):>10s} after "
        f"navigation start ({r['rows_in_page']} rows in the page)"
    )
    for chart in CHARTS:
        print(f"first render, {chart:23s} {shown(r[chart + '_ms'], 'ms', w):>10s}")
    print(
        f"scroll to trial {args.trials // 2:<6d}                {shown(r['scroll_ms'], 'ms', w):>10s}"
    )
    print(f"sort by metric (best first)           {shown(r['sort_ms'], 'ms', w):>10s}")
    print(
        f"live run ({args.live} trials, 1/s): longest main-thread task "
        f"{r['live_longest_task_ms']:.0f} ms, {r['live_tasks_over_200ms']} over 200 ms, "
        f"{r['live_tasks_over_50ms']} over 50 ms"
    )
    print(f"longest main-thread task while loading {r['load_longest_task_ms']:.0f} ms")
    print(
        "caught up after the run's last write: table and status "
        f"{shown(r['caught_up_s'], 's', w, 2)}, charts {shown(r['charts_caught_up_s'], 's', w, 2)}"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
