"""Attribute inference (DP-MLM paper section 5.2, Table 3): can an attacker still infer the author
(or party) from sanitized text?

* static attacker: trained on the original training texts, tested on the sanitized test texts;
* adaptive attacker: trained and tested on sanitized texts (it has seen the mechanism's output).

Both: frozen sentence embeddings + logistic regression (as for utility). Reported: macro-F1
(``privacy F1``; lower is more private), accuracy, and the points of accuracy above always
guessing the training majority class.

Relative gain: the extraction of the DP-MLM paper only says that it "compares the utility and
privacy scores on rewritten data with their non-privatized baselines". We use the relative
privacy gain minus the relative utility loss,
``RG = (P_0 - P_eps) / P_0 - (U_0 - U_eps) / U_0``,
with P the attacker's macro-F1 and U the utility macro-F1, subscript 0 = the noiseless baseline.
RG > 0: the mechanism removed relatively more attacker performance than task performance.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from dptext.evaluation.encoders import CachedEncoder
from dptext.evaluation.utility import fit_classifier, scores


def majority_accuracy(train_labels: Sequence[str], test_labels: Sequence[str]) -> float:
    majority = Counter(train_labels).most_common(1)[0][0]
    return sum(label == majority for label in test_labels) / max(1, len(test_labels))


def attribute_inference(encoder: CachedEncoder, train_texts: Sequence[str],
                        sanitized_train: Sequence[str], train_labels: Sequence[str],
                        sanitized_test: Sequence[str], test_labels: Sequence[str],
                        ) -> dict[str, float]:
    """Static and adaptive attackers (module docstring); keys prefixed ``static_``/``adaptive_``."""
    majority = majority_accuracy(train_labels, test_labels)
    test_x = encoder.encode(sanitized_test)
    out: dict[str, float] = {"majority_accuracy": majority}
    for setting, texts in (("static", train_texts), ("adaptive", sanitized_train)):
        model = fit_classifier(encoder.encode(texts), train_labels)
        s = scores(test_labels, model.predict(test_x))
        out[f"{setting}_f1"] = s["macro_f1"]
        out[f"{setting}_accuracy"] = s["accuracy"]
        out[f"{setting}_points_above_majority"] = 100.0 * (s["accuracy"] - majority)
    return out


def relative_gain(utility: float, utility_0: float, privacy: float, privacy_0: float) -> float:
    """``(P_0 - P) / P_0 - (U_0 - U) / U_0`` (module docstring)."""
    return (privacy_0 - privacy) / privacy_0 - (utility_0 - utility) / utility_0
