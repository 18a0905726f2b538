import pytest
import torch
import torch.nn as nn

from nasx.space import InvalidArchError, LayerChoice, model_context, search_space


def test_list_candidates_use_indices():
    lc = LayerChoice([nn.Linear(2, 3), nn.Linear(2, 3, bias=False)], label="fc")
    assert lc.names == [0, 1]
    assert len(lc) == 2
    assert [k for k, _ in lc.named_children()] == ["0", "1"]
    assert lc[1].bias is None
    assert search_space(lc)["fc"].values == [0, 1]


def test_dict_candidates_use_keys():
    lc = LayerChoice({"relu": nn.ReLU(), "tanh": nn.Tanh()}, label="act")
    assert lc.names == ["relu", "tanh"]
    assert isinstance(lc["tanh"], nn.Tanh)


def test_search_form_runs_the_default_candidate():
    lc = LayerChoice({"double": nn.Identity(), "zero": nn.ZeroPad2d(0)}, label="x")
    x = torch.randn(2, 3)
    assert torch.equal(lc(x), x)


def test_fixed_form_is_the_chosen_module_itself():
    chosen = nn.Linear(2, 2)
    with model_context({"fc": 1}):
        out = LayerChoice([nn.Linear(2, 3), chosen], label="fc")
    assert out is chosen


def test_fixed_form_errors_name_label_and_allowed():
    with model_context({"fc": 5}):
        with pytest.raises(
            InvalidArchError, match=r"invalid value 5 for label 'fc': allowed one of \[0, 1\]"
        ):
            LayerChoice([nn.ReLU(), nn.Tanh()], label="fc")
    with model_context({"other": 0}):
        with pytest.raises(InvalidArchError, match="no value for label 'fc'"):
            LayerChoice([nn.ReLU(), nn.Tanh()], label="fc")


def test_bad_candidates():
    with pytest.raises(ValueError, match="at least one"):
        LayerChoice([], label="x")
    with pytest.raises(TypeError, match="not an nn.Module"):
        LayerChoice([nn.ReLU(), "relu"], label="x")
    with pytest.raises(ValueError, match="dict keys"):
        LayerChoice({"a.b": nn.ReLU()}, label="x")


def test_item_assignment_replaces_a_candidate_and_deletion_is_refused():
    lc = LayerChoice([nn.ReLU(), nn.Tanh()], label="act_set")
    lc[1] = nn.GELU()
    assert isinstance(lc[1], nn.GELU) and [type(m) for m in lc] == [nn.ReLU, nn.GELU]
    with pytest.raises(TypeError, match="nn.Module"):
        lc[0] = "relu"
    with pytest.raises(InvalidArchError):
        lc[5] = nn.ReLU()
    with pytest.raises(TypeError, match="can't be removed"):
        del lc[0]
