"""DP-MLM: contextual rewriting with a language model, one word at a time (Meisenbacher et al.
2024, arXiv:2407.00637), with the masked-LM backend of the paper and a causal-LM backend, and
the add/delete variant of the paper's section 7.

Per privatized word (section 4.1): the LM scores every token of a fixed candidate set
(:mod:`dptext.lm.candidates`) at the word's position given the concatenated context (section
4.2); the scores are clipped to [lo, hi] and one candidate is drawn with probability
proportional to exp(clip(score) / T), T = 2 (hi - lo) / epsilon - the exponential mechanism
with sensitivity hi - lo (section 3.2.1): epsilon-DP for any two contexts (Theorem 1, section
4.3). A text with n privatized words is n*epsilon-DP by sequential composition (section 4.3).
Punctuation is always kept, stopwords by default (section 4.2); both are counted as kept. The
document guarantee holds between texts of the same skeleton: the word count, the kept
stopwords and the punctuation are released (:data:`DOCUMENT_SCOPE`). Case: by default the
input's case is not used (a drawn word is released in the candidate's own case, capitalised at
a sentence start that the released punctuation decides); ``keep_case=True`` copies the input
word's case pattern, reported as an unprotected attribute.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dptext.accounting.events import GuaranteeKind, PrivacyEvent, TokenEvent, TokenGuarantee
from dptext.accounting.report import PrivacyReport
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism, Result, TypicalEpsilon
from dptext.mechanisms.registry import register
from dptext.rng import RngLike, as_generator
from dptext.text import (
    apply_case,
    capitalize_first,
    count_punctuation,
    normalize_word,
    resolve_stopwords,
    split_words,
    starts_sentence,
    trailing_glue,
)
from dptext.validation import check_choice, check_epsilon, check_int, check_probability

BACKENDS = ("causal", "mlm")
CONTEXTS = ("concat", "none")
DRAWS = ("sequential", "independent")
PRECISIONS = ("fp32", "bf16", "int8")
_KEPT = TokenGuarantee(GuaranteeKind.NONE)
DOCUMENT_SCOPE = ("between texts with the same number of words and the same kept tokens "
                  "(stopwords, punctuation)")
_DELETED = TokenGuarantee(
    GuaranteeKind.INDEPENDENT, scope="all words (deleted by a coin that ignores the word)"
)


@dataclass
class RewriteReport(PrivacyReport):
    """A :class:`PrivacyReport` that also states the worst case of the add/delete variant.

    ``worst_case_epsilon``: the bound before the add/delete coins are thrown, every eligible
    word replaced and followed by an insertion: (eligible words + words) * epsilon <= 2 n
    epsilon (paper section 7). The realized composition (``epsilon``) counts the slots drawn.
    """

    tag: ClassVar[str] = "RewriteReport"

    worst_case_epsilon: float = 0.0

    def document_guarantee(self) -> str:
        text = super().document_guarantee()
        if self.worst_case_epsilon:
            text += (f". Worst case of the add/delete variant (every word replaced and followed "
                     f"by an insertion; <= 2*n*epsilon): {self.worst_case_epsilon:.4g}-DP")
        return text

    def to_dict(self) -> dict:
        return {**super().to_dict(), "worst_case_epsilon": self.worst_case_epsilon or None}

    def privacy_events(self) -> list[PrivacyEvent]:
        """The add/delete variant is charged its worst case: the realized count of drawn slots
        depends on coins an output does not reveal, so only the bound over all coin outcomes
        is a DP guarantee (section 7). ``worst_case_epsilon / epsilon`` word slots."""
        events = super().privacy_events()
        realized = sum(e.total_epsilon for e in events)
        eps = self.per_token.epsilon
        if not self.worst_case_epsilon or self.worst_case_epsilon <= realized or eps <= 0:
            return events
        slots = round(self.worst_case_epsilon / eps)
        return [PrivacyEvent("pure", eps, 0.0, slots, self.mechanism,
                             "per word slot, worst case of the add/delete variant (every "
                             "eligible word replaced and followed by an insertion)",
                             bounded_range=self.per_token.bounded_range)]

    @classmethod
    def combine(cls, reports: Iterable[PrivacyReport]) -> RewriteReport:
        reports = list(reports)
        base = PrivacyReport.combine(reports)
        worst = sum(getattr(r, "worst_case_epsilon", 0.0) for r in reports)
        return cls(**vars(base), worst_case_epsilon=worst)


@dataclass
class _Slot:
    """A position to draw a word for: ``piece`` in the output, token range in the input."""

    piece: int
    start: int
    end: int
    original: str | None  # None: an inserted word
    glue: str = ""  # literal output text since the previous slot (causal backend)


def _set_glue(pieces: list, slots: list[_Slot]) -> None:
    """Give each slot the literal output text since the previous slot (causal backend)."""
    glue: list[str] = []
    it = iter(slots)
    slot = next(it, None)
    for k, p in enumerate(pieces):
        if slot is not None and k == slot.piece:
            slot.glue = "".join(glue)
            glue = []
            slot = next(it, None)
        elif p:
            glue.append(p)


class LMMechanism(Mechanism):
    """Model loading, bounds and the clipped exponential mechanism shared by DP-MLM/DP-Prompt."""

    causal_only = False

    def __init__(self, *, epsilon: float, backend: str = "causal", model: str | None = None,
                 clip_low: float | None = None, clip_high: float | None = None,
                 max_length: int | None = None, precision: str = "fp32",
                 device: str = "cpu") -> None:
        from dptext.devices import check_device

        self.epsilon = check_epsilon(epsilon)
        self.device = check_device(device)
        if precision == "int8" and self.device == "cuda":
            raise DPTextError("precision='int8' (dynamic quantization) runs on the CPU only; "
                              "use precision='fp32' with device='cuda'")
        self.precision = check_choice(precision, "precision", PRECISIONS)
        self.backend = check_choice(backend, "backend", ("causal",) if self.causal_only
                                    else BACKENDS)
        if model is not None and not isinstance(model, str):
            raise DPTextError("model must be a Hugging Face name or a local path")
        self.model = model
        if (clip_low is None) != (clip_high is None):
            raise DPTextError("give both clip_low and clip_high, or neither")
        if clip_low is not None:
            lo, hi = float(clip_low), float(clip_high)
            if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
                raise DPTextError(f"need finite clip_low < clip_high, got {clip_low}, {clip_high}")
            self._bounds: tuple[float, float] | None = (lo, hi)
        else:
            self._bounds = None
        self.max_length = None if max_length is None else check_int(max_length, "max_length",
                                                                    minimum=8)
        self._lm = None

    @property
    def causal(self) -> bool:
        return self.backend == "causal"

    def _load(self, progress: bool) -> None:
        from dptext.lm.bounds import find_bounds
        from dptext.lm.loading import default_name, load_model, resolve_model

        resolved = resolve_model(self.model, causal=self.causal, progress=progress)
        self._lm = load_model(resolved, causal=self.causal)
        from dptext.devices import resolve_device

        where = resolve_device(self.device)
        if where == "cuda" and self.precision == "int8":
            where = "cpu"  # device="auto" on a GPU machine: int8 is a CPU kernel
        if where != "cpu":
            self._lm[0].to(where)
        if self.causal:
            from dptext.lm.attention import use_packed_gqa

            use_packed_gqa(self._lm[0])
        if self.precision == "int8":
            from dptext.lm.quantize import quantize_int8

            quantize_int8(self._lm[0])
        key = self.model or default_name(causal=self.causal)
        if self._bounds is None:
            self._bounds = find_bounds(key, resolved)

    @property
    def bounds(self) -> tuple[float, float]:
        if self._bounds is None:
            raise DPTextError(f"{self.name}: fit() first (the bounds come with the model)")
        return self._bounds

    @property
    def guarantee(self) -> TokenGuarantee:
        return TokenGuarantee(
            GuaranteeKind.PURE, self.epsilon,
            scope="any two input texts (exponential mechanism on LM scores clipped to "
            "[lo, hi], T = 2(hi - lo)/epsilon)",
            bounded_range=True,  # exp(eps * s / (2 (hi - lo))), s in [lo, hi]: eps-BR
        )

    def _draw(self, scores, generator) -> np.ndarray:
        from dptext.lm.sampling import sample

        lo, hi = self.bounds
        return sample(scores, epsilon=self.epsilon, lo=lo, hi=hi, generator=generator)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(epsilon={self.epsilon:g}, backend={self.backend!r}, "
                f"model={self.model!r})")


@register
class DPMLM(LMMechanism):
    """DP-MLM (see the module docstring); ``p_add``/``p_del``: the section 7 variant."""

    name = "dpmlm"
    capabilities = frozenset({"privatize_spans"})
    summary = "DP-MLM: rewrite word by word with a masked or causal LM (exponential mechanism)"
    guarantee_summary = "epsilon-DP per privatized word, any two contexts; n*epsilon per text"
    typical_epsilon = TypicalEpsilon(
        25, 250, "eps-DP per rewritten word (clipped exponential mechanism)",
        "the range the DP-MLM and DP-Prompt papers evaluate; not measured by "
        "benchmarks/bench_privacy.py")

    def __init__(self, *, epsilon: float, backend: str = "causal", model: str | None = None,
                 context: str = "concat", keep_stopwords: bool = True,
                 stopwords: Iterable[str] | None = None, p_add: float = 0.0,
                 p_del: float = 0.0, clip_low: float | None = None,
                 clip_high: float | None = None, separator: str | None = None,
                 max_length: int | None = None, batch_size: int = 64,
                 draws: str = "sequential", segment_words: int = 32,
                 precision: str = "fp32", keep_case: bool = False,
                 device: str = "cpu") -> None:
        super().__init__(epsilon=epsilon, backend=backend, model=model, clip_low=clip_low,
                         clip_high=clip_high, max_length=max_length, precision=precision,
                         device=device)
        self.draws = check_choice(draws, "draws", DRAWS)
        if self.draws == "independent" and not self.causal:
            raise DPTextError("draws='independent' is for the causal backend (the masked "
                              "backend's draws are independent already)")
        self.segment_words = check_int(segment_words, "segment_words", minimum=0)
        self.keep_case = bool(keep_case)
        self.context = check_choice(context, "context", CONTEXTS)
        self.keep_stopwords = bool(keep_stopwords)
        self.stopwords = resolve_stopwords(stopwords)
        self.p_add = check_probability(p_add, "p_add")
        self.p_del = check_probability(p_del, "p_del")
        self.separator = separator
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self._backend = None
        self._candidates = None

    @property
    def rewrites_whole_texts(self) -> bool:
        return bool(self.p_add or self.p_del)  # section 7: words inserted and deleted

    # ------------------------------------------------------------- fitting
    @property
    def is_fitted(self) -> bool:
        return self._backend is not None

    def fit(self, *, progress: bool = False) -> DPMLM:
        """Load the model, fix the candidate set and the bounds (never from private data)."""
        if self._backend is not None:
            return self
        from dptext.lm.candidates import candidate_set

        self._load(progress)
        model, tokenizer = self._lm
        self._candidates = candidate_set(tokenizer)
        if self.causal:
            from dptext.lm.causal import DEFAULT_SEPARATOR, CausalBackend

            sep = DEFAULT_SEPARATOR if self.separator is None else self.separator
            self._backend = CausalBackend(model, tokenizer, self._candidates.ids,
                                          context=self.context, separator=sep,
                                          max_length=self.max_length,
                                          segment_words=self.segment_words,
                                          precision=self.precision)
        else:
            from dptext.lm.masked import MaskedBackend

            self._backend = MaskedBackend(model, tokenizer, self._candidates.ids,
                                          context=self.context, max_length=self.max_length,
                                          batch_size=self.batch_size,
                                          precision=self.precision)
        return self

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Per text, the word slots it is charged for: the words not kept as stopwords, plus
        every word when ``p_add`` > 0 (an insertion may follow each: the worst case the
        report charges). No model needed."""
        out = []
        for text in texts:
            if not isinstance(text, str):
                raise DPTextError(f"texts must be strings, got {type(text).__name__}")
            words = split_words(text)[1::2]
            eligible = sum(1 for w in words if not (self.keep_stopwords
                                                     and normalize_word(w) in self.stopwords))
            out.append(eligible + (len(words) if self.p_add else 0))
        return out

    @property
    def candidates(self) -> list[str]:
        """The words a privatized word may become (fixed by the tokenizer alone)."""
        self.fit()
        return list(self._candidates.words)

    # ------------------------------------------------------------ planning
    def _plan(self, text: str, gen: np.random.Generator):
        """Output pieces (str, or None for a slot), the slots, and the counts for the report."""
        from dptext.lm.alignment import align

        if not isinstance(text, str):
            raise DPTextError(f"texts must be strings, got {type(text).__name__}")
        parts = split_words(text)
        words = parts[1::2]
        n = len(words)
        aligned = align(self._lm[1], text, parts)
        deleted = gen.random(n) < self.p_del if self.p_del else np.zeros(n, bool)
        added = gen.random(n) < self.p_add if self.p_add else np.zeros(n, bool)
        kept = np.array([self.keep_stopwords and normalize_word(w) in self.stopwords
                         for w in words], dtype=bool)
        pieces: list[str | None] = [parts[0]]
        slots: list[_Slot] = []
        for i, word in enumerate(words):
            start, end = int(aligned.starts[i]), int(aligned.ends[i])
            after = parts[2 * i + 2]
            if not deleted[i]:
                if kept[i]:
                    pieces.append(word)
                else:
                    slots.append(_Slot(len(pieces), start, end, word))
                    pieces.append(None)
            if added[i]:
                prev = next((p for p in reversed(pieces) if p != ""), "")
                if deleted[i] and prev and prev[-1].isspace():
                    pieces.append("")  # the deleted word's space is already there
                else:
                    pieces.append(" ")
                slots.append(_Slot(len(pieces), end, end, None))
                pieces.append(None)
            last = next((p for p in reversed(pieces) if p != ""), "")  # None: a slot word
            if deleted[i] and not added[i] and after.isspace() and (
                    last == "" or (last is not None and last[-1].isspace())):
                after = ""  # a deleted word takes one of the two spaces around it with it
            elif deleted[i] and not added[i] and after[:1].strip() and isinstance(last, str):
                k = max(j for j, p in enumerate(pieces) if p == last)
                pieces[k] = last.rstrip(" ")  # no space left before the punctuation that follows
            pieces.append(after)
        _set_glue(pieces, slots)
        counts = {
            "replaced": int((~deleted & ~kept).sum()), "inserted": int(added.sum()),
            "deleted": int(deleted.sum()), "stopword": int((~deleted & kept).sum()),
            "punctuation": count_punctuation(parts[0::2]),
            "worst": int((~kept).sum()) + (n if self.p_add else 0),
            "cased": sum(w != w.lower() for w, d, k in zip(words, deleted, kept, strict=True)
                         if not (d or k)) if self.keep_case else 0,
        }
        return aligned, pieces, slots, counts

    # ----------------------------------------------------------- privatize
    def privatize_batch(self, texts: Sequence[str], *, rng: RngLike = None) -> list[Result]:
        """Privatize texts; masked LM: every slot of every text in batched forward passes."""
        from dptext.lm.sampling import torch_generator

        self.fit()
        gen = as_generator(rng)
        tgen = torch_generator(gen)
        plans = [self._plan(t, gen) for t in texts]
        self._rewrite(plans, tgen)
        return [Result("".join(p), self._report(c)) for _, p, _, c in plans]

    def privatize_spans(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]],
                        *, rng: RngLike = None) -> list[list[Result]]:
        """Privatize only the words inside ``spans`` (character ranges ``[start, end)`` of each
        text, sorted and disjoint), each with its WHOLE text as the context (section 4.2).

        Returns per text one :class:`Result` per span: the span's rewritten text and the report
        of the tokens inside it (its privatized words, the stopwords kept there, punctuation).
        A word that overlaps a span is privatized whole. The text outside the spans is the
        context and is not in any report: the caller accounts for it (entity-targeted
        sanitization, :mod:`dptext.targeted`, reports it as released verbatim). The add/delete
        variant (section 7) rewrites a whole text and is refused here.
        """
        from dptext.lm.alignment import align, word_spans
        from dptext.lm.sampling import torch_generator

        if self.p_add or self.p_del:
            raise DPTextError("dpmlm: the add/delete variant (p_add/p_del) rewrites whole texts; "
                              "use p_add=p_del=0 to privatize spans")
        if len(spans) != len(texts):
            raise DPTextError(f"{len(texts)} texts but {len(spans)} span lists")
        self.fit()
        tgen = torch_generator(as_generator(rng))
        plans, owners = [], []
        for text, ranges in zip(texts, spans, strict=True):
            if not isinstance(text, str):
                raise DPTextError(f"texts must be strings, got {type(text).__name__}")
            parts = split_words(text)
            aligned = align(self._lm[1], text, parts)
            w_start, w_end = word_spans(parts)
            owner = np.full(len(w_start), -1)
            for j, (a, b) in enumerate(ranges):
                owner[(w_start < b) & (w_end > a)] = j
            pieces: list[str | None] = list(parts)
            slots = []
            for i, word in enumerate(parts[1::2]):
                if owner[i] >= 0 and not (self.keep_stopwords
                                          and normalize_word(word) in self.stopwords):
                    slots.append(_Slot(2 * i + 1, int(aligned.starts[i]), int(aligned.ends[i]),
                                       word))
                    pieces[2 * i + 1] = None
            _set_glue(pieces, slots)
            plans.append((aligned, pieces, slots, None))
            owners.append(owner)
        self._rewrite(plans, tgen)
        out = []
        for text, ranges, (_, pieces, slots, _), owner in zip(texts, spans, plans, owners,
                                                               strict=True):
            edges = np.concatenate([[0], np.cumsum([len(p) for p in split_words(text)])])
            slot_words = {(slot.piece - 1) // 2 for slot in slots}
            results = []
            for j, (a, b) in enumerate(ranges):
                inside = np.flatnonzero(owner == j).tolist()
                inside_set = set(inside)
                lo = min([a] + [int(edges[2 * i + 1]) for i in inside])
                hi = max([b] + [int(edges[2 * i + 2]) for i in inside])
                new, glue = [], []
                for k in range(0, len(pieces), 2):  # glue at even positions, words at odd
                    g = text[max(lo, int(edges[k])): min(hi, int(edges[k + 1]))]
                    new.append(g)
                    glue.append(g)
                    if k // 2 in inside_set:
                        new.append(pieces[k + 1])
                replaced = sum(i in slot_words for i in inside)
                counts = {"replaced": replaced, "inserted": 0, "deleted": 0,
                          "stopword": len(inside) - replaced,
                          "punctuation": count_punctuation(glue), "worst": replaced}
                results.append(Result("".join(new), self._report(counts)))
            out.append(results)
        return out

    def _rewrite(self, plans: list, tgen) -> None:
        """Fill every slot of every plan: masked LM in batched forward passes, causal LM by
        decoding (:meth:`_rewrite_causal`)."""
        words = self._candidates.words
        if self.causal:
            self._rewrite_causal(plans, tgen)
            return
        inputs = [self._backend.input_ids(a.ids, s.start, s.end)
                  for a, _, slots, _ in plans for s in slots]
        columns = self._draw(self._backend.scores(inputs), tgen) if inputs else []
        k = 0
        for _, pieces, slots, _ in plans:
            self._fill(pieces, slots, [words[c] for c in columns[k: k + len(slots)]])
            k += len(slots)

    def _rewrite_causal(self, plans: list, tgen) -> None:
        """Sequential draws: texts decoded side by side (long ones in segments, see
        :meth:`CausalBackend.rewrite_batch`); independent draws: every slot of a text scored
        in one teacher-forced pass (:meth:`CausalBackend.score_independent`)."""
        backend, words = self._backend, self._candidates.words
        todo = [p for p in plans if p[2]]
        jobs = [(p[0].ids, [(s.glue, s.start) for s in p[2]]) for p in todo]
        if self.draws == "independent":
            import torch

            scores = backend.score_independent(jobs, batch_size=self.batch_size)
            columns = self._draw(torch.cat(scores), tgen) if jobs else []
            k = 0
            for p in todo:
                self._fill(p[1], p[2], [words[c] for c in columns[k: k + len(p[2])]])
                k += len(p[2])
            return
        # one generator per group of rows, spawned from tgen (CausalBackend.rewrite_batch)
        chosen = backend.rewrite_batch(jobs, lambda rows, scores, gen: self._draw(scores, gen),
                                       batch_size=self.batch_size, generator=tgen)
        for p, cols in zip(todo, chosen, strict=True):
            self._fill(p[1], p[2], [words[c] for c in cols])

    def _fill(self, pieces: list, slots: list[_Slot], new: list[str]) -> None:
        if self.keep_case:  # the input's case pattern, released unprotected (reported)
            for slot, word in zip(slots, new, strict=True):
                pieces[slot.piece] = (word if slot.original is None
                                      else apply_case(word, slot.original))
            return
        # the input's case unused: the drawn word, capitalised where the released glue before it
        # starts a sentence (or at the start of the text)
        filled = {slot.piece: word for slot, word in zip(slots, new, strict=True)}
        tail, seen_word = "", False
        for i, piece in enumerate(pieces):
            if i in filled:
                piece = filled[i]
                if not seen_word or starts_sentence(trailing_glue(tail)):
                    piece = capitalize_first(piece)
                pieces[i] = piece
            if piece:
                tail = (tail + piece)[-256:]
                seen_word = seen_word or any(ch.isalnum() for ch in piece)

    def _report(self, c: dict[str, Any]) -> RewriteReport:
        g = self.guarantee
        events = [
            TokenEvent(g, c["replaced"], "mechanism"),
            TokenEvent(g, c["inserted"], "inserted"),
            TokenEvent(_DELETED, c["deleted"], "deleted"),
            TokenEvent(_KEPT, c["punctuation"], "punctuation"),
            TokenEvent(_KEPT, c["stopword"], "stopword"),
        ]
        worst = c["worst"] * self.epsilon if (self.p_add or self.p_del) else 0.0
        return RewriteReport(self.name, g, [e for e in events if e.count],
                             worst_case_epsilon=worst, document_scope=DOCUMENT_SCOPE,
                             unprotected_attributes={"case_pattern": c["cased"]}
                             if c.get("cased") else {})
