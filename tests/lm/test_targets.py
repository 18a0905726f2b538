"""Targets of a prune search: memory is weights plus the KV cache transformers really keeps,
latency comes from a measurement (a stub here, where timing would be flaky; the real one once),
every candidate meets every target given, and bad targets are refused by name."""

from __future__ import annotations

import pytest
import torch

from nasx.hub.gpt import GPTSpace, gpt_arch
from nasx.lm import prune_search, prune_space
from nasx.lm.prune import _param_count
from nasx.lm.targets import Targets, kv_cache_bytes, memory_bytes

SPACE = dict(
    vocab_size=32,
    block_size=8,
    search_embed_dim=(16, 24, 32),
    search_depth=(2, 3),
    search_num_heads=(1, 2),
    search_mlp_ratio=(1.0, 2.0),
    head_dim=8,
)


def _parent():
    torch.manual_seed(0)
    space = GPTSpace(**SPACE)
    return space, space.freeze(gpt_arch(32, [2, 2, 2], [2.0] * 3)).eval()


def _data(n=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 32, (n, 2, 9), generator=g)
    return [(t[:, :-1], t[:, 1:]) for t in tokens]


def _params(model):
    return sum(p.numel() for p in model.parameters())


def _search(space, parent, **kw):
    kw.setdefault("max_candidates", 3)
    return prune_search(parent, space, _data(), _data(), _data(seed=1), distill_steps=2, **kw)


def test_the_kv_cache_is_what_transformers_keeps():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config)
    out = model(input_ids=torch.zeros(3, 10, dtype=torch.long), use_cache=True)
    cache = out.past_key_values  # its form depends on the version (nasx[lm]'s floor: 4.45)
    if hasattr(cache, "layers"):  # a cache layer per decoder layer (4.54 and newer)
        pairs = [(layer.keys, layer.values) for layer in cache.layers]
    elif hasattr(cache, "key_cache"):  # the keys and the values in two lists
        pairs = list(zip(cache.key_cache, cache.value_cache, strict=True))
    else:  # the legacy form: a (keys, values) tuple per layer (before 4.48)
        pairs = [tuple(layer) for layer in cache]
    kept = sum(t.numel() * t.element_size() for pair in pairs for t in pair)
    assert kv_cache_bytes([2 * 4] * 3, context=10, batch_size=3, bytes_per_value=4) == kept
    assert memory_bytes(_params(model), [8] * 3, 10, 3, 4) == _params(model) * 4 + kept


def test_a_stub_latency_target_keeps_the_fast_ones_largest_first():
    space, parent = _parent()
    calls = []

    def stub(model):  # "milliseconds": one per thousand parameters
        calls.append(model)
        return _params(model) / 1000

    target = _params(parent) / 1000 / 2
    ranked = _search(space, parent, target_latency_ms=target, latency=stub)
    assert 1 <= len(ranked) <= 3 and calls
    for c in ranked:
        assert c.latency_ms is not None and c.latency_ms <= target
        assert c.latency_ms == c.params / 1000
    # without a parameter target, the largest archs of the space under the ceiling come first
    sizes = sorted(_param_count(space, a) for a in prune_space(parent, space))
    under = [n for n in sizes if n / 1000 <= target]
    assert sorted(c.params for c in ranked) == under[-len(ranked) :]
    assert len(calls) < len(sizes)  # the measurement stops once enough candidates are found
    with pytest.raises(ValueError, match="no candidate meets target_latency_ms=0.001"):
        _search(space, parent, target_latency_ms=0.001, latency=stub)


def test_a_memory_target_counts_weights_and_kv_cache():
    space, parent = _parent()
    full = memory_bytes(_params(parent), [16] * 3, 8, 4, 4)
    ranked = _search(space, parent, target_memory_bytes=full // 2, context=8, batch_size=4)
    assert ranked
    for c in ranked:
        kv = [b.attn.k.out_features for b in c.model.blocks]
        assert c.memory_bytes == _params(c.model) * 4 + 2 * sum(kv) * 8 * 4 * 4
        assert c.memory_bytes <= full // 2
    with pytest.raises(ValueError, match=r"no arch of the space is at most 1000 bytes .*nearest"):
        _search(space, parent, target_memory_bytes=1000)


def test_targets_combine_and_the_real_measurement_runs():
    space, parent = _parent()
    total = _params(parent)
    ranked = _search(
        space,
        parent,
        target_params=total // 2,
        tolerance=0.3,
        target_latency_ms=1e6,
        max_candidates=1,
    )
    (c,) = ranked
    assert c.latency_ms is not None and 0 < c.latency_ms < 1e6  # nasx.hardware's median
    assert abs(c.params - total // 2) <= 0.3 * total // 2


@pytest.mark.parametrize(
    ("kw", "named"),
    [
        ({}, "give at least one target"),
        ({"target_latency_ms": -1.0}, "target_latency_ms must be a positive finite number"),
        ({"target_latency_ms": float("nan")}, "target_latency_ms must be a positive finite"),
        ({"target_memory_bytes": 0}, "target_memory_bytes must be a positive int"),
        ({"target_memory_bytes": 1.5}, "target_memory_bytes must be a positive int"),
        ({"target_params": True}, "target_params must be"),
        ({"target_params": "1000"}, "target_params must be a positive finite number"),
        ({"target_params": 10, "tolerance": -0.1}, "tolerance must be a number >= 0"),
        ({"target_params": 10, "context": 0}, "context must be a positive int"),
        ({"target_params": 10, "batch_size": 2.0}, "batch_size must be a positive int"),
    ],
)
def test_bad_targets_are_named(kw, named):
    with pytest.raises(ValueError, match=named):
        Targets(**kw)


def test_prune_search_names_bad_targets_before_any_work():
    space, parent = _parent()
    with pytest.raises(ValueError, match="target_latency_ms must be a positive finite number"):
        prune_search(parent, space, [], [], [], target_latency_ms=0)
    with pytest.raises(ValueError, match="context must be at most the space's block_size=8"):
        prune_search(parent, space, [], [], [], target_memory_bytes=10**6, context=9)


def test_llama_search_meets_the_targets():
    transformers = pytest.importorskip("transformers")
    from nasx.lm.llama import llama_prune_search

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=32, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
        num_attention_heads=8, num_key_value_heads=4, head_dim=8, max_position_embeddings=64,
    )  # fmt: skip
    parent = transformers.LlamaForCausalLM(config)
    n = _params(parent)
    budget = memory_bytes(n, [64] * 3, 64, 2, 4) // 2
    ranked = llama_prune_search(
        parent, _data(), _data(), _data(seed=1), target_memory_bytes=budget, batch_size=2,
        target_latency_ms=n / 1000, latency=lambda m: _params(m) / 1000, max_candidates=2,
        distill_steps=2,
    )  # fmt: skip
    assert len(ranked) == 2
    for c in ranked:
        cfg = c.model.config
        kv = cfg.num_key_value_heads * cfg.head_dim * cfg.num_hidden_layers
        assert c.memory_bytes == _params(c.model) * 4 + 2 * kv * 64 * 2 * 4 <= budget
        assert isinstance(c.model, transformers.LlamaForCausalLM)
    assert ranked[0].loss_distilled <= ranked[1].loss_distilled
