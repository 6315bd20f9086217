"""``dptext calibrate``: clip bounds for a language model, measured on public text."""

from __future__ import annotations

import sys


def cmd_calibrate(args) -> int:
    from dptext.errors import DPTextError
    from dptext.io import read_lines
    from dptext.lm.bounds import RULE, output_path, percentile_rule, write_bounds
    from dptext.lm.loading import default_name, resolve_model
    from dptext.mechanisms.lm_calibration import measure_scores

    texts = [line.strip() for _, line in read_lines(args.text) if line.strip()]
    if not texts:
        raise DPTextError(f"{args.text}: no text to calibrate on")
    causal = args.backend == "causal"
    scores = measure_scores(texts, backend=args.backend, model=args.model,
                            context=args.context, max_slots=args.max_words)
    lo, hi = percentile_rule(scores)
    key = args.model or default_name(causal=causal)
    if args.output:
        from pathlib import Path

        path = Path(args.output)
    else:
        path = output_path(key, resolve_model(args.model, causal=causal))
    write_bounds(path, lo, hi, model=key, backend=args.backend, context=args.context,
                 words_scored=int(scores.shape[0]), public_text=str(args.text))
    print(f"lo={lo:.4f} hi={hi:.4f} from {scores.shape[0]} words ({RULE})")
    print(f"wrote {path}", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "calibrate", help="measure LM clip bounds on PUBLIC text (never the private data)")
    p.add_argument("--model", help="HF name or local path (default: the packaged SmolLM2)")
    p.add_argument("--backend", choices=("causal", "mlm"), default="causal")
    p.add_argument("--text", required=True, help="public text file, one text per line")
    p.add_argument("--context", choices=("concat", "none"), default="concat")
    p.add_argument("--max-words", type=int, default=2000, help="words to score at most")
    p.add_argument("--output", help="bounds file (default: beside the model, or in the cache)")
    p.set_defaults(func=cmd_calibrate)
