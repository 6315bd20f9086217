"""The bytes of a job on disk: the shard being written, its commit into the work directory
(fsync, rename, the shard's rejects, charges and paid draws), the final output assembled from
the committed parts (and Parquet's fixed row groups), and the renames that put every file of a
finished job in place. The manifest itself is :mod:`dptext.corpus.workdir`'s; what goes into
it, the driver's."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from dptext.corpus.draws import book_bytes
from dptext.corpus.job import ResumableError
from dptext.corpus.paths import OutputPlan, temp_beside, write_durably
from dptext.io import file_mode, fsync_dir, staged_write

PART_SUFFIX = {"jsonl": ".jsonl", "csv": ".csv", "txt": ".txt", "parquet": ".parquet"}


class Shard:
    """The shard being written: its part file (open), rejects, charges and unit totals."""

    def __init__(self, index: int, first_batch: int, directory: Path | None, fmt: str,
                 schema=None) -> None:
        self.index, self.first_batch, self.fmt = index, first_batch, fmt
        self.records = self.rejected = self.withheld = self.batches = 0
        self.rejects: list[bytes] = []
        self.charges: list[int] = []
        self.paid: list[bytes] = []  # --consistent unit: the draw ids its records paid for
        self.units: dict[str, list[float]] = {}
        self.rows: list[dict] = []  # Parquet only
        self.schema = schema
        self.started = time.monotonic()
        self.hash = hashlib.sha256()
        self.path = None if directory is None else directory / f"part-{index:05d}.tmp"
        self.f = None if self.path is None or fmt == "parquet" else open(self.path, "wb")

    def write(self, data: bytes) -> None:
        self.f.write(data)
        self.hash.update(data)

    def discard(self) -> None:
        if self.f is not None:
            self.f.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def seal(shard: Shard, directory: Path, out_fmt: str, release: str | None) -> dict:
    """Make the shard's part, rejects and charges durable in ``directory``; its manifest entry.
    (The manifest's write, which follows, fsyncs the directory: the renames persist with it.)"""
    name = f"part-{shard.index:05d}{PART_SUFFIX[out_fmt]}"
    if out_fmt == "parquet":
        data = parquet_bytes(shard.rows, shard.schema)
        with staged_write(shard.path) as f:
            f.write(data)
        shard.hash.update(data)
    else:
        shard.f.flush()
        os.fsync(shard.f.fileno())
        shard.f.close()
    os.replace(shard.path, directory / name)
    entry = {"index": shard.index, "first_batch": shard.first_batch,
             "batches": shard.batches, "part": name, "sha256": shard.hash.hexdigest(),
             "records_out": shard.records, "rejected": shard.rejected,
             "withheld": shard.withheld, "rejects": None, "charges": None,
             "release": release, "draws": None}
    if shard.rejects:
        entry["rejects"] = f"rejects-{shard.index:05d}.jsonl"
        write_durably(directory / entry["rejects"], b"".join(shard.rejects))
    if shard.charges:
        entry["charges"] = f"charges-{shard.index:05d}.json"
        write_durably(directory / entry["charges"], json.dumps(shard.charges).encode())
    if shard.paid:  # committed with the manifest entry, as the shard's charges are
        data = book_bytes(shard.paid)
        entry["draws"] = f"draws-{shard.index:05d}.bin"
        entry["draws_sha256"] = hashlib.sha256(data).hexdigest()
        write_durably(directory / entry["draws"], data)
    return entry


def read_paid(directory: Path, entry: dict) -> bytes:
    """The draw ids a committed shard paid for (:func:`seal`), checked against the manifest: a
    book that is missing, short or changed stops the resume (read as fewer draws, it would
    release a draw unpaid)."""
    if not entry.get("draws"):
        return b""
    path = directory / entry["draws"]
    try:
        data = path.read_bytes()
    except OSError as err:
        data = None
        why = err.strerror or str(err)
    if data is not None:
        if hashlib.sha256(data).hexdigest() == entry.get("draws_sha256"):
            return data
        why = "it does not match its checksum in the manifest"
    raise ResumableError(f"{path} (the book of shared draws its shard paid for) cannot be "
                         f"read: {why}; remove {directory} and start again")


def parquet_bytes(rows: list[dict], schema) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf)
    return buf.getvalue()


def write_tmp(path: Path, data: bytes) -> None:
    """Write a file that a later rename puts in place (fsynced, a plain file's mode)."""
    with staged_write(path) as f:
        f.write(data)


def assemble(directory: Path, shards: list[dict], header: bytes, out_fmt: str, schema,
             target: Path) -> str:
    """Concatenate the committed parts into ``target`` (checked against their SHA-256); the
    SHA-256 of ``target``."""
    h = hashlib.sha256()
    if out_fmt == "parquet":
        _assemble_parquet(directory, shards, schema, target, h)
        return h.hexdigest()
    with staged_write(target) as out:
        out.write(header)
        h.update(header)
        for shard in shards:
            ph = hashlib.sha256()
            with open(directory / shard["part"], "rb") as f:
                while chunk := f.read(1 << 20):
                    ph.update(chunk)
                    h.update(chunk)
                    out.write(chunk)
            if ph.hexdigest() != shard["sha256"]:
                raise ResumableError(f"{directory / shard['part']} does not match its "
                                     f"checksum in the manifest; remove {directory} and "
                                     f"start again")
    return h.hexdigest()


def _assemble_parquet(directory: Path, shards: list[dict], schema, target: Path, h) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    pending: list = []
    size = 0
    group = 65536  # fixed row groups: the bytes do not depend on the shard boundaries
    for shard in shards:
        t = pq.read_table(directory / shard["part"])
        if writer is None:
            writer = pq.ParquetWriter(str(target), schema or t.schema)
        pending.append(t)
        size += t.num_rows
        while size >= group:
            table = pa.concat_tables(pending)
            writer.write_table(table.slice(0, group), row_group_size=group)
            rest = table.slice(group)
            pending, size = [rest], rest.num_rows
    if writer is None:
        writer = pq.ParquetWriter(str(target), schema)
    if size:
        writer.write_table(pa.concat_tables(pending), row_group_size=group)
    writer.close()
    with open(target, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
        os.fsync(f.fileno())
    os.chmod(target, file_mode())


def stage(plan: OutputPlan, directory: Path, shards: list[dict], header: bytes, out_fmt: str,
          schema, summarize: Callable[[], dict],
          provenance: Callable[[dict, str | None], dict]) -> tuple[list[list[str]], dict]:
    """Write every final file beside its target (output or output directory, rejects, report,
    provenance), fsynced; the renames that put them in place (:func:`apply_commit`) and the
    summary. Nothing is left behind when this fails."""
    steps: list[list[str]] = []
    made: list[Path] = []
    try:
        if plan.output_dir:
            tmp_dir = temp_beside(plan.output)
            shutil.rmtree(tmp_dir, ignore_errors=True)
            tmp_dir.mkdir()
            made.append(tmp_dir)
            for shard in shards:
                if header:  # every CSV part stands alone, with the header
                    write_tmp(tmp_dir / shard["part"],
                              header + (directory / shard["part"]).read_bytes())
                else:
                    os.link(directory / shard["part"], tmp_dir / shard["part"])
            output_sha = None
        else:
            tmp_out = temp_beside(plan.output)
            made.append(tmp_out)
            output_sha = assemble(directory, shards, header, out_fmt, schema, tmp_out)
        rejects = [directory / s["rejects"] for s in shards if s["rejects"]]
        if rejects:
            tmp_rej = temp_beside(plan.rejects)
            made.append(tmp_rej)
            with staged_write(tmp_rej) as out:
                for p in rejects:
                    out.write(p.read_bytes())
            steps.append(["rename", str(tmp_rej), str(plan.rejects)])
        elif plan.rejects.is_file():
            steps.append(["delete", str(plan.rejects)])  # of an earlier run: now stale
        summary = summarize()
        tmp_rep = temp_beside(plan.report)
        made.append(tmp_rep)
        write_tmp(tmp_rep, (json.dumps(summary, indent=2) + "\n").encode())
        steps.append(["rename", str(tmp_rep), str(plan.report)])
        prov = (json.dumps(provenance(summary, output_sha), indent=2) + "\n").encode()
        if plan.output_dir:
            write_tmp(tmp_dir / "_provenance.json", prov)
            steps.append(["swapdir", str(tmp_dir), str(plan.output)])
        else:
            tmp_prov = temp_beside(plan.provenance)
            made.append(tmp_prov)
            write_tmp(tmp_prov, prov)
            steps.append(["rename", str(tmp_prov), str(plan.provenance)])
            steps.append(["rename", str(tmp_out), str(plan.output)])
        for d in {str(Path(s[-1]).parent) for s in steps}:
            fsync_dir(Path(d))
    except BaseException:
        for p in made:
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
        raise
    return steps, summary


def apply_commit(steps: list[list[str]]) -> None:
    """Rename every file into place (idempotent: a rerun after a crash finishes it)."""
    for step in steps:
        kind, *paths = step
        if kind == "rename":
            src, dst = map(Path, paths)
            if src.exists():
                os.replace(src, dst)
        elif kind == "delete":
            Path(paths[0]).unlink(missing_ok=True)
        elif kind == "swapdir":
            src, dst = map(Path, paths)
            if src.exists():
                old = dst.parent / f".{dst.name}.dptext-{os.getpid()}.old"
                if dst.exists():
                    os.replace(dst, old)
                os.replace(src, dst)
                shutil.rmtree(old, ignore_errors=True)
    for d in {str(Path(s[-1]).parent) for s in steps}:
        fsync_dir(Path(d))
