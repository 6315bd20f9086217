"""``dptext resources build mlm``: re-train the packaged masked LM's head (dptext.lm.mlm_build).

``register(build_subparsers)`` registers ``mlm`` on the subparsers of ``resources build``
(``cli/info.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

#: exit status of a checkpointed build that stopped at --max-minutes (run it again to continue)
PAUSED = 3


def load_teacher(student_tokenizer, top_k: int):
    """The distillation teacher of format 3: the packaged SmolLM2-135M-Instruct
    (dptext.lm.mlm_extra.Teacher)."""
    from dptext.lm.loading import load_model, resolve_model
    from dptext.lm.mlm_extra import Teacher

    model, tokenizer = load_model(resolve_model(None, causal=True), causal=True)
    return Teacher(student_tokenizer, model, tokenizer, top_k=top_k)


def cmd_build_mlm(args) -> int:
    import json

    from dptext.errors import DPTextError
    from dptext.lm import mlm_build as mb
    from dptext.resources import cache_dir

    if args.format is not None and args.format not in mb.RECIPES:
        raise DPTextError(f"--format must be one of {sorted(mb.RECIPES)}, got {args.format}")
    recipe = dict(mb.RECIPE if args.format is None else mb.RECIPES[args.format])
    if args.stop_step is not None:
        if not 1 <= args.stop_step <= recipe["steps"]:
            raise DPTextError(f"--stop-step must be within 1..{recipe['steps']}, got "
                              f"{args.stop_step}")
        recipe["stop_step"] = args.stop_step
    if args.steps is not None:
        if args.steps < 1:
            raise DPTextError(f"--steps must be >= 1, got {args.steps}")
        recipe["steps"] = args.steps
        recipe.pop("stop_step", None)  # a try-out runs its whole (shorter) schedule
    if args.max_minutes is not None and (args.max_minutes <= 0 or not args.checkpoint):
        raise DPTextError("--max-minutes needs --checkpoint and a positive number of minutes")
    if recipe.get("init_fingerprint") and not args.init:
        raise DPTextError(f"format {recipe['format']} continues a head file: give --init FILE "
                          "(the head of `dptext resources build mlm --format 2`)")
    out = Path(args.output) if args.output else cache_dir() / "mlm" / mb.HEAD_FILE
    try:
        tensors, figures = mb.train_head(
            recipe, progress=not args.no_progress,
            checkpoint=Path(args.checkpoint) if args.checkpoint else None,
            max_seconds=None if args.max_minutes is None else 60.0 * args.max_minutes,
            init=Path(args.init) if args.init else None, teacher=load_teacher)
    except mb.Paused as paused:
        print(f"dptext: {paused}", file=sys.stderr)
        return PAUSED
    digest = mb.save_head(tensors, out, recipe=recipe, figures=figures)
    print(json.dumps({"fingerprint": digest, **figures}))
    shipped = mb.shipped_head_path()
    if shipped.is_file() and shipped.resolve() != out.resolve():
        meta = mb.head_metadata(shipped)
        same = meta.get("fingerprint") == digest
        print(f"{'same' if same else 'DIFFERENT'} fingerprint as the shipped head "
              f"({meta.get('fingerprint', '?')[:16]}...)", file=sys.stderr)
    if args.assemble:
        target = Path(args.assemble)
        if target.exists():
            raise DPTextError(f"{target} exists: give a new directory")
        mb.assemble(target, out)
        print(f"wrote {target} (AutoModelForMaskedLM directory)", file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mlm", help="re-train the MLM head of the packaged masked LM minilm-mlm (~80 min, one "
        "core)",
        description="Train the BERT MLM head and the last blocks of the packaged MiniLM with the "
        "seeded recipe of dptext.lm.mlm_build and write the fp16 tensors with their fingerprint.")
    p.add_argument("--output", help="head file to write (default: in the cache; the package "
                   "ships src/dptext/data/" + "minilm_mlm_head.safetensors)")
    p.add_argument("--steps", type=int, help="override the recipe's step count (a shorter run "
                   "for a try-out; the fingerprint then differs)")
    p.add_argument("--assemble", help="also write an AutoModelForMaskedLM directory here")
    p.add_argument("--checkpoint", help="save the whole training state here every 20 steps and "
                   "continue from it when it exists (same recipe): the result is bit-identical "
                   "to one uninterrupted run")
    p.add_argument("--max-minutes", type=float, help="with --checkpoint: stop after about this "
                   "much training at a checkpoint, exit status 3; run the same command again "
                   "to continue")
    p.add_argument("--format", type=int, help="the recipe (dptext.lm.mlm_build.RECIPES; default "
                   "the shipped head's)")
    p.add_argument("--init", help="format 3: the format-2 head file it continues")
    p.add_argument("--stop-step", type=int, help="stop at this step of the recipe's schedule "
                   "(the head of a run stopped early; a checkpoint of the same run continues)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_build_mlm)
