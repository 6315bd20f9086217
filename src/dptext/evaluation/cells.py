"""The grid's settings and its cells: every (mechanism, epsilon) x metric, and each cell's seed.

Each cell draws its randomness from its own generator, seeded from (``seed``, mechanism,
epsilon, metric): a cell gives the same result whether the grid ran in one go or was
interrupted and resumed, and whichever cells ran before it.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

from dptext.errors import DPTextError
from dptext.evaluation import CLASSIFIERS, METRICS
from dptext.evaluation.baselines import BASELINES

# House of Commons party inference is opt-in: the attacker finds no signal even on clean text
# (docs/evaluation.md) and its long speeches make it the costliest attribute cell.
DEFAULT_ATTRIBUTE_DATASETS = ("health_tweets",)


@dataclass
class GridConfig:
    mechanisms: list[str]
    epsilons: dict[str, list[float]]  # per mechanism
    dataset: str = "rotten_tomatoes"
    metrics: list[str] = field(default_factory=lambda: list(METRICS))
    seed: int = 0
    split_seed: int = 0
    n_train: int | None = 1000
    n_test: int | None = 500
    deniability_words: int = 100
    deniability_runs: int = 200
    inversion_samples: int = 2000
    bayes_samples: int = 400
    attribute_datasets: list[str] = field(default_factory=lambda: list(DEFAULT_ATTRIBUTE_DATASETS))
    attribute_train: int | None = 1000
    attribute_test: int | None = 400
    encoder: str = "minilm"
    lm_texts: int | None = 100
    lm_model: str | None = None  # None: the packaged LM of lm_kind
    lm_kind: str = "causal"  # lm_inference attack: "causal" (SmolLM2) or "masked" (minilm-mlm)
    classifier: str = "logreg"
    baselines: bool = True
    # the user's own labelled file instead of a packaged dataset (``dataset`` is then
    # ``file:<name>``); its fields
    data_file: str | None = None
    text_field: str = "text"
    label_field: str = "label"

    def __post_init__(self) -> None:
        unknown = sorted(set(self.metrics) - set(METRICS))
        if unknown:
            raise DPTextError(f"unknown metric {unknown[0]!r}; choose from {', '.join(METRICS)}")
        if self.classifier not in CLASSIFIERS:
            raise DPTextError(f"unknown classifier {self.classifier!r}; choose from "
                              f"{', '.join(CLASSIFIERS)}")
        if self.lm_kind not in ("causal", "masked"):
            raise DPTextError(f"lm_kind must be causal or masked, got {self.lm_kind!r}")
        if not self.mechanisms:
            raise DPTextError("no mechanism to evaluate")
        for name in self.mechanisms:
            if name not in BASELINES and not self.epsilons.get(name):
                raise DPTextError(f"no epsilon for mechanism {name!r}")

    @property
    def needs_labels(self) -> bool:
        """Whether a metric of the grid reads the dataset's labels (only ``utility`` does; the
        attribute metric's labels are its own packaged datasets')."""
        return "utility" in self.metrics

    def result_settings(self) -> dict[str, Any]:
        """Everything a cell's result depends on besides its own (mechanism, epsilon, metric)."""
        d = asdict(self)
        # which cells run, not what a cell gives (attribute cells name their dataset)
        for key in ("mechanisms", "epsilons", "metrics", "baselines", "attribute_datasets"):
            d.pop(key)
        return d


@dataclass(frozen=True)
class Cell:
    mechanism: str
    epsilon: float | None
    metric: str  # "attribute:<dataset>" for attribute cells

    @property
    def key(self) -> str:
        eps = "-" if self.epsilon is None else repr(float(self.epsilon))
        return f"{self.mechanism}|{eps}|{self.metric}"


def cells_of(config: GridConfig) -> list[Cell]:
    metrics = []
    for metric in config.metrics:
        if metric == "attribute":
            metrics += [f"attribute:{d}" for d in config.attribute_datasets]
        else:
            metrics.append(metric)
    runs: list[tuple[str, float | None]] = []
    if config.baselines:
        runs += [(b, None) for b in BASELINES if b not in config.mechanisms]
    for name in config.mechanisms:
        if name in BASELINES:
            runs.append((name, None))
        else:
            runs += [(name, float(e)) for e in config.epsilons[name]]
    return [Cell(n, e, m) for n, e in runs for m in metrics]


def cell_seed(seed: int, cell: Cell) -> int:
    digest = hashlib.sha256(f"{seed}|{cell.key}".encode()).digest()
    return int.from_bytes(digest[:8], "little")
