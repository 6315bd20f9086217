"""One PNG of audit results: per tested pair, the epsilon lower bound (divided by d for metric
DP) beside the claimed epsilon (Agg backend; written atomically)."""

from __future__ import annotations

import math
from pathlib import Path

from dptext.io import atomic_write


def plot_results(results: list, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, bounds, claims, colors = [], [], [], []
    for r in results:
        for t in sorted(r.tests, key=lambda t: -(t.lower_bound - t.claim) / t.scale)[:6]:
            labels.append(f"{r.mechanism}\n{t.pair.x}/{t.pair.x_prime}")
            lb = t.lower_bound / t.scale
            bounds.append(max(lb, 0.0) if math.isfinite(lb) else r.epsilon * 2)
            claims.append(t.claim / t.scale)
            colors.append("tab:red" if t.violation else "tab:blue")
    fig, ax = plt.subplots(figsize=(max(4.0, 0.8 * len(labels) + 1), 4))
    xs = range(len(labels))
    ax.bar(xs, bounds, color=colors, label="lower bound (red: VIOLATION)")
    ax.scatter(xs, claims, color="black", marker="_", s=600, label="claimed epsilon", zorder=3)
    ax.set_xticks(list(xs), labels, fontsize=7, rotation=45, ha="right")
    ax.set_ylabel("epsilon (per unit of d for metric DP)")
    ax.set_title("dptext audit: empirical lower bound vs claim")
    ax.legend(fontsize=8)
    path = Path(path)
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
