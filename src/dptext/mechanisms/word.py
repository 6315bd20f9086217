"""The word-level pipeline: split a text into words and glue, look each word up in an embedding
space, draw replacements for all words of a batch in one vectorized call, and account for every
token in a :class:`~dptext.accounting.report.PrivacyReport`.

A word mechanism declares which of its keyword parameters change its fitted tables
(``table_parameters``) and which do not (``runtime_parameters``); the cache key of the fitted
tables is derived from the first set, and a test checks that every keyword parameter of every
registered word mechanism is in exactly one of them - so a new mechanism cannot forget one and
silently reuse tables fitted with another value.
"""

from __future__ import annotations

import gc
import itertools
import operator
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from typing import ClassVar

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenEvent, TokenGuarantee
from dptext.accounting.report import PrivacyReport
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism, Result
from dptext.mechanisms.tables import FittedTables
from dptext.rng import RngLike, as_generator
from dptext.text import (
    BatchSplit,
    apply_case,
    capitalize_first,
    count_punctuation,
    normalize_word,
    resolve_stopwords,
    split_batch,
    starts_sentence,
)
from dptext.validation import check_bool, check_choice, check_epsilon, check_words

OOV_POLICIES = ("placeholder", "sample", "keep")
_KEPT = TokenGuarantee(GuaranteeKind.NONE)
_OOV_REPLACED = TokenGuarantee(
    GuaranteeKind.INDEPENDENT,
    scope="out-of-vocabulary words (reveals only that the word was out of vocabulary)",
)
# Between which texts a word mechanism's document composition holds: every word is one draw, and
# the skeleton (word count, punctuation, kept stopwords, the positions of OOV words) is released.
DOCUMENT_SCOPE = ("between texts with the same number of words and the same kept tokens "
                  "(punctuation, kept stopwords, out-of-vocabulary positions)")
# Keyword parameters of WordMechanism itself that never change the fitted tables.
PIPELINE_PARAMETERS = frozenset({"space", "keep_stopwords", "stopwords", "oov", "placeholder",
                                 "keep_case"})


#: entries a lookup cache (word or glue -> code) may hold before it is emptied: a long stream of
#: distinct out-of-vocabulary words cannot grow it without bound
CACHE_ENTRIES = 1 << 20
_MISSING = -(1 << 62)  # what a lookup cache gives for a key it does not hold
_WORDS_OF = operator.itemgetter(slice(1, None, 2))
_GLUE_OF = operator.itemgetter(slice(0, None, 2))
# glue (the text between two words) -> 2 * its punctuation tokens + (1 if a word after it starts
# a sentence); shared by every mechanism (it depends on the text alone)
_GLUE_CODES: dict[str, int] = {}
FILLER = -3  # the code of a filler slot between two texts (neither word nor OOV)


def _glue_code(glue: str) -> int:
    return 2 * count_punctuation([glue]) + starts_sentence(glue)


def _cached_codes(keys: list[str], cache: dict[str, int], compute: Callable[[str], int]
                  ) -> np.ndarray:
    """``cache[key]`` for every key as int64, computing (and caching) the missing ones."""
    codes = np.fromiter(map(cache.get, keys, itertools.repeat(_MISSING)), dtype=np.int64,
                        count=len(keys))
    missing = np.flatnonzero(codes == _MISSING)
    if len(missing):
        if len(cache) + len(missing) > CACHE_ENTRIES:
            cache.clear()
        for j in missing.tolist():
            key = keys[j]
            value = cache.get(key)
            if value is None:
                value = cache[key] = compute(key)
            codes[j] = value
    return codes


@contextmanager
def _gc_paused():
    """The cyclic garbage collector off while a batch builds its (acyclic) lists and reports:
    it would otherwise run every few hundred allocations and traverse the whole heap."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _SplitBatch:
    """The texts of a batch split into words and glue (:func:`dptext.text.split_batch`), every
    word and glue string looked up once (a C-level map over the whole batch). Per word slot
    (``pieces[1::2]``; a filler between two texts is a slot that is no word): its code
    (vocabulary row, -2 kept stopword, -1 out of vocabulary, -3 filler), whether it has no
    upper-case letter, whether it starts a sentence; per text: its punctuation tokens."""

    def __init__(self, texts: Sequence[str], word_cache: dict[str, int],
                 word_code: Callable[[str], int]) -> None:
        if not all(map(isinstance, texts, itertools.repeat(str))):
            bad = next(t for t in texts if not isinstance(t, str))
            raise DPTextError(f"texts must be strings, got {type(bad).__name__}")
        self.split = split_batch(texts)
        pieces, n_words = self.split.pieces, self.split.words
        n_texts = len(n_words)
        self.slots = pieces[1::2]
        # 2 * code + (1 if the word has no upper-case letter)
        encoded = _cached_codes(self.slots, word_cache, word_code)
        fillers = self.split.fillers()
        encoded[fillers] = 2 * FILLER
        self.codes = encoded >> 1
        self.lower = (encoded & 1).astype(bool)
        glue_codes = _cached_codes(pieces[0::2], _GLUE_CODES, _glue_code)
        first_glue = self.split.offsets // 2  # text t's glue: first_glue[t] ... + n_words[t]
        self.punctuation = (np.add.reduceat(glue_codes >> 1, first_glue) if n_texts
                            else np.zeros(0, dtype=np.int64))
        self.initial = (glue_codes[: len(self.slots)] & 1).astype(bool)  # the glue before
        self.initial[first_glue[n_words > 0]] = True  # a text's first word
        self.text_of = np.repeat(np.arange(n_texts), n_words + 1)[: len(self.slots)]

    def per_text(self, mask: np.ndarray) -> list[int]:
        """Per text, how many of its word slots ``mask`` marks."""
        return np.bincount(self.text_of[mask], minlength=len(self.split)).tolist()

    def render(self, slots: list[str]) -> list[str]:
        """The texts with ``slots`` (one per word slot) in place of their words."""
        pieces = self.split.pieces
        pieces[1::2] = slots
        ends = (self.split.offsets + 2 * self.split.words + 1).tolist()
        return ["".join(pieces[a:b]) for a, b in zip(self.split.offsets.tolist(), ends,
                                                     strict=True)]


def _in_detected_entities(texts: Sequence[str], split: BatchSplit) -> np.ndarray:
    """For every word slot of a batch (fillers between texts: False), whether the word lies
    inside an entity that the spaCy detector (dptext.detect, its default categories) finds in
    its text."""
    from dptext.detect import detector

    found = detector().detect(list(texts))
    out = []
    for t, ents in enumerate(found):
        if t:
            out.append(False)  # the filler before text t
        spans = [(e.start, e.end) for e in ents]
        pos = 0
        for j, part in enumerate(split.parts(t)):
            if j % 2:
                out.append(any(a <= pos and pos + len(part) <= b for a, b in spans))
            pos += len(part)
    return np.array(out, dtype=bool)


class WordMechanism(FittedTables, Mechanism):
    """A mechanism that replaces each word by a draw over an embedding space's vocabulary.

    Subclasses implement ``_fit_tables`` (precomputation, returned as arrays so it can be
    saved), ``_sample(rows, rng)`` (vectorized over all tokens of a batch), ``guarantee`` and,
    where computable, ``distribution``.

    Every token is accounted for: punctuation is kept (reason ``punctuation``); stopwords are
    privatized unless ``keep_stopwords`` (then kept, reason ``stopword``); out-of-vocabulary
    words follow ``oov``: ``"placeholder"`` (default; replaced by ``placeholder``, output
    independent of the word), ``"sample"`` (a uniform draw from the output vocabulary, also
    independent of the word) or ``"keep"`` (released verbatim, reported as unprotected).

    Case: the guarantee is over the lower-cased word, so by default (``keep_case=False``) the
    input's case is not used at all - a replacement is released as drawn (the vocabulary's lower
    case) and capitalised only at a sentence start, which the released punctuation decides
    (post-processing). ``keep_case=True`` copies the input's case pattern (Title, UPPER) onto
    the replacement: the pattern is then released unprotected, and the report lists it
    (``unprotected_attributes["case_pattern"]``: the privatized tokens it was copied from).
    """

    def __init__(
        self,
        *,
        epsilon: float,
        space: EmbeddingSpace | str | None = None,
        keep_stopwords: bool = False,
        stopwords: Iterable[str] | None = None,
        oov: str = "placeholder",
        placeholder: str = "[UNK]",
        keep_case: bool = False,
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        if isinstance(space, str):  # a named space ("glove-6b-50d"): loaded (built once) now
            from dptext.resources import named_space

            space = named_space(space)
        if space is not None and not isinstance(space, EmbeddingSpace):
            raise DPTextError("space must be an EmbeddingSpace, a space name (minilm-50k, "
                              "glove-6b-50d) or None for the default space")
        self.space = space
        self.keep_stopwords = check_bool(keep_stopwords, "keep_stopwords")
        self.stopwords = resolve_stopwords(None if stopwords is None
                                           else check_words(stopwords, "stopwords"))
        self.oov = check_choice(oov, "oov", OOV_POLICIES)
        self.placeholder = str(placeholder)
        self.keep_case = check_bool(keep_case, "keep_case")
        self._tables: dict[str, np.ndarray] | None = None
        self._lookup_cache: dict[str, int] = {}

    # ------------------------------------------------------------- fitting
    #: keyword parameters the fitted tables depend on (the cache key); each must be stored
    #: under its own name as an attribute of the instance
    table_parameters: ClassVar[frozenset[str]] = frozenset({"epsilon"})
    #: keyword parameters that do not change the tables (besides ``PIPELINE_PARAMETERS``)
    runtime_parameters: ClassVar[frozenset[str]] = frozenset()
    capabilities: ClassVar[frozenset[str]] = frozenset({"sample_rows"})

    #: where a table parameter is stored under another attribute name, and the cache-key name
    #: a parameter has kept from older versions (so existing cached tables stay valid)
    table_attributes: ClassVar[dict[str, str]] = {}
    table_key_names: ClassVar[dict[str, str]] = {}

    @abstractmethod
    def _fit_tables(self, space: EmbeddingSpace) -> dict[str, np.ndarray]: ...

    #: version of a mechanism's own table layout (part of the cache key: bump it when the
    #: tables a mechanism fits change meaning)
    table_layout: ClassVar[int] = 1

    def fitted_space(self) -> EmbeddingSpace:
        """The embedding space, fitting the tables first if needed."""
        if self._tables is None:
            self.fit()
        return self.space

    _fitted_space = fitted_space  # the name older code used

    def resolved_space(self) -> EmbeddingSpace:
        """The embedding space without fitting any table (loads the default space if unset):
        what a guarantee that depends only on the space's geometry needs."""
        if self.space is None:
            from dptext.resources import default_space

            self.space = default_space(progress=False)
        return self.space

    def sample_rows(self, rows: np.ndarray, rng: RngLike = None) -> np.ndarray:
        """Output vocabulary rows for input vocabulary rows, one independent draw each (the
        vectorized core of :meth:`privatize_batch`, for evaluation and attacks that work on
        rows instead of text)."""
        space = self.fitted_space()
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= len(space)):
            raise DPTextError(f"rows must be vocabulary rows in [0, {len(space)})")
        if rows.size == 0:
            return rows.copy()
        return self._sample(rows.ravel(), as_generator(rng)).reshape(rows.shape)

    # ---------------------------------------------------------- sampling
    @abstractmethod
    def _sample(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Output rows for input rows (all tokens of a batch at once)."""

    def _output_rows(self) -> np.ndarray | None:
        """Rows the mechanism may output (None: the whole vocabulary)."""
        return None

    def _protected(self, rows: np.ndarray) -> np.ndarray | None:
        """Mask of input rows that get the guarantee (None: all). SanText+ overrides."""
        return None

    def distribution(self, word: str) -> tuple[list[str], np.ndarray]:
        """Exact output distribution of ``word``: (candidate words, probabilities)."""
        raise NotImplementedError(f"{self.name} has no closed-form output distribution")

    # ------------------------------------------------------------ pipeline
    def _vocab_objects(self) -> np.ndarray:
        """The vocabulary as a numpy object array (fancy-indexed when rendering outputs; built
        once per space). Capitalised forms are made per drawn word where a sentence starts:
        all 50k of them up front cost a cached command's start-up ~0.1 s (issue 36)."""
        if getattr(self, "_vocab_space", None) is not self.space or self._vocab_array is None:
            self._vocab_array = np.array(self.space.words, dtype=object)
            self._vocab_space = self.space
        return self._vocab_array

    def _classify(self, word: str) -> int:
        """Row to privatize (>= 0), -2 for a kept stopword, -1 for out-of-vocabulary."""
        key = normalize_word(word)
        if self.keep_stopwords and key in self.stopwords:
            return -2
        return self.space.index.get(key, -1)

    def _word_code(self, word: str) -> int:
        """What the lookup cache holds for ``word``: 2 * :meth:`_classify` + (1 if the word has
        no upper-case letter: digits, "it", "don't" carry no case pattern to release)."""
        return 2 * self._classify(word) + (word.islower() or word == word.lower())

    def privatize_batch(self, texts: Sequence[str], *, rng: RngLike = None) -> list[Result]:
        """Privatize many texts with one vectorized draw over all their tokens."""
        self._fitted_space()
        gen = as_generator(rng)
        if isinstance(texts, str):
            raise DPTextError("texts must be a sequence of strings, not one string")
        if not isinstance(texts, list | tuple):
            texts = list(texts)
        with _gc_paused():
            return self._privatize_split(_SplitBatch(texts, self._lookup_cache,
                                                     self._word_code), texts, gen)

    def _privatize_split(self, batch: _SplitBatch, texts: Sequence[str],
                         gen: np.random.Generator) -> list[Result]:
        space = self.space
        flat, lower, initial, originals = batch.codes, batch.lower, batch.initial, batch.slots
        words = np.fromiter(originals, dtype=object, count=len(originals))  # filled in below
        vocab = self._vocab_objects()
        case_copied = np.zeros(len(flat), dtype=bool)

        def render(positions: np.ndarray, rows: np.ndarray) -> None:
            words[positions] = vocab[rows]  # lower-case originals need nothing more
            if self.keep_case:  # the input's case pattern, released unprotected
                cased = ~lower[positions]
                at = positions[cased]
                case_copied[at] = True
                words[at] = [apply_case(w, originals[p])
                             for p, w in zip(at.tolist(), vocab[rows[cased]].tolist(),
                                             strict=True)]
            else:  # the input's case unused: capitalised only where a sentence starts
                first = initial[positions]
                at = positions[first]
                capitalized = np.empty(len(at), dtype=object)
                capitalized[:] = [capitalize_first(w) for w in vocab[rows[first]].tolist()]
                words[at] = capitalized

        in_vocab = np.flatnonzero(flat >= 0)
        rows = flat[in_vocab]
        protected = self._protected(rows)
        resampled = np.zeros(len(flat), dtype=bool)
        if len(rows):
            drawn = self._sample(rows, gen)
            render(in_vocab, drawn)
            if protected is not None:  # unprotected words the mechanism redrew anyway
                resampled[in_vocab[~protected & (drawn != rows)]] = True
        oov = np.flatnonzero(flat == -1)
        if len(oov) and self.oov == "sample":
            allowed = self._output_rows()
            draws = gen.integers(0, len(space) if allowed is None else len(allowed), len(oov))
            render(oov, draws if allowed is None else allowed[draws])
        elif len(oov) and self.oov == "placeholder":
            words[oov] = self.placeholder

        per_text = batch.per_text
        unprotected_mask = np.zeros(len(flat), dtype=bool)
        if protected is not None:
            unprotected_mask[in_vocab[~protected]] = True
        verbatim = unprotected_mask & ~resampled
        n_priv = per_text((flat >= 0) & ~unprotected_mask)
        n_unprot = per_text(verbatim)
        n_resampled = per_text(resampled)
        n_case = per_text(case_copied & ~verbatim)
        # verbatim "non-sensitive" words capitalised inside a sentence: likely names or places
        n_capital = per_text(verbatim & ~lower & ~initial)
        n_entity = [0] * len(texts)
        if getattr(self, "warn_entities", False) and verbatim.any():
            n_entity = per_text(verbatim & _in_detected_entities(texts, batch.split))
        n_stop = per_text(flat == -2)
        n_oov = per_text(flat == -1)
        reports = self._reports(n_priv, batch.punctuation.tolist(), n_stop, n_unprot,
                                n_resampled, n_oov, n_case, n_capital, n_entity)
        return [Result(text, report) for text, report in
                zip(batch.render(words.tolist()), reports, strict=True)]

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Per text, the words the pipeline would privatize: in-vocabulary words that are not
        kept as stopwords (the text's shape, released with it). Needs the space, not the
        tables. For SanText+ an upper bound: its non-sensitive words, which are not charged,
        are counted too."""
        self.resolved_space()
        if isinstance(texts, str):
            raise DPTextError("texts must be a sequence of strings, not one string")
        texts = list(texts)
        if not texts:
            return []
        batch = _SplitBatch(texts, self._lookup_cache, self._word_code)
        return batch.per_text(batch.codes >= 0)

    def word_kinds(self, words: Sequence[str]) -> list[str]:
        """What the pipeline does with each word, for displays that mark tokens:
        ``"privatized"`` (drawn by the mechanism; the draw may equal the word),
        ``"stopword"`` (kept verbatim), ``"oov"`` (out of vocabulary: the ``oov`` policy) or
        ``"non_sensitive"`` (SanText+: kept verbatim with probability 1 - p)."""
        self.fitted_space()
        codes = [self._classify(w) for w in words]
        rows = np.array([c for c in codes if c >= 0], dtype=np.int64)
        protected = self._protected(rows) if len(rows) else None
        kinds, k = [], 0
        for c in codes:
            if c == -2:
                kinds.append("stopword")
            elif c == -1:
                kinds.append("oov")
            else:
                kinds.append("privatized" if protected is None or protected[k]
                             else "non_sensitive")
                k += 1
        return kinds

    def _reports(self, n_priv: list[int], n_punct: list[int], n_stop: list[int],
                 n_unprotected: list[int], n_resampled: list[int], n_oov: list[int],
                 n_case: list[int], n_capitalized: list[int], n_entity: list[int]
                 ) -> list[PrivacyReport]:
        """One report per text from its counts (lists, one entry per text). The events of a
        combination of counts are built once per batch (they are frozen, so reports share
        them); every report gets its own lists and dicts."""
        guarantee = self._token_guarantee
        oov_guarantee, oov_reason = ((_KEPT, "oov") if self.oov == "keep"
                                     else (_OOV_REPLACED, f"oov_{self.oov}"))
        kinds = ((guarantee, "mechanism"), (_KEPT, "punctuation"), (_KEPT, "stopword"),
                 (_KEPT, "non_sensitive"), (_KEPT, "non_sensitive_resampled"),
                 (oov_guarantee, oov_reason))
        keys = list(zip(n_priv, n_punct, n_stop, n_unprotected, n_resampled, n_oov,
                        strict=True))
        events_of = {key: tuple(TokenEvent(g, c, reason)
                                for (g, reason), c in zip(kinds, key, strict=True) if c)
                     for key in set(keys)}
        name = self.name
        out = [PrivacyReport(name, guarantee, list(events_of[key]), document_scope=DOCUMENT_SCOPE)
               for key in keys]
        flagged = (np.asarray(n_case, dtype=np.int64) | np.asarray(n_capitalized, dtype=np.int64)
                   | np.asarray(n_entity, dtype=np.int64))
        for t in np.flatnonzero(flagged).tolist():
            if n_case[t]:
                out[t].unprotected_attributes["case_pattern"] = n_case[t]
            for warning, count in (("non_sensitive_capitalized", n_capitalized[t]),
                                   ("non_sensitive_entity", n_entity[t])):
                if count:
                    out[t].warnings[warning] = count
        return out

    # ------------------------------------------------------------- display
    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:g})"
