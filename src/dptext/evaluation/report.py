"""The Markdown report of a grid: settings, one table per metric, the plots, skipped cells."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dptext.evaluation.attribute import relative_gain
from dptext.evaluation.tables import markdown_table, metric_table, ok, value
from dptext.io import atomic_write

_COLUMNS = {
    "utility": ["accuracy", "macro_f1", "bleu", "cosine", "sanitize_privatized_fraction",
                "sanitize_tokens_per_s"],
    "inversion": ["nn_top1", "nn_topk", "bayes", "bayes_se", "bound", "bayes_above_bound"],
    "deniability": ["N_w_mean", "N_w_std", "S_w_mean", "S_w_std", "runs", "words"],
    "cost": ["tokens", "seconds", "tokens_per_s"],
    "lm_inference": ["success", "success_se", "success_word", "success_changed", "copy_rate",
                     "words", "texts_skipped"],
}
_ATTRIBUTE = ["static_f1", "adaptive_f1", "static_points_above_majority",
              "adaptive_points_above_majority", "majority_accuracy"]


def _relative_gains(records: list[dict[str, Any]], metric: str) -> str | None:
    u0 = value(records, "noiseless", None, "utility", "macro_f1")
    if u0 is None:
        return None
    rows = []
    for r in ok(records, metric):
        u = value(records, r["mechanism"], r["epsilon"], "utility", "macro_f1")
        if u is None or r["mechanism"] == "noiseless":
            continue
        gains = []
        for setting in ("static", "adaptive"):
            p0 = value(records, "noiseless", None, metric, f"{setting}_f1")
            p = r["values"].get(f"{setting}_f1")
            gains.append(None if not p0 or p is None else relative_gain(u, u0, p, p0))
        eps = "-" if r["epsilon"] is None else f"{r['epsilon']:g}"
        rows.append([r["mechanism"], eps, u, *gains])
    if not rows:
        return None
    return markdown_table(["mechanism", "epsilon", "utility macro-F1", "RG static",
                           "RG adaptive"], rows)


def _equal_privacy(records: list[dict[str, Any]]) -> str | None:
    rows = []
    for r in ok(records, "inversion"):
        acc = value(records, r["mechanism"], r["epsilon"], "utility", "accuracy")
        if acc is None:
            continue
        eps = "-" if r["epsilon"] is None else f"{r['epsilon']:g}"
        lm = value(records, r["mechanism"], r["epsilon"], "lm_inference", "success")
        rows.append([r["values"]["nn_top1"], r["values"].get("bayes"), lm, acc, r["mechanism"],
                     eps])
    if not rows:
        return None
    rows.sort(key=lambda row: row[0])
    return markdown_table(["NN top-1 success", "Bayes success", "LM success", "accuracy",
                           "mechanism", "epsilon"], rows)


def _mechanisms(records: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["mechanism"] for r in records
                              if r["mechanism"] not in ("noiseless", "random")))


def _split_sizes(config) -> dict[str, Any]:
    """The train and test sizes the cells used: ``n_train=1000`` of a 200-record file is 160
    (80% of it), said with what was asked."""
    from dptext.datasets import load_dataset, load_file_dataset

    out: dict[str, Any] = {}
    for key, split, asked in (("n_train", "train", config.n_train),
                              ("n_test", "test", config.n_test)):
        if config.data_file is not None:
            data = load_file_dataset(config.data_file, text_field=config.text_field,
                                     label_field=config.label_field, split=split,
                                     seed=config.split_seed, require_label=config.needs_labels)
        else:
            data = load_dataset(config.dataset, split=split, seed=config.split_seed)
        used = len(data.head(asked))
        out[key] = used if asked is None or used == asked else f"{used} (of {asked} asked)"
    return out


def write_report(out: Path, records: list[dict[str, Any]], config, plots: list[Path], *,
                 run_seconds: float) -> Path:
    s = config.result_settings()
    s.update(_split_sizes(config))
    total = sum(r.get("seconds", 0.0) for r in records)
    lines = [
        f"# Evaluation on {config.dataset}", "",
        f"Mechanisms: {', '.join(_mechanisms(records))}; baselines: noiseless (every word kept) "
        "and random (every word replaced uniformly at random).",
        f"Settings: {', '.join(f'{k}={v}' for k, v in s.items())}.",
        f"Compute: {total:.0f} s summed over cells ({run_seconds:.0f} s in the last run).", "",
        "Epsilon is nominal: CusText is pure epsilon-DP within output sets, SanText, Laplace and "
        "truncated Gumbel are epsilon*d metric DP, so equal epsilons are not equal privacy; "
        "compare at equal measured attack success too (table below).", "",
    ]
    titles = {"utility": "Utility (trained on sanitized train, tested on clean test)",
              "inversion": "Token inversion (nearest-neighbour and Bayes MAP) vs the bound",
              "deniability": "Plausible deniability", "cost": "Cost",
              "lm_inference": "LM token inference (an LM guesses the original words)"}
    for metric, columns in _COLUMNS.items():
        if ok(records, metric):
            lines += [f"## {titles[metric]}", "", metric_table(records, metric, columns), ""]
    for metric in sorted({r["metric"] for r in records if r["metric"].startswith("attribute:")}):
        if ok(records, metric):
            lines += [f"## Attribute inference: {metric.split(':', 1)[1]}", "",
                      metric_table(records, metric, _ATTRIBUTE), ""]
            gains = _relative_gains(records, metric)
            if gains:
                lines += ["Relative gain (utility from the utility metric of the same cell):", "",
                          gains, ""]
    equal = _equal_privacy(records)
    if equal:
        lines += ["## Utility at equal measured privacy", "", equal, ""]
    skipped = [r for r in records if r["status"] != "ok"]
    if skipped:
        lines += ["## Skipped cells", ""]
        lines += [f"- `{r['key']}`: {r['reason']}" for r in skipped]
        lines.append("")
    if plots:
        lines += ["## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots] + [""]
    path = out / "report.md"
    with atomic_write(path, encoding="utf-8") as f:
        f.write("\n".join(lines))
    return path
