"""Benchmark: framework time of a NAS-Bench-201 tabular search (the table answers, nothing trains).

    PYTHONPATH=. python benchmarks/nb201_overhead.py [--trials 100] [--repeats 5]

Figure: wall time of ``NasExperiment.run()`` for ``--trials`` queries of the real table with
``RegularizedEvolution`` (store, trial folders and logs, strategy, lookups; no model is built since
``NasBench201Evaluator.needs_model`` is False). References in the same process: the same strategy
driven by hand (``propose`` / ``evaluate`` / ``tell``, no storage), and the issue's goal of 1 s.
The table is parsed once before timing (about 0.1 s; shared by later evaluators in the process).
Every figure is the median of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import median_time  # noqa: E402

from nasx.evaluator.nasbench201 import NasBench201Evaluator  # noqa: E402
from nasx.experiment import NasExperiment  # noqa: E402
from nasx.hub import NasBench201  # noqa: E402
from nasx.space import search_space  # noqa: E402
from nasx.strategy import RegularizedEvolution  # noqa: E402
from nasx.trial import Trial  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    start = time.perf_counter()
    evaluator = NasBench201Evaluator()
    parse = time.perf_counter() - start
    space = NasBench201()  # the full-size space: its choices are what the search sees
    choices = search_space(space)

    def experiment() -> int:
        with tempfile.TemporaryDirectory() as workdir:
            exp = NasExperiment(
                space,
                evaluator,
                RegularizedEvolution(seed=0),
                max_trials=args.trials,
                workdir=workdir,
                progress=False,
            )
            exp.run()
            return len(exp.trials("succeeded"))

    def by_hand() -> int:
        strategy = RegularizedEvolution(seed=0)
        strategy.setup(choices)
        for i in range(args.trials):
            arch = strategy.propose()
            metrics = evaluator.evaluate(None, arch=arch)
            strategy.tell(Trial(i, arch, "succeeded", metric=metrics["default"], metrics=metrics))
        return args.trials

    t_exp, n = median_time(experiment, args.repeats)
    t_hand, _ = median_time(by_hand, args.repeats)
    print(f"table parse (once per process): {parse * 1e3:.0f} ms")
    print(
        f"NasExperiment, {n} NAS-Bench-201 queries: {t_exp * 1e3:.0f} ms "
        f"({t_exp / n * 1e3:.2f} ms per trial; {t_exp / 1.0:.2f} x the 1 s goal)"
    )
    print(
        f"strategy + lookup by hand (no storage): {t_hand * 1e3:.0f} ms "
        f"(experiment / by hand = {t_exp / t_hand:.1f}x)"
    )


if __name__ == "__main__":
    main()
