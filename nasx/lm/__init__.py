"""Language models: train and search the elastic GPT space (:mod:`nasx.hub.gpt`), and derive
smaller models from a trained parent (Minitron's prune-then-distill).

Modules: ``training`` (next-token loss, plain training, the sandwich rule on a supernet,
distillation from a parent's logits), ``prune`` (activation importance on a calibration set,
pruned candidates to a parameter target, ranked after distillation), ``hf`` (GPT-2 in and out of
the GPT space), ``llama`` (a Hugging Face ``LlamaForCausalLM`` pruned as it is).
See docs/language_models.md.
"""

from __future__ import annotations

from .prune import (
    Importance,
    PrunedCandidate,
    importance,
    model_arch,
    prune,
    prune_search,
    prune_space,
)
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
    "distill",
    "evaluate_loss",
    "importance",
    "kl_logits",
    "lm_loss",
    "model_arch",
    "prune",
    "prune_search",
    "prune_space",
    "sandwich_archs",
    "train",
    "train_elastic",
]
