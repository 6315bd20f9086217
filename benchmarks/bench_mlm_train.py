"""Train the format-3 masked LM head (dptext.lm.mlm_build.RECIPE_V3) with a learning curve.

Runs :func:`dptext.lm.mlm_build.train_head` with a checkpoint (resumable: the same command
continues it) and, at every checkpoint, (1) writes the head as it is then (fp16, fingerprinted,
recipe with ``stop_step`` = that step: a head that can be shipped at once) to
``OUT/step{S}.safetensors`` and (2) appends one JSON line to ``OUT/curve.jsonl``: whole-word
fill-mask top-1/top-10 on held-out text and Guardian headlines, the positions of
benchmarks/bench_mlm.py (``--texts`` per set, 3 per text, cut to 30 words; single sequence,
no concatenated copy), the training loss, the step and the training time.

    nice -n 19 env OMP_NUM_THREADS=1 python benchmarks/bench_mlm_train.py --out DIR \\
        --init src/dptext/data/minilm_mlm_head.safetensors   # the format-2 head
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def make_evaluator(tokenizer, texts: int):
    import numpy as np
    import torch
    from bench_mlm import guardian_texts, held_out_texts, positions
    from transformers import AutoTokenizer

    from dptext.lm.candidates import candidate_set
    from dptext.lm.loading import default_causal_dir
    from dptext.text import resolve_stopwords

    ctok = AutoTokenizer.from_pretrained(str(default_causal_dir()))
    mc, cc = candidate_set(tokenizer), candidate_set(ctok)
    lower = [w.lower() for w in mc.words]
    shared = set(lower) & {w.lower() for w in cc.words}
    stop = resolve_stopwords(None)
    ids_c = torch.as_tensor(mc.ids)
    sets = {}
    for name, tx in (("held_out", held_out_texts(texts)), ("guardian", guardian_texts(texts))):
        inputs, words = [], []
        for text, pos in positions(tx, 30, 3, shared):
            for s, e, w in pos:
                inputs.append(tokenizer(text[:s] + tokenizer.mask_token + text[e:])["input_ids"])
                words.append(w)
        sets[name] = (inputs, words)

    def evaluate(model) -> dict:
        model.eval()
        out = {}
        with torch.inference_mode():
            for name, (inputs, words) in sets.items():
                hits1, hits10 = [], []
                for b in range(0, len(inputs), 64):
                    rows = inputs[b: b + 64]
                    width = max(len(r) for r in rows)
                    ids = torch.zeros((len(rows), width), dtype=torch.long)
                    att = torch.zeros_like(ids)
                    for i, r in enumerate(rows):
                        ids[i, : len(r)] = torch.tensor(r)
                        att[i, : len(r)] = 1
                    hidden = model.bert(input_ids=ids, attention_mask=att).last_hidden_state
                    at = (ids == tokenizer.mask_token_id).nonzero()
                    logits = model.cls(hidden[at[:, 0], at[:, 1]])[:, ids_c]
                    top = torch.topk(logits, 10, dim=1).indices.numpy()
                    for row, w in zip(top, words[b: b + 64], strict=True):
                        cand = [lower[j] for j in row]
                        hits1.append(cand[0] == w)
                        hits10.append(w in cand)
                content = np.array([w not in stop for w in words])
                out[name] = {"top1": round(float(np.mean(hits1)), 4),
                             "top10": round(float(np.mean(hits10)), 4),
                             "top1_content": round(float(np.mean(np.array(hits1)[content])), 4),
                             "positions": len(words)}
        return out

    return evaluate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--init", required=True, help="the head file the recipe starts from")
    ap.add_argument("--texts", type=int, default=200)
    ap.add_argument("--every", type=int, default=20, help="checkpoint (and write the head) "
                    "every N steps")
    ap.add_argument("--eval-every", type=int, default=20, help="evaluate at the checkpoints "
                    "of these steps")
    ap.add_argument("--max-minutes", type=float)
    ap.add_argument("--no-distill", action="store_true", help="the recipe without its teacher "
                    "(another recipe: another checkpoint)")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    from transformers import AutoTokenizer

    from dptext.cli.build_mlm import load_teacher
    from dptext.lm import mlm_build as mb
    from dptext.resources import minilm_dir

    recipe = dict(mb.RECIPE_V3)
    if args.no_distill:
        recipe["distill"] = {}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(str(minilm_dir()))
    evaluate = make_evaluator(tok, args.texts)
    curve = out / "curve.jsonl"
    t0 = time.time()

    def log(msg: str) -> None:
        with (out / "train.log").open("a") as f:
            f.write(f"{time.strftime('%H:%M:%S', time.gmtime())} {msg}\n")

    if not curve.exists():  # the starting point
        model = mb.base_model(recipe["seed"])
        init, _ = mb.read_head(Path(args.init))
        params = dict(model.named_parameters())
        with torch.no_grad():
            for n, t in init.items():
                params[n].copy_(t.float())
        row = {"step": 0, "utc": time.strftime("%H:%M:%S", time.gmtime()), **evaluate(model)}
        curve.write_text(json.dumps(row) + "\n")
        log(f"start {row}")

    def on_checkpoint(step: int, model) -> None:
        start = time.perf_counter()
        names = mb.trainable_names(model, recipe["trainable_layers"])
        params = dict(model.named_parameters())
        tensors = {n: params[n].detach().clone() for n in names}
        state = torch.load(out / "train.ckpt", weights_only=False)
        losses = state["losses"]
        row = {"step": step, "utc": time.strftime("%H:%M:%S", time.gmtime()),
               "train_seconds": round(state["seconds"], 1),
               "train_loss_last20": round(sum(losses[-20:]) / len(losses[-20:]), 4)}
        if step % args.eval_every == 0:
            row.update(evaluate(model))
        row["eval_seconds"] = round(time.perf_counter() - start, 1)
        digest = mb.save_head(tensors, out / f"step{step}.safetensors",
                              recipe={**recipe, "stop_step": step},
                              figures={"train_seconds": row["train_seconds"],
                                       "final_train_loss": row["train_loss_last20"],
                                       "fill_mask": {k: row[k] for k in ("held_out",
                                                                         "guardian")
                                                     if k in row}})
        row["fingerprint"] = digest
        with curve.open("a") as f:
            f.write(json.dumps(row) + "\n")
        log(f"checkpoint {row}")

    try:
        mb.train_head(recipe, progress=False, log=log, checkpoint=out / "train.ckpt",
                      checkpoint_every=args.every, init=Path(args.init),
                      on_checkpoint=on_checkpoint, teacher=load_teacher,
                      max_seconds=None if args.max_minutes is None else 60 * args.max_minutes)
    except mb.Paused as p:
        log(str(p))
        sys.exit(3)
    log(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
