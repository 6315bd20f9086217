"""The mechanism interface: what every mechanism (word-level or language-model) offers.

Every mechanism: keyword-only validated parameters (nothing expensive in ``__init__``),
``fit(progress=)`` for the precomputation and ``is_fitted`` (whether it is done),
``privatize(text, rng=)`` and ``privatize_batch(texts, rng=)`` returning :class:`Result`
(text + :class:`PrivacyReport`), and ``guarantee`` (the per-token guarantee; reading it never
starts a fit where the guarantee does not need one).

Optional abilities are declared, not probed: ``capabilities`` names them and
:meth:`Mechanism.supports` answers; a method a mechanism does not support raises
``NotImplementedError``.

The validation checks, the random generators, the registry and the word pipeline are in
:mod:`dptext.validation`, :mod:`dptext.rng`, :mod:`dptext.mechanisms.registry` and
:mod:`dptext.mechanisms.word` (this module re-exports none of them: that closed import circles).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from dptext.accounting.events import TokenGuarantee
from dptext.accounting.report import PrivacyReport
from dptext.errors import DPTextError
from dptext.rng import RngLike

#: Names a mechanism may list in ``capabilities``:
#: ``distribution`` - ``distribution(word)`` gives the exact output law;
#: ``likelihood_matrix`` - ``likelihood_matrix(inputs, outputs)`` gives exact P(output | input);
#: ``sample_rows`` - ``sample_rows(rows, rng)`` draws outputs for vocabulary rows directly;
#: ``fit_many`` - ``cls.fit_many(epsilons, ...)`` fits several epsilons in one pass;
#: ``privatize_spans`` - ``privatize_spans(texts, spans, rng)`` privatizes only the words of the
#: given character spans, the whole text as their context (DP-MLM: entity-targeted
#: sanitization draws a span's words in their sentence, :mod:`dptext.targeted`).
CAPABILITIES = frozenset({"distribution", "likelihood_matrix", "sample_rows", "fit_many",
                          "privatize_spans"})


@dataclass(frozen=True)
class TypicalEpsilon:
    """The per-token epsilons that give useful text, as measured (the one source for the README
    table, docs/privacy.md, ``dptext mechanisms``, ``GET /v1/mechanisms`` and the web page;
    ``tests/accounting/test_typical_epsilon.py`` fails when one of them disagrees).

    ``low``-``high`` is the measured useful range (``high`` None: open upwards, e.g. above
    truncated Gumbel's bound); ``evidence`` says what was measured
    (``benchmarks/bench_privacy.py unchanged`` on the default space, docs/privacy.md);
    ``meaning`` is what one unit of epsilon protects, in one line.
    """

    low: float
    high: float | None
    meaning: str
    evidence: str = ""

    @property
    def text(self) -> str:
        """``"1-8"``, or ``"> 194"`` for an open range."""
        return f"> {self.low:g}" if self.high is None else f"{self.low:g}-{self.high:g}"

    def contains(self, epsilon: float) -> bool:
        if self.high is None:
            return epsilon > self.low
        return self.low <= epsilon <= self.high

    def to_dict(self) -> dict:
        return {"text": self.text, "low": self.low, "high": self.high, "meaning": self.meaning,
                "evidence": self.evidence}


@dataclass(frozen=True)
class Result:
    text: str
    report: PrivacyReport


class Mechanism(ABC):
    """Base of every mechanism (word-level or language-model)."""

    name: ClassVar[str]
    summary: ClassVar[str]  # one line: what it does, for `dptext mechanisms`
    guarantee_summary: ClassVar[str]  # one line: the per-token guarantee
    capabilities: ClassVar[frozenset[str]] = frozenset()
    #: the measured useful per-token epsilon range (None: not measured)
    typical_epsilon: ClassVar[TypicalEpsilon | None] = None
    #: the same, measured on other named spaces (``{"glove-6b-50d": ...}``): metric-DP
    #: epsilons scale with the space's distances, so a range holds for one space only
    typical_epsilon_spaces: ClassVar[dict[str, TypicalEpsilon]] = {}

    @classmethod
    def supports(cls, capability: str) -> bool:
        """Whether this mechanism offers the optional ``capability`` (see ``CAPABILITIES``)."""
        if capability not in CAPABILITIES:
            raise ValueError(f"unknown capability {capability!r}; known: {sorted(CAPABILITIES)}")
        return capability in cls.capabilities

    @abstractmethod
    def fit(self, *, progress: bool = False) -> Mechanism:
        """The precomputation (tables, a model, a detector); a second call does nothing.
        ``progress``: show a progress bar where the work is long."""

    @property
    @abstractmethod
    def is_fitted(self) -> bool:
        """Whether :meth:`fit` has nothing left to do in this process (the one answer the
        engine, the workers and the CLI ask; none of them probes a mechanism's attributes)."""

    @abstractmethod
    def privatize_batch(self, texts: Sequence[str], *, rng: RngLike = None) -> list[Result]: ...

    def privatize(self, text: str, *, rng: RngLike = None) -> Result:
        """Privatize one text; ``rng`` defaults to fresh OS entropy."""
        return self.privatize_batch([text], rng=rng)[0]

    @property
    @abstractmethod
    def guarantee(self) -> TokenGuarantee: ...

    @property
    def rewrites_whole_texts(self) -> bool:
        """Whether this instance rewrites a text as a whole (words added or deleted), so it
        cannot privatize a span of words alone (DP-MLM's add/delete variant says yes)."""
        return False

    def least_epsilon(self) -> float | None:
        """The per-token epsilon this mechanism needs to exceed (truncated Gumbel's bound for
        its space), or None where any epsilon > 0 is admissible. Cheap: no fit."""
        return None

    def check_admissible(self) -> None:
        """Raise :class:`~dptext.errors.DPTextError` with a one-line reason when this
        mechanism's epsilon cannot be honoured - before any table is fitted or model loaded."""
        least = self.least_epsilon()
        epsilon = getattr(self, "epsilon", None)
        if least is not None and epsilon is not None and not epsilon > least:
            raise DPTextError(f"{self.name}: epsilon={epsilon:g} is not above the least "
                              f"admissible epsilon {least:.6g}")

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """How many tokens each text would be charged for (its shape, released with it):
        what a document budget divides by. Mechanisms that support ``document_epsilon``
        override it."""
        raise NotImplementedError(f"{self.name} does not count its tokens in advance")

    def preparation_note(self) -> str | None:
        """What :meth:`fit` is about to do when it is slow (``None`` when it is quick), for a
        one-line message where no progress bar can be shown."""
        return None

