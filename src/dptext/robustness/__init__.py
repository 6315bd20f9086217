"""Adversarial robustness through metric-DP perturbations (truncated_gumbel_metric_dp.txt,
sections 4-6): augmented training, a CNN classifier with interval bound propagation (IBP)
training (Jia et al. 2019), and the genetic word-substitution attack (Alzantot et al. 2018)
whose substitutions are mechanism draws. See docs/robustness.md.

Importing this package imports torch.
"""

from dptext.robustness.attack import AttackResult, GeneticAttack, adversarial_accuracy
from dptext.robustness.augment import augment
from dptext.robustness.encoding import encode
from dptext.robustness.experiment import ExperimentConfig, run_experiment
from dptext.robustness.model import CNNClassifier, substitution_table
from dptext.robustness.training import TrainConfig, accuracy, train_classifier

__all__ = [
    "AttackResult", "CNNClassifier", "ExperimentConfig", "GeneticAttack", "TrainConfig",
    "accuracy", "adversarial_accuracy", "augment", "encode", "run_experiment",
    "substitution_table", "train_classifier",
]
