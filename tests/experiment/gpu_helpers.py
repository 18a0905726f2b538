"""Evaluators for the GPU trial tests (importable, so process-pool and Ray workers load them)."""

from __future__ import annotations

import os

import torch

from .helpers import width_metric


def visible_gpus(model) -> dict:
    """The metric, how many GPUs the trial sees (torch and ``CUDA_VISIBLE_DEVICES``), and a
    forward pass of the model on the GPU it was given."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    out = model.to("cuda")(torch.ones(2, 4, device="cuda"))
    return {
        "default": width_metric(model),
        "torch_devices": float(torch.cuda.device_count()),
        "visible_devices": float(len([d for d in visible.split(",") if d.strip()])),
        "ran_on_cuda": float(out.is_cuda),
    }


def oom_on_width_4(model) -> float:
    """Width 4 asks the GPU for far more memory than it has (a real CUDA OOM); the others run."""
    if model.fc1.out_features == 4:
        free, total = torch.cuda.mem_get_info()
        torch.empty(int(total * 4), dtype=torch.uint8, device="cuda")  # 4x the whole GPU
    out = model.to("cuda")(torch.ones(2, 4, device="cuda"))
    return width_metric(model) + 0.0 * float(out.sum().item())
