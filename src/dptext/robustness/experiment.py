"""The experiment of truncated_gumbel_metric_dp.txt section 6 (Tables 2-3): clean and
adversarial accuracy of normally trained, augmented and IBP-trained CNNs, per epsilon of a
metric-DP mechanism that both augments the training data and drives the genetic attacker.

The normal and IBP models do not depend on epsilon (IBP's substitution sets are each word's k
nearest words within a distance delta, fixed, as Jia et al.'s are fixed synonym lists), so they
are trained once; the augmented model is trained once per epsilon. Per epsilon, the attacks on
the models share one pool of mechanism draws (``draws.py``): each attack is distributed as with
fresh draws, and no draw is made twice.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.io import atomic_write
from dptext.robustness.attack import GeneticAttack, adversarial_accuracy
from dptext.robustness.augment import augment
from dptext.robustness.draws import DrawPool
from dptext.robustness.encoding import encode
from dptext.robustness.model import substitution_table
from dptext.robustness.training import (
    TrainConfig,
    accuracy,
    certified_accuracy,
    train_classifier,
)

DEFENCES = ("normal", "augmented", "ibp")


@dataclass(frozen=True)
class ExperimentConfig:
    mechanism: str = "gumbel"
    epsilons: tuple[float, ...] = (250.0, 2000.0, 20000.0)
    defences: tuple[str, ...] = DEFENCES
    train_size: int | None = 2000  # training texts (a seeded random sample); None: all
    test_size: int | None = None  # texts for clean accuracy; None: the whole test split
    attack_size: int = 200  # texts attacked (the first of the test sample)
    copies: int = 4  # augmentation copies per example (the paper's four)
    ibp_k: int = 8  # IBP substitution set: the k nearest words (Alzantot et al.'s N = 8) ...
    ibp_delta: float | None = 0.6  # ... within this distance (None: all k); docs/robustness.md
    ibp_epochs: int = 12  # IBP trains longer (warm-up + ramp, Jia et al.); once per run
    ibp_warmup: int = 2  # epochs of normal training before the IBP ramp
    population: int = 20
    generations: int = 10
    max_queries: int | None = None
    seed: int = 0
    train: TrainConfig = field(default_factory=lambda: TrainConfig(epochs=6))

    def __post_init__(self) -> None:
        unknown = sorted(set(self.defences) - set(DEFENCES))
        if unknown or not self.defences:
            raise DPTextError(f"unknown defence {unknown[0] if unknown else ''!r}; "
                              f"choose from {', '.join(DEFENCES)}")
        if not self.epsilons:
            raise DPTextError("give at least one epsilon")
        if self.ibp_delta is not None and not self.ibp_delta > 0:
            raise DPTextError(f"ibp_delta must be > 0 (or None), got {self.ibp_delta!r}")
        if not 0 <= self.train.kappa <= 1:
            raise DPTextError(f"the IBP kappa must be in [0, 1], got {self.train.kappa!r}")
        if not 0 <= self.ibp_warmup < self.ibp_epochs:
            raise DPTextError(f"need 0 <= ibp_warmup < ibp_epochs, got {self.ibp_warmup} and "
                              f"{self.ibp_epochs}")

    @property
    def ibp_train(self) -> TrainConfig:
        return replace(self.train, epochs=self.ibp_epochs, warmup_epochs=self.ibp_warmup)


@dataclass(frozen=True)
class Row:
    mechanism: str
    epsilon: float
    defence: str
    clean_accuracy: float
    adversarial_accuracy: float
    certified_accuracy: float  # on the attacked sample, against the IBP substitution sets
    attacked: int
    fooled: int
    mean_queries: float


def step_count(config: ExperimentConfig) -> int:
    """Progress messages :func:`run_experiment` emits (for a progress bar)."""
    fixed = len({"normal", "ibp"} & set(config.defences))
    per_eps = len(config.defences) + ("augmented" in config.defences)
    return fixed + per_eps * len(config.epsilons)


def _labels(dataset) -> tuple[np.ndarray, list[str]]:
    names = sorted(set(dataset.labels))
    lookup = {n: i for i, n in enumerate(names)}
    return np.array([lookup[x] for x in dataset.labels], dtype=np.int64), names


def run_experiment(train_set, test_set, space: EmbeddingSpace, config: ExperimentConfig, *,
                   progress: Callable[[str], None] | None = None) -> list[Row]:
    """One row per (epsilon, defence). ``train_set``/``test_set``: datasets (``texts``,
    ``labels``); the subsampling of ``config`` is applied here."""
    from dptext.mechanisms.registry import mechanism

    say = progress or (lambda _msg: None)
    seeds = iter(int(v) for v in np.random.SeedSequence(config.seed).generate_state(64))
    train_set, test_set = train_set.head(config.train_size), test_set.head(config.test_size)
    y_train, names = _labels(train_set)
    y_test = np.array([names.index(x) if x in names else -1 for x in test_set.labels])
    x_train, x_test = encode(train_set.texts, space), encode(test_set.texts, space)
    n_attack = min(config.attack_size, len(test_set))
    x_attack, y_attack = x_test[:n_attack], y_test[:n_attack]
    table = substitution_table(space, config.ibp_k, config.ibp_delta)
    fixed = {}
    if "normal" in config.defences:
        say("training the normal model")
        fixed["normal"] = train_classifier(space, x_train, y_train, config=config.train,
                                           seed=next(seeds))
    if "ibp" in config.defences:
        say("training the IBP model")
        fixed["ibp"] = train_classifier(space, x_train, y_train, config=config.ibp_train,
                                        substitutions=table, seed=next(seeds))
    rows = []
    for eps in config.epsilons:
        mech = mechanism(config.mechanism, epsilon=eps, space=space, oov="keep").fit()
        models = dict(fixed)
        if "augmented" in config.defences:
            say(f"epsilon={eps:g}: augmenting x{config.copies + 1} and training")
            bigger = augment(train_set, mech, config.copies, rng=next(seeds))
            models["augmented"] = train_classifier(
                space, encode(bigger.texts, space), np.tile(y_train, config.copies + 1),
                config=config.train, seed=next(seeds))
        attack = GeneticAttack(mech, population=config.population,
                               generations=config.generations, max_queries=config.max_queries)
        pool = DrawPool(mech, x_attack, rng=next(seeds))
        for defence in config.defences:
            say(f"epsilon={eps:g}: attacking the {defence} model")
            model = models[defence]
            adv, stats = adversarial_accuracy(model, x_attack, y_attack, attack,
                                              rng=next(seeds), pool=pool)
            rows.append(Row(config.mechanism, eps, defence, accuracy(model, x_test, y_test),
                            adv, certified_accuracy(model, x_attack, y_attack, table),
                            **stats))
    return rows


# ------------------------------------------------------------------- output
def to_csv(rows: Sequence[Row]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(Row.__dataclass_fields__), lineterminator="\n")
    writer.writeheader()
    writer.writerows(asdict(r) for r in rows)
    return buf.getvalue()


def to_markdown(rows: Sequence[Row], config: ExperimentConfig, *, n_test: int,
                n_attack: int) -> str:
    """The paper's table layout: one column per epsilon, clean and adversarial rows per
    defence (percent)."""
    epsilons = list(dict.fromkeys(r.epsilon for r in rows))
    defences = list(dict.fromkeys(r.defence for r in rows))
    cell = {(r.defence, r.epsilon): r for r in rows}
    delta = "" if config.ibp_delta is None else f" within distance {config.ibp_delta:g}"
    lines = [
        f"Mechanism `{config.mechanism}`; clean accuracy on {n_test} test texts, adversarial "
        f"accuracy on the first {n_attack} of them (subsample; genetic attack, population "
        f"{config.population}, {config.generations} generations; standard error of an "
        f"adversarial accuracy at most {50 / max(n_attack, 1) ** 0.5:.1f} points). Certified: "
        f"share of those {n_attack} texts proven robust by interval bounds against the IBP "
        f"substitution sets (the {config.ibp_k} nearest words{delta}), not against the "
        "mechanism's substitutions.",
        "",
        "| defence | metric | " + " | ".join(f"eps={e:g}" for e in epsilons) + " |",
        "|---|---|" + "---|" * len(epsilons),
    ]
    for d in defences:
        for label, attr in (("clean", "clean_accuracy"), ("adversarial", "adversarial_accuracy"),
                            ("certified", "certified_accuracy")):
            vals = [f"{100 * getattr(cell[d, e], attr):.1f}" for e in epsilons]
            lines.append(f"| {d} | {label} | " + " | ".join(vals) + " |")
    return "\n".join(lines) + "\n"


def plot(rows: Sequence[Row], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for d in dict.fromkeys(r.defence for r in rows):
        mine = [r for r in rows if r.defence == d]
        eps = [r.epsilon for r in mine]
        line, = ax.plot(eps, [100 * r.clean_accuracy for r in mine], "o-", label=f"{d} clean")
        ax.plot(eps, [100 * r.adversarial_accuracy for r in mine], "s--", color=line.get_color(),
                label=f"{d} adversarial")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=110)
    plt.close(fig)


def write_outputs(rows: Sequence[Row], config: ExperimentConfig, out: Path, *, n_test: int,
                  n_attack: int) -> list[Path]:
    """results.csv, results.md, config.json and robustness_<mechanism>.png in ``out``
    (each written atomically)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.csv", out / "results.md", out / "config.json",
             out / f"robustness_{config.mechanism}.png"]
    with atomic_write(paths[0], encoding="utf-8") as f:
        f.write(to_csv(rows))
    with atomic_write(paths[1], encoding="utf-8") as f:
        f.write(to_markdown(rows, config, n_test=n_test, n_attack=n_attack))
    with atomic_write(paths[2], encoding="utf-8") as f:
        json.dump(asdict(config), f, indent=2)
        f.write("\n")
    plot(rows, paths[3], f"{config.mechanism}: clean and adversarial accuracy")
    return paths
