"""Reference mechanisms every grid runs beside the real ones, so a reader sees the scale.

* ``noiseless``: every word released unchanged, out-of-vocabulary words included (no
  protection; the utility ceiling and the attack ceiling).
* ``random``: every word, out-of-vocabulary words included, replaced by a uniform draw from the
  vocabulary, whatever the word (output independent of the input: the privacy ceiling, the
  utility floor).

Both run through the word pipeline of :class:`WordMechanism` (same tokenization, OOV policy and
report). They are not registered: ``dptext sanitize`` should not offer them; the grid resolves
their names through :func:`build_mechanism`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism, Result
from dptext.mechanisms.registry import mechanism, parameters, registered
from dptext.mechanisms.word import WordMechanism

BASELINES = ("noiseless", "random")


class Noiseless(WordMechanism):
    name = "noiseless"
    capabilities = frozenset({"sample_rows", "distribution"})
    summary = "baseline: every word released unchanged"
    guarantee_summary = "none"

    def __init__(self, *, space: EmbeddingSpace | None = None, oov: str = "keep") -> None:
        super().__init__(epsilon=1.0, space=space, oov=oov)

    @property
    def guarantee(self) -> TokenGuarantee:
        return TokenGuarantee(GuaranteeKind.NONE)

    def _fit_tables(self, space: EmbeddingSpace) -> dict[str, np.ndarray]:
        return {}

    def fit(self, **kwargs) -> Noiseless:
        return super().fit(cache=False)

    def _sample(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return rows.copy()

    def privatize_batch(self, texts, *, rng=None) -> list[Result]:
        """The texts exactly as given (an alias is not rewritten to its representative), with
        the reports of the word pipeline."""
        results = super().privatize_batch(texts, rng=rng)
        return [Result(t, r.report) for t, r in zip(texts, results, strict=True)]

    def distribution(self, word: str) -> tuple[list[str], np.ndarray]:
        row = self.fitted_space().lookup(word)
        return [self.space.words[row]], np.ones(1)


class RandomReplacement(Noiseless):
    name = "random"
    capabilities = frozenset({"sample_rows", "distribution", "likelihood_matrix"})
    summary = "baseline: every word replaced by a uniform draw from the vocabulary"

    def __init__(self, *, space: EmbeddingSpace | None = None) -> None:
        super().__init__(space=space, oov="sample")

    @property
    def guarantee(self) -> TokenGuarantee:
        return TokenGuarantee(GuaranteeKind.INDEPENDENT, scope="all words")

    def _sample(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, len(self.space), len(rows))

    def privatize_batch(self, texts, *, rng=None) -> list[Result]:
        return WordMechanism.privatize_batch(self, texts, rng=rng)

    def distribution(self, word: str) -> tuple[list[str], np.ndarray]:
        space = self.fitted_space()
        return list(space.words), np.full(len(space), 1.0 / len(space))

    def likelihood_matrix(self, inputs, outputs) -> np.ndarray:
        """p(y | x) = 1 / |V| for every input x and output y."""
        n = len(self.fitted_space())
        return np.full((len(inputs), len(outputs)), 1.0 / n)


def split_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"dpmlm:backend=mlm+context=none"`` -> ("dpmlm", {"backend": "mlm", "context": "none"})
    (values: int, float, true/false, else the string); a plain name has no parameters."""
    name, _, rest = spec.partition(":")
    params: dict[str, Any] = {}
    for item in filter(None, rest.split("+")):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise DPTextError(f"mechanism parameter {item!r} in {spec!r}: use key=value")
        params[key.strip()] = _value(value.strip())
    return name.strip(), params


def _value(text: str) -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def build_mechanism(name: str, epsilon: float | None, space: EmbeddingSpace | None) -> Mechanism:
    """A baseline (epsilon ignored) or a registered mechanism at ``epsilon``, on ``space`` when
    the mechanism takes one (language-model mechanisms do not). ``name`` may carry parameters
    (:func:`split_spec`: ``dpmlm:backend=mlm``)."""
    if name == "noiseless":
        return Noiseless(space=space)
    if name == "random":
        return RandomReplacement(space=space)
    name, extra = split_spec(name)
    params = {**extra, "epsilon": epsilon}
    cls = registered().get(name)
    if cls is not None and "space" in parameters(cls) and space is not None:
        params["space"] = space
    return mechanism(name, **params)
