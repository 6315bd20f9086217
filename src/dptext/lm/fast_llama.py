"""A compact forward pass of Llama-architecture causal LMs (the default SmolLM2) for the
decoders of DP-MLM and DP-Prompt (issue 19).

Same model, same arithmetic as transformers' ``LlamaModel.forward`` (RMSNorm, rotary
positions from the model's own ``rotary_emb``, grouped-query attention, SwiGLU MLP), with the
work per pass cut where transformers spends it on bookkeeping:

* the key/value cache (:class:`KVCache`) is preallocated and written in place;
  transformers' ``DynamicCache`` concatenates every layer's cache at every step, a copy of the
  whole cache per pass (9 s of a 91 s profile of one 500-word text);
* a prefix shared by all rows - a long text's original + separator before its segments,
  DP-Prompt's instruction - is cached ONCE and every row attends to it (two-part softmax,
  :func:`_attend_with_prefix`): no copy of it per row, and the rows' part of the cache holds
  only their own tokens;
* q/k/v are one matrix product, gate/up another (the modules' weights become views of the
  fused matrices: no extra memory, transformers' forward still runs on the same numbers);
* the attention mask is built once per pass for all layers; grouped query heads are stacked
  on the query axis, the cached key/value heads are never copied to the query heads;
* where only the last position's scores are wanted (every decoding pass), the last layer
  computes its attention output and MLP for that position alone.

:meth:`FastLlama.in_bf16` (``precision="bf16"``, :mod:`dptext.lm.quantize`) gives a copy whose
four matrix products per layer take bfloat16 copies of the fused weights and bfloat16 inputs,
their outputs cast back to float32; everything else is as above, in float32.

:func:`fast_forward` returns ``None`` for a model it does not cover (another architecture,
biases, quantized linear layers, sliding windows ...); :class:`dptext.lm.decoding.ScoreHead`
then uses transformers' forward, and it checks this one against the model's own logits on a
probe before using it. ``tests/lm/test_lm_fast.py`` compares both on padded, cached and
prefix-sharing passes.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

SMALL_QUERY = 8  # new tokens per row up to which attention is two plain matrix products


class KVCache:
    """Keys/values of every layer, ``[rows, kv_heads, capacity, head_dim]``, filled up to
    ``length``; ``valid[r, j]``: whether cached position ``j`` of row ``r`` is a real token
    (False: padding). ``prefix``: per layer a ``[1, kv_heads, P, head_dim]`` pair every row
    attends to before its own positions (all real tokens), or None."""

    def __init__(self, layers: int, rows: int, kv_heads: int, head_dim: int, capacity: int, *,
                 dtype, device, prefix: tuple[list, list] | None = None) -> None:
        shape = (rows, kv_heads, capacity, head_dim)
        self.k = [torch.empty(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.v = [torch.empty(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.valid = torch.zeros((rows, capacity), dtype=torch.bool, device=device)
        self.length = 0
        self.prefix = prefix
        self.prefix_length = 0 if prefix is None else int(prefix[0][0].shape[2])

    @property
    def rows(self) -> int:
        return self.valid.shape[0]

    @property
    def capacity(self) -> int:
        return self.valid.shape[1]

    @property
    def seen(self) -> int:
        """Positions every row has behind it (the shared prefix and its own, padding too)."""
        return self.prefix_length + self.length

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more positions (the buffers at least double when they grow)."""
        need = self.length + extra
        if need <= self.capacity:
            return
        cap = max(need, 2 * self.capacity)
        n = self.length

        def grown(x):
            y = x.new_empty((*x.shape[:2], cap, x.shape[3]))
            y[:, :, :n] = x[:, :, :n]
            return y

        self.k = [grown(x) for x in self.k]
        self.v = [grown(x) for x in self.v]
        valid = self.valid.new_zeros((self.rows, cap))
        valid[:, :n] = self.valid[:, :n]
        self.valid = valid

    def select(self, index: torch.Tensor) -> None:
        """Keep the rows ``index`` (the capacity stays)."""
        self.k = [x.index_select(0, index) for x in self.k]
        self.v = [x.index_select(0, index) for x in self.v]
        self.valid = self.valid.index_select(0, index)

    def shared(self, rows: int, capacity: int) -> KVCache:
        """An empty cache of ``rows`` rows whose shared prefix is this one-row cache."""
        if self.rows != 1 or self.prefix is not None:
            raise ValueError("a shared prefix is made from a one-row cache without a prefix")
        n = self.length
        prefix = ([x[:, :, :n] for x in self.k], [x[:, :, :n] for x in self.v])
        k0 = self.k[0]
        return KVCache(len(self.k), rows, k0.shape[1], k0.shape[3], capacity, dtype=k0.dtype,
                       device=k0.device, prefix=prefix)


class FastLlama:
    """The forward pass of one Llama model (see the module docstring)."""

    def __init__(self, model) -> None:
        base = model.base_model
        cfg = model.config
        self.heads = int(cfg.num_attention_heads)
        self.kv_heads = int(getattr(cfg, "num_key_value_heads", None) or self.heads)
        self.groups = self.heads // self.kv_heads
        self.head_dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads)
        self.hidden = int(cfg.hidden_size)
        self.embed = base.embed_tokens.weight
        self.rotary = base.rotary_emb
        self.norm = (base.norm.weight, float(base.norm.variance_epsilon))
        self.layers = [_fused_layer(layer) for layer in base.layers]
        attn = base.layers[0].self_attn
        self.scaling = float(attn.scaling)

    def in_bf16(self) -> FastLlama:
        """This forward pass with its matrix products in bfloat16 (module docstring): made
        once, shared by every head of the model; ``self`` stays float32."""
        cached = getattr(self, "_bf16", None)
        if cached is None:
            cached = copy.copy(self)
            bf = torch.bfloat16
            cached.layers = [(ln1, eps1, wqkv.to(bf), wo.to(bf), ln2, eps2, wgu.to(bf),
                              wdown.to(bf))
                             for ln1, eps1, wqkv, wo, ln2, eps2, wgu, wdown in self.layers]
            self._bf16 = cached
        return cached

    # ------------------------------------------------------------------ cache
    def new_cache(self, rows: int, capacity: int) -> KVCache:
        return KVCache(len(self.layers), rows, self.kv_heads, self.head_dim, capacity,
                       dtype=self.embed.dtype, device=self.embed.device)

    # ---------------------------------------------------------------- forward
    def run(self, ids: torch.Tensor, valid: torch.Tensor | None, positions: torch.Tensor | None,
            cache: KVCache | None, *, last_only: bool) -> torch.Tensor:
        """Hidden states after the final norm of the tokens ``ids`` (rows x w), appended to
        ``cache`` when given: ``[rows, hidden]`` at the last column (``last_only``; it must be
        a real token of every row), else ``[rows, w, hidden]``. ``valid``: which new tokens
        are real (False: left padding); ``positions``: their rotary positions (default:
        continuing from the cache).

        With padding, the matrix products run on the real tokens alone (packed into one
        [tokens, hidden] matrix); only attention sees the rows x w layout, the padding masked.
        """
        b, w = ids.shape
        device = self.embed.device
        packed = valid is not None and not bool(valid.all())
        if valid is None:
            valid = torch.ones((b, w), dtype=torch.bool, device=device)
        if positions is None:
            start = cache.seen if cache is not None else 0
            positions = torch.arange(start, start + w, device=device).expand(b, w)
        if packed:
            where = valid.reshape(-1).nonzero().squeeze(1)  # the real tokens, row by row
            x = F.embedding(ids.reshape(-1)[where], self.embed)  # [tokens, hidden]
            last_index = valid.sum(1).cumsum(0) - 1  # each row's last real token in x
        else:
            x = F.embedding(ids, self.embed)  # [b, w, hidden]
        cos, sin = self.rotary(x, positions)  # [b, w, d]
        cos, sin = cos[:, :, None], sin[:, :, None]  # broadcast over the heads
        n = 0
        if cache is not None:
            cache.reserve(w)
            n = cache.length
            cache.valid[:, n: n + w] = valid
            keys_valid = cache.valid[:, : n + w]
        else:
            keys_valid = valid
        prefix = None if cache is None else cache.prefix
        # [b, 1, groups * w, n + w]; None: plain causal (only without a shared prefix)
        mask = _mask(keys_valid, w, self.groups, always=prefix is not None)
        last_mask = None
        if mask is not None:
            last_mask = mask.view(b, 1, self.groups, w, -1)[:, :, :, -1].contiguous()
        heads, kvh, d = self.heads, self.kv_heads, self.head_dim
        hd, kvd = heads * d, kvh * d
        count = len(self.layers)
        for i, (ln1, eps1, wqkv, wo, ln2, eps2, wgu, wdown) in enumerate(self.layers):
            last = last_only and i == count - 1
            h = F.rms_norm(x, (self.hidden,), ln1, eps1)
            qkv = _linear(h, wqkv)
            if packed:  # back to rows x w for attention (padding: zeros, masked)
                full = qkv.new_zeros((b * w, qkv.shape[-1]))
                full[where] = qkv
                qkv = full
            qkv = qkv.view(b, w, hd + 2 * kvd)
            qk = _rotate(qkv[..., : hd + kvd].view(b, w, heads + kvh, d), cos, sin)
            q = qk[:, :, :heads].transpose(1, 2)  # [b, heads, w, d]
            k = qk[:, :, heads:].transpose(1, 2)
            v = qkv[..., hd + kvd:].view(b, w, kvh, d).transpose(1, 2)
            if last:
                q = q[:, :, -1:]
            if cache is not None:
                cache.k[i][:, :, n: n + w] = k
                cache.v[i][:, :, n: n + w] = v
                k, v = cache.k[i][:, :, : n + w], cache.v[i][:, :, : n + w]
            pair = None if prefix is None else (prefix[0][i], prefix[1][i])
            out = self._attend(q, k, v, last_mask if last else mask, pair)  # [b, heads, t, d]
            out = out.transpose(1, 2).reshape(b * out.shape[2], hd)
            if last:
                x = x[last_index] if packed else x[:, -1]  # [b, hidden]
            elif packed:
                out = out[where]
            else:
                out = out.view(b, w, hd)
            x = x + _linear(out, wo)
            h = F.rms_norm(x, (self.hidden,), ln2, eps2)
            gate, up = _linear(h, wgu).chunk(2, dim=-1)
            x = x + _linear(F.silu(gate) * up, wdown)
        if cache is not None:
            cache.length = n + w
        x = F.rms_norm(x, (self.hidden,), self.norm[0], self.norm[1])
        if last_only:
            return x
        if packed:
            full = x.new_zeros((b * w, self.hidden))
            full[where] = x
            return full.view(b, w, self.hidden)
        return x

    def _attend(self, q, k, v, mask, prefix):
        """Attention of ``q`` [b, heads, t, d] over ``k``/``v`` [b, kv_heads, s, d] (``mask``
        [b, 1, groups * t, s], True = attend; None: plain causal over equal lengths) and the
        shared ``prefix`` keys/values, if any."""
        b, _, t, d = q.shape
        if mask is None and prefix is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=t > 1, scale=self.scaling,
                                                  enable_gqa=self.groups > 1)
        qg = q.reshape(b, self.kv_heads, self.groups * t, d)  # the group's query heads stacked
        if prefix is None and t > SMALL_QUERY:
            out = F.scaled_dot_product_attention(qg, k, v, attn_mask=mask, scale=self.scaling)
        elif prefix is None:  # a few new tokens: plain products (SDPA's kernel costs more here)
            scores = torch.matmul(qg, k.transpose(-1, -2)) * self.scaling
            scores = scores.masked_fill_(~mask, float("-inf")).softmax(-1)
            out = torch.matmul(scores, v)
        else:
            out = _attend_with_prefix(qg, k, v, mask, prefix[0], prefix[1], self.scaling)
        return out.view(b, self.heads, t, d)


def _fused_layer(layer):
    """(input norm weight, eps, qkv weight, o weight, post norm weight, eps, gate|up weight,
    down weight); the modules' own weights become views of the fused ones."""
    attn, mlp = layer.self_attn, layer.mlp
    with torch.no_grad():
        wqkv = _fuse(attn.q_proj, attn.k_proj, attn.v_proj)
        wgu = _fuse(mlp.gate_proj, mlp.up_proj)
    return (layer.input_layernorm.weight, float(layer.input_layernorm.variance_epsilon), wqkv,
            attn.o_proj.weight.detach(), layer.post_attention_layernorm.weight,
            float(layer.post_attention_layernorm.variance_epsilon), wgu,
            mlp.down_proj.weight.detach())


def _fuse(*linears) -> torch.Tensor:
    """One weight for several ``nn.Linear`` of the same input (concatenated outputs); each
    module's weight is rebound to its slice of it (a view), so nothing is stored twice."""
    fused = getattr(linears[0], "_dptext_fused", None)
    if fused is not None:  # a second FastLlama of the same model
        return fused
    weight = torch.cat([m.weight.detach() for m in linears], dim=0)
    start = 0
    for m in linears:
        rows = m.weight.shape[0]
        m.weight = torch.nn.Parameter(weight[start: start + rows], requires_grad=False)
        start += rows
    linears[0]._dptext_fused = weight
    return weight


def _rotate(x, cos, sin):
    """Rotary embedding, transformers' ``rotate_half`` convention."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def _mask(keys_valid: torch.Tensor, w: int, groups: int, *,
          always: bool = False) -> torch.Tensor | None:
    """Bool attention mask [b, 1, groups * w, s] of the w new tokens (the last w of the s key
    positions): a real earlier key, causally; each token always sees itself (so a padding
    token's row is never empty). None where it is the plain causal mask (nothing cached, no
    padding)."""
    b, s = keys_valid.shape
    if s == w and bool(keys_valid.all()):
        return None
    device = keys_valid.device
    causal = torch.ones((w, s), dtype=torch.bool, device=device).tril(s - w)
    mask = keys_valid[:, None, :] & causal  # [b, w, s]
    eye = torch.arange(w, device=device)
    mask[:, eye, eye + (s - w)] = True
    return mask[:, None].expand(b, groups, w, s).reshape(b, 1, groups * w, s)


def _attend_with_prefix(q, k, v, mask, pk, pv, scale):
    """softmax over [shared prefix keys | the row's own keys] of ``q`` [b, h, t, d] (``h`` the
    key/value heads, the query heads stacked in ``t``), without copying the prefix per row:
    the two parts' scores share one maximum and one normaliser."""
    b, h, t, d = q.shape
    own = torch.matmul(q, k.transpose(-1, -2)) * scale  # [b, h, t, s]
    if mask is not None:
        own = own.masked_fill(~mask, float("-inf"))
    flat = q.transpose(0, 1).reshape(h, b * t, d)  # every row's queries against the one prefix
    pre = torch.matmul(flat, pk[0].transpose(-1, -2)) * scale  # [h, b*t, p]
    top = torch.maximum(own.amax(-1, keepdim=True),
                        pre.amax(-1, keepdim=True).view(h, b, t, 1).transpose(0, 1))
    own = (own - top).exp_()
    pre = (pre - top.transpose(0, 1).reshape(h, b * t, 1)).exp_()
    total = own.sum(-1, keepdim=True) + pre.sum(-1, keepdim=True).view(h, b, t, 1).transpose(0, 1)
    out = torch.matmul(own, v) + torch.matmul(pre, pv[0]).view(h, b, t, d).transpose(0, 1)
    return out / total


def _linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``x @ weight.T`` in the weight's dtype (bfloat16 in :meth:`FastLlama.in_bf16`), the
    result in ``x``'s."""
    if x.dtype == weight.dtype:
        return F.linear(x, weight)
    return F.linear(x.to(weight.dtype), weight).to(x.dtype)


def fast_forward(model) -> FastLlama | None:
    """The :class:`FastLlama` of ``model`` (made once per model), or None where the model is
    not a plain Llama decoder (see the module docstring)."""
    cached = getattr(model, "_dptext_fast", None)
    if cached is not None:
        return cached
    if not _plain_llama(model):
        return None
    fast = FastLlama(model)
    model._dptext_fast = fast
    return fast


def _plain_llama(model) -> bool:
    cfg = getattr(model, "config", None)
    base = getattr(model, "base_model", None)
    if cfg is None or base is None or base is model:
        return False
    if getattr(cfg, "model_type", None) != "llama" or type(base).__name__ != "LlamaModel":
        return False
    if (getattr(cfg, "hidden_act", None) != "silu" or getattr(cfg, "attention_bias", False)
            or getattr(cfg, "mlp_bias", False) or getattr(cfg, "pretraining_tp", 1) != 1
            or getattr(cfg, "sliding_window", None)):
        return False
    for layer in base.layers:
        attn, mlp = layer.self_attn, layer.mlp
        for m in (attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj, mlp.gate_proj,
                  mlp.up_proj, mlp.down_proj):
            if type(m) is not torch.nn.Linear or m.bias is not None:
                return False
    return True
