"""Lazily decoded trials (nasx/experiment/storage/stored.py): the same data, tables and CSV as before."""

from __future__ import annotations

import copy
import csv
import dataclasses
import json
import math
import pickle
import random

import pytest

from nasx.experiment.results.table import HEADERS, TrialTable
from nasx.experiment.storage.readonly import read_experiment
from nasx.experiment.storage.store import TrialStore, load_trials
from nasx.experiment.storage.stored import StoredTrial, json_text, stored_trial
from nasx.trial import Trial


def _trials(n: int = 300) -> list[Trial]:
    """Every kind of row: succeeded, failed (multi-line errors), rejected, running, NaN and
    infinite metrics, hparams on some, nested and unicode values, intermediates."""
    rng = random.Random(0)
    out = []
    for i in range(n):
        arch = {"width": rng.choice([2, 4, 8]), "op": rng.choice(["conv", "pool", "é\u2603"])}
        arch["inputs"] = [rng.randrange(3), rng.randrange(3)]
        arch["scale"] = rng.choice([0.5, 1e-7, 1e16, -0.0])
        hparams = {"lr": rng.choice([0.1, 0.01])} if i % 3 == 0 else {}
        status = ["succeeded", "succeeded", "failed", "rejected", "running"][i % 5]
        metric = rng.random() if status == "succeeded" else None
        metrics = (
            {"default": metric, "acc": rng.choice([0.5, math.nan, math.inf])} if metric else {}
        )
        error = f"ValueError: bad {i}\nTraceback ...\n  line 3" if status == "failed" else None
        if status == "rejected":
            error = "FilterError: " + "x" * 80
        out.append(
            Trial(
                i,
                arch,
                status,
                metric=metric,
                metrics=metrics,
                intermediates=[rng.random() for _ in range(i % 3)],
                start_time=1e9 + i if status != "running" else None,
                end_time=1e9 + i + 0.5 if status in ("succeeded", "failed") else None,
                duration=0.5 if status in ("succeeded", "failed") else None,
                error=error,
                hparams=hparams,
            )
        )
    return out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("exp")
    store = TrialStore.create(d, {"space": "Net", "direction": "maximize"})
    for t in _trials():
        store.add(t)
    store.close()
    return d


def _eager(d) -> list[Trial]:
    store = TrialStore(d, read_only=True)
    try:
        return store.trials()  # every field decoded at once: the path tables took before
    finally:
        store.close()


def _old_str(trials: list[Trial]) -> str:
    """The text table as TrialTable rendered it before (row by row, json.dumps of each field)."""
    hparams = any(t.hparams for t in trials)
    cells = [list(HEADERS[:5]) + (["hparams"] if hparams else []) + [HEADERS[5]]]
    num = lambda x: "" if x is None else f"{x:.6g}"  # noqa: E731
    for t in trials:
        error = (t.error or "").splitlines()[0] if t.error else ""
        cells.append(
            [
                str(t.id),
                t.status,
                num(t.metric),
                num(t.duration),
                json.dumps(t.arch),
                *([json.dumps(t.hparams)] if hparams else []),
                error if len(error) <= 60 else error[:57] + "...",
            ]
        )
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = []
    for row in cells:
        first = row[0].rjust(widths[0]) if row is not cells[0] else row[0].ljust(widths[0])
        rest = [c.ljust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join([first] + rest).rstrip())
    return "\n".join(lines)


def _old_csv_rows(trials: list[Trial]) -> list[list[str]]:
    fields = lambda t: [  # noqa: E731
        t.id,
        t.status,
        t.metric,
        json.dumps(t.metrics),
        t.duration,
        t.start_time,
        t.end_time,
        json.dumps(t.arch),
        t.error or "",
        json.dumps(t.hparams),
    ]
    return [[str(x) if x is not None else "" for x in fields(t)] for t in trials]


def test_lazy_trials_hold_the_same_data(workdir):
    lazy, eager = load_trials(workdir), _eager(workdir)
    assert all(type(t) is StoredTrial for t in lazy) and all(type(t) is Trial for t in eager)
    assert not any("arch" in vars(t) for t in lazy)  # nothing decoded by reading
    # repr: NaN metrics compare unequal to themselves, their repr does not
    assert [repr(t) for t in lazy] == [repr(t) for t in eager] == [repr(t) for t in _trials()]
    finite = [i for i, t in enumerate(eager) if not any(map(_nan, t.metrics.values()))]
    assert len(finite) > 100
    assert all(lazy[i] == eager[i] and eager[i] == lazy[i] for i in finite)
    assert lazy[0] != eager[1] and eager[1] != lazy[0]


def _nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


def test_text_table_and_csv_equal_the_old_rendering(workdir, tmp_path):
    lazy, eager = load_trials(workdir), _eager(workdir)
    expected = _old_str(eager)
    assert "hparams" in expected.splitlines()[0] and "FilterError" in expected
    assert str(TrialTable(lazy)) == str(TrialTable(eager)) == expected
    assert not any("arch" in vars(t) for t in lazy)  # rendered from the stored text
    assert str(TrialTable(read_experiment(workdir).trials)) == expected  # `nasx show`'s reader
    without = [dataclasses.replace(t, hparams={}) for t in eager]
    assert str(TrialTable(without)) == _old_str(without)  # no hparams column
    assert str(TrialTable([])) == _old_str([])
    TrialTable(lazy).to_csv(tmp_path / "lazy.csv")
    with open(tmp_path / "lazy.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[1:] == _old_csv_rows(eager)


def test_dataframe_equals_the_eager_one(workdir):
    pd = pytest.importorskip("pandas")
    pd.testing.assert_frame_equal(
        TrialTable(load_trials(workdir)).to_pandas(), TrialTable(_eager(workdir)).to_pandas()
    )


def test_a_decoded_field_is_an_ordinary_attribute():
    t = stored_trial(3, "succeeded", 0.5, 1.0, 2.0, 1.0, None, '{"k": 3}', "{}", "[]", "{}")
    t.arch["k"] = 5  # decoded now; the change is what is read and rendered
    assert t.arch == {"k": 5} and json_text(t, "arch") == '{"k": 5}'
    assert '{"k": 5}' in str(TrialTable([t]))
    t.metrics = {"default": 0.5}  # set before it was ever decoded
    assert json_text(t, "metrics") == '{"default": 0.5}'
    plain = Trial(3, {"k": 5}, "succeeded", 0.5, {"default": 0.5}, [], 1.0, 2.0, 1.0)
    for copied in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t), copy.copy(t)):
        assert type(copied) is Trial and copied == plain
    assert dataclasses.replace(t, status="failed").status == "failed"
    assert dataclasses.asdict(t) == dataclasses.asdict(plain)


def test_null_json_columns_read_as_empty_and_unknown_statuses_are_refused():
    t = stored_trial(0, "failed", None, None, None, None, "E", None, None, None, None)
    assert (t.arch, t.metrics, t.intermediates, t.hparams) == ({}, {}, [], {})
    with pytest.raises(ValueError, match="trial status must be one of"):
        stored_trial(0, "done", None, None, None, None, None, "{}", "{}", "[]", "{}")


def test_a_damaged_json_field_names_the_trial_and_field_when_read(tmp_path, capsys):
    import sqlite3

    from nasx import cli
    from nasx.experiment.storage.stored import DamagedTrialError, decode

    store = TrialStore.create(tmp_path, {"space": "Net", "direction": "maximize"})
    for i in range(3):
        store.add(Trial(i, {"k": i}, "succeeded", metric=float(i)))
    store.close()
    db = sqlite3.connect(tmp_path / "nasx.db")
    with db:
        db.execute("UPDATE trials SET arch = '{\"k\": ' WHERE id = 1")  # a torn write
    db.close()

    trials = read_experiment(tmp_path).trials  # reading the table itself still works
    assert [t.id for t in trials] == [0, 1, 2] and trials[0].arch == {"k": 0}
    with pytest.raises(DamagedTrialError, match=r"trial 1's stored arch is not valid JSON"):
        _ = trials[1].arch
    fresh = read_experiment(tmp_path).trials
    with pytest.raises(DamagedTrialError, match=r"trial 1's stored arch"):
        decode(fresh, ["arch"])  # the one-call batch decode names the same row
    assert cli.main(["show", str(tmp_path)]) == 1  # it prints the best trials, trial 1 among them
    err = capsys.readouterr().err
    assert err.startswith("nasx show: error: trial 1's stored arch") and err.count("\n") == 1
