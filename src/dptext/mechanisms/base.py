"""The mechanism interface, the registry, and the word-level token pipeline.

Every mechanism: keyword-only validated parameters (nothing expensive in ``__init__``), ``fit()``
for the precomputation (saved/loaded, cached on disk), ``privatize(text, rng=)`` and
``privatize_batch(texts, rng=)`` returning :class:`Result` (text + :class:`PrivacyReport`).
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenEvent, TokenGuarantee
from dptext.accounting.report import PrivacyReport
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.io import atomic_write
from dptext.text import (
    apply_case,
    count_punctuation,
    normalize_word,
    resolve_stopwords,
    split_words,
)

RngLike = np.random.Generator | int | None
OOV_POLICIES = ("placeholder", "sample", "keep")
_KEPT = TokenGuarantee(GuaranteeKind.NONE)
_OOV_REPLACED = TokenGuarantee(
    GuaranteeKind.INDEPENDENT,
    scope="out-of-vocabulary words (reveals only that the word was out of vocabulary)",
)
# Bump when a mechanism's fitted tables change meaning: cached tables of older code are ignored.
TABLE_FORMAT = 2


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "none"


def as_generator(rng: RngLike) -> np.random.Generator:
    """``None``: fresh OS entropy (the default). An int seeds a generator - for experiments
    only: a seeded run is reproducible, hence predictable to anyone who knows the seed."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, int) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    raise DPTextError(
        f"rng must be a numpy Generator, an int seed or None, got {type(rng).__name__}"
    )


# ------------------------------------------------------------------ validation
def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise DPTextError(f"{name} must be a number, got {epsilon!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise DPTextError(f"{name} must be finite and > 0, got {epsilon!r}")
    return value


def check_int(value: Any, name: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        try:
            as_float = float(value)
        except (TypeError, ValueError):
            raise DPTextError(f"{name} must be an integer, got {value!r}") from None
        if not as_float.is_integer():
            raise DPTextError(f"{name} must be an integer, got {value!r}")
        value = int(as_float)
    if value < minimum:
        raise DPTextError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_probability(value: Any, name: str) -> float:
    try:
        p = float(value)
    except (TypeError, ValueError):
        raise DPTextError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= p <= 1.0:
        raise DPTextError(f"{name} must be in [0, 1], got {value!r}")
    return p


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise DPTextError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


# ----------------------------------------------------------------- interface
@dataclass(frozen=True)
class Result:
    text: str
    report: PrivacyReport


class Mechanism(ABC):
    """Base of every mechanism (word-level or language-model)."""

    name: ClassVar[str]
    summary: ClassVar[str]  # one line: what it does, for `dptext mechanisms`
    guarantee_summary: ClassVar[str]  # one line: the per-token guarantee

    @abstractmethod
    def fit(self) -> Mechanism: ...

    @abstractmethod
    def privatize_batch(self, texts: Sequence[str], *, rng: RngLike = None) -> list[Result]: ...

    def privatize(self, text: str, *, rng: RngLike = None) -> Result:
        """Privatize one text; ``rng`` defaults to fresh OS entropy."""
        return self.privatize_batch([text], rng=rng)[0]

    @property
    @abstractmethod
    def guarantee(self) -> TokenGuarantee: ...


_REGISTRY: dict[str, type[Mechanism]] = {}


def register(cls: type[Mechanism]) -> type[Mechanism]:
    """Class decorator: make ``cls`` available as ``dptext.mechanism(cls.name, ...)``."""
    _REGISTRY[cls.name] = cls
    return cls


def registered() -> dict[str, type[Mechanism]]:
    import dptext.mechanisms  # noqa: F401  (registers the built-in mechanisms)

    return dict(sorted(_REGISTRY.items()))


def parameters(cls: type[Mechanism]) -> dict[str, Any]:
    """Keyword parameters of a mechanism (its own and those it passes on) and their defaults."""
    out: dict[str, Any] = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        for n, p in inspect.signature(klass.__init__).parameters.items():
            if p.kind is inspect.Parameter.KEYWORD_ONLY and n not in out:
                out[n] = p.default if p.default is not inspect.Parameter.empty else "<required>"
    return out


def mechanism(name: str, **params: Any) -> Mechanism:
    """Build a registered mechanism by name, e.g. ``mechanism("custext", epsilon=2, k=20)``."""
    table = registered()
    if name not in table:
        raise DPTextError(f"unknown mechanism {name!r}; available: {', '.join(table)}")
    cls = table[name]
    accepted = parameters(cls)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise DPTextError(
            f"unknown parameter {unknown[0]!r} for mechanism {name!r}; "
            f"accepted: {', '.join(accepted)}"
        )
    missing = [n for n, d in accepted.items() if d == "<required>" and n not in params]
    if missing:
        raise DPTextError(f"mechanism {name!r} needs parameter {missing[0]!r}")
    return cls(**params)


# ------------------------------------------------------------ word pipeline
class WordMechanism(Mechanism):
    """A mechanism that replaces each word by a draw over an embedding space's vocabulary.

    Subclasses implement ``_fit_tables`` (precomputation, returned as arrays so it can be
    saved), ``_sample(rows, rng)`` (vectorized over all tokens of a batch), ``guarantee`` and,
    where computable, ``distribution``.

    Every token is accounted for: punctuation is kept (reason ``punctuation``); stopwords are
    privatized unless ``keep_stopwords`` (then kept, reason ``stopword``); out-of-vocabulary
    words follow ``oov``: ``"placeholder"`` (default; replaced by ``placeholder``, output
    independent of the word), ``"sample"`` (a uniform draw from the output vocabulary, also
    independent of the word) or ``"keep"`` (released verbatim, reported as unprotected).
    """

    def __init__(
        self,
        *,
        epsilon: float,
        space: EmbeddingSpace | None = None,
        keep_stopwords: bool = False,
        stopwords: Iterable[str] | None = None,
        oov: str = "placeholder",
        placeholder: str = "[UNK]",
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        if space is not None and not isinstance(space, EmbeddingSpace):
            raise DPTextError("space must be an EmbeddingSpace (or None for the default space)")
        self.space = space
        self.keep_stopwords = bool(keep_stopwords)
        self.stopwords = resolve_stopwords(stopwords)
        self.oov = check_choice(oov, "oov", OOV_POLICIES)
        self.placeholder = str(placeholder)
        self._tables: dict[str, np.ndarray] | None = None
        self._lookup_cache: dict[str, int] = {}

    # ------------------------------------------------------------- fitting
    def _table_params(self) -> dict[str, Any]:
        """Parameters the fitted tables depend on (with the space fingerprint)."""
        return {"epsilon": self.epsilon}

    @abstractmethod
    def _fit_tables(self, space: EmbeddingSpace) -> dict[str, np.ndarray]: ...

    def _use_tables(self, tables: dict[str, np.ndarray]) -> None:
        self._tables = tables
        self._token_guarantee = self.guarantee  # fixed once fitted; every report shares it

    def _cache_path(self, space: EmbeddingSpace) -> Path:
        from dptext.resources import cache_dir

        key = json.dumps(
            {
                "mechanism": self.name, "space": space.fingerprint(),
                "tables": TABLE_FORMAT, "wordfreq": _version("wordfreq"),
                **self._table_params(),
            },
            sort_keys=True,
        )
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return cache_dir() / "fitted" / f"{self.name}-{digest}.npz"

    def fit(self, *, cache: bool = True, progress: bool = False) -> WordMechanism:
        """Precompute the sampling tables (once; cached on disk under the space fingerprint)."""
        if self.space is None:
            from dptext.resources import default_space

            self.space = default_space(progress=progress)
        path = self._cache_path(self.space) if cache else None
        if path is not None and path.is_file():
            with np.load(path, allow_pickle=False) as z:
                self._use_tables({k: z[k] for k in z.files})
        else:
            tables = self._fit_tables(self.space)
            if path is not None:
                self.save(path, tables)
            self._use_tables(tables)
        self._lookup_cache = {}
        return self

    def save(self, path: str | os.PathLike, tables: dict[str, np.ndarray] | None = None) -> Path:
        """Write the fitted tables to ``path`` (atomically)."""
        tables = tables if tables is not None else self._tables
        if tables is None:
            raise DPTextError(f"{self.name}: fit() before save()")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "wb") as f:
            np.savez(f, **tables)
        return path

    def load(self, path: str | os.PathLike) -> WordMechanism:
        """Use tables written by :meth:`save` (for the same space and parameters)."""
        if self.space is None:
            from dptext.resources import default_space

            self.space = default_space()
        with np.load(path, allow_pickle=False) as z:
            self._use_tables({k: z[k] for k in z.files})
        return self

    def _fitted_space(self) -> EmbeddingSpace:
        if self._tables is None:
            self.fit()
        return self.space

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
        """The vocabulary as a numpy object array (fancy-indexed when rendering outputs)."""
        if getattr(self, "_vocab_array", None) is None or len(self._vocab_array) != len(self.space):
            self._vocab_array = np.array(self.space.words, dtype=object)
        return self._vocab_array

    def _classify(self, word: str) -> int:
        """Row to privatize (>= 0), -2 for a kept stopword, -1 for out-of-vocabulary."""
        key = normalize_word(word)
        if self.keep_stopwords and key in self.stopwords:
            return -2
        return self.space.index.get(key, -1)

    def privatize_batch(self, texts: Sequence[str], *, rng: RngLike = None) -> list[Result]:
        """Privatize many texts with one vectorized draw over all their tokens."""
        space = self._fitted_space()
        gen = as_generator(rng)
        cache = self._lookup_cache
        parts_of, codes_of = [], []
        for text in texts:
            if not isinstance(text, str):
                raise DPTextError(f"texts must be strings, got {type(text).__name__}")
            parts = split_words(text)
            words = parts[1::2]
            codes = list(map(cache.get, words))
            if None in codes:
                for j, w in enumerate(words):
                    if codes[j] is None:
                        codes[j] = cache[w] = self._classify(w)
            parts_of.append(parts)
            codes_of.append(codes)
        flat = np.fromiter(itertools.chain.from_iterable(codes_of), dtype=np.int64)
        originals = list(itertools.chain.from_iterable(p[1::2] for p in parts_of))
        words = np.array(originals, dtype=object)  # output words, filled in below
        lower = np.fromiter(map(str.islower, originals), dtype=bool, count=len(originals))
        lengths = np.array([len(c) for c in codes_of], dtype=np.int64)
        text_of = np.repeat(np.arange(len(texts)), lengths)
        vocab = self._vocab_objects()

        def render(positions: np.ndarray, rows: np.ndarray) -> None:
            words[positions] = vocab[rows]  # lower-case originals need nothing more
            cased = ~lower[positions]
            words[positions[cased]] = [
                apply_case(vocab[i], originals[p])
                for p, i in zip(positions[cased].tolist(), rows[cased].tolist(), strict=True)
            ]

        in_vocab = np.flatnonzero(flat >= 0)
        rows = flat[in_vocab]
        protected = self._protected(rows)
        if len(rows):
            render(in_vocab, self._sample(rows, gen))
        oov = np.flatnonzero(flat == -1)
        if len(oov) and self.oov == "sample":
            allowed = self._output_rows()
            draws = gen.integers(0, len(space) if allowed is None else len(allowed), len(oov))
            render(oov, draws if allowed is None else allowed[draws])
        elif len(oov) and self.oov == "placeholder":
            words[oov] = self.placeholder

        def per_text(mask: np.ndarray) -> list[int]:
            return np.bincount(text_of[mask], minlength=len(texts)).tolist()

        unprotected_mask = np.zeros(len(flat), dtype=bool)
        if protected is not None:
            unprotected_mask[in_vocab[~protected]] = True
        n_priv = per_text((flat >= 0) & ~unprotected_mask)
        n_unprot = per_text(unprotected_mask)
        n_stop = per_text(flat == -2)
        n_oov = per_text(flat == -1)
        results = []
        ends = np.cumsum(lengths).tolist()
        start = 0
        for t, (parts, end) in enumerate(zip(parts_of, ends, strict=True)):
            parts[1::2] = words[start:end].tolist()
            start = end
            report = self._report(
                n_priv=n_priv[t], n_unprotected=n_unprot[t], n_stop=n_stop[t],
                n_oov=n_oov[t], n_punct=count_punctuation(parts[0::2]),
            )
            results.append(Result("".join(parts), report))
        return results

    def _report(self, *, n_priv: int, n_unprotected: int, n_stop: int, n_oov: int,
                n_punct: int) -> PrivacyReport:
        guarantee = self._token_guarantee
        events = [
            TokenEvent(guarantee, n_priv, "mechanism"),
            TokenEvent(_KEPT, n_punct, "punctuation"),
            TokenEvent(_KEPT, n_stop, "stopword"),
            TokenEvent(_KEPT, n_unprotected, "non_sensitive"),
        ]
        if self.oov == "keep":
            events.append(TokenEvent(_KEPT, n_oov, "oov"))
        else:
            events.append(TokenEvent(_OOV_REPLACED, n_oov, f"oov_{self.oov}"))
        return PrivacyReport(self.name, guarantee, [e for e in events if e.count])

    # ------------------------------------------------------------- display
    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:g})"
