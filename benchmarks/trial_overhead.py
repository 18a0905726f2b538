"""Benchmark: per-trial overhead of NasExperiment, sequential, with a process pool and on Ray;
throughput scaling with the number of workers; per-trial cost at 1k-100k trials.

    PYTHONPATH=. python benchmarks/trial_overhead.py [--repeats 5] [--trials 200] [--ray]
    PYTHONPATH=. python benchmarks/trial_overhead.py --sections scale --scale 1000,10000,100000

1. Sequential overhead: a trivial evaluator (returns a constant) on a tiny space. The figure is the
   experiment's wall time per trial (strategy, validation, SQLite writes, trial folder and log,
   model construction); the reference is the bare loop that only builds each model under
   ``model_context`` and calls the evaluator, in this process.
2. Process-pool overhead: the same trivial trials on 2 workers; wall time per trial, worker start
   included, and the steady-state time per trial (over the second half of the trials).
3. Scaling: trials doing a fixed amount of CPU work (~50 ms of Python); steady-state throughput
   (second half of the trials) on 1 and N workers, and the sequential in-process throughput.

4. Scale (``--sections scale``): one experiment of N trials (``--scale``, default 1k, 10k, 100k)
   on a 12-label space with the trivial evaluator, each in a fresh child process, sequential and
   on the process pool (and Ray with ``--ray``): trials/s over the first and the last 1,000 trials
   (from the trials' end times; the target is last >= 0.9 x first; also in the driver's CPU time,
   which other processes on a shared machine do not move), the growth of the process's
   resident memory over the run (target < 100 MiB per 100k trials), then a resume of the
   finished workdir (open, check, reload, strategy replay: target < 5 s at 100k), the trial table
   and the export of the top 10 (target < 1 s each at 100k).

5. Table (``--sections table``): a database of ``--table-trials`` trials of that space (default
   100k) written directly in ``TrialStore``'s row format, then, each ``--repeats`` times in wall
   and CPU time: ``exp.trial_table()``, printing it (``str``), ``to_csv``, ``to_pandas``,
   ``nasx show`` (stdout discarded), the top-10 export and a resume (target < 0.3 s for the
   table, < 5 s for the resume); the reference is the eager read (every JSON field decoded at
   once, as tables read trials before).

With ``--ray``, sections 1 and 2 add the same trivial trials on a local Ray instance (started once,
``--workers`` CPUs), so the three executors' per-trial overheads come from one run.

Every figure is the median of ``--repeats`` runs. Targets (from the issues): sequential < 5 ms per
trial; process pool < 200 ms per trial with near-linear scaling up to the number of cores.
"""

from __future__ import annotations

import argparse
import array
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch.nn as nn

from nasx.experiment import NasExperiment
from nasx.space import LayerChoice, ModelSpace, choice, model_context
from nasx.strategy import Random


class TinySpace(ModelSpace):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, choice("width", [2, 4, 8, 16]))
        self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")


class WideSpace(ModelSpace):
    """12 labels (as in the issue's measurement), cheap to build."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, choice("width", [2, 4, 8, 16]))
        self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")
        self.knobs = [choice(f"k{i}", [0, 1, 2]) for i in range(10)]


def trivial(model) -> float:
    return 1.0


# The driver process's CPU time as each trial of a scale run ends (in the trial itself when it is
# sequential, as the strategy is told the result otherwise): throughput measured in CPU seconds
# does not move with what other processes on the machine do (wall time does). With workers it is
# the driver's work per trial (scheduling, the database, the strategy): where a cost that grows
# with the number of trials would be; a trivial trial's work in a worker does not grow.
CPU_TIMES = array.array("d")


def trivial_timed(model) -> float:
    CPU_TIMES.append(time.process_time())
    return 1.0


class TimedRandom(Random):
    """``Random`` noting the driver's CPU time as each trial's result comes back."""

    def tell(self, trial) -> None:
        CPU_TIMES.append(time.process_time())
        super().tell(trial)


WORK_ITERS = 1


def cpu_work(model) -> float:
    """A fixed amount of pure-Python work (calibrated to ~50 ms on an idle core)."""
    total = 0
    for i in range(WORK_ITERS):
        total += i * i % 7
    return float(total % 3)


def raw_work(iters: int) -> int:
    """The same work as :func:`cpu_work`, for the reference pool."""
    total = 0
    for i in range(iters):
        total += i * i % 7
    return total % 3


def raw_pool_throughput(workers: int, n_tasks: int, iters: int) -> float:
    """Reference: tasks/s of the same work on a warm ``concurrent.futures.ProcessPoolExecutor``."""
    from concurrent.futures import ProcessPoolExecutor as StdPool

    with StdPool(workers) as pool:
        list(pool.map(raw_work, [iters] * workers))  # start the processes
        t = time.perf_counter()
        list(pool.map(raw_work, [iters] * n_tasks))
        return n_tasks / (time.perf_counter() - t)


def calibrate(seconds: float = 0.05) -> int:
    n = 200_000
    t = time.perf_counter()
    total = 0
    for i in range(n):
        total += i * i % 7
    per_iter = (time.perf_counter() - t) / n
    return max(1, int(seconds / per_iter))


def run_experiment(
    evaluator, n_trials: int, workers: int, execution: str | None = None
) -> tuple[float, float, float]:
    """(wall seconds, seconds until the first trial finished (worker start), trials/s over the
    second half of the trials (steady state, worker start excluded)) of one experiment."""
    with tempfile.TemporaryDirectory() as d:
        exp = NasExperiment(
            TinySpace(),
            evaluator,
            Random(dedup=False, seed=0),
            workdir=d,
            max_trials=n_trials,
            max_concurrent_trials=workers,
            execution=execution,
            progress=False,
        )
        t0 = time.time()
        exp.run()
        wall = time.time() - t0
        trials = exp.trials()
        assert len(trials) == n_trials and all(t.status == "succeeded" for t in trials), (
            exp.trial_table()
        )
        ends = sorted(tr.end_time for tr in trials)
        half = n_trials // 2
        span = ends[-1] - ends[half]
        return wall, ends[0] - t0, (n_trials - 1 - half) / span if span > 0 else float("nan")


def bare_loop(evaluator, n_trials: int) -> float:
    """Reference: build each model under model_context and evaluate it, nothing else."""
    space = TinySpace()
    from nasx.space import search_space

    ss = search_space(space)
    import random

    rng = random.Random(0)
    t = time.perf_counter()
    for _ in range(n_trials):
        with model_context(ss.sample(rng)):
            evaluator(TinySpace())
    return time.perf_counter() - t


def median(values):
    return statistics.median(values)


def rss_mib() -> float:
    """Resident memory of this process now (Linux), MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def scale_child(n_trials: int, execution: str, workers: int) -> dict:
    """One experiment of ``n_trials`` trivial trials on WideSpace, then a resume, the trial table
    and the top-10 export of its workdir (run in a fresh process by :func:`scale_run`)."""
    if execution == "ray":
        import ray

        ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
    d = tempfile.mkdtemp(prefix="nasx-scale-")
    sequential = execution == "sequential"
    CPU_TIMES.extend([0.0] * n_trials)  # allocated before the memory is measured
    del CPU_TIMES[:]
    try:

        def experiment(resume: bool = False) -> NasExperiment:
            return NasExperiment(
                WideSpace(),
                trivial_timed if sequential else trivial,
                Random(dedup=False, seed=0) if sequential else TimedRandom(dedup=False, seed=0),
                workdir=d,
                max_trials=n_trials,
                max_concurrent_trials=workers,
                execution=execution,
                progress=False,
                resume=resume,
            )

        exp = experiment()
        rss0 = rss_mib()
        t0 = time.time()
        exp.run()
        wall = time.time() - t0
        rss1 = rss_mib()
        ends = sorted(t.end_time for t in exp.trials())  # from the database: none kept in memory
        assert len(ends) == n_trials, len(ends)
        k = min(1000, n_trials)
        first = (k - 1) / (ends[k - 1] - ends[0])
        last = (k - 1) / (ends[-1] - ends[-k])
        cpu = CPU_TIMES[:n_trials]
        cpu_first = (k - 1) / (cpu[k - 1] - cpu[0])
        cpu_last = (k - 1) / (cpu[-1] - cpu[-k])
        del exp
        t, c = time.perf_counter(), time.process_time()
        resumed = experiment(resume=True)
        resumed.run()  # reopens, checks, reloads every trial, replays them to the strategy, stops
        resume_s, resume_cpu = time.perf_counter() - t, time.process_time() - c
        assert resumed.stop_reason == f"max_trials ({n_trials}) reached", resumed.stop_reason
        t, c = time.perf_counter(), time.process_time()
        table = resumed.trial_table()
        table_s, table_cpu = time.perf_counter() - t, time.process_time() - c
        assert len(table) == n_trials
        t = time.perf_counter()
        top = resumed.export_top_models(top_k=10)
        export_s = time.perf_counter() - t
        assert len(top) == 10
        return {
            "wall": wall,
            "first": first,
            "last": last,
            "cpu_first": cpu_first,
            "cpu_last": cpu_last,
            "rss_growth": rss1 - rss0,
            "resume": resume_s,
            "resume_cpu": resume_cpu,
            "table": table_s,
            "table_cpu": table_cpu,
            "export": export_s,
        }
    finally:
        shutil.rmtree(d, ignore_errors=True)


def scale_run(n_trials: int, execution: str, workers: int) -> dict:
    """:func:`scale_child` in a fresh Python process (clean memory figures), its result."""
    proc = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps([n_trials, execution, workers])],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"the {execution} run of {n_trials} trials failed:\n{proc.stderr[-3000:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def scale(args) -> None:
    executions = [(e, 1 if e == "sequential" else args.workers) for e in args.executions]
    if args.ray and "ray" not in args.executions:
        executions.append(("ray", args.workers))
    print(
        "scale: one experiment of N trivial trials on a 12-label space (fresh process each); "
        f"medians of {args.scale_repeats}"
    )
    for n in args.scale:
        for execution, workers in executions:
            runs = [scale_run(n, execution, workers) for _ in range(args.scale_repeats)]
            m = {key: median([r[key] for r in runs]) for key in runs[0]}
            ratio = median([r["last"] / r["first"] for r in runs])
            cpu_ratio = median([r["cpu_last"] / r["cpu_first"] for r in runs])
            whose = "" if execution == "sequential" else " of the driver"
            cpu = (
                f"; in CPU time{whose} first 1k {m['cpu_first']:.0f}/s, last 1k "
                f"{m['cpu_last']:.0f}/s, last/first {cpu_ratio:.2f}"
            )
            print(
                f"  {n:>7} trials, {execution} ({workers} worker(s)): {n / m['wall']:.0f} trials/s "
                f"overall; first 1k {m['first']:.0f}/s, last 1k {m['last']:.0f}/s, last/first "
                f"{ratio:.2f} (target >= 0.90){cpu}; memory growth {m['rss_growth']:.1f} MiB "
                f"({m['rss_growth'] / n * 1e5:.0f} MiB per 100k, target < 100); resume "
                f"{m['resume']:.2f} s ({m['resume_cpu']:.2f} s CPU); trial table {m['table']:.3f} s "
                f"({m['table_cpu']:.3f} s CPU); top-10 export {m['export']:.3f} s",
                flush=True,
            )


def write_database(directory: str, n_trials: int) -> None:
    """``n_trials`` trials of :class:`WideSpace` in ``directory``, written in ``TrialStore``'s
    row format in one transaction (what a finished sequential scale run leaves, in seconds):
    succeeded with metrics, every 10th failed with a two-line error, every 25th rejected."""
    import random

    from nasx.experiment.storage.store import _INSERT, TrialStore, _row
    from nasx.trial import Trial

    exp = NasExperiment(
        WideSpace(),
        trivial,
        Random(dedup=False, seed=0),
        workdir=directory,
        max_trials=1,
        progress=False,
    )
    exp.run()  # the meta data a resume checks
    store = TrialStore(directory)
    rng = random.Random(0)
    rows = []
    for i in range(1, n_trials):
        arch = {"width": rng.choice([2, 4, 8, 16]), "act": rng.choice([0, 1])}
        arch.update({f"k{j}": rng.choice([0, 1, 2]) for j in range(10)})
        metric = rng.random()
        t = Trial(
            i, arch, "succeeded", metric, {"default": metric}, [], 1e9 + i, 1e9 + i + 0.01, 0.01
        )
        if i % 10 == 0:
            t.status, t.metric, t.metrics, t.error = (
                "failed",
                None,
                {},
                "ValueError: bad\ntraceback",
            )
        elif i % 25 == 0:
            t.status, t.metric, t.metrics, t.error = "rejected", None, {}, "FilterError: too big"
        rows.append(_row(t))
    store._db.execute("BEGIN")
    store._db.executemany(_INSERT, rows)
    store._db.execute("COMMIT")
    store.close()


def timed(fn, repeats: int) -> tuple[float, float, object]:
    """(median wall s, median CPU s, last result) of ``repeats`` calls."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        out = None  # the previous result is freed before the clock starts
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return median(walls), median(cpus), out


def table(args) -> None:
    import contextlib
    import io

    from nasx.cli import main as cli
    from nasx.experiment.results.table import TrialTable
    from nasx.experiment.storage.store import TrialStore

    n, r = args.table_trials, args.repeats
    d = tempfile.mkdtemp(prefix="nasx-table-")
    try:
        write_database(d, n)
        exp = NasExperiment(
            WideSpace(),
            trivial,
            Random(dedup=False, seed=0),
            workdir=d,
            max_trials=n,
            progress=False,
            resume=True,
        )

        def eager():
            store = TrialStore(d, read_only=True)
            try:
                return TrialTable(store.trials())
            finally:
                store.close()

        def show():
            with contextlib.redirect_stdout(io.StringIO()):
                assert cli(["show", d]) == 0

        ref = timed(eager, r)
        line = f"table of {n} trials: medians of {r}, wall / CPU"
        line += (
            f"\n  reference, eager read (every JSON field decoded): {ref[0]:.3f} / {ref[1]:.3f} s"
        )
        tab = timed(exp.trial_table, r)
        assert len(tab[2]) == n
        line += (
            f"\n  exp.trial_table(): {tab[0]:.3f} / {tab[1]:.3f} s (target <= 0.3 s), "
            f"{tab[0] / ref[0]:.2f}x the reference"
        )
        cases = [
            ("trial_table() + str()", lambda: str(exp.trial_table())),
            (
                "trial_table() + to_csv()",
                lambda: exp.trial_table().to_csv(os.path.join(d, "t.csv")),
            ),
            ("`nasx show`", show),
            ("export_top_models(10)", lambda: exp.export_top_models(10)),
        ]
        try:
            import pandas  # noqa: F401  (imported once, outside the timing)

            cases.insert(2, ("trial_table() + to_pandas()", lambda: exp.trial_table().to_pandas()))
        except ImportError:
            pass
        for name, fn in cases:
            w, c, _ = timed(fn, r)
            line += f"\n  {name}: {w:.3f} / {c:.3f} s"
        w, c, _ = timed(
            lambda: NasExperiment(
                WideSpace(),
                trivial,
                Random(dedup=False, seed=0),
                workdir=d,
                max_trials=n,
                progress=False,
                resume=True,
            ).run(),
            r,
        )
        line += f"\n  resume (reopen, reload every trial, strategy replay): {w:.3f} / {c:.3f} s"
        print(line, flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def ray_overhead(args, seq: float) -> None:
    """Sections 1-2 on a local Ray instance (``--workers`` CPUs), started once."""
    import ray

    ray.init(address="local", num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    try:
        t = time.perf_counter()
        run_experiment(trivial, 4 * args.workers, args.workers, "ray")  # warm Ray's workers
        warm = time.perf_counter() - t
        runs = [
            run_experiment(trivial, args.pool_trials, args.workers, "ray")
            for _ in range(args.repeats)
        ]
    finally:
        ray.shutdown()
    wall = median([w for w, _, _ in runs])
    steady = median([1 / tp for _, _, tp in runs])
    print(
        f"ray (local, {args.workers} CPUs, 1 CPU per trial): {wall / args.pool_trials * 1e3:.1f} ms "
        f"per trivial trial over {args.pool_trials} trials (Ray started once, {warm:.1f} s for "
        f"start-up and the first {4 * args.workers} trials); steady state {steady * 1e3:.2f} ms per "
        f"trial; ratio to sequential {wall / args.pool_trials / seq:.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--trials", type=int, default=200, help="trials per sequential run")
    parser.add_argument("--pool-trials", type=int, default=100, help="trials per process-pool run")
    parser.add_argument("--scaling-trials", type=int, default=80)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--ray", action="store_true", help="add Ray beside the process pool")
    parser.add_argument(
        "--sections",
        default="overhead,scaling",
        help="comma-separated: overhead (1-2), scaling (3), scale (4), table (5), sequential "
        "(section 1 alone, as JSON), compare-child (what --compare runs per tree, as JSON)",
    )
    parser.add_argument(
        "--scale",
        default="1000,10000,100000",
        type=lambda s: [int(x) for x in s.split(",")],
        help="trial counts of section 4",
    )
    parser.add_argument("--scale-repeats", type=int, default=3)
    parser.add_argument(
        "--executions",
        default=["sequential", "process"],
        type=lambda s: s.split(","),
        help="comma-separated executions of section 4: sequential, process, ray",
    )
    parser.add_argument("--table-trials", type=int, default=100_000, help="trials of section 5")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument(
        "--compare", metavar="OLD_TREE", help="sequential overhead of another nasx tree vs this one"
    )
    parser.add_argument("--compare-rounds", type=int, default=5)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(scale_child(*json.loads(args.child))))
        return
    sections = set(args.sections.split(","))
    if "sequential" in sections:  # section 1 alone: its one JSON line only
        sequential_only(args)
        return
    if "compare-child" in sections:  # a child of --compare: its one JSON line only
        compare_child(args)
        return
    if args.compare:
        print(f"load average {os.getloadavg()[0]:.2f}")
        compare(args)
        print(f"load average at the end {os.getloadavg()[0]:.2f}")
        return
    print(
        f"machine: {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.2f}; "
        f"medians of {args.repeats} runs"
    )
    if "overhead" in sections:
        overhead(args)
    if "scaling" in sections:
        scaling(args)
    if "scale" in sections:
        scale(args)
    if "table" in sections:
        table(args)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


def sequential_only(args) -> None:
    """``--sections sequential``: the sequential per-trial wall and CPU time alone (of
    ``exp.run()`` only), one line of JSON (what ``--compare`` reads from each child)."""
    import nasx

    run_experiment(trivial, 20, 1)  # imports and first-call caches
    wall, cpu = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as d:
            exp = NasExperiment(
                TinySpace(),
                trivial,
                Random(dedup=False, seed=0),
                workdir=d,
                max_trials=args.trials,
                progress=False,
            )
            w, c = time.perf_counter(), time.process_time()
            exp.run()
            wall.append((time.perf_counter() - w) / args.trials * 1e3)
            cpu.append((time.process_time() - c) / args.trials * 1e3)
    print(json.dumps({"nasx": os.path.dirname(nasx.__file__), "ms": wall, "cpu_ms": cpu}))


def pool_run(n_trials: int, workers: int) -> tuple[float, float, float]:
    """One process-pool experiment of trivial trials: (ms per trial in steady state (the second
    half of the trials: workers started), ms of the experiment process's CPU time per trial
    (worker start included), ms of wall time per trial (worker start included))."""
    with tempfile.TemporaryDirectory() as d:
        exp = NasExperiment(
            TinySpace(),
            trivial,
            Random(dedup=False, seed=0),
            workdir=d,
            max_trials=n_trials,
            max_concurrent_trials=workers,
            execution="process",
            progress=False,
        )
        w, c = time.perf_counter(), time.process_time()
        exp.run()
        wall, cpu = time.perf_counter() - w, time.process_time() - c
        ends = sorted(t.end_time for t in exp.trials())
        assert len(ends) == n_trials
        half = n_trials // 2
        steady = (ends[-1] - ends[half]) / (n_trials - 1 - half)
        return steady * 1e3, cpu / n_trials * 1e3, wall / n_trials * 1e3


def required_writes(n_trials: int) -> float:
    """Reference: seconds per trial of the writes a trial must make, done by plain Python in a
    fresh folder, nothing else: its folder, ``arch.json`` and ``trial.log`` (three new files,
    each an inode), and its row inserted then updated, each an autocommitted statement in an
    SQLite database in WAL mode with ``synchronous=NORMAL`` and the same index as nasx's."""
    import sqlite3

    arch = {"width": 4, "act": 1}
    with tempfile.TemporaryDirectory() as d:
        db = sqlite3.connect(os.path.join(d, "x.db"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE trials (id INTEGER PRIMARY KEY, arch TEXT, status TEXT, metric REAL)"
        )
        db.execute("CREATE INDEX rank ON trials (status, metric, id)")
        os.mkdir(os.path.join(d, "trials"))
        t = time.perf_counter()
        for i in range(n_trials):
            folder = os.path.join(d, "trials", str(i))
            os.mkdir(folder)
            with open(os.path.join(folder, "arch.json"), "w") as f:
                f.write(json.dumps(arch, indent=2) + "\n")
            db.execute("INSERT INTO trials VALUES (?, ?, 'running', NULL)", (i, json.dumps(arch)))
            with open(os.path.join(folder, "trial.log"), "a") as f:
                f.write("trial arch\n")
                f.flush()
                f.write("succeeded\n")
            db.execute("UPDATE trials SET status = 'succeeded', metric = 1.0 WHERE id = ?", (i,))
        elapsed = time.perf_counter() - t
        db.close()
    return elapsed / n_trials


def compare_child(args) -> None:
    """``--sections compare-child``: what ``--compare`` measures of one tree, in this process,
    as one line of JSON: per trivial trial, the sequential wall and CPU time of ``exp.run()``,
    the bare build+evaluate loop, and the process pool's steady-state wall time and the
    experiment process's CPU time (``--repeats`` runs each, interleaved)."""
    import nasx

    run_experiment(trivial, 20, 1)  # imports and first-call caches
    out: dict[str, list[float]] = {k: [] for k in ("ms", "cpu_ms", "bare_ms", "writes_ms")}
    out.update({k: [] for k in ("pool_ms", "pool_cpu_ms", "pool_wall_ms")})
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as d:
            exp = NasExperiment(
                TinySpace(),
                trivial,
                Random(dedup=False, seed=0),
                workdir=d,
                max_trials=args.trials,
                progress=False,
            )
            w, c = time.perf_counter(), time.process_time()
            exp.run()
            out["ms"].append((time.perf_counter() - w) / args.trials * 1e3)
            out["cpu_ms"].append((time.process_time() - c) / args.trials * 1e3)
        out["bare_ms"].append(bare_loop(trivial, args.trials) / args.trials * 1e3)
        out["writes_ms"].append(required_writes(args.trials) * 1e3)
        if args.pool_trials:
            steady, cpu, wall = pool_run(args.pool_trials, args.workers)
            out["pool_ms"].append(steady)
            out["pool_cpu_ms"].append(cpu)
            out["pool_wall_ms"].append(wall)
    print(json.dumps({"nasx": os.path.dirname(nasx.__file__), **out}))


def compare(args) -> None:
    """``--compare OLD``: the per-trial time of the nasx tree ``OLD`` (a checkout of another
    commit) and of this one, measured in turns in fresh child processes (old, new, old, new,
    ...), so that both see the same machine; medians and their ratio. Sequential: wall and CPU
    time, the bare build+evaluate loop and the framework overhead (wall minus the bare loop);
    the process pool (``--workers``, ``--pool-trials``, 0 to skip it): steady-state wall time
    per trial and the experiment process's CPU time per trial."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"old": os.path.abspath(args.compare), "new": here}
    keys = ("ms", "cpu_ms", "bare_ms", "writes_ms", "pool_ms", "pool_cpu_ms", "pool_wall_ms")
    got: dict[str, dict[str, list[float]]] = {name: {k: [] for k in keys} for name in trees}
    for _ in range(args.compare_rounds):
        for name, tree in trees.items():
            command = [sys.executable, __file__, "--sections", "compare-child"]
            command += ["--repeats", str(args.repeats), "--trials", str(args.trials)]
            command += ["--pool-trials", str(args.pool_trials), "--workers", str(args.workers)]
            proc = subprocess.run(
                command,
                env={**os.environ, "PYTHONPATH": tree},
                capture_output=True,
                text=True,
                cwd=tree,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"the {name} tree's run failed:\n{proc.stderr[-3000:]}")
            record = json.loads(proc.stdout.strip().splitlines()[-1])
            assert record["nasx"].startswith(tree), (record["nasx"], tree)
            for k in keys:
                got[name][k] += record[k]
    runs = len(got["new"]["ms"])

    def line(label: str, key: str, unit: str = "ms per trial") -> str:
        old, new = median(got["old"][key]), median(got["new"][key])
        return (
            f"  {label}: old {old:.3f} (min {min(got['old'][key]):.3f}), new {new:.3f} "
            f"(min {min(got['new'][key]):.3f}) {unit}; new/old {new / old:.2f}"
        )

    for name in trees:  # the overhead of each run: its wall time minus its bare loop
        g = got[name]
        g["overhead"] = [w - b for w, b in zip(g["ms"], g["bare_ms"])]
        # ... and what is left of it beyond the writes measured right after it (a loaded disk
        # moves both together: their difference is the framework's own work)
        g["beyond"] = [o - x for o, x in zip(g["overhead"], g["writes_ms"])]
    print(
        f"sequential, trivial trials ({args.trials} per run, {runs} runs per tree, interleaved "
        "in fresh processes), medians:"
    )
    print(line("wall time of exp.run()", "ms"))
    print(line("CPU time of the experiment's process", "cpu_ms"))
    print(line("bare build+evaluate loop", "bare_ms"))
    print(line("framework overhead (wall minus the bare loop, per run)", "overhead"))
    print(
        line("the required writes alone (3 new files, 2 SQLite commits; plain Python)", "writes_ms")
    )
    print(line("overhead beyond the required writes (per run)", "beyond"))
    if args.pool_trials:
        print(f"process pool ({args.workers} workers, {args.pool_trials} trials per run):")
        print(line("steady-state wall time (second half of the trials)", "pool_ms"))
        print(line("CPU time of the experiment's process (worker start included)", "pool_cpu_ms"))
        print(line("wall time with the worker start", "pool_wall_ms"))


def overhead(args) -> None:
    # 1. sequential
    seq = median(
        [run_experiment(trivial, args.trials, 1)[0] / args.trials for _ in range(args.repeats)]
    )
    ref = median([bare_loop(trivial, args.trials) / args.trials for _ in range(args.repeats)])
    print(
        f"sequential: {seq * 1e3:.2f} ms per trivial trial (target < 5 ms); bare build+evaluate loop "
        f"{ref * 1e3:.3f} ms; framework overhead {(seq - ref) * 1e3:.2f} ms per trial, ratio {seq / ref:.1f}x"
    )

    # 2. process pool, trivial trials
    runs = [
        run_experiment(trivial, args.pool_trials, args.workers, "process")
        for _ in range(args.repeats)
    ]
    wall = median([w for w, _, _ in runs])
    first = median([f for _, f, _ in runs])
    steady = median([1 / tp for _, _, tp in runs])
    print(
        f"process pool ({args.workers} workers): {wall / args.pool_trials * 1e3:.1f} ms per trivial trial "
        f"over {args.pool_trials} trials, worker start included (target < 200 ms); first result after "
        f"{first:.2f} s; steady state {steady * 1e3:.2f} ms per trial; "
        f"ratio to sequential {wall / args.pool_trials / seq:.1f}x"
    )
    if args.ray:
        ray_overhead(args, seq)


def scaling(args) -> None:

    # 3. scaling with CPU-bound trials
    global WORK_ITERS
    WORK_ITERS = calibrate()
    n = args.scaling_trials
    seq_tp = median([run_experiment(cpu_work, n, 1)[2] for _ in range(args.repeats)])
    line = f"scaling ({n} trials of ~50 ms CPU each): sequential {seq_tp:.1f} trials/s"
    one = raw_one = None
    for workers in sorted({1, args.workers}):
        runs = [run_experiment(cpu_work, n, workers, "process") for _ in range(args.repeats)]
        tp = median([n / w for w, _, _ in runs])
        tp_steady = median([t for _, _, t in runs])  # second half of the trials: workers started
        raw = median(
            [raw_pool_throughput(workers, n // 2, WORK_ITERS) for _ in range(args.repeats)]
        )
        one, raw_one = one or tp_steady, raw_one or raw
        line += (
            f"\n  {workers} worker(s): {tp:.1f} trials/s with worker start, {tp_steady:.1f} in steady "
            f"state = {tp_steady / one:.2f}x of 1 worker; reference concurrent.futures pool "
            f"{raw:.1f} tasks/s = {raw / raw_one:.2f}x of 1 process; nasx/reference {tp_steady / raw:.2f}"
        )
    print(line)


if __name__ == "__main__":
    main()
