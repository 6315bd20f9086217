"""Matplotlib PNG plots of a grid (Agg backend; each file written atomically)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dptext.evaluation.tables import BASELINE_STYLE, series, value
from dptext.io import atomic_write


def _save(fig, path: Path) -> Path:
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=110, bbox_inches="tight")
    return path


def _baseline_lines(ax, records, metric: str, name: str) -> None:
    for baseline, style in BASELINE_STYLE.items():
        v = value(records, baseline, None, metric, name)
        if v is not None:
            ax.axhline(v, color="grey", linestyle=style, linewidth=1, label=baseline)


def write_plots(out: Path, records: list[dict[str, Any]]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    metrics = {r["metric"] for r in records if r["status"] == "ok"}

    def curve(metric: str, names: list[tuple[str, str]], ylabel: str, filename: str) -> None:
        fig, ax = plt.subplots(figsize=(6, 4))
        for mech, points in series(records, metric).items():
            for name, style in names:
                xs = [e for e, v in points if v.get(name) is not None]
                ys = [v[name] for _, v in points if v.get(name) is not None]
                if xs:
                    ax.plot(xs, ys, style, marker="o", label=f"{mech} {name}")
        _baseline_lines(ax, records, metric, names[0][0])
        ax.set_xscale("log")
        ax.set_xlabel("epsilon (nominal; metric-DP and pure-DP scales differ)")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
        made.append(_save(fig, out / filename))
        plt.close(fig)

    if "utility" in metrics:
        curve("utility", [("accuracy", "-")], "test accuracy (trained on sanitized)",
              "utility_vs_epsilon.png")
    if "inversion" in metrics:
        curve("inversion", [("nn_top1", "-"), ("bayes", "--"), ("bound", ":")],
              "token inversion success", "attack_vs_epsilon.png")
    if "lm_inference" in metrics:
        curve("lm_inference", [("success", "-"), ("success_changed", "--")],
              "LM token inference success", "lm_inference_vs_epsilon.png")
    if "deniability" in metrics:
        fig, ax = plt.subplots(figsize=(6, 4))
        for mech, points in series(records, "deniability").items():
            xs = [v["N_w_mean"] for _, v in points]
            ys = [v["S_w_mean"] for _, v in points]
            ax.plot(xs, ys, marker="o", label=mech)
            for (eps, _), x, y in zip(points, xs, ys, strict=True):
                ax.annotate(f"{eps:g}", (x, y), fontsize=6)
        ax.set_xlabel("N_w (runs with the word unchanged, mean over words)")
        ax.set_ylabel("S_w (distinct outputs, mean over words)")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
        made.append(_save(fig, out / "sw_vs_nw.png"))
        plt.close(fig)
    if "utility" in metrics and "inversion" in metrics:
        fig, ax = plt.subplots(figsize=(6, 4))
        util = series(records, "utility")
        inv = series(records, "inversion")
        for mech in util:
            acc = dict(util[mech])
            pts = sorted((v["nn_top1"], acc[e]["accuracy"]) for e, v in inv.get(mech, [])
                         if e in acc)
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=mech)
        for baseline in BASELINE_STYLE:
            u = value(records, baseline, None, "utility", "accuracy")
            a = value(records, baseline, None, "inversion", "nn_top1")
            if u is not None and a is not None:
                ax.scatter([a], [u], marker="x", color="grey")
                ax.annotate(baseline, (a, u), fontsize=7)
        ax.set_xlabel("nearest-neighbour inversion success (top-1)")
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=7)
        made.append(_save(fig, out / "utility_vs_privacy.png"))
        plt.close(fig)
    return made
