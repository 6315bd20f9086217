"""Did a run learn anything? The trained model against the untrained one (and against a
baseline: the uniform distribution for a language model, the held-out class prior for a
classifier) on the held-out users' text, with the likely cause when it did not
(docs/uedp.md, "Did it learn?").

The comparison is paired: the same held-out sentences under both models. The gain is the drop
in held-out NLL per predicted token (nats; ``exp(gain)`` is the perplexity ratio), its standard
error is that of a ratio estimator over the held-out *users* (a user's sentences are not
independent), and a run has learned when its gain over the untrained model and over the
baseline are both at least ``MIN_GAIN`` and at least ``Z`` standard errors.
"""

from __future__ import annotations

import math

import numpy as np

# A run must lower the held-out perplexity by at least 5% (and by Z standard errors): a smaller
# change is not what "visibly learns" means, whatever its significance on a large held-out set.
MIN_GAIN = math.log(1.05)
Z = 2.0


def paired_gain(before: np.ndarray, after: np.ndarray, tokens: np.ndarray,
                clusters: np.ndarray | None = None) -> tuple[float, float]:
    """(gain, standard error): ``sum(before - after) / sum(tokens)`` in nats per token and its
    ratio-estimator standard error over ``clusters`` (one label per sentence, e.g. its user;
    None or a single cluster: each sentence its own)."""
    before, after, tokens = (np.asarray(x, dtype=np.float64) for x in (before, after, tokens))
    diff = before - after
    total = float(tokens.sum())
    if total <= 0:
        return 0.0, math.inf
    gain = float(diff.sum()) / total
    if clusters is None or len(np.unique(clusters)) < 2:
        clusters = np.arange(len(diff))
    _, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    d = np.bincount(inverse, weights=diff)
    n = np.bincount(inverse, weights=tokens)
    k = len(d)
    if k < 2:
        return gain, math.inf
    resid = d - gain * n
    se = math.sqrt(k / (k - 1) * float((resid ** 2).sum())) / total
    return gain, se


def learning_check(start: tuple, final: tuple, baseline_loss: float,
                   clusters: np.ndarray | None = None, baseline: str = "uniform") -> dict:
    """The verdict on a run: ``start`` and ``final`` are the held-out ``(nll, tokens)`` per
    sentence of the untrained and the trained model (tasks' ``sentence_losses``);
    ``baseline_loss`` is the per-token loss of a constant model named ``baseline`` (tasks'
    ``baseline``: uniform, or the class prior)."""
    s_nll, tokens = (np.asarray(x, dtype=np.float64) for x in start)
    f_nll = np.asarray(final[0], dtype=np.float64)
    total = max(float(tokens.sum()), 1.0)
    gain, se = paired_gain(s_nll, f_nll, tokens, clusters)
    # against the constant model: its per-sentence NLL is tokens * its per-token loss
    gain_b, se_b = paired_gain(tokens * baseline_loss, f_nll, tokens, clusters)
    learned = all(g >= max(MIN_GAIN, Z * e) for g, e in ((gain, se), (gain_b, se_b)))
    return {"learned": learned,
            "untrained_loss": float(s_nll.sum()) / total,
            "final_loss": float(f_nll.sum()) / total,
            "baseline": baseline, "baseline_loss": baseline_loss,
            "gain_nats": gain, "gain_se": se,
            "gain_over_baseline_nats": gain_b, "gain_over_baseline_se": se_b,
            "criterion": f"gain >= max(log 1.05, {Z:g} SE) over the untrained model and over "
                         f"the {baseline} (per token, paired on the held-out sentences, SE "
                         f"over held-out users)"}


def likely_cause(config, n_params: int, population: int, *, rose: bool,
                 update_norm: float | None = None) -> str:
    """The most likely reason a run of ``config`` (trainer.TrainConfig) learned nothing:
    noise against clipped signal, clipping, the learning rate, or too few rounds.

    ``n_params``: trainable parameters d; ``population``: the |U| of the fixed denominator;
    ``rose``: the held-out loss went up; ``update_norm``: the median unclipped update norm of
    the sampled users (None: unknown)."""
    privacy = config.privacy()
    if privacy is not None:
        per_round = config.q_u * population
        ratio = config.z * privacy.sensitivity_factor * math.sqrt(n_params) / max(per_round,
                                                                                  1e-12)
        if ratio >= 1.0:
            return (f"noise against clipped signal: each round's noise has norm ~{ratio:.3g}x "
                    f"the largest clipped signal (z*S*sqrt(d)/(q_u*|U|), d = {n_params:,} "
                    f"parameters, q_u*|U| = {per_round:.3g} users a round); train more users a "
                    f"round (--q-u, a larger corpus), fewer parameters, or a smaller --z")
        if update_norm is not None and update_norm > 10 * config.beta:
            return (f"clipping: the users' updates (median norm {update_norm:.3g}) are clipped "
                    f"to --beta {config.beta:g}, so a round moves the model by at most "
                    f"{config.server_lr * config.beta:.3g}; raise --beta (z scales with it) "
                    f"or --server-lr, or train more --rounds")
    if rose:
        return (f"learning rate: the held-out loss rose; try a smaller --local-lr "
                f"({config.local_lr:g}) or --server-lr ({config.server_lr:g})")
    return (f"too few rounds or too small steps: {config.rounds} rounds at --local-lr "
            f"{config.local_lr:g}, --server-lr {config.server_lr:g}; train more --rounds or "
            f"raise the learning rates")
