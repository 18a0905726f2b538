"""Language models: train and search the elastic GPT space (:mod:`nasx.hub.gpt`), and derive
smaller models from a trained parent (Minitron's prune-then-distill).

Modules: ``training`` (next-token loss, plain training, the sandwich rule on a supernet,
distillation from a parent's logits), ``prune`` (activation importance on a calibration set,
pruned candidates to parameter, latency or memory targets, ranked after distillation),
``targets`` (those targets: memory as weights plus KV cache, latency through nasx.hardware),
``hf`` (GPT-2 in and out of the GPT space), ``llama`` (a Hugging Face ``LlamaForCausalLM`` pruned as it is).
See docs/language_models.md.
"""

from __future__ import annotations

from .llama import llama_importance, llama_prune_search, llama_prune_space, prune_llama
from .prune import (
    Importance,
    PrunedCandidate,
    importance,
    model_arch,
    prune,
    prune_search,
    prune_space,
)
from .targets import Targets, kv_cache_bytes, measure_lm_latency, memory_bytes
from .training import (
    distill,
    evaluate_loss,
    kl_logits,
    lm_loss,
    sandwich_archs,
    train,
    train_elastic,
)

__all__ = [
    "Importance",
    "PrunedCandidate",
    "Targets",
    "distill",
    "evaluate_loss",
    "importance",
    "kl_logits",
    "kv_cache_bytes",
    "llama_importance",
    "llama_prune_search",
    "llama_prune_space",
    "lm_loss",
    "measure_lm_latency",
    "memory_bytes",
    "model_arch",
    "prune",
    "prune_llama",
    "prune_search",
    "prune_space",
    "sandwich_archs",
    "train",
    "train_elastic",
]
