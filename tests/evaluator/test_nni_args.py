"""Lightning 1.x's gpus= (NNI 3.0's evaluators) mapped to Lightning 2's accelerator/devices."""

from __future__ import annotations

import logging

import pytest

from nasx.evaluator import Classification, Trainer
from nasx.evaluator.nni_args import translate_trainer_kwargs


@pytest.mark.parametrize(
    "gpus, expected",
    [
        (0, {"accelerator": "cpu"}),
        (None, {"accelerator": "cpu"}),
        (1, {"accelerator": "gpu", "devices": 1}),
        (-1, {"accelerator": "gpu", "devices": -1}),
        ([0, 2], {"accelerator": "gpu", "devices": [0, 2]}),
    ],
)
def test_gpus_maps_to_accelerator_and_devices(gpus, expected):
    assert translate_trainer_kwargs({"gpus": gpus, "max_epochs": 1}) == {
        "max_epochs": 1,
        **expected,
    }


def test_trainer_and_classification_accept_gpus_with_a_log_note_and_no_warning(caplog):
    with caplog.at_level(logging.INFO, logger="nasx.evaluator.nni_args"):
        spec = Trainer(gpus=0, max_epochs=1)
        ev = Classification(gpus=0, max_epochs=2)
    assert spec.kwargs == {"max_epochs": 1, "accelerator": "cpu"}
    assert ev.trainer.kwargs["accelerator"] == "cpu" and ev.trainer.build().max_epochs == 2
    assert "Lightning 1.x" in caplog.text and "accelerator='cpu'" in caplog.text


def test_gpus_with_accelerator_or_a_bad_value_is_refused():
    with pytest.raises(TypeError, match="not both"):
        Trainer(gpus=1, accelerator="gpu")
    with pytest.raises(TypeError, match="gpus must be"):
        Trainer(gpus=1.5)
    assert translate_trainer_kwargs({"max_epochs": 3}) == {"max_epochs": 3}
