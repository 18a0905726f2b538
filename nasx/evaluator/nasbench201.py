"""NAS-Bench-201 as an evaluator: look the arch up in the benchmark's table instead of training.

The table (``nb201/nb201.csv`` in the data directory, one row per architecture of the 15,625) holds,
per dataset (``cifar10``, ``cifar100``, ``imagenet16`` = ImageNet16-120), the validation and test
accuracy after the benchmark's 12-epoch schedule and the test accuracy after 200 epochs. Following
the NAS-Bench-201 paper's protocol, the metric a strategy sees is the 12-epoch validation accuracy;
the 200-epoch test accuracy, what a found architecture is judged by, is recorded beside it
(``trial.metrics['test_200ep']``) for reporting only. No model is built (``needs_model = False``),
so a query costs microseconds and the budget of a search is counted in queries (``max_trials``).

    >>> ev = NasBench201Evaluator(path=_example_table())   # a 2-row stand-in for nb201.csv
    >>> ev.query({'cell/0_1': 'conv_3x3', 'cell/0_2': 'conv_3x3', 'cell/1_2': 'conv_3x3',
    ...           'cell/0_3': 'skip_connect', 'cell/1_3': 'conv_3x3', 'cell/2_3': 'conv_1x1'})
    {'default': 84.0, 'test_12ep': 85.0, 'test_200ep': 94.0}

With the real table (found through ``$NASX_DATA_DIR`` or ``../shared/data``), an experiment is::

    exp = NasExperiment(NasBench201(), NasBench201Evaluator(), RegularizedEvolution(),
                        max_trials=100)   # 100 queries, well under a second of framework time
    exp.run()
    exp.trials('succeeded')[0].metrics   # {'default': ..., 'test_12ep': ..., 'test_200ep': ...}
"""

from __future__ import annotations

import csv
import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .base import Evaluator, Metric, Report

__all__ = [
    "DATASETS",
    "NasBench201Evaluator",
    "NasBench201Table",
    "default_table_path",
    "nb201_arch",
]

DATASETS = ("cifar10", "cifar100", "imagenet16")
"""The table's dataset prefixes (``imagenet16`` is ImageNet16-120)."""
RELATIVE_PATH = Path("nb201") / "nb201.csv"


def default_table_path() -> Path:
    """``nb201/nb201.csv`` in the data directory (``$NASX_DATA_DIR``, else ``../shared/data``),
    else in nasx's data cache, where :mod:`nasx.evaluator.nasbench201_release` writes it.

    Raises :class:`~nasx.datasets.DataNotFoundError` listing the places looked when it is absent.

    Example:
        >>> default_table_path().name  # doctest: +SKIP
        'nb201.csv'
    """
    from nasx.datasets.locate import DataNotFoundError, _data_dir_candidates, cache_dir

    # the data directories, then where `python -m nasx.evaluator.nasbench201_release` writes
    candidates = [d / RELATIVE_PATH for d in _data_dir_candidates()] + [cache_dir() / RELATIVE_PATH]
    for path in candidates:
        if path.is_file():
            return path
    looked = "\n  ".join(str(p) for p in candidates)
    raise DataNotFoundError(
        f"the NAS-Bench-201 table was not found; looked in:\n  {looked}\n"
        "build it from the benchmark's release (NATS-tss-v1_0-3ffb9-simple, from "
        "github.com/D-X-Y/NATS-Bench) with `python -m nasx.evaluator.nasbench201_release "
        "<folder>`, set NASX_DATA_DIR to a folder holding nb201/nb201.csv, or pass "
        "path=<the csv file>"
    )


class NasBench201Table:
    """The NAS-Bench-201 table in memory: column arrays indexed by the benchmark's arch strings.

    Args:
        path: the CSV file (default: ``nb201/nb201.csv`` in the data directory, else in nasx's
            data cache).

    Attributes:
        archs: the benchmark strings, in the table's order.
        columns: ``{column name: float64 array}`` for every numeric column.

    Example:
        >>> table = NasBench201Table(_example_table())
        >>> len(table), table.row(table.archs[1])
        (2, 1)
        >>> float(table.columns['cifar10_test_200ep'].max())
        94.0
    """

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else default_table_path()
        with open(self.path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader)
            rows = list(reader)
        if "arch" not in header:
            raise ValueError(f"{self.path} has no 'arch' column; its columns are {header}")
        a = header.index("arch")
        self.archs = [r[a] for r in rows]
        self.columns = {
            name: np.array([float(r[i]) for r in rows])
            for i, name in enumerate(header)
            if name not in ("arch", "index")
        }
        self._rows = {s: i for i, s in enumerate(self.archs)}

    def __len__(self) -> int:
        return len(self.archs)

    def row(self, arch_string: str) -> int:
        """The row of a benchmark string; KeyError naming it when the table lacks it."""
        try:
            return self._rows[arch_string]
        except KeyError:
            raise KeyError(
                f"{arch_string!r} is not in the NAS-Bench-201 table {self.path}"
            ) from None

    def column(self, name: str) -> np.ndarray:
        """One numeric column; KeyError listing the columns there are."""
        if name not in self.columns:
            raise KeyError(f"{self.path} has no column {name!r}; it has {sorted(self.columns)}")
        return self.columns[name]


@functools.lru_cache(maxsize=4)
def _load(path: str) -> NasBench201Table:
    """One parsed table per file and process (parsing takes about 0.1 s; 30-seed benchmarks reuse it)."""
    return NasBench201Table(path)


class NasBench201Evaluator(Evaluator):
    """Score an arch of :class:`~nasx.hub.NasBench201` by looking it up in the benchmark table.

    The metric is ``<dataset>_valid_12ep`` (what the paper's search protocol lets strategies see);
    the result also holds ``test_12ep`` and ``test_200ep`` (the final judge: report it, never search
    on it). With ``time_column`` each result also holds ``train_seconds`` from that column, so a
    search can be given a simulated wall-clock budget; the shipped ``nb201.csv`` has no training
    times, so this needs a table that has them.

    Args:
        dataset: ``'cifar10'``, ``'cifar100'`` or ``'imagenet16'`` (ImageNet16-120).
        path: the CSV file; default ``nb201/nb201.csv`` under ``$NASX_DATA_DIR`` or ``../shared/data``.
        metric: the column searched on, default ``'<dataset>_valid_12ep'``.
        time_column: optional column of simulated training seconds per query.
        cell_label: the label prefix of the space's cell (``'cell'`` in ``NasBench201``).

    Example:
        >>> ev = NasBench201Evaluator(path=_example_table(), time_column='cifar10_seconds')
        >>> ev.evaluate(None, arch=nb201_arch(1, ev.path))
        {'default': 70.0, 'test_12ep': 71.0, 'test_200ep': 90.0, 'train_seconds': 10.0}
    """

    needs_model = False

    def __init__(
        self,
        dataset: str = "cifar10",
        path: str | os.PathLike | None = None,
        metric: str | None = None,
        time_column: str | None = None,
        cell_label: str = "cell",
    ):
        if dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {list(DATASETS)}, got {dataset!r}")
        self.dataset = dataset
        self.path = str(Path(path) if path is not None else default_table_path())
        self.metric = metric or f"{dataset}_valid_12ep"
        self.time_column = time_column
        self.cell_label = cell_label
        table = self.table  # fail now, not in the first trial, when a column is missing
        self._columns = {"default": self.metric}
        for key in ("test_12ep", "test_200ep"):
            if f"{dataset}_{key}" in table.columns:
                self._columns[key] = f"{dataset}_{key}"
        if time_column is not None:
            self._columns["train_seconds"] = time_column
        for name in self._columns.values():
            table.column(name)

    @property
    def table(self) -> NasBench201Table:
        """The parsed table (shared by every evaluator of the same file in this process)."""
        return _load(self.path)

    def row(self, arch: Mapping[str, Any]) -> int:
        """The table row of an arch dict (``{'cell/0_1': 'conv_3x3', ...}``)."""
        from nasx.hub.nasbench201 import arch_to_nb201_string

        return self.table.row(arch_to_nb201_string(arch, self.cell_label))

    def query(self, arch: Mapping[str, Any]) -> dict[str, float]:
        """Every recorded metric of ``arch``: ``default`` (searched on), ``test_200ep``, ..."""
        i = self.row(arch)
        columns = self.table.columns
        return {key: float(columns[name][i]) for key, name in self._columns.items()}

    def evaluate(
        self, model: Any = None, report: Report | None = None, arch: Mapping[str, Any] | None = None
    ) -> Metric:
        """The table's metrics for ``arch``; ``model`` is ignored (and None in an experiment)."""
        if arch is None:
            raise TypeError(
                "NasBench201Evaluator looks archs up in a table: call evaluate(model, arch={...}) "
                "(NasExperiment passes the trial's arch)"
            )
        return self.query(arch)

    def __repr__(self) -> str:
        return f"NasBench201Evaluator(dataset={self.dataset!r}, metric={self.metric!r}, path='{self.path}')"


def nb201_arch(index: int, path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The arch dict of row ``index`` of the table (handy for tests and examples).

    Example:
        >>> nb201_arch(0, _example_table())['cell/2_3']
        'conv_1x1'
    """
    from nasx.hub.nasbench201 import nb201_string_to_arch

    path = path if path is not None else default_table_path()
    return nb201_string_to_arch(_load(str(path)).archs[index])


def _example_table() -> str:
    """A 2-row table in the benchmark's format, in the temporary directory (for the examples)."""
    import tempfile

    text = (
        "index,arch,cifar10_valid_12ep,cifar10_test_12ep,cifar10_test_200ep,cifar10_seconds\n"
        "0,|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|"
        "nor_conv_1x1~2|,84.0,85.0,94.0,20.0\n"
        "1,|skip_connect~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|none~1|skip_connect~2|,"
        "70.0,71.0,90.0,10.0\n"
    )
    path = Path(tempfile.gettempdir()) / f"nasx_nb201_example_{os.getpid()}.csv"
    path.write_text(text)  # one file per process, rewritten (the same text) by each example
    return str(path)
