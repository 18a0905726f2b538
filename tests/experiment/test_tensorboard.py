"""TensorBoard logs of trials, read back with TensorBoard's own event reader."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

from nasx.experiment.display.tensorboard import write_trials  # noqa: E402

from ..toy_experiment import make_experiment  # noqa: E402


def _read(run):
    acc = EventAccumulator(str(run), size_guidance={"scalars": 0})
    acc.Reload()
    return acc


def test_experiment_logs_each_trial_while_it_runs(tmp_path):
    exp = make_experiment(tmp_path / "e", max_trials=5, seed=3, tensorboard=True)
    runs = sorted(p.name for p in (exp.workdir / "tensorboard").iterdir())
    assert runs == [f"trial_{t.id}" for t in exp.trials()]
    t = exp.trials("succeeded")[0]
    acc = _read(exp.workdir / "tensorboard" / f"trial_{t.id}")
    assert [round(e.value, 6) for e in acc.Scalars("intermediate")] == [
        round(v, 6) for v in t.intermediates
    ]
    assert [e.step for e in acc.Scalars("intermediate")] == [1, 2, 3]
    assert acc.Scalars("metric/latency_ms")[0].value == pytest.approx(t.metrics["latency_ms"])
    # The arch is the run's hyper-parameters (TensorBoard's HPARAMS tab).
    content = acc.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    info = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
    assert info.hparams["width"].number_value == t.arch["width"]
    assert info.hparams["normal/input_2_0"].string_value == str(t.arch["normal/input_2_0"])


def test_write_trials_backfills_once(tmp_path):
    exp = make_experiment(tmp_path / "e", max_trials=3)
    assert write_trials(exp.workdir, exp.trials()) == 3
    assert write_trials(exp.workdir, exp.trials()) == 0  # already there
    assert write_trials(exp.workdir, exp.trials(), overwrite=True) == 3
