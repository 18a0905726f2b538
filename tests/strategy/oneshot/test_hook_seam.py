"""The one-shot hook seam (issue 28, item 4): BaseOneShotStrategy is an ABC whose hooks each say
when they are called, in the order the class docstring lists them."""

from __future__ import annotations

import inspect
import re

import pytest

from nasx.strategy import DARTS, ENAS, GumbelDARTS, Proxyless, RandomOneShot
from nasx.strategy.oneshot.base import BaseOneShotStrategy

HOOKS = [
    "build_supernet",
    "extra_modules",
    "load_state_dict",
    "configure_arch_optimizer",
    "graph_key",
    "arch_step",
    "before_weight_step",
    "weight_losses",
    "export_probs",
    "before_validation",
    "on_epoch_end",
    "state_dict",
    "after_fit",
    "export_top_models",
]


def test_a_strategy_without_export_top_models_fails_when_constructed():
    class Forgetful(BaseOneShotStrategy):
        pass

    with pytest.raises(TypeError, match="export_top_models"):
        Forgetful()


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_says_when_it_is_called(hook):
    doc = inspect.getdoc(getattr(BaseOneShotStrategy, hook)) or ""
    assert doc.startswith("Called "), f"{hook}: {doc[:60]!r}"


def test_the_class_docstring_lists_the_hooks_in_call_order():
    doc = BaseOneShotStrategy.__doc__ or ""
    positions = [re.search(rf"\b{hook}\(", doc) for hook in HOOKS]
    assert all(positions), [h for h, p in zip(HOOKS, positions) if not p]
    starts = [p.start() for p in positions if p]
    assert starts == sorted(starts)


def test_hooks_take_the_one_shot_module_typed():
    hints = inspect.signature(BaseOneShotStrategy.arch_step).parameters["module"].annotation
    assert hints == "OneShotModule"  # a string: postponed, imported only when type checking


@pytest.mark.parametrize("cls", [DARTS, GumbelDARTS, ENAS, Proxyless, RandomOneShot])
def test_run_s_attributes_exist_before_a_run(cls):
    s = cls()
    for name in ("supernet", "module", "space", "val_loader", "trainer", "identity"):
        assert getattr(s, name) is None, name
