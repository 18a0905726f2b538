"""Hugging Face in and out: a tiny random GPT-2 becomes the equal GPT-space model, is pruned, and
the pruned model is saved as a smaller GPT-2 that from_pretrained loads with the same logits;
Llama is refused naming a module."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from nasx.hub.gpt import GPTSpace, gpt_arch  # noqa: E402
from nasx.lm import importance, prune  # noqa: E402
from nasx.lm.hf import UnsupportedModelError, from_hf, to_hf  # noqa: E402


def _gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=32, n_positions=8, n_embd=32, n_layer=3, n_head=4,
        bos_token_id=None, eos_token_id=None,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)  # weights that matter everywhere
    return model


def _tokens(seed=0):
    return torch.randint(0, 32, (2, 8), generator=torch.Generator().manual_seed(seed))


def test_gpt2_in_gives_the_same_logits():
    hf = _gpt2()
    space, ours = from_hf(hf)
    x = _tokens()
    with torch.no_grad():
        torch.testing.assert_close(ours.eval()(x), hf(x).logits, rtol=1e-4, atol=1e-4)


def test_pruned_gpt2_out_is_loaded_by_from_pretrained(tmp_path):
    hf = _gpt2()
    _, ours = from_hf(hf)
    space = GPTSpace(
        vocab_size=32, block_size=8, search_embed_dim=(16, 32), search_depth=(2, 3),
        search_num_heads=(2, 4), search_mlp_ratio=(4.0,), head_dim=8,
    )  # fmt: skip
    data = [(_tokens(i), None) for i in range(3)]
    child = prune(
        ours,
        space,
        {**gpt_arch(16, [2, 2], [4.0, 4.0]), "num_head_2": 2, "mlp_ratio_2": 4.0},
        importance(ours, data),
    ).eval()
    small = to_hf(child)
    small.save_pretrained(tmp_path)
    loaded = transformers.GPT2LMHeadModel.from_pretrained(tmp_path).eval()
    assert (loaded.config.n_embd, loaded.config.n_layer, loaded.config.n_head) == (16, 2, 2)
    assert sum(p.numel() for p in loaded.parameters()) < sum(p.numel() for p in hf.parameters())
    x = _tokens(5)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x).logits, child(x), rtol=1e-4, atol=1e-4)


def test_what_gpt2_cannot_hold_is_named():
    _, ours = from_hf(_gpt2())
    space = GPTSpace(
        vocab_size=32, block_size=8, search_embed_dim=(32,), search_depth=(3,),
        search_num_heads=(2, 4), search_mlp_ratio=(4.0,), head_dim=8,
    )  # fmt: skip
    imp = importance(ours, [(_tokens(), None)])
    child = prune(ours, space, gpt_arch(32, [2, 4, 4], [4.0] * 3), imp)
    with pytest.raises(ValueError, match="layer 1 has 4 heads .* GPT-2 needs them equal"):
        to_hf(child)


def test_llama_is_refused_naming_the_module():
    config = transformers.LlamaConfig(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=8,
    )  # fmt: skip
    with pytest.raises(
        UnsupportedModelError, match=r"LlamaForCausalLM: module .*\(Llama\w+\) is not understood"
    ):
        from_hf(transformers.LlamaForCausalLM(config))
