"""The trial runner's file marks: cheap (a hard link) and the same on disk as a new file."""

from __future__ import annotations

import os

import pytest

from nasx.experiment.execution import runner
from nasx.experiment.execution.runner import MARK_SPARE, _evaluating, put_mark


def trial_folder(tmp_path, trial_id=0):
    folder = tmp_path / "trials" / str(trial_id)
    folder.mkdir(parents=True)
    return folder


def test_a_mark_is_a_link_to_the_workdirs_spare_and_goes_when_the_block_ends(tmp_path):
    marks = [trial_folder(tmp_path, i) / "evaluating" for i in range(3)]
    spare = tmp_path / MARK_SPARE  # beside nasx.db: trials/ holds only the trial folders
    for mark in marks:
        with _evaluating(str(mark)):
            # the same inode as the spare: no new file (inode) per trial
            assert mark.exists() and os.path.samefile(mark, spare)
            assert spare.stat().st_nlink == 2
        assert not mark.exists()
    assert spare.stat().st_nlink == 1 and spare.stat().st_size == 0
    assert sorted(p.name for p in (tmp_path / "trials").iterdir()) == ["0", "1", "2"]


def test_a_mark_outside_a_workdirs_trial_folder_is_a_new_file_and_makes_no_spare(tmp_path):
    folder = tmp_path / "logs" / "mine"
    folder.mkdir(parents=True)
    put_mark(str(folder / "evaluating"))
    assert (folder / "evaluating").stat().st_nlink == 1
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["evaluating", "logs", "mine"]


def test_the_spare_is_named_in_one_place_and_removed_with_the_experiment(tmp_path):
    from nasx.experiment import NasExperiment
    from nasx.experiment.storage.store import TRIALS_DIR, remove_experiment
    from nasx.strategy import GridSearch

    from .helpers import SmallNet, width_metric

    assert runner._TRIALS_DIR == TRIALS_DIR
    NasExperiment(SmallNet(), width_metric, GridSearch(), workdir=tmp_path, progress=False).run()
    assert (tmp_path / MARK_SPARE).is_file()
    assert all(p.name.isdigit() for p in (tmp_path / "trials").iterdir())
    remove_experiment(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_mark_stays_when_the_process_dies_in_the_block_and_goes_on_an_exception(tmp_path):
    mark = trial_folder(tmp_path) / "evaluating"
    with pytest.raises(ValueError), _evaluating(str(mark)):
        raise ValueError("the trial's own error")
    assert not mark.exists()
    with pytest.raises(KeyboardInterrupt), _evaluating(str(mark)):
        raise KeyboardInterrupt  # not the trial's failure: as a death, the mark stays
    assert mark.exists()
    with _evaluating(str(mark)):  # a mark left behind is reused, then removed
        assert mark.exists()
    assert not mark.exists()


def test_without_hard_links_a_mark_is_a_new_file(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(runner.os, "link", no_links)
    mark = trial_folder(tmp_path) / "evaluating"
    put_mark(str(mark))
    assert mark.is_file() and mark.stat().st_nlink == 1


def test_a_mark_in_a_missing_folder_is_an_error_as_before(tmp_path):
    with pytest.raises(FileNotFoundError):
        put_mark(str(tmp_path / "trials" / "9" / "evaluating"))


# ----------------------------------------------------------------------------- trial logs
def test_trial_logs_leave_no_handler_behind_and_a_trial_inside_a_trial_keeps_both_logs(tmp_path):
    import logging

    import torch.nn as nn

    from nasx.experiment.execution.jobs import Job
    from nasx.experiment.execution.runner import ModelBuilder, run_trial
    from nasx.space import LayerChoice, ModelSpace

    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")

    builder = ModelBuilder.from_space(Net())
    root_handlers = list(logging.getLogger().handlers)
    inner_log, outer_log = tmp_path / "inner.log", tmp_path / "outer.log"

    def outer(model):
        logging.getLogger("user").warning("outer before")
        inner = run_trial(builder, lambda m: 0.25, Job(1, {"act": 1}, log_path=str(inner_log)))
        logging.getLogger("user").warning("outer after")
        return inner.metric

    for _ in range(2):  # the second time with this thread's handler reused
        result = run_trial(builder, outer, Job(0, {"act": 0}, log_path=str(outer_log)))
        assert result.status == "succeeded" and result.metric == 0.25
    assert logging.getLogger().handlers == root_handlers
    outer_text, inner_text = outer_log.read_text(), inner_log.read_text()
    # the outer log has its own records before and after the inner trial (and, as a log of
    # everything its thread did meanwhile, the inner trial's); the inner log has only its own
    for line in ("trial 0 arch", "outer before", "outer after"):
        assert outer_text.count(line) == 2, outer_text
    assert outer_text.splitlines()[-1].endswith("nasx.trial: succeeded: {'default': 0.25}")
    assert "outer" not in inner_text and inner_text.count("nasx.trial: trial 1 arch") == 2
    logging.getLogger("user").warning("between trials")  # reaches no trial's log
    assert "between trials" not in outer_log.read_text() + inner_log.read_text()


# ----------------------------------------------------------------------------- evaluators
def test_is_model_evaluator_answers_as_isinstance_of_the_protocol():
    import functools
    from unittest import mock

    from nasx.evaluator import FunctionalEvaluator
    from nasx.evaluator.base import ModelEvaluator
    from nasx.experiment.execution.runner import is_model_evaluator

    class WithMethod:
        def evaluate(self, model, report=None):
            return 1.0

    class NoneOnClass:
        evaluate = None

    class Sub(WithMethod):
        pass

    class CallableOnly:
        def __call__(self, model):
            return 1.0

    def plain(model):
        return 1.0

    def tagged(model):
        return 1.0

    tagged.evaluate = plain  # a function carrying an evaluate attribute is one
    on_instance = NoneOnClass()
    on_instance.evaluate = plain
    candidates = [
        WithMethod(),
        Sub(),
        NoneOnClass(),
        on_instance,
        CallableOnly(),
        plain,
        tagged,
        lambda model: 1.0,
        functools.partial(plain),
        mock.Mock(),
        mock.MagicMock(spec=plain),
        print,
        FunctionalEvaluator(plain),
        3,
    ]
    for _ in range(2):  # the second time from the remembered classes
        got = [is_model_evaluator(c) for c in candidates]
        assert got == [isinstance(c, ModelEvaluator) for c in candidates]
    assert got[:2] == [True, True] and got[5] is False and got[6] is True
