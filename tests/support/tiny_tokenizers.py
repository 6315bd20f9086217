"""Tokenizers the LM tests train on a few sentences (no download)."""

from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers


def byte_level_bpe(corpus: list[str], specials: list[str], vocab_size: int) -> Tokenizer:
    """A GPT-2-style byte-level BPE tokenizer (``Ġ`` marks a word start) trained on ``corpus``."""
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tk
