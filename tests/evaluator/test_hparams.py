"""Choices among evaluator arguments (hyperparameters): found with their labels, built with their
defaults, made again with a trial's values, and refused clearly where they cannot be used."""

import pickle

import pytest
import torch
from torch.utils.data import Dataset, TensorDataset

from nasx.evaluator import Classification, DataLoader, FunctionalEvaluator, Trainer, trace
from nasx.evaluator.hparams import evaluator_choices, freeze_evaluator, searchable
from nasx.space import Categorical, InvalidArchError, LabelConflictError, Numerical


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 4, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long())


class Shifted(Dataset):
    """A dataset with an augmentation strength (as a user's dataset would have)."""

    def __init__(self, base, strength=0.0):
        if strength < 0:
            raise ValueError(f"strength must be >= 0, got {strength}")
        self.base, self.strength = base, strength

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        x, y = self.base[i]
        return x + self.strength, y


def classification():
    return Classification(
        learning_rate=Numerical(1e-4, 1e-1, log_distributed=True, label="lr"),
        weight_decay=Categorical([0.0, 1e-4], label="wd"),
        train_dataloaders=DataLoader(
            trace(Shifted)(data(), strength=Numerical(0.0, 0.5, label="aug")),
            batch_size=Categorical([8, 16], label="bs"),
            shuffle=True,
        ),
        val_dataloaders=DataLoader(data(), batch_size=32),
        max_epochs=Categorical([1, 2], label="epochs"),
        accelerator="cpu",
    )


def test_classification_choices_are_found_with_their_labels_and_built_at_their_defaults():
    ev = classification()
    space = evaluator_choices(ev)
    assert list(space) == ["lr", "wd", "aug", "bs", "epochs"]
    assert ev.module.learning_rate == pytest.approx(1e-4**0.5 * 1e-1**0.5)  # log-uniform median
    assert ev.module.weight_decay == 0.0 and ev.trainer.kwargs["max_epochs"] == 1
    assert ev.train_dataloaders.batch_size == 8
    assert ev.train_dataloaders.dataset.strength == 0.25


def test_freeze_makes_every_holder_again_with_the_trial_values():
    ev = classification()
    frozen = freeze_evaluator(ev, {"lr": 0.05, "wd": 1e-4, "aug": 0.1, "bs": 16, "epochs": 2})
    assert frozen.module.learning_rate == 0.05 and frozen.module.weight_decay == 1e-4
    assert frozen.train_dataloaders.batch_size == 16
    assert frozen.train_dataloaders.dataset.strength == 0.1
    assert frozen.trainer.kwargs == {"max_epochs": 2, "accelerator": "cpu"}
    assert evaluator_choices(frozen) == {}  # a plain evaluator: nothing left to search
    assert frozen.val_dataloaders is ev.val_dataloaders  # what holds no choice is shared
    # the search form pickles (to worker processes) with its choices
    assert list(evaluator_choices(pickle.loads(pickle.dumps(ev)))) == list(evaluator_choices(ev))


def test_freeze_names_a_bad_missing_or_unknown_label():
    ev = classification()
    good = {"lr": 0.01, "wd": 0.0, "aug": 0.0, "bs": 8, "epochs": 1}
    with pytest.raises(InvalidArchError, match="'bs'.*allowed one of \\[8, 16\\]"):
        freeze_evaluator(ev, {**good, "bs": 12})
    with pytest.raises(InvalidArchError, match="'lr'"):
        freeze_evaluator(ev, {**good, "lr": 2.0})
    with pytest.raises(InvalidArchError, match="missing label.*'epochs'"):
        freeze_evaluator(ev, {k: v for k, v in good.items() if k != "epochs"})
    with pytest.raises(InvalidArchError, match="unknown label.*'momentum'"):
        freeze_evaluator(ev, {**good, "momentum": 0.9})
    plain = FunctionalEvaluator(lambda model: 0.0)
    with pytest.raises(InvalidArchError, match="has no choices"):
        freeze_evaluator(plain, {"lr": 0.1})
    assert freeze_evaluator(plain, {}) is plain


def test_a_value_the_evaluator_refuses_fails_when_it_is_built_naming_the_label():
    with pytest.raises(
        ValueError, match="'lr' allows -1.0, which Classification refuses.*positive"
    ):
        Classification(learning_rate=Categorical([0.1, -1.0], label="lr"))
    with pytest.raises(ValueError, match="'bs' allows 0, which DataLoader refuses"):
        DataLoader(data(), batch_size=Categorical([8, 0], label="bs"))
    with pytest.raises(ValueError, match="'s' allows -1.0, which Shifted refuses"):
        trace(Shifted)(data(), strength=Numerical(-1.0, 1.0, label="s"))


def test_two_different_choices_under_one_label_are_refused_one_shared_is_one_decision():
    with pytest.raises(LabelConflictError, match="'x'"):
        FunctionalEvaluator(
            lambda model, a, b: 0.0,
            a=Categorical([1, 2], label="x"),
            b=Categorical([1, 3], label="x"),
        )
    ev = FunctionalEvaluator(
        lambda model, a, b: a + b,
        a=Categorical([1, 2], label="x"),
        b=Categorical([1, 2], label="x"),
    )
    assert (
        list(evaluator_choices(ev)) == ["x"] and freeze_evaluator(ev, {"x": 2}).evaluate(None) == 4
    )


def test_a_class_that_cannot_be_built_again_is_refused_with_the_way_out():
    class MyEvaluator(Classification):
        def __init__(self, lr):
            super().__init__(learning_rate=lr)

    with pytest.raises(TypeError, match=r"nasx.trace\(MyEvaluator\)"):
        MyEvaluator(Numerical(1e-3, 1e-1, label="lr"))
    ev = trace(MyEvaluator)(Numerical(1e-3, 1e-1, label="lr"))  # the way out
    assert freeze_evaluator(ev, {"lr": 0.02}).module.learning_rate == 0.02

    class Holder:
        def __init__(self, lr):
            self.lr = lr

    with pytest.raises(TypeError, match=r"Holder.lr holds a choice.*nasx.trace\(Holder\)"):
        evaluator_choices(Holder(Numerical(1e-3, 1e-1, label="lr")))


def test_searchable_records_only_with_choices_and_only_the_outermost_call():
    class Base:
        @searchable
        def __init__(self, a=1):
            self.a = a

    class Child(Base):
        @searchable
        def __init__(self, a=1, b=2):
            super().__init__(a)
            self.b = b

    plain = Child(3, 4)
    assert "trace_symbol" not in vars(plain)  # nothing recorded without choices
    c = Child(Categorical([1, 5], label="a"), b=Categorical([2, 6], label="b"))
    assert c.trace_symbol is Child and (c.a, c.b) == (1, 2)
    frozen = freeze_evaluator(c, {"a": 5, "b": 6})
    assert type(frozen) is Child and (frozen.a, frozen.b) == (5, 6)


def test_trainer_spec_and_expression_choices():
    spec = Trainer(max_epochs=Categorical([1, 3], label="epochs"))
    assert spec.kwargs == {"max_epochs": 1}
    steps = Categorical([10, 20], label="steps")
    ev = FunctionalEvaluator(lambda model, n: n, n=steps * 2)  # an expression of a choice
    assert ev.evaluate(None) == 20
    assert freeze_evaluator(ev, {"steps": 20}).evaluate(None) == 40


def test_frozen_classification_trains_with_the_trial_values():
    ev = classification()
    frozen = freeze_evaluator(ev, {"lr": 0.05, "wd": 0.0, "aug": 0.0, "bs": 16, "epochs": 2})
    epochs = []
    torch.manual_seed(0)
    acc = frozen.evaluate(torch.nn.Linear(4, 2), report=epochs.append)
    assert len(epochs) == 2 and 0.0 <= acc <= 1.0  # trained for the trial's 2 epochs
