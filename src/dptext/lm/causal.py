"""Causal-LM backend of DP-MLM: score the next word given the original and the output so far.

Model input (issue 3, adapting the paper's section 4.2 concatenated context to a decoder): the
original text, a separator, then the privatized text produced so far; the scores of a slot are
the next-token logits after that prefix. The prefix ``original + separator`` is run once per
text and its key/value cache extended token by token: each slot feeds only the tokens that
appeared since the last one (the sampled word and the glue after it). A trailing space of the
glue before a slot is left to the candidate token (``Ġword`` carries its own space). If the
sequence would outgrow the model window, the cache is rebuilt from a window of the original
centred on the slot plus the tail of the output (:mod:`dptext.lm.windows`).
:meth:`CausalBackend.rewrite_batch` decodes several texts side by side
(:mod:`dptext.lm.decoding`), one forward pass per step for all of them; its groups of rows run
two at a time where two cores are free (:func:`dptext.lm.threads.run_groups`), each group
drawing from its own generator.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

from dptext.errors import DPTextError
from dptext.lm.windows import centred

DEFAULT_SEPARATOR = "\n\nThe same text in other words:"


class CausalBackend:
    """Sequential scoring with a reused key/value cache."""

    TAIL = 64  # original tokens an independent chunk starts from
    SEGMENT_TAIL = 32  # original tokens a segment other than the first starts from

    def __init__(self, model, tokenizer, candidate_ids, *, context: str, separator: str,
                 max_length: int | None, segment_words: int = 32,
                 max_segments: int = 16, precision: str = "fp32") -> None:
        import torch

        self.model, self.tokenizer = model, tokenizer
        self.candidate_ids = torch.as_tensor(candidate_ids)
        self.context = context
        self.sep_ids = self.encode(separator)
        limits = [getattr(model.config, "max_position_embeddings", None), max_length]
        self.window = min(int(x) for x in limits if x)
        self.budget = (self.window - len(self.sep_ids)) // 2
        if self.budget < 2:
            raise DPTextError(f"model window {self.window} is too small for the causal backend")
        from dptext.lm.decoding import ScoreHead, pad_id

        self.head = ScoreHead(model, self.candidate_ids, self.sep_ids, precision=precision)
        self.pad_id = pad_id(tokenizer)
        self.segment_words, self.max_segments = int(segment_words), max(1, int(max_segments))
        self._policy = None  # the thread policy of the call under way

    @contextmanager
    def threads(self):
        """The thread policy of the current call (:mod:`dptext.lm.threads`): made on entry of
        the outermost call, torch's thread count restored when it returns."""
        if self._policy is not None:
            yield self._policy
            return
        from dptext.lm.threads import thread_policy

        with thread_policy() as policy:
            self._policy = policy
            try:
                yield policy
            finally:
                self._policy = None

    def encode(self, text: str) -> list[int]:
        if not text:
            return []
        return list(self.tokenizer(text, add_special_tokens=False,
                                   split_special_tokens=True)["input_ids"])

    def _prefix(self, ids: list[int], centre: int, tail: list[int]) -> list[int]:
        if self.context == "none":
            head = list(self.sep_ids)
        else:
            lo, hi = centred(len(ids), centre, centre + 1, self.budget)
            head = ids[lo:hi] + self.sep_ids
        if not head:  # a causal LM needs at least one token to predict from
            head = [self.tokenizer.bos_token_id or self.tokenizer.eos_token_id or 0]
        # half the budget for the output tail: the other half is room for the next slots
        return head + tail[-(self.budget // 2):] if self.budget > 1 else head + tail[-1:]

    def rewrite(self, ids, slots, choose, *, out=None) -> None:
        """One text alone, with cache rebuilds (:meth:`_rewrite`)."""
        with self.threads():
            self._rewrite(ids, slots, choose, out=out)

    def rewrite_batch(self, texts, choose, *, batch_size: int = 64,
                      generator=None) -> list[list[int]]:
        """Texts side by side (:meth:`_rewrite_batch`)."""
        with self.threads():
            return self._rewrite_batch(texts, choose, batch_size=batch_size,
                                       generator=generator)

    def score_independent(self, texts, *, batch_size: int = 64) -> list:
        """Independent draws' scores (:meth:`_score_independent`)."""
        with self.threads():
            return self._score_independent(texts, batch_size=batch_size)

    def _rewrite(self, ids: list[int], slots: list[tuple[str, int]],
                 choose: Callable[[object], int], *, out: list[int] | None = None) -> None:
        """Walk ``slots``: (glue text before the slot, token position of the slot in ``ids``).

        ``choose(scores) -> candidate column`` samples (and records) the slot's word. ``out``:
        output tokens before the first slot (a segment's teacher-forced start: its glue is in
        them, so the first slot's glue is not fed again).
        """
        import torch

        past, length, pending = None, 0, []
        first = bool(out)
        out = list(out or [])
        for glue, centre in slots:
            new = [] if first else self.encode(_trim(glue))
            first = False
            out.extend(new)
            if past is None or length + len(pending) + len(new) > self.window:
                feed, past, length = self._prefix(ids, centre, out), None, 0
            else:
                feed = pending + new
            self._policy.before_pass(len(feed))
            past, scores_of = self.head.forward(torch.as_tensor([feed]), None, None, past)
            length += len(feed)
            column = choose(scores_of([0])[0])
            token = int(self.candidate_ids[column])
            out.append(token)
            pending = [token]

    def _rewrite_batch(self, texts: list[tuple[list[int], list[tuple[str, int]]]],
                      choose: Callable[[list[int], object, object], list[int]], *,
                      batch_size: int = 64, generator=None) -> list[list[int]]:
        """Several texts decoded side by side (:mod:`dptext.lm.decoding`): one forward pass
        per step for all the rows decoded together.

        ``choose(rows, scores rows x candidates, generator) -> columns``, ``rows`` indexing
        ``texts``; ``generator`` is the group's own: one per group, then one per text decoded
        alone, spawned from ``generator`` in that order before anything runs
        (:func:`~dptext.lm.sampling.spawn_generators`; None: None), so the draws do not depend
        on whether the groups run one after another or at once
        (:func:`~dptext.lm.threads.run_groups`). Returns the chosen columns per text, in slot
        order. A text with at least
        ``2 * segment_words`` slots is cut into segments (at most ``max_segments``) decoded
        side by side after one shared pass over its prefix (original + separator); a segment
        other than the first starts from the last ``SEGMENT_TAIL`` tokens of the original before it
        (teacher forcing), then goes on from its own output. Other texts are rows grouped by
        prompt length (:func:`~dptext.lm.decoding.cost_groups`), ``batch_size`` at most per
        group. What does not fit the window is decoded alone with cache rebuilds
        (:meth:`rewrite`).
        """
        from dptext.lm.decoding import cost_groups, decode_side_by_side
        from dptext.lm.sampling import spawn_generators
        from dptext.lm.threads import LANES, run_groups

        # every slot's glue tokens, encoded once here (not in the draws, on worker threads)
        glue = [[self.encode(_trim(g)) for g, _ in slots] for _, slots in texts]
        candidates = self.candidate_ids.tolist()
        chosen: dict[tuple[int, int], list[int]] = {}  # (text, first slot of the row) -> columns
        # rows: text, first slot, end slot, prompt (or queue after a shared head), shared head,
        # cost estimate (cost_groups' weights, run_groups' order): the prompt's tokens plus
        # twice the tokens fed one pass at a time (a decoding pass runs its matrix products on
        # few rows, at about half the rate of a prompt's, and each draw adds ~1 ms)
        plain: list[tuple[int, int, int, list[int], list[int], int]] = []
        shared: dict[tuple[int, ...], list] = {}  # one decode per text and head window
        alone: list[tuple[int, int, int, list[int]]] = []
        for t, (ids, slots) in enumerate(texts):
            for a, b in self.segments(len(slots)):
                head = self._prefix(ids, (slots[a][1] + slots[b - 1][1]) // 2, [])
                queue = (list(glue[t][0]) if a == 0
                         else list(ids[max(0, slots[a][1] - self.SEGMENT_TAIL): slots[a][1]]))
                rest = sum(1 + len(g) for g in glue[t][a + 1: b]) + 1
                whole = b - a == len(slots)
                too_long = whole and len(ids) > self.budget  # the head must move: rebuilds
                if len(head) + len(queue) + rest > self.window or too_long:
                    alone.append((t, a, b, queue if a else []))
                    continue
                cost = len(head) + len(queue) + 2 * rest
                if whole:
                    plain.append((t, a, b, head + queue, [], cost))
                else:
                    shared.setdefault((t, *head), []).append((t, a, b, queue, head, cost))
        groups = [[plain[k] for k in g]
                  for g in cost_groups([len(r[3]) for r in plain], batch_size, lanes=LANES,
                                       weights=[r[5] for r in plain])]
        groups += list(shared.values())
        gens = spawn_generators(generator, len(groups) + len(alone))

        def run(rows: list, gen) -> None:
            done: list[list[int]] = [[] for _ in rows]

            def draw(ks, scores):
                nexts = []
                for k, col in zip(ks, choose([rows[k][0] for k in ks], scores, gen),
                                  strict=True):
                    t, a, b = rows[k][:3]
                    done[k].append(int(col))
                    j = a + len(done[k])
                    nexts.append([candidates[col]] + glue[t][j] if j < b else None)
                return nexts

            prefix = rows[0][4] or None
            decode_side_by_side(self.head, [r[3] for r in rows], draw, self.pad_id,
                                prefix=prefix, policy=self._policy)
            for r, cols in zip(rows, done, strict=True):
                chosen[(r[0], r[1])] = cols

        run_groups(self._policy,
                   [lambda rows=rows, gen=gen: run(rows, gen)
                    for rows, gen in zip(groups, gens[:len(groups)], strict=True)],
                   costs=[sum(r[5] for r in rows) for rows in groups])
        for (t, a, b, tail), gen in zip(alone, gens[len(groups):], strict=True):
            cols: list[int] = []

            def one(row, t=t, cols=cols, gen=gen):
                cols.append(int(choose([t], row[None], gen)[0]))
                return cols[-1]

            self.rewrite(texts[t][0], texts[t][1][a:b], one, out=tail)
            chosen[(t, a)] = cols
        return [[c for a, _ in self.segments(len(slots)) for c in chosen[(t, a)]]
                for t, (_, slots) in enumerate(texts)]

    def segments(self, n: int) -> list[tuple[int, int]]:
        """Slot ranges ``[a, b)`` of a text with ``n`` slots decoded as separate rows."""
        if n == 0:
            return []
        count = 1 if not self.segment_words else min(self.max_segments,
                                                     n // self.segment_words) or 1
        bounds = [round(k * n / count) for k in range(count + 1)]
        return list(zip(bounds[:-1], bounds[1:], strict=True))

    def _score_independent(self, texts: list[tuple[list[int], list[tuple[str, int]]]], *,
                          batch_size: int = 64) -> list:
        """Independent draws: each slot scored after the original text before it (teacher
        forcing), all slots of a text in one forward pass. Returns a (slots x candidates)
        tensor per text.

        Row of a chunk of slots: prefix (original window + separator) + the original tokens
        from ``t0`` to the chunk's last slot; slot j is scored at the token just before its
        start. A text longer than the window is cut into chunks of at most ``budget`` tokens.
        """
        import torch

        from dptext.lm.decoding import cost_groups

        rows: list[tuple[int, list[int], list[int]]] = []  # text, sequence, score positions
        for t, (ids, slots) in enumerate(texts):
            k = 0
            while k < len(slots):
                t0 = 0 if k == 0 else max(0, slots[k][1] - self.TAIL)
                end = k
                while end < len(slots) and slots[end][1] - t0 <= self.budget:
                    end += 1
                end = max(end, k + 1)
                head = self._prefix(ids, (slots[k][1] + slots[end - 1][1]) // 2, [])
                last = slots[end - 1][1]
                seq = head + list(ids[t0:last])
                rows.append((t, seq, [len(head) + s - t0 - 1 for _, s in slots[k:end]]))
                k = end
        out: list[list] = [[] for _ in texts]
        for group in cost_groups([len(r[1]) for r in rows], batch_size):
            width = max(len(rows[i][1]) for i in group)
            ids = torch.full((len(group), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(group), width), dtype=torch.long)
            where_r, where_c = [], []
            for g, i in enumerate(group):
                seq, pos = rows[i][1], rows[i][2]
                ids[g, width - len(seq):] = torch.as_tensor(seq)
                mask[g, width - len(seq):] = 1
                where_r += [g] * len(pos)
                where_c += [width - len(seq) + p for p in pos]
            positions = (mask.cumsum(1) - 1).clamp_min(0)
            self._policy.before_pass(self.head.work(ids, mask))
            scores = self.head.score_positions(ids, mask, positions, where_r, where_c)
            k = 0
            for i in group:
                n = len(rows[i][2])
                out[rows[i][0]].append(scores[k: k + n])
                k += n
        empty = torch.zeros((0, len(self.candidate_ids)))
        return [torch.cat(parts) if parts else empty for parts in out]

    def fits(self, ids: list[int], slots: list[tuple[str, int]]) -> bool:
        """Whether a text decodes within the window without rebuilding the cache."""
        total = len(self._prefix(ids, 0, [])) + len(slots)
        return len(ids) <= self.budget and total + sum(
            len(self.encode(_trim(g))) for g, _ in slots) <= self.window


def _trim(glue: str) -> str:
    """The glue before a slot without the one space the candidate token carries itself."""
    return glue[:-1] if glue.endswith(" ") else glue
