"""The hub's NNI names and arguments: ``nni.nas.hub.pytorch`` ported by changing imports."""

import pytest
import torch
import torch.nn as nn

import nasx.hub
from nasx.hub import AutoFormer, AutoformerSpace, MobileNetV3Space
from nasx.hub.modules import AutoActivation, NasBench101Cell, NasBench201Cell
from nasx.space import model_context, search_space


def test_autoformer_space_is_exported_as_nni_names_it():
    assert AutoformerSpace is AutoFormer and "AutoformerSpace" in nasx.hub.__all__


def test_modules_are_where_nni_has_them():
    import nasx.space

    assert AutoActivation is nasx.space.AutoActivation
    assert NasBench101Cell is nasx.space.NasBench101Cell


def test_mobilenetv3_width_multipliers():
    default = search_space(MobileNetV3Space())
    assert default["s3/width"].values == [32, 40, 48]  # 0.75x, 1x, 1.25x of 40
    wide = search_space(MobileNetV3Space(width_multipliers=(0.5, 1.0, 2.0)))
    assert wide["s3/width"].values == [24, 40, 80]
    fixed = MobileNetV3Space(width_multipliers=1.0, num_labels=10, dropout_rate=0.1)
    assert not any(label.endswith("/width") for label in search_space(fixed))
    assert fixed.classifier.out_features == 10 and fixed.dropout.p == 0.1


@pytest.mark.parametrize("bad", [(), 0.0, (1.0, -1.0), "wide"])
def test_mobilenetv3_bad_width_multipliers(bad):
    with pytest.raises(ValueError, match="width_multipliers"):
        MobileNetV3Space(width_multipliers=bad)


def test_mobilenetv3_refuses_nnis_skeleton_arguments_by_name():
    with pytest.raises(TypeError, match=r"base_widths.*skeleton="):
        MobileNetV3Space(base_widths=(16, 16, 24, 40, 80, 112, 160, 960, 1280))
    with pytest.raises(TypeError, match="unexpected"):
        MobileNetV3Space(no_such_argument=1)


def test_nasbench201_cell_with_nnis_arguments():
    ops = {
        "conv": lambda c_in, c_out: nn.Conv2d(c_in, c_out, 1),
        "zero": lambda c_in, c_out: nn.Conv2d(c_in, c_out, 1, bias=False),
    }
    cell = NasBench201Cell(ops, 3, 5, num_tensors=3, label="nb")
    assert list(search_space(cell)) == ["nb/0_1", "nb/0_2", "nb/1_2"]
    x = torch.randn(2, 3, 4, 4)
    assert cell(x).shape == (2, 5, 4, 4)
    arch = {"nb/0_1": "conv", "nb/0_2": "zero", "nb/1_2": "conv"}
    with model_context(arch):
        fixed = NasBench201Cell(ops, 3, 5, num_tensors=3, label="nb")
    # node 2 = op(0->2)(x) + op(1->2)(node 1), node 1 = op(0->1)(x), with the fixed ops
    node1 = fixed.layers[0][0](x)
    expected = fixed.layers[1][0](x) + fixed.layers[1][1](node1)
    assert isinstance(fixed.layers[1][0], nn.Conv2d) and fixed.layers[1][0].bias is None
    assert torch.allclose(fixed(x), expected)


def test_nasbench201_cell_bad_arguments():
    with pytest.raises(ValueError, match="op_candidates"):
        NasBench201Cell({}, 3, 3)
    with pytest.raises(ValueError, match="num_tensors"):
        NasBench201Cell([lambda i, o: nn.Identity()], 3, 3, num_tensors=1)
