"""DP-Prompt (Utpala, Hooker & Chen 2023, "Locally Differentially Private Document Generation
Using Zero Shot Prompting"), the baseline of the DP-MLM paper (section 5.1.2).

The causal LM is prompted to paraphrase the text and generates at most as many tokens as the
text has (the cap of DP-MLM section 5.1.2); each token is drawn from the logits clipped to
[lo, hi] at temperature T = 2 (hi - lo) / epsilon - the exponential mechanism, epsilon-DP per
generated token for any two input texts; the document is (tokens drawn) * epsilon-DP, at most
(input tokens) * epsilon. Drawn over the whole vocabulary except every special or added
control token (:func:`control_token_ids`: the tokenizer's special ids and every id of
``added_tokens_decoder``, e.g. SmolLM2's ``<repo_name>``, ``<filename>``, ...); the
end-of-sequence token is a candidate too (drawing it ends the paraphrase, post-processing).
Texts are generated side by side (:mod:`dptext.lm.decoding`, at most ``batch_size`` at a time,
similar prompt lengths together, :func:`~dptext.lm.decoding.cost_groups`): the instruction the
group's prompts start with (the same tokens: chat template, system prompt, "Paraphrase ...")
runs once and its cache is shared by the rows, then one forward pass per generated token for
the whole group, its threads set by the size of the pass (:mod:`dptext.lm.threads`). Groups
run two at a time where two cores are free (:func:`dptext.lm.threads.run_groups`), each with
its own generator spawned before any runs, so a seeded output does not depend on it.
``precision="int8"``: :mod:`dptext.lm.quantize`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dptext.accounting.events import TokenEvent
from dptext.errors import DPTextError
from dptext.mechanisms.base import Result, TypicalEpsilon
from dptext.mechanisms.dpmlm import LMMechanism, RewriteReport
from dptext.mechanisms.registry import register
from dptext.rng import RngLike, as_generator
from dptext.validation import check_int


def control_token_ids(tokenizer) -> set[int]:
    """Ids DP-Prompt never draws: every special token and every added token (registered in
    ``added_tokens_decoder``: chat markers, tool/repository tags), as ``lm.candidates`` excludes
    them for DP-MLM - except the end-of-sequence token, which ends the paraphrase."""
    ids = {int(i) for i in tokenizer.all_special_ids}
    ids.update(int(i) for i in (getattr(tokenizer, "added_tokens_decoder", None) or {}))
    ids.discard(tokenizer.eos_token_id)
    return ids


def _common_prefix(rows: list[list[int]]) -> int:
    """Length of the tokens every row starts with (the instruction before the text), leaving
    every row at least one token of its own."""
    limit = min(len(r) for r in rows) - 1
    n = 0
    while n < limit and all(r[n] == rows[0][n] for r in rows):
        n += 1
    return n


# The number of generated tokens is capped at the input's token count, so the output length
# depends on the input length: the composition holds between texts of the same length.
DOCUMENT_SCOPE = ("between texts with the same number of tokens (the paraphrase is cut at the "
                  "input's token count, so its length depends on the input's)")
DEFAULT_PROMPT = "Paraphrase the following text. Reply with the paraphrase only.\n\n{text}"


@register
class DPPrompt(LMMechanism):
    """DP-Prompt with the packaged SmolLM2 (or any ``AutoModelForCausalLM``)."""

    name = "dpprompt"
    summary = "DP-Prompt: paraphrase with a causal LM, each token from clipped logits"
    guarantee_summary = "epsilon-DP per generated token, any two texts; tokens*epsilon per text"
    typical_epsilon = TypicalEpsilon(
        25, 250, "eps-DP per generated token (clipped exponential mechanism)",
        "the range the DP-Prompt paper evaluates; not measured by "
        "benchmarks/bench_privacy.py")
    causal_only = True

    def __init__(self, *, epsilon: float, model: str | None = None,
                 prompt: str = DEFAULT_PROMPT, clip_low: float | None = None,
                 clip_high: float | None = None, max_length: int | None = None,
                 batch_size: int = 64, precision: str = "fp32", device: str = "cpu") -> None:
        super().__init__(epsilon=epsilon, backend="causal", model=model, clip_low=clip_low,
                         clip_high=clip_high, max_length=max_length, precision=precision,
                         device=device)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        if "{text}" not in str(prompt):
            raise DPTextError("prompt must contain {text}")
        self.prompt = str(prompt)
        self._allowed = self._head = None

    @property
    def is_fitted(self) -> bool:
        return self._head is not None

    def fit(self, *, progress: bool = False) -> DPPrompt:
        if self._head is None:
            self._load(progress)
            model, tokenizer = self._lm
            import torch

            from dptext.lm.decoding import ScoreHead

            self._allowed = torch.as_tensor(np.setdiff1d(
                np.arange(model.config.vocab_size), sorted(control_token_ids(tokenizer))))
            self._head = ScoreHead(model, self._allowed, self._prompt_ids("probe"),
                                   precision=self.precision)
        return self

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Per text, the most tokens it is charged for: the paraphrase is at most as many
        tokens as the text (the generation budget). Loads the tokenizer (``fit``)."""
        self.fit()
        tokenizer = self._lm[1]
        out = []
        for text in texts:
            if not isinstance(text, str):
                raise DPTextError(f"texts must be strings, got {type(text).__name__}")
            out.append(len(tokenizer(text, add_special_tokens=False)["input_ids"]))
        return out

    def _prompt_ids(self, text: str) -> list[int]:
        tokenizer = self._lm[1]
        content = self.prompt.replace("{text}", text)
        if getattr(tokenizer, "chat_template", None):
            return list(tokenizer.apply_chat_template(
                [{"role": "user", "content": content}], add_generation_prompt=True,
                tokenize=True, return_dict=True)["input_ids"])
        return list(tokenizer(content)["input_ids"])

    def privatize_batch(self, texts: Sequence[str], *, rng: RngLike = None) -> list[Result]:
        from dptext.lm.decoding import cost_groups, decode_side_by_side, pad_id
        from dptext.lm.sampling import spawn_generators, torch_generator
        from dptext.lm.threads import LANES, run_groups, thread_policy

        self.fit()
        tgen = torch_generator(as_generator(rng))
        model, tokenizer = self._lm
        window = min(x for x in (model.config.max_position_embeddings, self.max_length) if x)
        prompts, budgets = [], []
        for text in texts:
            if not isinstance(text, str):
                raise DPTextError(f"texts must be strings, got {type(text).__name__}")
            budget = len(tokenizer(text, add_special_tokens=False)["input_ids"])
            prompt = self._prompt_ids(text)
            if len(prompt) + budget > window:
                raise DPTextError(f"text too long for dpprompt ({budget} tokens; model window "
                                  f"{window}): split it into shorter records")
            prompts.append(prompt)
            budgets.append(budget)
        outs: list[list[int]] = [[] for _ in texts]
        eos = tokenizer.eos_token_id
        todo = [i for i in range(len(texts)) if budgets[i]]
        # groups of about equal cost: a generated token costs about three prompt tokens (a
        # pass over a few rows, a draw over ~49k tokens; the instruction is run once per group)
        groups = [[todo[k] for k in ks]
                  for ks in cost_groups([len(prompts[i]) for i in todo], self.batch_size,
                                        lanes=LANES,
                                        weights=[len(prompts[i]) + 3 * budgets[i]
                                                 for i in todo])]
        allowed, pad = self._allowed.tolist(), pad_id(tokenizer)

        def run(group: list[int], gen, policy) -> None:
            def draw(rows, scores):
                nexts = []
                for r, col in zip(rows, self._draw(scores, gen), strict=True):
                    i = group[r]
                    token = allowed[col]
                    outs[i].append(token)
                    done = token == eos or len(outs[i]) >= budgets[i]
                    nexts.append(None if done else [token])
                return nexts

            rows = [prompts[i] for i in group]
            common = _common_prefix(rows) if len(rows) > 1 else 0
            decode_side_by_side(self._head, [r[common:] for r in rows], draw, pad,
                                prefix=rows[0][:common] or None, policy=policy)

        # one generator per group, spawned in group order before any group runs: the groups
        # may run at once on worker threads (dptext.lm.threads.run_groups)
        gens = spawn_generators(tgen, len(groups))
        with thread_policy() as policy:
            run_groups(policy, [lambda g=g, gen=gen: run(g, gen, policy)
                                for g, gen in zip(groups, gens, strict=True)],
                       costs=[sum(len(prompts[i]) + 3 * budgets[i] for i in g) for g in groups])
        results = []
        for out in outs:
            new = tokenizer.decode(out, skip_special_tokens=True).strip()
            report = RewriteReport(self.name, self.guarantee,
                                   [TokenEvent(self.guarantee, len(out), "generated")]
                                   if out else [], document_scope=DOCUMENT_SCOPE)
            results.append(Result(new, report))
        return results
