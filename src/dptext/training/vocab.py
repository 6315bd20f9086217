"""A public word vocabulary (wordfreq's most frequent English words) and sentence encoding.

The vocabulary must not come from the private corpus: which words it holds would leak them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from dptext.text import normalize_word, split_words

PAD, UNK, EOS = "<pad>", "<unk>", "<eos>"


@dataclass(frozen=True)
class Vocabulary:
    words: tuple[str, ...]

    @classmethod
    def public(cls, size: int = 3000, extra: Sequence[str] = ()) -> Vocabulary:
        """The ``size`` most frequent English words (wordfreq) plus public ``extra`` words."""
        import wordfreq

        words = [PAD, UNK, EOS]
        seen = set(words)
        for w in list(wordfreq.top_n_list("en", size)) + list(extra):
            if w not in seen:
                seen.add(w)
                words.append(w)
        return cls(tuple(words))

    def __len__(self) -> int:
        return len(self.words)

    @property
    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}

    def encode(self, sentences: Sequence[str], max_len: int = 32) -> torch.Tensor:
        """[n, max_len + 1] ids: <eos> w1 .. wk <eos> <pad>..., truncated to ``max_len`` words."""
        index = self.index
        unk, eos = index[UNK], index[EOS]
        out = torch.zeros(len(sentences), max_len + 1, dtype=torch.long)
        for i, s in enumerate(sentences):
            # split_words gives [glue, word, glue, ..., glue]: the words are at odd positions
            # (until issue 35 every glue string - the spaces, ", " - was encoded too, as <unk>:
            # half the tokens of a sentence, and perplexities read off mostly that alternation)
            ids = [index.get(normalize_word(w), unk) for w in split_words(s)[1::2]][: max_len - 1]
            row = [eos, *ids, eos]
            out[i, : len(row)] = torch.tensor(row)
        return out
