"""Utility of sanitized text.

* Downstream accuracy (CusText/SanText protocol, custext_customized_sanitization.txt section
  "Experiments"): a classifier is trained on the *sanitized* training split and tested on the
  *clean* test split. Classifier: frozen sentence embeddings (packaged MiniLM by default) +
  logistic regression (scikit-learn, lbfgs, C=1, up to 2000 iterations): cheap on CPU, and the
  same for every mechanism, so differences come from the text.
* Similarity to the original (DP-MLM paper section 5.1.2): corpus BLEU (sacrebleu, the original
  as the single reference) and the mean cosine similarity of the sentence embeddings of each
  original and its sanitized version.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dptext.evaluation.encoders import CachedEncoder


def fit_classifier(features: np.ndarray, labels: Sequence[str]):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1.0, max_iter=2000).fit(features, list(labels))


def scores(y_true: Sequence[str], y_pred: Sequence[str]) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, f1_score

    return {"accuracy": float(accuracy_score(y_true, y_pred)),
            "macro_f1": float(f1_score(y_true, y_pred, average="macro"))}


def downstream_accuracy(encoder: CachedEncoder, train_texts: Sequence[str],
                        train_labels: Sequence[str], test_texts: Sequence[str],
                        test_labels: Sequence[str]) -> dict[str, float]:
    """Train on ``train_texts`` (sanitized), evaluate on ``test_texts`` (clean)."""
    model = fit_classifier(encoder.encode(train_texts), train_labels)
    return scores(test_labels, model.predict(encoder.encode(test_texts)))


def bleu(originals: Sequence[str], sanitized: Sequence[str]) -> float:
    import sacrebleu

    return float(sacrebleu.corpus_bleu(list(sanitized), [list(originals)]).score)


def cosine_similarity(encoder: CachedEncoder, originals: Sequence[str],
                      sanitized: Sequence[str]) -> float:
    """Mean cosine similarity of paired unit-norm embeddings."""
    a, b = encoder.encode(originals), encoder.encode(sanitized)
    return float(np.mean((a * b).sum(1)))
