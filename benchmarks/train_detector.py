"""Train the learned PHI detector (dptext.detect.learned) on seeded synthetic notes and write
its weights: ``model.npz`` (float16 arrays + metadata, a zip with fixed timestamps) and
``model.sha256`` beside it. docs/learned_detector.md explains the data, model and figures.

    nice -n 19 .venv/bin/python benchmarks/train_detector.py --out /tmp/det   # then copy
    nice -n 19 .venv/bin/python benchmarks/train_detector.py \
        --out src/dptext/detect/learned                                     # the shipped weights

Reproducible: the pools (Faker and names-dataset, both seeded or ranked), the notes (numpy
seed), the initialisation and the batch order (torch seed) are fixed; one torch thread and
deterministic algorithms. The same library versions on the same CPU give the same bytes (the
float arithmetic of another CPU's vector units may differ in the last bits).
Checkpoints after every epoch in ``--work``; ``--resume`` continues from the last one."""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from dptext.detect.learned.features import BUCKETS, FEATURES, POSITION, Featurizer  # noqa: E402
from dptext.detect.learned.network import torch_network  # noqa: E402
from dptext.detect.learned.synth import Generator, Pools  # noqa: E402
from dptext.detect.learned.tags import CATEGORIES, TAGS, bio_targets  # noqa: E402


def names_dataset_lists(work: Path, top: int) -> tuple[list[str], list[str]]:
    """The ``top`` first names (both sexes) and last names of every country of names-dataset
    (MIT), by its rank; cached in ``work`` (loading the dataset takes minutes and ~4 GB)."""
    cache = work / f"names_dataset_top{top}.json.gz"
    if not cache.exists():
        try:
            from names_dataset import NameDataset
        except ImportError:
            print("names-dataset not installed: Faker names only", flush=True)
            return [], []
        nd = NameDataset()
        first = nd.get_top_names(n=top, use_first_names=True)
        last = nd.get_top_names(n=top, use_first_names=False)
        data = {"first": {c: sorted(set(v.get("M", []) + v.get("F", [])))
                          for c, v in sorted(first.items())},
                "last": {c: sorted(set(v)) for c, v in sorted(last.items())}}
        with gzip.open(cache, "wt", encoding="utf-8") as f:
            json.dump(data, f, sort_keys=True)
    with gzip.open(cache, "rt", encoding="utf-8") as f:
        data = json.load(f)
    first = sorted({n for v in data["first"].values() for n in v})
    last = sorted({n for v in data["last"].values() for n in v})
    print(f"names-dataset: {len(data['first'])} countries, {len(first)} first, "
          f"{len(last)} last names", flush=True)
    return first, last


def encode(notes, feat: Featurizer):
    out = []
    for text, labels in notes:
        ids, dense, spans = feat.encode(text)
        out.append((ids, dense, bio_targets(spans, labels)))
    return out


def batches(data, idx, size):
    import torch
    for k in range(0, len(idx), size):
        chunk = [data[i] for i in idx[k:k + size]]
        t = max(len(c[0]) for c in chunk)
        ids = np.zeros((len(chunk), t, FEATURES), np.int64)
        dense = np.zeros((len(chunk), t, POSITION), np.float32)
        y = np.full((len(chunk), t), -100, np.int64)
        mask = np.zeros((len(chunk), t), np.float32)
        for j, (a, b, c) in enumerate(chunk):
            ids[j, :len(a)], dense[j, :len(a)], y[j, :len(a)], mask[j, :len(a)] = a, b, c, 1
        yield (torch.from_numpy(ids), torch.from_numpy(dense), torch.from_numpy(mask),
               torch.from_numpy(y))


def span_scores(gold_notes, pred) -> dict:
    """Exact-span precision/recall/F1 and token-overlap recall per category."""
    tp = fp = fn = 0
    per = {c: [0, 0] for c in CATEGORIES}  # gold spans touched by a prediction, gold spans
    for (_text, labels), spans in zip(gold_notes, pred, strict=True):
        g = {(a, b, c) for a, b, c in labels}
        p = {(s.start, s.end, s.category) for s in spans}
        tp += len(g & p)
        fp += len(p - g)
        fn += len(g - p)
        for a, b, c in labels:
            per[c][1] += 1
            per[c][0] += any(s.start < b and a < s.end for s in spans)
    prec = tp / max(tp + fp, 1)
    rec = tp / max(tp + fn, 1)
    return {"span_p": prec, "span_r": rec, "span_f1": 2 * prec * rec / max(prec + rec, 1e-9),
            "touched": {c: round(a / b, 4) for c, (a, b) in per.items() if b}}


def write_weights(path: Path, params: dict, meta: dict) -> str:
    """A zip of .npy members with fixed timestamps and order (byte-identical for equal
    arrays), and ``NAME.sha256`` beside it."""
    buf = io.BytesIO()
    arrays = {k: v.astype(np.float16) for k, v in sorted(params.items())}
    arrays["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8)
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, arrays[name], allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            z.writestr(info, member.getvalue())
    data = buf.getvalue()
    path.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    path.with_suffix(".sha256").write_text(f"sha256 {digest} {len(data)}\n", encoding="ascii")
    return digest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for model.npz")
    ap.add_argument("--work", type=Path, default=Path("/tmp/dptext-train-detector"))
    ap.add_argument("--notes", type=int, default=10000, help="training notes")
    ap.add_argument("--dev", type=int, default=400, help="held-out notes (another seed)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--width", type=int, default=96)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--word-dropout", type=float, default=0.25)
    ap.add_argument("--names-top", type=int, default=300, help="names-dataset names per "
                    "country and sex (0: Faker only)")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--write-heldout", type=Path, metavar="JSONL",
                    help="write the held-out recall set of tests/detect/test_detect_learned.py "
                    "(80 notes, seed 5, names of names-dataset ranked 301-400 only: none is "
                    "in the training pools) and stop")
    args = ap.parse_args(argv)
    if args.write_heldout:
        return write_heldout(args)
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.process_time()
    first, last = names_dataset_lists(args.work, args.names_top) if args.names_top else ([], [])
    pools = Pools(args.seed, extra_first=first, extra_last=last)
    print(f"pools: {len(pools.first)} first, {len(pools.last)} last, {len(pools.cities)} "
          f"cities, {len(pools.streets)} streets ({time.process_time() - t0:.0f} s CPU)",
          flush=True)
    train_notes = Generator(pools, seed=args.seed * 7919 + 1).notes(args.notes)
    dev_notes = Generator(pools, seed=args.seed * 7919 + 2).notes(args.dev)
    feat = Featurizer()
    train = encode(train_notes, feat)
    dev = encode(dev_notes, feat)
    print(f"notes: {len(train)} train ({sum(len(a) for a, _, _ in train)} tokens), {len(dev)} "
          f"dev ({time.process_time() - t0:.0f} s CPU)", flush=True)
    torch.manual_seed(args.seed)
    net = torch_network(args.dim, args.width, len(TAGS), BUCKETS, POSITION)
    net.drop.p = 0.1
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    steps = args.epochs * ((len(train) + args.batch - 1) // args.batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.05, 1 - s / steps))
    ckpt = args.work / "checkpoint.pt"
    start_epoch = 0
    if args.resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=True)
        net.load_state_dict(state["net"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        torch.set_rng_state(state["rng"])
        start_epoch = int(state["epoch"])
        print(f"resumed after epoch {start_epoch}", flush=True)
    gen = torch.Generator().manual_seed(args.seed)
    for _ in range(start_epoch):
        torch.randperm(len(train), generator=gen)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-100)
    for epoch in range(start_epoch, args.epochs):
        net.train()
        order = torch.randperm(len(train), generator=gen).tolist()
        total, n = 0.0, 0
        for ids, dense, mask, y in batches(train, order, args.batch):
            if args.word_dropout:
                drop = torch.rand(ids.shape[:2]) < args.word_dropout
                ids[..., 0] = torch.where(drop, torch.zeros_like(ids[..., 0]), ids[..., 0])
            logits = net(ids, dense, mask)
            loss = loss_fn(logits.reshape(-1, len(TAGS)), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach())
            n += 1
            if n % 100 == 0:
                print(f"  epoch {epoch + 1} step {n} loss {total / n:.4f} "
                      f"({time.process_time() - t0:.0f} s CPU)", flush=True)
        net.eval()
        params = net.to_numpy()
        scores = evaluate(params, dev_notes, args.out / "model.npz.tmp", args)
        print(f"epoch {epoch + 1}: loss {total / max(n, 1):.4f} dev {json.dumps(scores)} "
              f"({time.process_time() - t0:.0f} s CPU)", flush=True)
        torch.save({"net": net.state_dict(), "opt": opt.state_dict(),
                    "sched": sched.state_dict(), "rng": torch.get_rng_state(),
                    "epoch": epoch + 1}, ckpt)
    meta = meta_of(args)
    digest = write_weights(args.out / "model.npz", net.to_numpy(), meta)
    print(f"wrote {args.out / 'model.npz'} sha256 {digest} "
          f"({time.process_time() - t0:.0f} s CPU)", flush=True)
    return 0


def write_heldout(args) -> int:
    args.work.mkdir(parents=True, exist_ok=True)
    f400, l400 = names_dataset_lists(args.work, 400)
    f300, l300 = names_dataset_lists(args.work, 300)
    if not f400:
        raise SystemExit("the held-out set needs names-dataset")
    pools = Pools(5, per_locale=60, extra_first=sorted(set(f400) - set(f300)),
                  extra_last=sorted(set(l400) - set(l300)), faker_names=False)
    notes = Generator(pools, seed=5).notes(80)
    with open(args.write_heldout, "w", encoding="utf-8") as f:
        for text, labels in notes:
            f.write(json.dumps({"text": text, "labels": labels}, ensure_ascii=False) + "\n")
    print(f"wrote {args.write_heldout}: {len(notes)} notes, "
          f"{sum(len(ls) for _, ls in notes)} spans")
    return 0


def meta_of(args) -> dict:
    return {"tags": list(TAGS), "buckets": BUCKETS, "features": FEATURES,
            "position": POSITION, "dim": args.dim, "width": args.width, "seed": args.seed,
            "notes": args.notes, "epochs": args.epochs, "names_top": args.names_top,
            "trainer": "benchmarks/train_detector.py"}


def evaluate(params: dict, notes, tmp: Path, args) -> dict:
    from dptext.detect.learned.detector import LearnedDetector

    write_weights(tmp, params, meta_of(args))
    det = LearnedDetector(tmp)
    pred = det.find_many([t for t, _ in notes])
    os.unlink(tmp)
    os.unlink(tmp.with_suffix(".sha256"))
    return span_scores(notes, pred)


if __name__ == "__main__":
    sys.exit(main())
