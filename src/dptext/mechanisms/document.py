"""A document budget: ``document_epsilon=E`` for any word or language-model mechanism.

``dptext.mechanism("custext", document_epsilon=40)`` (and ``dptext sanitize
--document-epsilon 40``) privatizes each record at the per-token epsilon that keeps the record
within E, whatever its length: the number of tokens the mechanism will charge the record for is
counted first (its shape - word count, kept stopwords, out-of-vocabulary positions - which the
output releases anyway, so deriving epsilon from it leaks nothing new), and the per-token
epsilon is E divided by that count, rounded up to a step of a ladder so that a corpus needs only
a few distinct per-token epsilons (:func:`dptext.accounting.composition.per_token_epsilon`). A
record then costs between 3/4 E and E under basic composition - what the ledger charges.

What "document epsilon" means depends on the guarantee:

* pure epsilon-DP per token (CusText, DP-MLM, DP-Prompt): the record is E-DP between any two
  texts of the same shape (sequential composition of its tokens).
* metric DP per token (SanText, Laplace, truncated Gumbel): the record's charged cost - its
  worst case ``sum_i eps * Delta_max`` over its tokens, what the ledger charges - is at most E.
  The per-token metric epsilon is therefore ``E / (tokens * Delta_max)``: between two texts
  whose words are close the protection is much stronger than E, and a document epsilon gives
  per-token epsilons far below these mechanisms' useful ranges unless E is large.

Mechanisms describe, accounting composes: the division is
:func:`~dptext.accounting.composition.per_token_epsilon`; this module only counts, groups the
records of a batch by their per-token epsilon and runs each group through a mechanism at that
epsilon (word mechanisms: one fitted instance per epsilon, sharing the space; language models:
one loaded model shared by every epsilon).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

from dptext.accounting.composition import per_token_epsilon
from dptext.accounting.events import TokenGuarantee
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism, Result
from dptext.mechanisms.word import WordMechanism
from dptext.rng import RngLike, as_generator
from dptext.validation import check_epsilon


class DocumentBudget(Mechanism):
    """``name`` with ``params`` at the per-token epsilon each record's length allows under
    ``document_epsilon`` (module docstring). Built by :func:`dptext.mechanism` when
    ``document_epsilon=`` is given."""

    def __init__(self, cls: type[Mechanism], params: dict, document_epsilon: float, *,
                 build: Callable[..., Mechanism]) -> None:
        """``cls``: the registered class; ``build(name, **params)``: the registry's factory
        (passed in, so this module does not import the registry)."""
        if "epsilon" in params:
            raise DPTextError("give epsilon (per token) or document_epsilon (per record), "
                              "not both")
        self.document_epsilon = check_epsilon(document_epsilon, "document_epsilon")
        name = cls.name
        self._build = build
        self.name = name
        self.summary = cls.summary
        self.guarantee_summary = cls.guarantee_summary
        self.typical_epsilon = cls.typical_epsilon
        self.params = dict(params)
        # the mechanism at epsilon = E: it counts tokens and states the kind of guarantee; a
        # language model loaded here is shared by every per-token epsilon
        self.base = build(name, epsilon=self.document_epsilon, **self.params)
        self.word = isinstance(self.base, WordMechanism)
        try:
            self.base.token_counts([])
        except NotImplementedError:
            raise DPTextError(f"{name} does not support document_epsilon") from None
        self._instances: dict[float, Mechanism] = {}
        self._ready = False

    # ---------------------------------------------------------------- the division
    def cost_per_epsilon(self) -> float:
        """What one unit of per-token epsilon costs a token in the ledger: 1 for a pure
        guarantee, the diameter Delta_max for a metric one (its worst case)."""
        g = self.base.guarantee
        cost = g.worst_case_epsilon / g.epsilon
        if not cost < float("inf"):
            raise DPTextError(f"{self.name}: the guarantee has no finite worst case (unknown "
                              "diameter), so no per-token epsilon keeps a record within a "
                              "document epsilon")
        return cost

    def epsilons(self, texts: Sequence[str]) -> list[float]:
        """The per-token epsilon of each text (DPTextError naming the first text whose length
        makes the document epsilon unreachable, e.g. below truncated Gumbel's bound)."""
        return self._plan(texts)[1]

    def _plan(self, texts: Sequence[str]) -> tuple[list[int], list[float]]:
        cost, least = self.cost_per_epsilon(), self.base.least_epsilon()
        counts = self.base.token_counts(texts)
        out = []
        for i, n in enumerate(counts):
            eps = per_token_epsilon(self.document_epsilon, n, cost_per_epsilon=cost)
            if least is not None and not eps > least:
                raise DPTextError(
                    f"document epsilon {self.document_epsilon:g} cannot be met for text {i} "
                    f"({n} tokens): {self.name} needs a per-token epsilon above {least:.6g} "
                    f"and this record would get {eps:.4g}")
            out.append(eps)
        return counts, out

    # ---------------------------------------------------------------- Mechanism
    @property
    def guarantee(self) -> TokenGuarantee:
        return self.base.guarantee

    def least_epsilon(self) -> float | None:
        return self.base.least_epsilon()

    def check_admissible(self) -> None:
        """Refuse before any work when even a one-token record cannot be met (the per-token
        epsilon it would get is not above the mechanism's least epsilon)."""
        least = self.base.least_epsilon()
        if least is None:
            return
        one = per_token_epsilon(self.document_epsilon, 1,
                                cost_per_epsilon=self.cost_per_epsilon())
        if not one > least:
            raise DPTextError(
                f"document epsilon {self.document_epsilon:g} cannot be met by {self.name}: "
                f"even a one-token record would get per-token epsilon {one:.4g}, and "
                f"{self.name} needs more than {least:.6g} here")

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return self.base.token_counts(texts)

    @property
    def is_fitted(self) -> bool:
        return self._ready

    def preparation_note(self) -> str | None:
        if self.word:
            return None  # tables are fitted per per-token epsilon as records need them
        return self.base.preparation_note()

    def fit(self, *, progress: bool = False) -> DocumentBudget:
        """Check admissibility, then load what every per-token epsilon shares (the space, or
        the language model); tables are fitted per per-token epsilon when first needed."""
        self.check_admissible()
        if not self._ready:
            if self.word:
                self.base.resolved_space()
            else:
                self.base.fit(progress=progress)
            self._ready = True
        return self

    def at(self, epsilon: float) -> Mechanism:
        """The mechanism at per-token ``epsilon``, fitted (one instance per epsilon)."""
        m = self._instances.get(epsilon)
        if m is None:
            if self.word:
                params = {**self.params, "space": self.base.resolved_space()}
                m = self._build(self.name, epsilon=epsilon, **params).fit()
            else:
                self.fit()
                m = copy.copy(self.base)  # shares the loaded model; epsilon is per draw
                m.epsilon = check_epsilon(epsilon)
            self._instances[epsilon] = m
        return m

    def privatize_batch(self, texts: Sequence[str], *, rng: RngLike = None) -> list[Result]:
        if isinstance(texts, str):
            raise DPTextError("texts must be a sequence of strings, not one string")
        texts = list(texts)
        self.fit()
        gen = as_generator(rng)
        counts, eps = self._plan(texts)
        groups: dict[float, list[int]] = {}
        for i, e in enumerate(eps):
            groups.setdefault(e, []).append(i)
        out: list[Result | None] = [None] * len(texts)
        for e in sorted(groups):
            idx = groups[e]
            results = self.at(e).privatize_batch([texts[i] for i in idx], rng=gen)
            for i, r in zip(idx, results, strict=True):
                r.report.document_budget = self.document_epsilon
                # a record with no token to privatize derived nothing: not in the summary
                r.report.per_token_epsilons = [[e, 1]] if counts[i] else []
                out[i] = r
        return out  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"DocumentBudget({self.name!r}, document_epsilon={self.document_epsilon:g})"
