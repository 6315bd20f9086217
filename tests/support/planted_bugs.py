"""Test-only broken variants of the real mechanisms (the auditor's mutation suite).

Each keeps the real mechanism's name, guarantee and reports - what it claims - and breaks what it
does, the way published implementations have been broken (docs/audit.md, "Planted bugs").
"""

from __future__ import annotations

import dataclasses
from unittest import mock

import numpy as np

import dptext.mechanisms.truncated_gumbel as tg
from dptext import EmbeddingSpace
from dptext.mechanisms.custext import CusText
from dptext.mechanisms.dpmlm import DPMLM
from dptext.mechanisms.santext import SanText


def tiny_space(n: int, dim: int, seed: int, *, outliers: int = 0) -> EmbeddingSpace:
    """``n`` Gaussian words in ``dim`` dimensions; the last ``outliers`` of them pushed 3x out
    (isolated words, where the normaliser ratio of a metric mechanism is largest)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim))
    if outliers:
        x[n - outliers:] *= 3.0
    return EmbeddingSpace([f"w{i:03d}" for i in range(n)], x.astype(np.float32),
                          name=f"audit-tiny-{seed}")


class HotCusText(CusText):
    """CusText with the temperature off by 2: p proportional to exp(eps*u), not exp(eps*u/2)."""

    def _log_weights(self, space, m):
        return 2.0 * super()._log_weights(space, m)

    def validate_tables(self, tables):
        """The planted bug's own tables would fail CusText's realized-loss check; the point
        here is that the black-box auditor catches it, so that check is skipped."""


class PassThrough:
    """Mixin: the input word is released unchanged with probability ``leak`` (1%)."""

    leak = 0.01

    def _sample(self, rows, rng):
        out = super()._sample(rows, rng)
        kept = rng.random(len(rows)) < self.leak
        out[kept] = rows[kept]
        return out


class LeakySanText(PassThrough, SanText):
    """SanText that passes 1% of the words through unchanged."""


class LeakyCusText(PassThrough, CusText):
    """CusText that passes 1% of the words through unchanged."""


class CaseLeakSanText(SanText):
    """SanText that releases a capitalised input word unchanged 10% of the time: a leak in a
    case branch only (lower-case words are privatized correctly; the report is the same)."""

    leak = 0.1

    def privatize_batch(self, texts, *, rng=None):
        gen = np.random.default_rng(rng)
        results = super().privatize_batch(texts, rng=gen)
        leak = gen.random(len(texts)) < self.leak
        return [dataclasses.replace(r, text=t) if t[:1].isupper() and hit else r
                for t, r, hit in zip(texts, results, leak, strict=True)]


class HalfDistanceSanText(SanText):
    """SanText whose sampler uses twice the distance its guarantee is stated in (the claim's
    distance term halved): weights exp(-eps*d) for a claimed eps*d, i.e. a 2*eps*d mechanism."""

    def fit(self, **kw):
        super().fit(cache=False)
        self._inner = SanText(epsilon=2.0 * self.epsilon, space=self.space,
                              sensitive_fraction=self.sensitive_fraction,
                              p=self.p).fit(cache=False)
        return self

    def _sample(self, rows, rng):
        return self._inner._sample(rows, rng)

    def distribution(self, word):
        return self._inner.distribution(word)


class WideClipDPMLM(DPMLM):
    """DP-MLM whose clip range is 1.5x the one its temperature (its claim) is computed from:
    scores clipped to a range of width 1.5 (hi - lo) around the same centre, T = 2 (hi - lo)/eps.
    """

    def _draw(self, scores, generator):
        from dptext.lm.sampling import sample

        lo, hi = self.bounds
        mid, half = (lo + hi) / 2.0, 0.75 * (hi - lo)
        # T = 2 * (2 half) / (1.5 eps) = 2 (hi - lo) / eps: the temperature of the claimed range
        return sample(scores, epsilon=1.5 * self.epsilon, lo=mid - half, hi=mid + half,
                      generator=generator)


def clipped_gumbel(shape, b, c, rng):
    """Gumbel(0, b) clipped to [-c, c] (atoms at the ends) instead of conditioned on it."""
    g = rng.gumbel(0.0, b, shape)
    return np.clip(g, -c, c)


class ClippedGumbel(tg.TruncatedGumbel):
    """Truncated Gumbel with clipping instead of conditioning."""

    def _sample(self, rows, rng):
        with mock.patch.object(tg, "truncated_gumbel", clipped_gumbel):
            return super()._sample(rows, rng)


# ------------------------------------------------------------- language models
LM_WORDS = ("the a cat dog sat on mat big small red house run walk john paris anna river "
            "tree car road blue green went saw").split()


def tiny_bert(path) -> str:
    """A 2-layer BERT masked LM with a word-level WordPiece vocabulary, output head untied."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + list(LM_WORDS) + ["##s", "."])}
    tk = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]",
                                  cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                     tie_word_embeddings=False)
    torch.manual_seed(0)
    tok.save_pretrained(path)
    BertForMaskedLM(cfg).save_pretrained(path)
    return str(path)


def rig_worst_case(mechanism, x: str, x_prime: str, target: str, scale: float = 1e4) -> None:
    """Make a fitted masked-LM DP-MLM's model the worst case for the pair (x, x'): at the slot of
    the one-word text x every candidate scores far below the clip range except ``target`` (far
    above), at x' the reverse. The clipped scores are then exactly lo/hi, and the exponential
    mechanism's loss for the output ``target`` is as large as it can be for this many candidates
    (it tends to epsilon as their number grows). A real DP guarantee must hold for ANY model."""
    import torch

    model, tokenizer = mechanism._lm
    backend = mechanism._backend
    head = model.get_output_embeddings()
    seen = []
    # a forward hook sees the head's input after the backend's pre-hook kept only the masks
    hook = head.register_forward_hook(lambda _m, args, _out: seen.append(args[0].detach().clone()))
    try:
        inputs = []
        for text in (x, x_prime):
            aligned, _, slots, _ = mechanism._plan(text, np.random.default_rng(0))
            inputs.append(backend.input_ids(aligned.ids, slots[0].start, slots[0].end))
        backend.scores(inputs)
    finally:
        hook.remove()
    h = torch.cat(seen)  # the head's inputs at the two masks, in length order
    h_x, h_xp = (h[0], h[1]) if len(inputs[0]) <= len(inputs[1]) else (h[1], h[0])
    u = (h_x - h_xp) / (h_x - h_xp).norm()
    mid = (h_x + h_xp) / 2.0
    sign = -torch.ones(head.weight.shape[0])
    sign[tokenizer.convert_tokens_to_ids(target)] = 1.0
    with torch.no_grad():
        head.weight.copy_(scale * sign[:, None] * u[None, :])
        head.bias.copy_(-scale * sign * float(u @ mid))


# ------------------------------------------------------------------- training
def per_tensor_clip(updates, beta):
    """Each parameter tensor clipped to L2 norm beta on its own (UeDP's released code): a
    user's whole update can reach beta * sqrt(number of tensors)."""
    out = {}
    for k, v in updates.items():
        factor = (beta / v.flatten(1).norm(dim=1).clamp(min=1e-12)).clamp(max=1.0)
        out[k] = v * factor.view(-1, *([1] * (v.dim() - 1)))
    return out


def per_tensor_clipping_train(*args, **kw):
    """The real trainer with per-tensor clipping in place of the global clip."""
    import dptext.training.trainer as trainer

    def per_tensor_clipped_sum(updates, beta):
        return {k: v.sum(dim=0) for k, v in per_tensor_clip(updates, beta).items()}

    with mock.patch.object(trainer, "clipped_sum", per_tensor_clipped_sum):
        return trainer.train(*args, **kw)


def squared_std_train(*args, **kw):
    """The real trainer with the noise standard deviation squared (the variance passed where
    the standard deviation belongs, UeDP's released code)."""
    import dptext.training.trainer as trainer

    real = trainer.gaussian_release

    def noised(total, std, denominator, generator=None):
        return real(total, std ** 2, denominator, generator)

    with mock.patch.object(trainer, "gaussian_release", noised):
        return trainer.train(*args, **kw)


def tiny_llama(path) -> str:
    """A 2-layer random Llama causal LM with a byte-level BPE tokenizer (for DP-Prompt)."""
    import torch
    from tiny_tokenizers import byte_level_bpe
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    corpus = [" ".join(LM_WORDS[i:] + LM_WORDS[:i]) for i in range(len(LM_WORDS))]
    tk = byte_level_bpe(corpus, ["<|endoftext|>"], vocab_size=300)
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|endoftext|>",
                                  bos_token="<|endoftext|>")
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, intermediate_size=64,
                      max_position_embeddings=256, eos_token_id=0, bos_token_id=0)
    torch.manual_seed(2)
    tok.save_pretrained(path)
    LlamaForCausalLM(cfg).save_pretrained(path)
    return str(path)
