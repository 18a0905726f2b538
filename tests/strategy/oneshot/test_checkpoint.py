"""One-shot checkpoints: written every N steps and at epoch ends, atomically, the last k kept;
a search stopped at any step and resumed ends exactly where an uninterrupted one does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from nasx.strategy import DARTS, ENAS, GumbelDARTS

from .toys import ToySpace, toy_evaluator

ROOT = Path(__file__).resolve().parents[3]


class Stop(Exception):
    pass


def stop_at(step: int):
    import pytorch_lightning as pl

    class StopAt(pl.Callback):
        def on_train_batch_end(self, trainer, module, *args):
            if int(module.search_steps) == step:
                raise Stop(f"stopped at step {step}")

    return StopAt()


STRATEGIES = {
    "darts": lambda: DARTS(arc_learning_rate=3e-2, checkpoint_every_n_steps=5),
    "gumbel": lambda: GumbelDARTS(temperature_decay=0.5, checkpoint_every_n_steps=5),
    "enas": lambda: ENAS(hidden=8, checkpoint_every_n_steps=5),
}


def _arch_state(strategy) -> dict[str, torch.Tensor]:
    module = strategy.module
    return {
        k: v.detach().clone()
        for k, v in module.state_dict().items()
        if "arch_params" in k or k.startswith("extra.")
    }


def _search(strategy, workdir, epochs=2, callbacks=()):
    torch.manual_seed(0)
    strategy.run(
        ToySpace(), toy_evaluator(epochs=epochs, callbacks=list(callbacks)), workdir=workdir
    )
    return strategy


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_a_search_stopped_mid_epoch_and_resumed_ends_like_an_uninterrupted_one(tmp_path, name):
    whole = _search(STRATEGIES[name](), tmp_path / "whole")
    with pytest.raises(Stop):  # 16 steps an epoch: stopped in epoch 2, 3 steps after a checkpoint
        _search(STRATEGIES[name](), tmp_path / "cut", callbacks=[stop_at(23)])
    assert (
        torch.load(tmp_path / "cut" / "checkpoints" / "last.ckpt", weights_only=False)[
            "state_dict"
        ]["search_steps"]
        == 20
    )
    resumed = _search(STRATEGIES[name](), tmp_path / "cut")
    assert resumed.module.step_index == whole.module.step_index == 32
    expected, got = _arch_state(whole), _arch_state(resumed)
    assert expected.keys() == got.keys() and expected
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=0, atol=0, msg=key)
    assert resumed.export_top_models() == whole.export_top_models()
    if name == "gumbel":
        assert resumed.temperature == whole.temperature


def _generator_evaluator(epochs, callbacks=()):
    # the user's loaders shuffle with their own generators, not torch's global RNG (issue 29)
    from torch.utils.data import DataLoader

    from .toys import FAST_TRAINER, classification, toy_data

    def loader(n, seed):
        g = torch.Generator().manual_seed(seed)
        return DataLoader(toy_data(n, 0), batch_size=32, shuffle=True, generator=g)

    kwargs = {**FAST_TRAINER, "max_epochs": epochs, "callbacks": list(callbacks)}
    return classification(
        learning_rate=1e-2,
        train_dataloaders=loader(512, 1),
        val_dataloaders=loader(256, 2),
        **kwargs,
    )


def test_loaders_with_their_own_generators_resume_exactly(tmp_path):
    def search(workdir, callbacks=()):
        torch.manual_seed(0)
        s = DARTS(arc_learning_rate=3e-2, checkpoint_every_n_steps=5)
        s.run(ToySpace(), _generator_evaluator(2, callbacks), workdir=workdir)
        return s

    whole = search(tmp_path / "whole")
    with pytest.raises(Stop):  # mid-epoch 2, three steps after the step-20 checkpoint
        search(tmp_path / "cut", [stop_at(23)])
    resumed = search(tmp_path / "cut")
    expected, got = _arch_state(whole), _arch_state(resumed)
    for key in expected:  # the generators' states at the epoch start were off by up to 0.26
        torch.testing.assert_close(got[key], expected[key], rtol=0, atol=0, msg=key)


def test_a_sampler_nasx_cannot_save_is_named_when_resuming_mid_epoch(caplog):
    from torch.utils.data import DataLoader, Sampler

    from nasx.strategy.oneshot.checkpoint import ResumableLoader

    class Shuffled(Sampler[int]):  # a user's sampler with a random state of its own
        def __iter__(self):
            return iter(torch.randperm(8).tolist())

        def __len__(self):
            return 8

    loader = ResumableLoader(DataLoader(range(8), batch_size=2, sampler=Shuffled()))
    with caplog.at_level("WARNING", logger="nasx.strategy.oneshot.checkpoint"):
        loader.load_state_dict({"rng": torch.random.get_rng_state(), "taken": 1})
    assert "sampler (Shuffled) keeps its own random state" in caplog.text
    caplog.clear()
    plain = ResumableLoader(DataLoader(range(8), batch_size=2, shuffle=True))
    with caplog.at_level("WARNING", logger="nasx.strategy.oneshot.checkpoint"):
        plain.load_state_dict({"rng": torch.random.get_rng_state(), "taken": 1})
    assert caplog.text == ""


def test_checkpoints_are_kept_and_written_atomically(tmp_path, caplog):
    s = DARTS(checkpoint_every_n_steps=4, checkpoints_kept=3)
    with caplog.at_level("INFO"):
        _search(s, tmp_path, epochs=1)
    assert "weights_only" not in caplog.text  # Lightning's line at every write (issue 29)
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == ["last.ckpt", "step=00000008.ckpt", "step=00000012.ckpt", "step=00000016.ckpt"]
    assert not list((tmp_path / "checkpoints").glob(".*"))  # no temporary file left behind
    assert (tmp_path / "checkpoints" / "last.ckpt").samefile(
        tmp_path / "checkpoints" / "step=00000016.ckpt"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"checkpoint_every_n_steps": 0}, "checkpoint_every_n_steps must be an integer >= 1"),
        ({"checkpoints_kept": 0}, "checkpoints_kept must be an integer >= 1"),
        ({"checkpoint_every_minutes": -1}, "checkpoint_every_minutes must be a number in"),
    ],
)
def test_checkpoint_settings_are_checked(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DARTS(**kwargs)


KILL_SCRIPT = """
import os, signal, sys
import pytorch_lightning as pl
import torch
sys.path.insert(0, sys.argv[3])
from tests.strategy.oneshot.toys import ToySpace, toy_evaluator
from nasx.strategy import DARTS

class KillAt(pl.Callback):
    def on_train_batch_end(self, trainer, module, *args):
        if int(module.search_steps) == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)

torch.manual_seed(0)
s = DARTS(arc_learning_rate=3e-2, checkpoint_every_n_steps=3)
s.run(ToySpace(), toy_evaluator(epochs=2, callbacks=[KillAt()]), workdir=sys.argv[1])
torch.save({k: v for k, v in s.module.state_dict().items() if "arch_params" in k},
           os.path.join(sys.argv[1], "alphas.pt"))
"""


@pytest.mark.slow
def test_a_search_sigkilled_at_random_steps_resumes_to_the_same_arch_parameters(tmp_path):
    import random

    script = tmp_path / "search.py"
    script.write_text(KILL_SCRIPT)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }

    def run(workdir, kill_at):
        return subprocess.run(
            [sys.executable, str(script), str(workdir), str(kill_at), str(ROOT)],
            env=env,
            capture_output=True,
            text=True,
        )

    assert run(tmp_path / "whole", -1).returncode == 0
    kills = sorted(random.Random(0).sample(range(2, 32), 3))
    for kill_at in kills:  # each kill lands after the previous resume's checkpoint
        proc = run(tmp_path / "cut", kill_at)
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert run(tmp_path / "cut", -1).returncode == 0
    whole = torch.load(tmp_path / "whole" / "alphas.pt")
    cut = torch.load(tmp_path / "cut" / "alphas.pt")
    assert whole.keys() == cut.keys()
    for key in whole:
        torch.testing.assert_close(cut[key], whole[key], rtol=0, atol=0)


WRITE_KILL_SCRIPT = """
import os, signal, sys
sys.path.insert(0, sys.argv[3])
import pytorch_lightning as pl
import torch
from nasx.strategy import DARTS
from nasx.strategy.oneshot import checkpoint
from tests.strategy.oneshot.toys import ToySpace, toy_evaluator

# sys.argv[2]: '<n>:<point>' kills this process (SIGKILL) at that point of its n-th checkpoint
# write, or 'none'. The points: before and after the temporary file is written, after it
# replaced step=<n>.ckpt, after the link to it was made, after it replaced last.ckpt.
spec = sys.argv[2].split(":")
writes = [0]

def kill_at(point):
    if spec[0] != "none" and writes[0] == int(spec[0]) and spec[1] == point:
        os.kill(os.getpid(), signal.SIGKILL)

save_checkpoint, replace, link = pl.Trainer.save_checkpoint, os.replace, os.link

def counted_save(self, path, *args, **kwargs):
    writes[0] += 1
    kill_at("before_write")
    save_checkpoint(self, path, *args, **kwargs)
    kill_at("after_write")

def replaced(src, dst):
    replace(src, dst)
    kill_at("after_replace_" + os.path.basename(str(dst)).split("=")[0].split(".")[0])

def linked(src, dst):
    link(src, dst)
    kill_at("after_link")

pl.Trainer.save_checkpoint = counted_save
checkpoint.os.replace, checkpoint.os.link = replaced, linked
torch.manual_seed(0)
s = DARTS(arc_learning_rate=3e-2, checkpoint_every_n_steps=4)  # 16 steps an epoch
s.run(ToySpace(), toy_evaluator(epochs=3), workdir=sys.argv[1])
state = {k: v for k, v in s.module.state_dict().items() if "arch_params" in k}
state["global_step"] = torch.tensor(s.trainer.global_step)
torch.save(state, os.path.join(sys.argv[1], "result.pt"))
"""

WRITE_POINTS = [
    "before_write",
    "after_write",
    "after_replace_step",
    "after_link",
    "after_replace_last",
]


@pytest.mark.slow  # four searches in subprocesses: about 40 s each point on a loaded machine
@pytest.mark.parametrize("point", WRITE_POINTS)
def test_two_kills_inside_checkpoint_writes_resume_exactly(tmp_path, point):
    # issue 29: a kill inside the epoch-end write (the 4th: steps 4, 8, 12, then the epoch end),
    # then one inside the second write of the resumed run (in the next epoch), then a kill
    # inside the third write of the run after: the end must equal an uninterrupted run's,
    # global step included (it was 104 instead of 96: steps repeated).
    script = tmp_path / "search.py"
    script.write_text(WRITE_KILL_SCRIPT)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }

    def run(workdir, kill):
        return subprocess.run(
            [sys.executable, str(script), str(workdir), kill, str(ROOT)],
            env=env,
            capture_output=True,
            text=True,
        )

    whole = run(tmp_path / "whole", "none")
    assert whole.returncode == 0, whole.stderr[-2000:]
    for kill in (f"4:{point}", f"2:{point}", f"3:{point}"):
        proc = run(tmp_path / "cut", kill)
        assert proc.returncode == -signal.SIGKILL, (kill, proc.stderr[-2000:])
    assert run(tmp_path / "cut", "none").returncode == 0
    expected = torch.load(tmp_path / "whole" / "result.pt")
    got = torch.load(tmp_path / "cut" / "result.pt")
    assert int(got["global_step"]) == int(expected["global_step"]) == 96
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=0, atol=0, msg=key)


def test_no_step_checkpoint_on_an_epoch_s_last_batch(tmp_path, monkeypatch):
    # The epoch-end checkpoint follows it; one there would resume into an epoch Lightning
    # counts as done with its end not run (after a kill inside the epoch-end write).
    from types import SimpleNamespace

    from nasx.strategy.oneshot.checkpoint import SearchCheckpoint

    callback = SearchCheckpoint(tmp_path, every_n_steps=4)
    saved = []
    monkeypatch.setattr(callback, "save", lambda trainer, steps: saved.append(steps))
    trainer = SimpleNamespace(num_training_batches=8)
    for batch_idx in range(8):
        callback.on_train_batch_end(
            trainer, SimpleNamespace(search_steps=batch_idx + 1), None, None, batch_idx
        )
    assert saved == [4]  # not 8: the epoch-end checkpoint is written there


class _Reordered(ToySpace):
    """ToySpace with its op candidates in another order (same labels and names)."""

    def __init__(self):
        import torch.nn as nn

        from nasx.space import InputChoice, LayerChoice, ModelSpace

        from .toys import Noise, Zero

        ModelSpace.__init__(self)  # not ToySpace's: one decision per label
        self.op = LayerChoice(
            {"zero": Zero(16), "noise": Noise(16), "linear": nn.Linear(8, 16)}, label="op"
        )
        self.pick = InputChoice(2, 1, label="pick")
        self.head = nn.Linear(16, 3)


def test_resuming_another_search_or_a_tampered_checkpoint_gets_nasx_messages(tmp_path):
    from nasx.strategy.oneshot.checkpoint import CheckpointError

    _search(DARTS(), tmp_path, epochs=1)
    last = tmp_path / "checkpoints" / "last.ckpt"
    with pytest.raises(CheckpointError, match=r"another search: label 'op': was .*\[noise: Noise"):
        DARTS().run(_Reordered(), toy_evaluator(epochs=2), workdir=tmp_path)
    with pytest.raises(CheckpointError, match=r"strategy: was .*arc_learning_rate"):
        DARTS(arc_learning_rate=0.5).run(ToySpace(), toy_evaluator(epochs=2), workdir=tmp_path)
    _search(DARTS(), tmp_path, epochs=2)
    with pytest.raises(CheckpointError, match=r"has trained 2 epochs, more than .*max_epochs=1"):
        DARTS().run(ToySpace(), toy_evaluator(epochs=1), workdir=tmp_path)

    class Payload:  # a pickle that would run code when unpickled without weights_only
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    for content in (b"\x00garbage" * 64, None):
        if content is None:
            torch.save({"state_dict": {}, "x": Payload()}, last)
        else:
            last.unlink()
            last.write_bytes(content)
        with pytest.raises(CheckpointError, match="not a readable nasx one-shot checkpoint") as err:
            DARTS().run(ToySpace(), toy_evaluator(epochs=3), workdir=tmp_path)
        assert "weights_only" not in str(err.value)
        assert "overwrite=True" in str(err.value)


def test_a_checkpoint_is_written_when_the_minutes_have_passed(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from nasx.strategy.oneshot import checkpoint

    clock = [1000.0]
    monkeypatch.setattr(checkpoint.time, "monotonic", lambda: clock[0])
    callback = checkpoint.SearchCheckpoint(tmp_path, every_minutes=2)
    saved = []
    monkeypatch.setattr(callback, "save", lambda trainer, steps: saved.append(steps))
    module = SimpleNamespace(search_steps=0)
    for step, now in [(1, 1060.0), (2, 1119.0), (3, 1120.0), (4, 1200.0), (5, 1240.0)]:
        clock[0], module.search_steps = now, step
        callback.on_train_batch_end(
            SimpleNamespace(num_training_batches=100), module, None, None, step
        )
        if saved and saved[-1] == step:
            callback._last_time = now  # what save() does
    assert saved == [3, 5]  # 120 s after the start, then 120 s after that save


def test_overwrite_starts_a_one_shot_search_afresh(tmp_path):
    from nasx.experiment import NasExperiment
    from nasx.strategy.oneshot.checkpoint import CheckpointError

    torch.manual_seed(0)
    NasExperiment(ToySpace(), toy_evaluator(epochs=2), DARTS(), workdir=tmp_path).run()
    with pytest.raises(CheckpointError, match="max_epochs=1"):  # further along: refused
        NasExperiment(
            ToySpace(), toy_evaluator(epochs=1), DARTS(), workdir=tmp_path, resume=True
        ).run()
    fresh = DARTS()
    NasExperiment(
        ToySpace(), toy_evaluator(epochs=1), fresh, workdir=tmp_path, overwrite=True
    ).run()
    assert fresh.module.current_epoch == 1  # one epoch from scratch, not the stored two
    saved = torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=True)
    assert saved["epoch"] == 0  # Lightning counts the finished epoch 0 of the fresh run


def test_a_second_run_into_a_one_shot_workdir_is_refused_while_the_first_runs(tmp_path):
    # issue 29: two runs trained into the same checkpoints/ and one died with FileNotFoundError
    from nasx._workdir_lock import WorkdirLockedError, acquire_workdir_lock

    holder = subprocess.Popen(  # another process running in the workdir (holding its lock)
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from nasx._workdir_lock import acquire_workdir_lock; "
            "lock = acquire_workdir_lock(Path(sys.argv[1])); print('held', flush=True); time.sleep(60)",
            str(tmp_path),
        ],
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        },
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        evaluator = toy_evaluator(epochs=1, limit_train_batches=2, limit_val_batches=1)
        with pytest.raises(WorkdirLockedError, match=rf"another process \(pid {holder.pid}\)"):
            DARTS().run(ToySpace(), evaluator, workdir=tmp_path)
        assert not (tmp_path / "checkpoints").exists()
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    # this process's own lock (an experiment's store around the run) is no obstacle
    lock = acquire_workdir_lock(tmp_path)
    try:
        DARTS().run(ToySpace(), evaluator, workdir=tmp_path)
    finally:
        assert lock is not None
        lock.release()
    assert (tmp_path / "checkpoints" / "last.ckpt").exists()
