"""LM-based token inference: can a language model recover the original words from sanitized text?

Two attacks, both seeing only the sanitized text S (``kind``):

**masked** (``masked_token_inference``; the attack of the CusText and SanText papers, Chen et al.
2023 and Yue et al. 2021, arXiv:2106.01221, "mask token inference attack"): each word of S is
replaced in turn by one mask token and a masked LM's top prediction at the mask (over its whole
vocabulary) is compared with the original word. Default model: the packaged masked LM
``minilm-mlm`` (:mod:`dptext.lm.mlm_build`); any ``AutoModelForMaskedLM`` by name or path. One
input per scored word (the text with that word masked), batched by length; the vocabulary
projection runs only at the mask positions. A word of several sub-word tokens becomes ONE
mask, as DP-MLM masks it.

**causal** (``lm_token_inference``; our adaptation to the packaged causal LM SmolLM2-135M-Instruct,
kept as the alternative): the attacker reads S twice::

    Some words of the following text were replaced by other words.
    Noisy text: S
    Original text: S

With teacher forcing, the logits at the token before word i of the second copy are the LM's
next-token prediction for word i given all of S and the sanitized words before i (the attacker
never sees an original word, so its "prefix" is the sanitized one). Every position of a text
comes out of one forward pass; texts are batched (right padding: causal attention makes the
padding invisible to real positions) and the LM head is applied only at the scored positions.

Scored words (both kinds): the original words that are in the vocabulary of the mechanism's
space, aligned by position with the sanitized words (word-level mechanisms keep the word count;
a text whose count changed is skipped and counted in ``texts_skipped``). Success (``success``):
the top-1 predicted token equals the first token of the original word at that position (decoded,
stripped, case-insensitive). This is lenient for words of several tokens (the first piece is
enough), so we also report ``success_word``: the predicted token is the whole original word. The
rate of an attacker that simply copies the sanitized word (``copy_rate``, the fraction of words
left unchanged) and the success on changed words only (``success_changed``) show what the LM
adds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dptext.text import split_words

HEAD = "Some words of the following text were replaced by other words.\nNoisy text:"
SECOND = "\nOriginal text:"


@dataclass
class _Item:
    ids: list[int]
    positions: np.ndarray  # token index whose prediction is scored (the token before word i)
    targets: list[str]  # normalised first token of the original word
    words: list[str]  # the original word, lower case
    changed: np.ndarray  # sanitized word != original word (case-insensitive)


def _norm(piece: str) -> str:
    return piece.strip().lower()


def _token_at(offsets: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """Index of the token covering each character position (the first token ending after it)."""
    # special tokens carry (0, 0) offsets: a running maximum keeps the ends sorted
    return np.searchsorted(np.maximum.accumulate(offsets[:, 1]), chars, side="right")


def _word_starts(parts: list[str]) -> np.ndarray:
    lengths = np.array([len(p) for p in parts])
    return np.cumsum(np.concatenate([[0], lengths]))[1::2][: len(parts) // 2]


def _prepare(tokenizer, original: str, sanitized: str, in_vocab: Callable[[str], bool],
             max_words: int) -> _Item | None:
    o_parts, s_parts = split_words(original), split_words(sanitized)
    if len(o_parts) != len(s_parts):
        return None
    k = min(len(o_parts) // 2, max_words)
    o_text, s_text = "".join(o_parts[: 2 * k]), "".join(s_parts[: 2 * k])
    o_words, s_words = o_parts[1 : 2 * k : 2], s_parts[1 : 2 * k : 2]
    keep = np.array([in_vocab(w) for w in o_words], dtype=bool)
    if not keep.any():
        return _Item([], np.zeros(0, int), [], [], np.zeros(0, bool))
    prompt = f"{HEAD} {s_text}{SECOND} "
    enc = tokenizer(prompt + s_text, return_offsets_mapping=True)
    offsets = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    s_start = len(prompt) + _word_starts(s_parts[: 2 * k])
    tok = _token_at(offsets, s_start[keep])
    # the original text in the same frame, for the original word's first token
    o_enc = tokenizer(" " + o_text, return_offsets_mapping=True, add_special_tokens=False)
    o_offsets = np.asarray(o_enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    o_tok = _token_at(o_offsets, 1 + _word_starts(o_parts[: 2 * k])[keep])
    o_ids = o_enc["input_ids"]
    targets = [_norm(tokenizer.decode([o_ids[t]])) for t in o_tok.tolist()]
    words = [w.lower() for w, ok in zip(o_words, keep, strict=True) if ok]
    changed = np.array([s.lower() != o.lower() for s, o, ok in zip(s_words, o_words, keep,
                                                                    strict=True) if ok])
    return _Item(list(enc["input_ids"]), tok - 1, targets, words, changed)


def _predict(model, items: list[_Item], pad_id: int, batch_size: int) -> list[np.ndarray]:
    """Top-1 token id at each item's scored positions (one forward pass per batch)."""
    import torch

    head = getattr(model, "get_output_embeddings", lambda: None)()
    base = getattr(model, "base_model", None) if head is not None else None
    order = sorted(range(len(items)), key=lambda i: len(items[i].ids))
    out: list[np.ndarray] = [np.zeros(0, np.int64)] * len(items)
    for s in range(0, len(order), batch_size):
        batch = [i for i in order[s : s + batch_size] if len(items[i].positions)]
        if not batch:
            continue
        width = max(len(items[i].ids) for i in batch)
        ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for b, i in enumerate(batch):
            ids[b, : len(items[i].ids)] = torch.tensor(items[i].ids)
            mask[b, : len(items[i].ids)] = 1
        rows = torch.cat([torch.full((len(items[i].positions),), b) for b, i in enumerate(batch)])
        cols = torch.cat([torch.from_numpy(items[i].positions) for i in batch])
        with torch.inference_mode():
            if base is not None and base is not model:
                hidden = base(input_ids=ids, attention_mask=mask).last_hidden_state
                logits = head(hidden[rows, cols])
            else:
                logits = model(input_ids=ids, attention_mask=mask).logits[rows, cols]
        top = logits.argmax(-1).numpy()
        at = 0
        for i in batch:
            n = len(items[i].positions)
            out[i] = top[at : at + n]
            at += n
    return out


@dataclass(frozen=True)
class LMInference:
    texts: int
    texts_skipped: int
    words: int
    success: float
    success_word: float
    success_changed: float | None
    success_kept: float | None
    copy_rate: float

    def summary(self) -> dict[str, float | int | None]:
        se = math.sqrt(max(self.success * (1 - self.success), 1e-12) / max(self.words, 1))
        return {"success": self.success, "success_se": se, "success_word": self.success_word,
                "success_changed": self.success_changed, "success_kept": self.success_kept,
                "copy_rate": self.copy_rate, "words": self.words, "texts": self.texts,
                "texts_skipped": self.texts_skipped}


def lm_token_inference(model, tokenizer, originals: Sequence[str], sanitized: Sequence[str],
                       in_vocab: Callable[[str], bool], *, batch_size: int = 8,
                       max_words: int = 64) -> LMInference:
    """The causal attack of the module docstring on aligned (original, sanitized) texts."""
    items, skipped = [], 0
    for o, s in zip(originals, sanitized, strict=True):
        item = _prepare(tokenizer, o, s, in_vocab, max_words)
        if item is None:
            skipped += 1
        else:
            items.append(item)
    from dptext.lm.decoding import pad_id

    predicted = _predict(model, items, pad_id(tokenizer), batch_size)
    return _score(tokenizer, items, predicted, skipped)


def _prepare_masked(tokenizer, original: str, sanitized: str, in_vocab: Callable[[str], bool],
                    max_words: int, window: int) -> tuple[list[list[int]], _Item] | None:
    """One input per scored word (the sanitized text, that word replaced by one mask), and the
    item holding the targets (``positions``: the mask index in each input)."""
    o_parts, s_parts = split_words(original), split_words(sanitized)
    if len(o_parts) != len(s_parts):
        return None
    k = min(len(o_parts) // 2, max_words)
    o_words, s_words = o_parts[1 : 2 * k : 2], s_parts[1 : 2 * k : 2]
    keep = [i for i, w in enumerate(o_words) if in_vocab(w)]
    inputs, where, targets, scored = [], [], [], []
    mask = tokenizer.mask_token
    for i in keep:
        parts = list(s_parts[: 2 * k + 1])
        parts[2 * i + 1] = mask
        ids = tokenizer("".join(parts), truncation=True, max_length=window)["input_ids"]
        if tokenizer.mask_token_id not in ids:  # cut off by the window: not scored
            continue
        inputs.append(ids)
        scored.append(i)
        where.append(ids.index(tokenizer.mask_token_id))
        first = tokenizer(o_words[i], add_special_tokens=False)["input_ids"][:1]
        targets.append(_norm(tokenizer.decode(first)) if first else "")
    item = _Item([], np.asarray(where, dtype=np.int64), targets,
                 [o_words[i].lower() for i in scored],
                 np.array([s_words[i].lower() != o_words[i].lower() for i in scored], dtype=bool))
    return inputs, item


def _predict_masked(model, inputs: list[list[int]], mask_id: int, pad: int,
                    batch_size: int) -> np.ndarray:
    """Top-1 token id at the (single) mask of each input; the output projection runs only at
    the masks (a pre-hook on the output embeddings, as in :mod:`dptext.lm.masked`)."""
    import torch

    out = np.zeros(len(inputs), dtype=np.int64)
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
    head = model.get_output_embeddings()
    for s in range(0, len(order), batch_size):
        rows = order[s : s + batch_size]
        width = max(len(inputs[i]) for i in rows)
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for r, i in enumerate(rows):
            ids[r, : len(inputs[i])] = torch.tensor(inputs[i])
            attention[r, : len(inputs[i])] = 1
        where = (ids == mask_id) & attention.bool()

        def only_masks(_module, args, where=where):
            return (args[0][where],)

        hook = head.register_forward_pre_hook(only_masks) if head is not None else None
        try:
            with torch.inference_mode():
                logits = model(input_ids=ids, attention_mask=attention).logits
        finally:
            if hook is not None:
                hook.remove()
        if head is None:
            logits = logits[where]
        out[np.asarray(rows)] = logits.reshape(len(rows), -1).argmax(-1).numpy()
    return out


def masked_token_inference(model, tokenizer, originals: Sequence[str], sanitized: Sequence[str],
                           in_vocab: Callable[[str], bool], *, batch_size: int = 64,
                           max_words: int = 64) -> LMInference:
    """The masked attack of the module docstring (CusText/SanText) on aligned texts."""
    from dptext.errors import DPTextError
    from dptext.lm.masked import model_window

    if tokenizer.mask_token_id is None:
        raise DPTextError("the masked LM attack needs a tokenizer with a mask token")
    window = model_window(model, tokenizer, None)
    items, inputs, skipped = [], [], 0
    for o, s in zip(originals, sanitized, strict=True):
        prepared = _prepare_masked(tokenizer, o, s, in_vocab, max_words, window)
        if prepared is None:
            skipped += 1
            continue
        inputs.append(prepared[0])
        items.append(prepared[1])
    flat = [x for group in inputs for x in group]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    top = _predict_masked(model, flat, tokenizer.mask_token_id, pad, batch_size) if flat else \
        np.zeros(0, np.int64)
    predicted, at = [], 0
    for group in inputs:
        predicted.append(top[at : at + len(group)])
        at += len(group)
    return _score(tokenizer, items, predicted, skipped)


def token_inference(model, tokenizer, originals: Sequence[str], sanitized: Sequence[str],
                    in_vocab: Callable[[str], bool], *, kind: str = "causal",
                    **options) -> LMInference:
    """``kind="masked"``: the papers' mask-token attack; ``"causal"``: our causal adaptation."""
    attack = masked_token_inference if kind == "masked" else lm_token_inference
    return attack(model, tokenizer, originals, sanitized, in_vocab, **options)


def _score(tokenizer, items: list[_Item], predicted: list[np.ndarray], skipped: int
           ) -> LMInference:
    hit, hit_word, changed = [], [], []
    for item, ids in zip(items, predicted, strict=True):
        guess = [_norm(tokenizer.decode([t])) for t in ids.tolist()]
        hit += [g != "" and g == t for g, t in zip(guess, item.targets, strict=True)]
        hit_word += [g == w for g, w in zip(guess, item.words, strict=True)]
        changed += item.changed.tolist()
    hit_a, changed_a = np.array(hit, dtype=bool), np.array(changed, dtype=bool)

    def rate(mask: np.ndarray) -> float | None:
        return float(hit_a[mask].mean()) if mask.any() else None

    n = len(hit_a)
    return LMInference(
        texts=len(items), texts_skipped=skipped, words=n,
        success=float(hit_a.mean()) if n else 0.0,
        success_word=float(np.mean(hit_word)) if n else 0.0,
        success_changed=rate(changed_a), success_kept=rate(~changed_a),
        copy_rate=float(1.0 - changed_a.mean()) if n else 0.0,
    )
