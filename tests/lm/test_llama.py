"""Llama in and out: a tiny random LlamaForCausalLM (grouped-query attention, tied or untied
embeddings) is pruned in depth, MLP width, kv groups and hidden size; the full-size prune is the
parent, what the parent does not use goes without changing its logits, the child round-trips
through save_pretrained / from_pretrained, and what is not a Llama is refused naming the module."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from nasx.lm.hf import UnsupportedModelError  # noqa: E402
from nasx.lm.llama import (  # noqa: E402
    LlamaLogits,
    llama_arch,
    llama_importance,
    llama_param_count,
    llama_prune_space,
    prune_llama,
)


def _llama(tied=False, bias=False):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=32, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
        num_attention_heads=8, num_key_value_heads=4, head_dim=8, max_position_embeddings=16,
        tie_word_embeddings=tied, attention_bias=bias, mlp_bias=bias, rms_norm_eps=1e-6,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)  # weights that matter everywhere
    return model


def _tokens(seed=0):
    return torch.randint(0, 32, (2, 10), generator=torch.Generator().manual_seed(seed))


def _data(n=3):
    return [(_tokens(i), None) for i in range(n)]


def _logits(model, x):
    with torch.no_grad():
        return model(input_ids=x).logits


@pytest.mark.parametrize("tied", [False, True])
def test_the_full_size_prune_is_the_parent(tied):
    parent = _llama(tied=tied, bias=not tied)
    imp = llama_importance(parent, _data())
    child = prune_llama(parent, llama_arch(parent), imp).eval()
    x = _tokens(7)
    torch.testing.assert_close(_logits(child, x), _logits(parent, x), rtol=1e-5, atol=1e-5)


def _silence(model):
    """kv group 1 of layer 0 and neuron 5 of layer 2 output nothing; layer 1 is the identity."""
    l0, l1, l2 = model.model.layers
    with torch.no_grad():
        l0.self_attn.v_proj.weight[8:16] = 0  # group 1's values: its two query heads output 0
        l2.mlp.up_proj.weight[5] = 0  # neuron 5: silu(gate) * 0 = 0
        l1.self_attn.o_proj.weight.zero_()  # both residual branches add 0: layer 1 is identity
        l1.mlp.down_proj.weight.zero_()


def test_pruning_what_is_unused_keeps_the_logits():
    parent = _llama()
    _silence(parent)
    imp = llama_importance(parent, _data())
    assert imp.heads[0][1] == 0 < imp.heads[0].sort().values[1]
    assert imp.neurons[2][5] == 0 < imp.neurons[2].sort().values[1]
    assert imp.layers.argmin() == 1 and imp.layers[1] < 1e-6 < imp.layers[0]
    # a uniform arch: every layer keeps 3 of 4 kv groups and 47 of 48 neurons, so silence the
    # same group and neuron in every kept layer
    with torch.no_grad():
        parent.model.layers[2].self_attn.v_proj.weight[8:16] = 0
        parent.model.layers[0].mlp.up_proj.weight[5] = 0
    imp = llama_importance(parent, _data())
    arch = {"num_hidden_layers": 2, "num_key_value_heads": 3, "intermediate_size": 47}
    child = prune_llama(parent, arch, imp).eval()
    assert (child.config.num_key_value_heads, child.config.num_attention_heads) == (3, 6)
    x = _tokens(3)
    torch.testing.assert_close(_logits(child, x), _logits(parent, x), rtol=1e-5, atol=1e-5)
    # the guard: keeping the least important instead changes the logits
    imp.heads = [-h for h in imp.heads]
    imp.layers = -imp.layers
    wrong = prune_llama(parent, arch, imp).eval()
    assert not torch.allclose(_logits(wrong, x), _logits(parent, x), atol=1e-3)


@pytest.mark.parametrize("tied", [False, True])
def test_a_pruned_child_saves_and_loads(tmp_path, tied):
    parent = _llama(tied=tied)
    arch = {
        "hidden_size": 16, "num_hidden_layers": 2, "num_key_value_heads": 2,
        "intermediate_size": 24,
    }  # fmt: skip
    child = prune_llama(parent, arch, llama_importance(parent, _data())).eval()
    assert llama_arch(child) == arch
    assert child.config.num_attention_heads == 4 and child.config.head_dim == 8
    assert child.model.layers[0].self_attn.q_proj.weight.shape == (32, 16)
    assert child.lm_head.weight.shape == (32, 16)
    if tied:
        assert child.lm_head.weight.data_ptr() == child.model.embed_tokens.weight.data_ptr()
    assert sum(p.numel() for p in child.parameters()) == llama_param_count(parent, arch)
    child.save_pretrained(tmp_path)
    loaded = transformers.LlamaForCausalLM.from_pretrained(tmp_path).eval()
    assert llama_arch(loaded) == arch
    assert loaded.config.tie_word_embeddings == tied
    x = _tokens(5)
    torch.testing.assert_close(_logits(loaded, x), _logits(child, x), rtol=1e-5, atol=1e-5)


def test_channels_follow_importance():
    parent = _llama()
    imp = llama_importance(parent, _data(1))
    imp.embed = torch.arange(32.0)  # the last 16 channels matter most
    child = prune_llama(parent, {"hidden_size": 16}, imp)
    w = parent.model.layers[1].mlp.gate_proj.weight
    torch.testing.assert_close(child.model.layers[1].mlp.gate_proj.weight, w[:, 16:])
    torch.testing.assert_close(child.model.norm.weight, parent.model.norm.weight[16:])
    torch.testing.assert_close(
        child.model.layers[0].self_attn.o_proj.weight,
        parent.model.layers[0].self_attn.o_proj.weight[16:],
    )


def test_the_logits_wrapper_and_the_space():
    parent = _llama()
    x = _tokens()
    torch.testing.assert_close(LlamaLogits(parent)(x), _logits(parent, x))
    archs = llama_prune_space(parent, depths=(2, 3), kv_heads=(2, 4))
    assert len(archs) == 3 * 2 * 2 * 3  # hidden x depth x kv x intermediate
    sizes = [llama_param_count(parent, a) for a in archs]
    assert sizes == sorted(sizes) and archs[-1] == llama_arch(parent)


def test_bad_input_is_named():
    parent = _llama()
    imp = llama_importance(parent, _data(1))
    with pytest.raises(
        ValueError, match="num_key_value_heads must be an int from 1 to the parent's 4"
    ):
        prune_llama(parent, {"num_key_value_heads": 5}, imp)
    with pytest.raises(ValueError, match=r"unknown Llama sizes \['heads'\]"):
        prune_llama(parent, {"heads": 2}, imp)
    with pytest.raises(ValueError, match="depth|num_hidden_layers values \\[4\\]"):
        llama_prune_space(parent, depths=(4,))


def test_what_is_not_a_llama_is_named():
    gpt2 = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=16, n_positions=4, n_embd=8, n_layer=1, n_head=2)
    )
    with pytest.raises(
        UnsupportedModelError, match=r"GPT2LMHeadModel: module .*\(GPT2\w+\) is not understood"
    ):
        llama_importance(gpt2, _data(1))
    parent = _llama()
    parent.model.layers[1].mlp = transformers.models.gpt2.modeling_gpt2.GPT2MLP(
        48, transformers.GPT2Config(n_embd=32)
    )
    with pytest.raises(
        UnsupportedModelError, match=r"module model\.layers\.1\.mlp \(GPT2MLP\) is not understood"
    ):
        prune_llama(parent, {}, llama_importance(parent, _data(1)))
