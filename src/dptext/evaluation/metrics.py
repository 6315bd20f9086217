"""The metric runners of the grid, registered by name: each takes the run's context, the
fitted mechanism and the cell's generator and returns the cell's values. A new metric is one
function decorated with :func:`metric` (and its name in ``dptext.evaluation.METRICS``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dptext.errors import DPTextError
from dptext.evaluation.cells import Cell, cell_seed
from dptext.evaluation.context import GridContext
from dptext.mechanisms.base import Mechanism
from dptext.mechanisms.word import WordMechanism

Runner = Callable[..., dict[str, Any]]
_RUNNERS: dict[str, Runner] = {}


def metric(name: str) -> Callable[[Runner], Runner]:
    """Register ``fn`` as the runner of metric ``name`` (a name is registered once)."""

    def add(fn: Runner) -> Runner:
        if name in _RUNNERS:
            raise DPTextError(f"metric {name!r} is already registered")
        _RUNNERS[name] = fn
        return fn

    return add


def runner(name: str) -> Runner:
    """The runner of metric ``name`` (``attribute:<dataset>`` runs the attribute metric)."""
    base = name.split(":", 1)[0]
    if base not in _RUNNERS:
        raise DPTextError(f"no runner for metric {name!r}; registered: {', '.join(_RUNNERS)}")
    return _RUNNERS[base]


def registered_metrics() -> list[str]:
    return list(_RUNNERS)


def _privatize(m: Mechanism, texts: list[str], rng) -> tuple[list[str], dict[str, float]]:
    from dptext.evaluation.cost import timed_privatize

    results, cost = timed_privatize(m, texts, rng)
    total = sum(r.report.tokens_total for r in results)
    privatized = sum(r.report.tokens_privatized for r in results)
    cost["privatized_fraction"] = privatized / total if total else 0.0
    return [r.text for r in results], cost


@metric("utility")
def _run_utility(ctx: GridContext, m: Mechanism, rng, metric_name: str) -> dict[str, Any]:
    from dptext.evaluation.utility import bleu, cosine_similarity, downstream_accuracy

    c = ctx.config
    train = ctx.data(c.dataset, "train", c.n_train)
    test = ctx.data(c.dataset, "test", c.n_test)
    # the originals (cosine) and, for the frozen-encoder classifier, the clean test set
    ctx.embed_clean(train.texts, *([] if c.classifier == "finetune" else [test.texts]))
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


@metric("cost")
def _run_cost(ctx: GridContext, m: Mechanism, rng, metric_name: str) -> dict[str, Any]:
    test = ctx.data(ctx.config.dataset, "test", ctx.config.n_test)
    return _privatize(m, test.texts, rng)[1]


@metric("inversion")
def _run_inversion(ctx: GridContext, m: Mechanism, rng, metric_name: str) -> dict[str, Any]:
    from dptext.evaluation.inversion import token_inversion

    space = m.space if isinstance(m, WordMechanism) else ctx.space
    c = ctx.config
    return token_inversion(m, space, samples=c.inversion_samples, rng=rng,
                           bayes_samples=c.bayes_samples).summary()


@metric("deniability")
def _run_deniability(ctx: GridContext, m: Mechanism, rng, metric_name: str) -> dict[str, Any]:
    from dptext.evaluation.deniability import plausible_deniability

    d = plausible_deniability(m, ctx.deniability_words(), runs=ctx.config.deniability_runs,
                              rng=rng)
    return {**d.summary(), "per_word": {"words": d.words, "N_w": d.n_w.tolist(),
                                        "S_w": d.s_w.tolist()}}


@metric("attribute")
def _run_attribute(ctx: GridContext, m: Mechanism, rng, metric_name: str) -> dict[str, Any]:
    from dptext.evaluation.attribute import attribute_inference

    dataset = metric_name.split(":", 1)[1]
    c = ctx.config
    train = ctx.data(dataset, "train", c.attribute_train)
    test = ctx.data(dataset, "test", c.attribute_test)
    ctx.embed_clean(train.texts)
    sanitized_train, _ = _privatize(m, train.texts, rng)
    sanitized_test, _ = _privatize(m, test.texts, rng)
    out = attribute_inference(ctx.encoder, train.texts, sanitized_train, train.labels,
                              sanitized_test, test.labels)
    out.update(n_train=len(train), n_test=len(test), classes=len(set(train.labels)))
    return out


@metric("lm_inference")
def _run_lm_inference(ctx: GridContext, m: Mechanism, rng, metric_name: str) -> dict[str, Any]:
    from dptext.evaluation.lm_inference import token_inference

    test = ctx.data(ctx.config.dataset, "test", ctx.config.lm_texts)
    sanitized, _ = _privatize(m, test.texts, rng)
    space = m.space if isinstance(m, WordMechanism) else ctx.space
    model, tokenizer = ctx.lm()
    return token_inference(model, tokenizer, test.texts, sanitized,
                           lambda w: space.lookup(w) >= 0, kind=ctx.config.lm_kind).summary()


def run_cell(ctx: GridContext, cell: Cell) -> dict[str, Any]:
    """One cell of the grid: its mechanism (fitted once per context), its registered runner on
    the cell's own generator, the result record."""
    record: dict[str, Any] = {"key": cell.key, "mechanism": cell.mechanism,
                              "epsilon": cell.epsilon, "metric": cell.metric}
    start = time.perf_counter()
    try:
        m, fit_seconds = ctx.mechanism(cell.mechanism, cell.epsilon)
    except DPTextError as err:  # e.g. an epsilon below what truncated Gumbel admits
        return {**record, "status": "skipped", "reason": str(err), "values": {}, "seconds": 0.0}
    rng = np.random.default_rng(cell_seed(ctx.config.seed, cell))
    values = runner(cell.metric)(ctx, m, rng, cell.metric)
    values["guarantee"] = m.guarantee.describe()
    return {**record, "status": "ok", "values": values, "fit_seconds": fit_seconds,
            "seconds": time.perf_counter() - start}
