"""NNI 3.0's experiment controls (issue 32): ``stop()``, ``run_or_resume()``,
``run(wait_completion=False)`` and ``run(port=...)`` serving the dashboard of the run."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request

import pytest
import torch.nn as nn

from nasx.experiment import ExperimentDirError, NasExperiment
from nasx.space import ModelSpace, choice
from nasx.strategy import DARTS, GridSearch


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, choice("w", list(range(1, 21))))


def slow_width(model):
    time.sleep(0.05)
    return model.fc.out_features / 20


def _experiment(workdir, evaluator=slow_width, **options):
    return NasExperiment(
        Net(), evaluator, GridSearch(shuffle=False), workdir=workdir, progress=False, **options
    )


def _wait_for(condition, seconds=20.0):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


def test_stop_from_another_thread_ends_the_run_between_trials(tmp_path):
    asked = threading.Event()

    def evaluate(model):  # the 4th trial (w=4) is in flight when stop() is called
        if model.fc.out_features == 4:
            assert asked.wait(30)
        return model.fc.out_features / 20

    exp = _experiment(tmp_path, evaluator=evaluate)

    def stopper():
        _wait_for(lambda: len(exp.trials("succeeded")) >= 3)
        exp.stop()
        asked.set()

    thread = threading.Thread(target=stopper)
    thread.start()
    exp.run()
    thread.join()
    assert exp.stop_reason == "stopped by stop()"
    done = exp.trials()  # the trial in flight finished and was stored; no other started
    assert [(t.arch["w"], t.status) for t in done] == [(w, "succeeded") for w in (1, 2, 3, 4)]
    # NNI's run_or_resume: the stored trials stay, the grid goes on from where it stopped
    asked.set()
    _experiment(tmp_path, evaluator=evaluate).run_or_resume()
    assert sorted(t.arch["w"] for t in exp.trials()) == list(range(1, 21))


def test_run_without_waiting_goes_on_in_the_background_until_stopped(tmp_path):
    exp = _experiment(tmp_path)
    started = time.monotonic()
    exp.run(wait_completion=False)  # NNI's spelling: returns at once
    assert time.monotonic() - started < 1.0
    with pytest.raises(RuntimeError, match="already running in the background"):
        exp.run(wait_completion=False)
    _wait_for(lambda: len(exp.trials("succeeded")) >= 2)
    exp.stop()  # waits for the run
    assert exp.stop_reason == "stopped by stop()" and 2 <= len(exp.trials()) < 20


def test_an_error_of_a_background_run_comes_back_from_stop(tmp_path):
    exp = _experiment(tmp_path, evaluator=lambda model: 1 / 0, max_failed_trials=0)
    exp.run(wait_completion=False)
    _wait_for(lambda: exp.stop_reason is not None)  # it stops itself after the first failure
    exp.stop()
    assert "max_failed_trials" in exp.stop_reason  # failed trials are results, not errors
    bad = _experiment(tmp_path)  # another experiment in the same workdir: refused in the thread
    bad.run(wait_completion=False)
    with pytest.raises(ExperimentDirError, match="holds another experiment"):
        bad.stop()


def test_run_or_resume_starts_a_new_experiment_too(tmp_path):
    _experiment(tmp_path, max_trials=2).run_or_resume()
    assert len(_experiment(tmp_path).trials()) == 2


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_run_with_a_port_serves_the_dashboard_while_it_runs(tmp_path, capsys):
    port = _free_port()
    seen = {}

    def evaluate(model):
        if not seen:  # the first trial waits until the page answers, then reads it
            url = f"http://127.0.0.1:{port}/api/experiments"

            def answers():
                try:
                    seen.update(json.loads(urllib.request.urlopen(url, timeout=2).read())[0])
                    return True
                except OSError:
                    return False

            _wait_for(answers, 60)
        return model.fc.out_features / 20

    exp = _experiment(tmp_path, evaluator=evaluate, max_trials=3)
    exp.run(port=port)
    assert seen["path"] == str(tmp_path) and seen["strategy"] == "GridSearch"
    assert f"web UI (nasx serve) of {tmp_path}: http://127.0.0.1:{port}/" in capsys.readouterr().err
    with pytest.raises(OSError):  # stopped with the run
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/experiments", timeout=2)


def test_a_bad_port_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="must be a TCP port, 1 to 65535; got 70000"):
        _experiment(tmp_path).run(port=70000)


def test_a_one_shot_search_is_not_stopped_between_trials(tmp_path):
    from tests.strategy.oneshot.toys import ToySpace, toy_evaluator

    exp = NasExperiment(ToySpace(), toy_evaluator(), DARTS(), workdir=tmp_path)
    with pytest.raises(ValueError, match="interrupt it .Ctrl-C."):
        exp.stop()
