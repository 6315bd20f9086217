"""Federated fine-tuning of a pretrained causal LM (the packaged SmolLM2-135M-Instruct, or any
Llama-style ``AutoModelForCausalLM``) on next-word prediction, on a subset of its parameters:
the last ``blocks`` transformer blocks and the final norm; embeddings, the LM head and the
earlier blocks stay frozen (issue 4, "Models and tasks"). UeDP paper section VI fine-tunes all
of a pretrained GPT-2 (117M parameters); we train a subset because the CPU budget is small and
the norm of the Gaussian noise grows with the square root of the number of trained parameters
(docs/uedp.md, "Fine-tuning SmolLM2"). With ``lora_rank`` the trained tensors are instead LoRA
adapters (Hu et al. 2021, through ``peft``) on the linear layers of the last ``blocks`` blocks,
whose own weights stay frozen too: a few million trained parameters over as many blocks as
wanted.

A user's update is the change of the trainable tensors only, so clipping to global L2 norm
``beta`` (federated.clip_updates) and the Gaussian noise act on exactly what is released.

The frozen prefix (token embedding and the first ``L - blocks`` blocks) is a fixed function of a
sentence, identical in every local step, round and user, so it is computed once per sentence
(:class:`PrefixRows`, on first use) and training runs only the trainable suffix, through
``torch.func.functional_call`` with the trainable tensors substituted - vmap over users and grad
work unchanged. A row per sentence is ``[max_len + 1, hidden + 2]``: the hidden state entering
the first trainable block, the token id and a real-token flag (right padding; attention is
causal, so padding never influences a real position). :meth:`CausalLMTask.check` compares this
decomposition with the model's own forward pass and refuses a model where they differ.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np
import torch
from torch.func import functional_call

from dptext.errors import DPTextError

Params = dict[str, torch.Tensor]


def start_token_id(tokenizer) -> int:
    """The token put before every sentence so that its first word is predicted too: the
    document separator ``<|endoftext|>`` where the vocabulary has one, else BOS, else EOS.

    SmolLM2-Instruct's BOS is the chat token ``<|im_start|>``; its pretraining separated documents
    with ``<|endoftext|>``, and that start gives perplexity 97 against 134 for ``<|im_start|>`` on
    40 House of Commons sentences (docs/uedp.md)."""
    vocab = tokenizer.get_vocab()
    for candidate in (vocab.get("<|endoftext|>"), tokenizer.bos_token_id,
                      tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    raise DPTextError("the tokenizer has no start, BOS or EOS token")


class _Suffix(torch.nn.Module):
    """The trainable part: the last blocks and the final norm (the modules of the model)."""

    def __init__(self, blocks: Sequence[torch.nn.Module], norm: torch.nn.Module):
        super().__init__()
        self.blocks = torch.nn.ModuleList(blocks)
        self.norm = norm

    def forward(self, hidden, position_embeddings, mask):
        for block in self.blocks:
            hidden = block(hidden, attention_mask=mask, position_embeddings=position_embeddings)
        return self.norm(hidden)


# the linear layers of a Llama block that get LoRA adapters
LORA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def add_lora(model, layers: Sequence[int], rank: int) -> None:
    """LoRA adapters (``peft``, scaling alpha / r = 1, no dropout) on the linear layers of the
    given blocks of ``model``, in place. Their values are set by :meth:`CausalLMTask.init`."""
    try:
        import peft
    except ImportError:
        raise DPTextError("--lora-rank needs peft: pip install 'dptext[lora]'") from None
    config = peft.LoraConfig(r=rank, lora_alpha=rank, lora_dropout=0.0,
                             target_modules=list(LORA_MODULES),
                             layers_to_transform=list(layers))
    peft.inject_adapter_in_model(config, model)


def _causal_mask(length: int) -> torch.Tensor:
    return torch.full((length, length), torch.finfo(torch.float32).min).triu(1)[None, None]


class CausalLMTask:
    """Next-word prediction with a pretrained causal LM, last ``blocks`` blocks trainable.

    ``init(generator)`` returns the pretrained values of the trainable tensors (named as in the
    model's ``state_dict``, so a checkpoint loads with ``load_state_dict(strict=False)``);
    ``loss(params, rows)`` the per-sentence summed token NLL and token count; ``evaluate(params)``
    perplexity = exp(mean token NLL) over the test rows. Attention runs in the "eager"
    implementation with an explicit causal mask: plain matmuls, which vmap batches (SDPA's CPU
    kernel has no vmap batching rule and would run one user at a time).
    """

    def __init__(self, model, tokenizer, *, blocks: int = 2, max_len: int = 32,
                 lora_rank: int | None = None, check: bool = True):
        base = getattr(model, "model", None)
        needed = ("layers", "norm", "rotary_emb", "embed_tokens")
        if base is None or not all(hasattr(base, a) for a in needed) or not hasattr(
                model, "lm_head"):
            raise DPTextError("only Llama-style causal LMs (model.layers, model.norm, rotary "
                              "embeddings, lm_head) can be fine-tuned by blocks")
        n_layers = len(base.layers)
        if not 0 <= blocks <= n_layers:
            raise DPTextError(f"trainable blocks must be in 0..{n_layers}, got {blocks}")
        limit = getattr(model.config, "max_position_embeddings", None)
        if max_len < 1 or (limit is not None and max_len + 1 > limit):
            raise DPTextError(f"max_len must be in 1..{'' if limit is None else limit - 1} "
                              f"tokens, got {max_len}")
        model.eval()
        model.requires_grad_(False)
        model.set_attn_implementation("eager")
        if lora_rank is not None:
            if blocks < 1 or lora_rank < 1:
                raise DPTextError(f"LoRA needs at least one trainable block and rank >= 1, got "
                                  f"{blocks} blocks, rank {lora_rank}")
            add_lora(model, range(n_layers - blocks, n_layers), lora_rank)
            model.requires_grad_(False)
        self.model, self.tokenizer = model, tokenizer
        self.blocks, self.max_len, self.lora_rank = blocks, max_len, lora_rank
        self.hidden = model.config.hidden_size
        self._first = n_layers - blocks
        self._suffix = _Suffix(list(base.layers[self._first:]), base.norm)
        prefix = {id(p) for m in (base.embed_tokens, model.lm_head, *base.layers[: self._first])
                  for p in m.parameters()}
        self._names: dict[str, str] = {}  # model name -> suffix name
        full = {id(p): n for n, p in model.named_parameters(remove_duplicate=False)}
        for name, p in self._suffix.named_parameters():
            if lora_rank is not None and ".lora_" not in name:
                continue  # the blocks' own weights stay frozen under LoRA
            if id(p) in prefix:
                raise DPTextError("a trainable tensor is tied to a frozen one; choose fewer "
                                  "trainable blocks")
            self._names[full[id(p)]] = name
        length = max_len + 1
        self._positions = base.rotary_emb(torch.zeros(1, length, self.hidden),
                                          torch.arange(length)[None])
        self._mask = _causal_mask(length)
        self.start_id = start_token_id(tokenizer)
        self.test: torch.Tensor | None = None
        if check:
            self.check()

    # -- rows -------------------------------------------------------------------------------

    def token_ids(self, sentences: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """([n, max_len + 1] ids: start token, at most ``max_len`` sub-word tokens, padding;
        [n] lengths including the start token)."""
        enc = self.tokenizer(list(sentences), add_special_tokens=False)["input_ids"]
        ids = torch.zeros(len(enc), self.max_len + 1, dtype=torch.long)
        lengths = torch.empty(len(enc), dtype=torch.long)
        for i, toks in enumerate(enc):
            row = [self.start_id, *toks[: self.max_len]]
            ids[i, : len(row)] = torch.tensor(row)
            lengths[i] = len(row)
        return ids, lengths

    def rows(self, sentences: Sequence[str], *, progress: bool = False) -> PrefixRows:
        """Lazy per-sentence rows (frozen prefix computed on first access)."""
        ids, lengths = self.token_ids(sentences)
        return PrefixRows(self, ids, lengths, progress=progress)

    @property
    def device(self) -> torch.device:
        return self._mask.device

    def to(self, device) -> CausalLMTask:
        """Run the model (frozen prefix, trainable suffix, head) and the evaluation on
        ``device``; the rows of :class:`PrefixRows` stay on the CPU (the trainer moves each
        round's batch)."""
        self.model.to(device)
        self._positions = tuple(t.to(device) for t in self._positions)
        self._mask = self._mask.to(device)
        return self

    @torch.no_grad()
    def prefix(self, ids: torch.Tensor, lengths: torch.Tensor, batch: int = 32) -> torch.Tensor:
        """Rows [n, max_len + 1, hidden + 2] for ``ids``: batches sorted by length, each run
        only as long as its longest sentence; the frozen blocks in the model's own modules."""
        base = self.model.model
        out = torch.zeros(len(ids), self.max_len + 1, self.hidden + 2)
        order = torch.argsort(lengths, descending=True)
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            n = int(lengths[idx].max())
            x = ids[idx, :n]
            h = base.embed_tokens(x.to(self.device))
            pos = tuple(t[:, :n] for t in self._positions)
            mask = self._mask[..., :n, :n]
            for block in base.layers[: self._first]:
                h = block(h, attention_mask=mask, position_embeddings=pos)
            real = torch.arange(n)[None] < lengths[idx, None]
            out[idx, :n, : self.hidden] = h.cpu() * real[..., None]
            out[idx, :n, self.hidden] = x.float()
            out[idx, :n, self.hidden + 1] = real.float()
        return out

    # -- the task interface -----------------------------------------------------------------

    def init(self, generator: torch.Generator | None = None) -> Params:
        """The pretrained trainable tensors (copies; the generator is unused); under LoRA the
        adapters as ``peft`` initialises them - A uniform in +-1/sqrt(fan_in) (drawn from
        ``generator``), B zero, so the model starts as the pretrained one."""
        named = dict(self.model.named_parameters(remove_duplicate=False))
        if self.lora_rank is None:
            return {name: named[name].detach().clone() for name in self._names}
        out = {}
        for name in self._names:
            shape = named[name].shape
            if ".lora_B." in name:
                out[name] = torch.zeros(shape)
            else:
                bound = 1.0 / math.sqrt(shape[1])
                out[name] = (torch.rand(shape, generator=generator) * 2 - 1) * bound
        return {k: v.to(named[k].device) for k, v in out.items()}

    def _logits(self, params: Params, rows: torch.Tensor) -> torch.Tensor:
        n = rows.shape[-2]
        hidden = rows[..., : self.hidden]
        pos = tuple(t[:, :n] for t in self._positions)
        inner = {self._names[k]: v for k, v in params.items()}
        out = functional_call(self._suffix, inner, (hidden, pos, self._mask[..., :n, :n]))
        return self.model.lm_head(out[..., :-1, :])

    def loss(self, params: Params, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per sentence: summed NLL of its tokens after the start token, and their number."""
        logits = self._logits(params, rows)
        targets = rows[..., 1:, self.hidden].long()
        real = rows[..., 1:, self.hidden + 1]
        nll = torch.nn.functional.cross_entropy(
            logits.flatten(0, -2), targets.flatten(), reduction="none").view(targets.shape)
        return (nll * real).sum(dim=-1), real.sum(dim=-1)

    def count_tokens(self, rows: torch.Tensor) -> int:
        """Predicted tokens of ``rows`` (every real token after the start token)."""
        return int(rows[..., 1:, self.hidden + 1].sum())

    def trim(self, rows: torch.Tensor) -> torch.Tensor:
        """``rows`` [..., max_len + 1, hidden + 2] cut after the last real token of any row (a
        round's padded batch runs only as long as its longest sentence)."""
        n = int(rows[..., self.hidden + 1].sum(dim=-1).max()) if rows.numel() else 1
        return rows[..., : max(n, 1), :]

    @torch.no_grad()
    def evaluate(self, params: Params, batch: int = 32) -> dict:
        """Perplexity exp(total NLL / total tokens) on the test rows (held-out users)."""
        nll, tokens = self.sentence_losses(params, batch)
        loss = float(nll.sum()) / max(float(tokens.sum()), 1.0)
        return {"perplexity": math.exp(loss), "loss": loss}

    @property
    def uniform_loss(self) -> float:
        """Per-token NLL (nats) of the uniform distribution over the model's vocabulary."""
        return math.log(int(self.model.lm_head.weight.shape[0]))

    @property
    def baseline(self) -> tuple[str, float]:
        """What a model must beat to have learned something: the uniform distribution."""
        return "uniform", self.uniform_loss

    @torch.no_grad()
    def sentence_losses(self, params: Params, batch: int = 32):
        """Per held-out sentence (in the test rows' order): summed NLL and predicted tokens
        ([n] each, on the CPU); computed longest first, in batches of ``batch``."""
        if self.test is None or len(self.test) == 0:
            raise DPTextError("no held-out sentences to evaluate on")
        test = self.test
        lengths = test[..., self.hidden + 1].sum(dim=-1)
        order = torch.argsort(lengths, descending=True)
        nll_out = torch.zeros(len(test), dtype=torch.float64)
        tok_out = torch.zeros(len(test), dtype=torch.float64)
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            rows = self.trim(test[idx]).to(self.device)
            nll, tokens = self.loss(params, rows)
            nll_out[idx] = nll.double().cpu()
            tok_out[idx] = tokens.double().cpu()
        return nll_out, tok_out

    @torch.no_grad()
    def check(self, tol: float = 1e-3) -> None:
        """The prefix/suffix decomposition must reproduce the model's own logits."""
        ids, lengths = self.token_ids(["The quick brown fox jumps over the lazy dog."])
        n = int(lengths[0])
        ours = self._logits(self.init(), self.prefix(ids, lengths)[:, :n].to(self.device))
        theirs = self.model(input_ids=ids[:, :n].to(self.device)).logits[:, :-1]
        gap = float((ours - theirs).abs().max())
        if not gap <= tol * max(1.0, float(theirs.abs().max())):
            raise DPTextError(f"this model's blocks cannot be run one by one (logits differ by "
                              f"{gap:.3g}); it is not a supported Llama-style model")


class PrefixRows:
    """Rows of :meth:`CausalLMTask.prefix` for a list of sentences, computed the first time a
    sentence is indexed and kept (so only sentences that some round trains on, and the test
    sentences, pay for the frozen blocks). Indexing (int, slice, numpy/torch index or boolean
    mask) returns a tensor; :meth:`subset` a lazy view sharing the cache."""

    def __init__(self, task: CausalLMTask, ids: torch.Tensor, lengths: torch.Tensor, *,
                 progress: bool = False):
        self._task, self._ids, self._lengths = task, ids, lengths
        self._store = torch.zeros(len(ids), task.max_len + 1, task.hidden + 2)
        self._done = torch.zeros(len(ids), dtype=torch.bool)
        self._index = torch.arange(len(ids))
        self._progress = progress

    def __len__(self) -> int:
        return len(self._index)

    @property
    def shape(self) -> torch.Size:
        return torch.Size((len(self), *self._store.shape[1:]))

    @property
    def dtype(self) -> torch.dtype:
        return self._store.dtype

    def _positions(self, key) -> torch.Tensor:
        if isinstance(key, np.ndarray):
            key = torch.from_numpy(key)
        return self._index[key]

    def subset(self, key) -> PrefixRows:
        view = object.__new__(PrefixRows)
        view.__dict__.update(self.__dict__)
        view._index = self._positions(key).reshape(-1)
        return view

    def __getitem__(self, key) -> torch.Tensor:
        pos = self._positions(key)
        flat = pos.reshape(-1)
        missing = torch.unique(flat[~self._done[flat]])
        if len(missing):
            if self._progress and len(missing) > 64:
                print(f"running the frozen blocks on {len(missing)} sentences ...",
                      file=sys.stderr)
            self._store[missing] = self._task.prefix(self._ids[missing], self._lengths[missing])
            self._done[missing] = True
        return self._store[pos]
