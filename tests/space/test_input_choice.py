import pytest
import torch

from nasx.space import (
    ChosenInputList,
    ChosenInputs,
    InputChoice,
    InvalidArchError,
    model_context,
    search_space,
)

INPUTS = [torch.full((1, 2), 1.0), torch.full((1, 2), 2.0), torch.full((1, 2), 4.0)]


@pytest.mark.parametrize(
    "reduction, expected",
    [
        ("sum", torch.full((1, 2), 5.0)),
        ("mean", torch.full((1, 2), 2.5)),
        ("concat", torch.tensor([[1.0, 1.0, 4.0, 4.0]])),
    ],
)
def test_fixed_reductions(reduction, expected):
    with model_context({"in": [0, 2]}):
        pick = InputChoice(3, n_chosen=2, reduction=reduction, label="in")
    assert isinstance(pick, ChosenInputs)
    assert torch.equal(pick(INPUTS), expected)


def test_none_reduction_returns_list_and_single_input_passes_through():
    assert ChosenInputList([1, 2], "none")(INPUTS) == [INPUTS[1], INPUTS[2]]
    assert ChosenInputs([1], "concat")(INPUTS) is INPUTS[1]


def test_bare_int_is_accepted_for_one_input():
    with model_context({"in": 2}):
        assert InputChoice(3, label="in").chosen == [2]


def test_wrong_number_chosen_is_rejected():
    with model_context({"in": [0]}):
        with pytest.raises(InvalidArchError, match="expected 2 chosen"):
            InputChoice(3, n_chosen=2, label="in")


def test_search_form_uses_default_inputs_and_checks_count():
    pick = InputChoice(3, n_chosen=2, label="in")
    assert search_space(pick)["in"].grid() == [[0, 1], [0, 2], [1, 2]]
    assert torch.equal(pick(INPUTS), torch.full((1, 2), 3.0))
    with pytest.raises(ValueError, match="expects 3 inputs, got 2"):
        pick(INPUTS[:2])


def test_bad_arguments():
    with pytest.raises(ValueError, match="reduction must be one of"):
        InputChoice(2, reduction="max", label="x")
    with pytest.raises(ValueError, match="positive int"):
        InputChoice(0, label="x")


def test_any_number_chosen():
    pick = InputChoice(3, n_chosen=None, reduction="sum", label="any")
    grid = search_space(pick)["any"].grid()
    assert [] not in grid and len(grid) == 7  # every non-empty subset
    listing = InputChoice(3, n_chosen=None, reduction="none", label="any_list")
    assert [] in search_space(listing)["any_list"].grid()
    with model_context({"any_list": []}):
        assert InputChoice(3, n_chosen=None, reduction="none", label="any_list")(INPUTS) == []
