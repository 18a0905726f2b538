"""Per-trial logs hold the trial's own output, never another thread's log records."""

from __future__ import annotations

import logging
import threading

import torch.nn as nn

from nasx.experiment import NasExperiment
from nasx.space import LayerChoice, ModelSpace
from nasx.strategy import GridSearch


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")


def test_a_trial_log_holds_its_own_records_and_no_other_threads(tmp_path):
    stop, logged_meanwhile = threading.Event(), threading.Event()

    def unrelated_library():  # e.g. a web server or a prefetcher logging in the background
        log = logging.getLogger("unrelated.library")
        while not stop.is_set():
            log.warning("background noise")
            logged_meanwhile.set()
            stop.wait(0.001)

    def evaluate(model):
        logged_meanwhile.clear()
        logging.getLogger("user.evaluator").warning("evaluator says %s", type(model.act).__name__)
        assert logged_meanwhile.wait(10)  # the other thread did log while this trial ran
        return 1.0

    noise = threading.Thread(target=unrelated_library, daemon=True)
    noise.start()
    try:
        exp = NasExperiment(Net(), evaluate, GridSearch(), workdir=tmp_path, progress=False)
        exp.run()
    finally:
        stop.set()
        noise.join()
    trials = exp.trials()
    assert len(trials) == 2
    for t in trials:
        log = (tmp_path / "trials" / str(t.id) / "trial.log").read_text()
        act = ("ReLU", "Tanh")[t.arch["act"]]
        assert f"WARNING user.evaluator: evaluator says {act}" in log  # the trial's own output
        assert "nasx.trial: succeeded" in log
        assert "background noise" not in log
