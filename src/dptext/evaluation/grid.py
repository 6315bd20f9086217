"""The evaluation grid: every (mechanism, epsilon) x metric cell, resumable, with a report.

Cells run in a fixed order and each draws its randomness from its own generator, seeded from
(``seed``, mechanism, epsilon, metric): a cell gives the same result whether the grid ran in one
go or was interrupted and resumed, and whichever cells ran before it. The two baselines
(``noiseless``, ``random``; :mod:`dptext.evaluation.baselines`) run once each, without epsilon.

Outputs in ``out``: ``cells.jsonl`` (the store), ``config.json``, ``results.json``,
``results.csv`` (long format: one row per cell and value), the PNG plots and ``report.md``.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dptext.datasets import Dataset, load_dataset
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.evaluation import CLASSIFIERS, METRICS
from dptext.evaluation.baselines import BASELINES, build_mechanism
from dptext.evaluation.encoders import CachedEncoder, make_encoder
from dptext.evaluation.store import CellStore
from dptext.io import atomic_write
from dptext.mechanisms.base import Mechanism, WordMechanism, registered
from dptext.text import split_words

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


class _Context:
    """What the cells of one run share: data, encoder (with its cache), space, fitted mechanisms."""

    def __init__(self, config: GridConfig, space: EmbeddingSpace | None,
                 encoder: CachedEncoder | None) -> None:
        self.config = config
        self._space = space
        self.encoder = encoder or make_encoder(config.encoder)
        self._data: dict[tuple[str, str], Dataset] = {}
        self._mechanism: tuple[tuple[str, float | None], Mechanism] | None = None
        self._prefitted: set[str] = set()
        self._lm = None

    @property
    def space(self) -> EmbeddingSpace:
        if self._space is None:
            from dptext.resources import default_space

            self._space = default_space()
        return self._space

    def data(self, name: str, split: str, n: int | None) -> Dataset:
        key = (name, split)
        if key not in self._data:
            self._data[key] = load_dataset(name, split=split, seed=self.config.split_seed)
        return self._data[key].head(n)

    def mechanism(self, name: str, epsilon: float | None) -> tuple[Mechanism, float]:
        """The fitted mechanism (the last one is kept: cells of one mechanism run together)."""
        if self._mechanism is not None and self._mechanism[0] == (name, epsilon):
            return self._mechanism[1], 0.0
        self._mechanism = None
        start = time.perf_counter()
        self._prefit(name)
        m = build_mechanism(name, epsilon, self.space)
        m.fit()
        self._mechanism = ((name, epsilon), m)
        return m, time.perf_counter() - start

    def finetune_dir(self):
        """Encoder directory fine-tuned by ``classifier="finetune"``: the packaged MiniLM."""
        from dptext.resources import minilm_dir

        return minilm_dir()

    def lm(self):
        """(LM, tokenizer) of the LM inference attack (``lm_kind``), loaded once per run."""
        if self._lm is None:
            from dptext.lm.loading import load_model, resolve_model

            causal = self.config.lm_kind == "causal"
            self._lm = load_model(resolve_model(self.config.lm_model, causal=causal),
                                  causal=causal)
        return self._lm

    def _prefit(self, name: str) -> None:
        """Mechanisms with ``fit_many`` (SanText) fit all the grid's epsilons of ``name`` in one
        shared pass the first time one of them is needed (saved to the fitted-table cache, from
        which each cell's ``fit`` then loads)."""
        cls = registered().get(name)
        if name in self._prefitted or cls is None or not hasattr(cls, "fit_many"):
            return
        self._prefitted.add(name)
        cls.fit_many(self.config.epsilons.get(name, []), space=self.space)

    def deniability_words(self) -> list[str]:
        """The same word sample for every mechanism: distinct in-vocabulary words of the test
        texts, drawn with the grid seed."""
        test = self.data(self.config.dataset, "test", self.config.n_test)
        words = sorted({w.lower() for t in test.texts for w in split_words(t)[1::2]
                        if self.space.lookup(w) >= 0})
        rng = np.random.default_rng(self.config.seed)
        n = min(self.config.deniability_words, len(words))
        return sorted(rng.choice(words, size=n, replace=False).tolist()) if n else []


def _privatize(m: Mechanism, texts: list[str], rng) -> tuple[list[str], dict[str, float]]:
    from dptext.evaluation.cost import timed_privatize

    results, cost = timed_privatize(m, texts, rng)
    total = sum(r.report.tokens_total for r in results)
    privatized = sum(r.report.tokens_privatized for r in results)
    cost["privatized_fraction"] = privatized / total if total else 0.0
    return [r.text for r in results], cost


def _run_utility(ctx: _Context, m: Mechanism, rng) -> dict[str, Any]:
    from dptext.evaluation.utility import bleu, cosine_similarity, downstream_accuracy

    c = ctx.config
    train = ctx.data(c.dataset, "train", c.n_train)
    test = ctx.data(c.dataset, "test", c.n_test)
    sanitized, cost = _privatize(m, train.texts, rng)
    if c.classifier == "finetune":
        from dptext.evaluation.finetune import finetune_accuracy

        out = finetune_accuracy(str(ctx.finetune_dir()), sanitized, train.labels, test.texts,
                                test.labels, rng=rng)
    else:
        out = downstream_accuracy(ctx.encoder, sanitized, train.labels, test.texts,
                                  test.labels)
    out["bleu"] = bleu(train.texts, sanitized)
    out["cosine"] = cosine_similarity(ctx.encoder, train.texts, sanitized)
    out.update({f"sanitize_{k}": v for k, v in cost.items()})
    out.update(n_train=len(train), n_test=len(test))
    return out


def _run_cost(ctx: _Context, m: Mechanism, rng) -> dict[str, Any]:
    test = ctx.data(ctx.config.dataset, "test", ctx.config.n_test)
    return _privatize(m, test.texts, rng)[1]


def _run_inversion(ctx: _Context, m: Mechanism, rng) -> dict[str, Any]:
    from dptext.evaluation.inversion import token_inversion

    space = m.space if isinstance(m, WordMechanism) else ctx.space
    c = ctx.config
    return token_inversion(m, space, samples=c.inversion_samples, rng=rng,
                           bayes_samples=c.bayes_samples).summary()


def _run_deniability(ctx: _Context, m: Mechanism, rng) -> dict[str, Any]:
    from dptext.evaluation.deniability import plausible_deniability

    d = plausible_deniability(m, ctx.deniability_words(), runs=ctx.config.deniability_runs,
                              rng=rng)
    return {**d.summary(), "per_word": {"words": d.words, "N_w": d.n_w.tolist(),
                                        "S_w": d.s_w.tolist()}}


def _run_attribute(ctx: _Context, m: Mechanism, rng, dataset: str) -> dict[str, Any]:
    from dptext.evaluation.attribute import attribute_inference

    c = ctx.config
    train = ctx.data(dataset, "train", c.attribute_train)
    test = ctx.data(dataset, "test", c.attribute_test)
    sanitized_train, _ = _privatize(m, train.texts, rng)
    sanitized_test, _ = _privatize(m, test.texts, rng)
    out = attribute_inference(ctx.encoder, train.texts, sanitized_train, train.labels,
                              sanitized_test, test.labels)
    out.update(n_train=len(train), n_test=len(test), classes=len(set(train.labels)))
    return out


def _run_lm_inference(ctx: _Context, m: Mechanism, rng) -> dict[str, Any]:
    from dptext.evaluation.lm_inference import token_inference

    test = ctx.data(ctx.config.dataset, "test", ctx.config.lm_texts)
    sanitized, _ = _privatize(m, test.texts, rng)
    space = m.space if isinstance(m, WordMechanism) else ctx.space
    model, tokenizer = ctx.lm()
    return token_inference(model, tokenizer, test.texts, sanitized,
                           lambda w: space.lookup(w) >= 0, kind=ctx.config.lm_kind).summary()


_RUNNERS: dict[str, Callable[..., dict[str, Any]]] = {
    "utility": _run_utility, "cost": _run_cost, "inversion": _run_inversion,
    "deniability": _run_deniability, "lm_inference": _run_lm_inference,
}


def run_cell(ctx: _Context, cell: Cell) -> dict[str, Any]:
    record: dict[str, Any] = {"key": cell.key, "mechanism": cell.mechanism,
                              "epsilon": cell.epsilon, "metric": cell.metric}
    start = time.perf_counter()
    try:
        m, fit_seconds = ctx.mechanism(cell.mechanism, cell.epsilon)
    except DPTextError as err:  # e.g. an epsilon below what truncated Gumbel admits
        return {**record, "status": "skipped", "reason": str(err), "values": {}, "seconds": 0.0}
    rng = np.random.default_rng(cell_seed(ctx.config.seed, cell))
    if cell.metric.startswith("attribute:"):
        values = _run_attribute(ctx, m, rng, cell.metric.split(":", 1)[1])
    else:
        values = _RUNNERS[cell.metric](ctx, m, rng)
    values["guarantee"] = m.guarantee.describe()
    return {**record, "status": "ok", "values": values, "fit_seconds": fit_seconds,
            "seconds": time.perf_counter() - start}


def _settings_check(out: Path, config: GridConfig) -> None:
    path = out / "config.json"
    settings = config.result_settings()
    if path.is_file():
        previous = json.loads(path.read_text(encoding="utf-8"))
        old = previous.get("result_settings")
        if old is not None:  # a setting added after the directory was made: its default then
            defaults = json.loads(json.dumps(GridConfig(["-"], {"-": [1.0]}).result_settings()))
            old = {**{k: v for k, v in defaults.items() if k not in old}, **old}
        new = json.loads(json.dumps(settings))
        changed = sorted(k for k in new if old is None or old.get(k) != new[k])
        if changed:
            raise DPTextError(
                f"{out} holds results of a grid with other settings ({', '.join(changed)}); "
                "use another --out directory"
            )
    with atomic_write(path, encoding="utf-8") as f:
        json.dump({"config": asdict(config), "result_settings": settings}, f, indent=2)


def run_grid(config: GridConfig, out: str | Path, *, space: EmbeddingSpace | None = None,
             encoder: CachedEncoder | None = None, progress: bool = True,
             on_cell: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run every cell not yet in ``out/cells.jsonl``, then write results, plots and report
    (of every cell in the store, this grid's first); returns those records."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _settings_check(out, config)
    store = CellStore(out / "cells.jsonl")
    cells = cells_of(config)
    pending = [c for c in cells if c.key not in store]
    ctx = _Context(config, space, encoder)
    bar = None
    if progress and pending:
        from tqdm import tqdm

        bar = tqdm(total=len(cells), initial=len(cells) - len(pending), desc="grid", unit="cell")
    started = time.perf_counter()
    for cell in pending:
        if bar is not None:
            bar.set_postfix_str(cell.key)
        record = run_cell(ctx, cell)
        store.add(record)
        if on_cell is not None:
            on_cell(record)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    # the report covers every cell in the store: earlier runs may have had other mechanisms
    ordered = [c.key for c in cells]
    ordered += [k for k in store.cells if k not in set(ordered)]
    records = [store.cells[k] for k in ordered]
    write_results(out, records, config, run_seconds=time.perf_counter() - started)
    return records


def flat_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Long format: one row per cell and scalar value."""
    rows = []
    for r in records:
        for name, value in r["values"].items():
            if isinstance(value, dict | list):
                continue
            rows.append({"mechanism": r["mechanism"], "epsilon": r["epsilon"],
                         "metric": r["metric"], "name": name, "value": value})
    return rows


def write_results(out: Path, records: list[dict[str, Any]], config: GridConfig, *,
                  run_seconds: float) -> None:
    import csv

    from dptext.evaluation.plots import write_plots
    from dptext.evaluation.report import write_report

    with atomic_write(out / "results.json", encoding="utf-8") as f:
        json.dump(records, f, indent=1, default=_json_default)
    with atomic_write(out / "results.csv", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["mechanism", "epsilon", "metric", "name", "value"])
        writer.writeheader()
        writer.writerows(flat_rows(records))
    plots = write_plots(out, records)
    write_report(out, records, config, plots, run_seconds=run_seconds)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
