"""The fixed candidate set: which vocabulary tokens a privatized word may become.

Fixed from the tokenizer alone, before any private text is seen (so it leaks nothing). Kept:
tokens that start a word and whose surface (the token without its word-start marker) is one
whole word in the sense of :func:`dptext.text.split_words` (letters/digits, inner apostrophes).
Excluded, and listed in docs/lm_mechanisms.md: special tokens (``<s>``, ``[MASK]``, ``<pad>``,
chat markers...), sub-word continuations (``##ing`` in WordPiece; a byte-level BPE or
SentencePiece token without its ``Ġ``/``▁`` marker), punctuation, whitespace and byte tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dptext.errors import DPTextError
from dptext.text import split_words

_MARKERS = ("\u0120", "\u2581")  # byte-level BPE "Ġ", SentencePiece "▁"


@dataclass(frozen=True)
class CandidateSet:
    """Token ids (``ids``) and the word each renders as (``words``, same order)."""

    ids: np.ndarray
    words: list[str]

    def __len__(self) -> int:
        return len(self.ids)


def _is_word(surface: str) -> bool:
    return bool(surface) and split_words(surface) == ["", surface, ""]


def candidate_set(tokenizer, *, word_starts_only: bool = True) -> CandidateSet:
    """The candidate set of ``tokenizer`` (see the module docstring for the rule).

    The scheme is read off the vocabulary: a ``Ġ``/``▁`` marker means sub-word-initial tokens
    carry it; otherwise ``##`` marks WordPiece continuations; otherwise (a word-level
    vocabulary) every token is a word. ``word_starts_only=False`` also admits continuation
    pieces that are whole words on their own (never special tokens).
    """
    vocab: dict[str, int] = tokenizer.get_vocab()
    special = set(tokenizer.all_special_ids)
    for added_id in getattr(tokenizer, "added_tokens_decoder", {}) or {}:
        special.add(int(added_id))
    tokens = list(vocab)
    marker = next((m for m in _MARKERS if any(t.startswith(m) for t in tokens)), None)
    wordpiece = marker is None and any(t.startswith("##") for t in tokens)
    ids, words = [], []
    for tok, idx in vocab.items():  # once per tokenizer, at fit time
        if idx in special:
            continue
        if marker is not None:
            starts = tok.startswith(marker)
            # byte-level BPE stores bytes as stand-in characters: decode to the real surface
            surface = tokenizer.convert_tokens_to_string([tok]).strip()
        elif wordpiece:
            starts = not tok.startswith("##")
            surface = tok if starts else tok[2:]
        else:
            starts, surface = True, tok
        if (starts or not word_starts_only) and _is_word(surface):
            ids.append(idx)
            words.append(surface)
    if not ids:
        raise DPTextError("the tokenizer has no whole-word tokens to sample from")
    order = np.argsort(ids, kind="stable")
    return CandidateSet(np.asarray(ids, dtype=np.int64)[order], [words[i] for i in order])
