"""Evaluators: turn a model into a metric (a float, or a dict with a ``'default'`` float).

``import nasx.evaluator`` is light: the Lightning-based names (:class:`Lightning`,
:class:`Classification`, :class:`Regression`, :class:`Trainer`, :class:`LightningModule`) import
pytorch_lightning only when first used.

    >>> from nasx.evaluator import FunctionalEvaluator
    >>> FunctionalEvaluator(lambda model, scale: scale * 2, scale=3).evaluate(None)
    6
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasx._lazy import lazy_attributes

from .base import CostEvaluator, Evaluator, ModelEvaluator, normalize_metric
from .functional import FunctionalEvaluator

# Name -> module defining it; loaded on first use (most import pytorch_lightning).
_LAZY_NAMES = {
    "Trainer": "nasx.evaluator.lightning",
    "LightningModule": "nasx.evaluator.lightning",
    "Lightning": "nasx.evaluator.lightning",
    "CudaGraphTraining": "nasx.evaluator.cuda_graphs",
    "Checkpoint": "nasx.evaluator.checkpoint",  # a trial's state between budgets
    "DenseModule": "nasx.evaluator.dense",  # the bases of Detection and Segmentation
    "DenseLightning": "nasx.evaluator.dense",
    "SupervisedLearningModule": "nasx.evaluator.supervised",
    "ClassificationModule": "nasx.evaluator.supervised",
    "RegressionModule": "nasx.evaluator.supervised",
    "Classification": "nasx.evaluator.supervised",
    "Regression": "nasx.evaluator.supervised",
    "NasBench201Evaluator": "nasx.evaluator.nasbench201",
    "NasBench201Table": "nasx.evaluator.nasbench201",  # the table the evaluator looks up
    "Detection": "nasx.evaluator.detection",
    "DetectionModule": "nasx.evaluator.detection",
    "build_detector": "nasx.evaluator.detection",
    "Segmentation": "nasx.evaluator.segmentation",
    "SegmentationModule": "nasx.evaluator.segmentation",
    "SegmentationModel": "nasx.evaluator.segmentation",
    "DataLoader": "nasx.evaluator.tracing",  # NNI's traced DataLoader (a torch DataLoader)
    "trace": "nasx.evaluator.tracing",
    "report_intermediate_result": "nasx.evaluator.nni_report",  # NNI's nni.report_* calls
    "report_final_result": "nasx.evaluator.nni_report",
    # the DARTS retraining recipe as parts
    "DartsRecipe": "nasx.evaluator.recipes",
    "DartsRetrainModule": "nasx.evaluator.recipes",
    "darts_retrain_evaluator": "nasx.evaluator.recipes",
    "Cutout": "nasx.evaluator.augment",
    "RandomCropFlip": "nasx.evaluator.augment",
    "darts_train_transform": "nasx.evaluator.augment",
}

__all__ = [
    "Evaluator",
    "ModelEvaluator",
    "CostEvaluator",
    "FunctionalEvaluator",
    "normalize_metric",
    *_LAZY_NAMES,
]


# What type checkers and IDEs see: the names of _LAZY_NAMES, imported eagerly
# by them only (tests/test_typing.py checks that the lists agree).
if TYPE_CHECKING:
    from nasx.evaluator.augment import Cutout as Cutout
    from nasx.evaluator.augment import RandomCropFlip as RandomCropFlip
    from nasx.evaluator.augment import darts_train_transform as darts_train_transform
    from nasx.evaluator.checkpoint import Checkpoint as Checkpoint
    from nasx.evaluator.cuda_graphs import CudaGraphTraining as CudaGraphTraining
    from nasx.evaluator.dense import DenseLightning as DenseLightning
    from nasx.evaluator.dense import DenseModule as DenseModule
    from nasx.evaluator.detection import Detection as Detection
    from nasx.evaluator.detection import DetectionModule as DetectionModule
    from nasx.evaluator.detection import build_detector as build_detector
    from nasx.evaluator.lightning import Lightning as Lightning
    from nasx.evaluator.lightning import LightningModule as LightningModule
    from nasx.evaluator.lightning import Trainer as Trainer
    from nasx.evaluator.nasbench201 import NasBench201Evaluator as NasBench201Evaluator
    from nasx.evaluator.nasbench201 import NasBench201Table as NasBench201Table
    from nasx.evaluator.nni_report import report_final_result as report_final_result
    from nasx.evaluator.nni_report import report_intermediate_result as report_intermediate_result
    from nasx.evaluator.recipes import DartsRecipe as DartsRecipe
    from nasx.evaluator.recipes import DartsRetrainModule as DartsRetrainModule
    from nasx.evaluator.recipes import darts_retrain_evaluator as darts_retrain_evaluator
    from nasx.evaluator.segmentation import Segmentation as Segmentation
    from nasx.evaluator.segmentation import SegmentationModel as SegmentationModel
    from nasx.evaluator.segmentation import SegmentationModule as SegmentationModule
    from nasx.evaluator.supervised import Classification as Classification
    from nasx.evaluator.supervised import ClassificationModule as ClassificationModule
    from nasx.evaluator.supervised import Regression as Regression
    from nasx.evaluator.supervised import RegressionModule as RegressionModule
    from nasx.evaluator.supervised import SupervisedLearningModule as SupervisedLearningModule
    from nasx.evaluator.tracing import DataLoader as DataLoader
    from nasx.evaluator.tracing import trace as trace

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, globals())
