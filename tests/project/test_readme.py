"""Every `dptext` command of README.md runs (exit 0) on small inputs: a README example can never
break again. The commands are parsed out of the README's ```bash blocks; the files they name
(reviews.jsonl, notes.csv, notes.txt, public.txt, ...) are written here first.

The blocks are independent (each in its own directory, with its own default ledger), and a
block's commands are single-threaded processes that the test only waits for: the blocks this
session runs are started two at a time (the second core of a 2-core machine is otherwise idle
while the test waits), each test then waits for its own block and asserts on it. A test run
alone starts only its own block."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from readme_blocks import readme_blocks, readme_commands

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

NOTES = [
    ("p1", "Alice Smith, 54, was seen by Dr. Jones on 2024-03-02 for chest pain."),
    ("p2", "Bob Lee called from 555-123-4567 about his insulin dose."),
    ("p1", "Alice returned; the pain in her left arm had eased."),
]


def write_inputs(d: Path) -> None:
    with open(d / "reviews.jsonl", "w", encoding="utf-8") as f:
        for user, text in NOTES:
            f.write(json.dumps({"author": user, "text": text, "label": "pos"}) + "\n")
    with open(d / "notes.csv", "w", encoding="utf-8", newline="") as f:
        f.write("patient,author,body,note\n")
        for i, (user, text) in enumerate(NOTES):
            f.write(f'P{i},{user},"{text}","{text}"\n')
    (d / "notes.txt").write_text("\n".join(t for _, t in NOTES) + "\n", encoding="utf-8")
    (d / "public.txt").write_text("The weather was fine and the trains ran on time.\n"
                                  "A new library opened in the town centre.\n",
                                  encoding="utf-8")
    with open(d / "notes.jsonl", "w", encoding="utf-8") as f:
        for user, text in NOTES:
            f.write(json.dumps({"author": user, "text": text}) + "\n")


def test_readme_has_commands():
    commands = readme_commands()
    assert len(commands) >= 8
    assert any("sanitize" in c for c in commands)


def run_block(block: list[str], d: Path) -> list[tuple[str, int, str]]:
    """Run ``block``'s commands in order in ``d`` (its inputs written first); (command, exit
    status, stderr) of each command run, stopping at the first that fails."""
    write_inputs(d)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "DPTEXT_LEDGER": str(d / "default-ledger.sqlite")}
    done = []
    for command in block:
        result = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=d,
                                env=env, capture_output=True, text=True, timeout=600)
        done.append((command, result.returncode, result.stderr))
        if result.returncode != 0:
            break
    return done


@pytest.fixture(scope="module")
def block_runs(request, tmp_path_factory):
    """block index -> Future of :func:`run_block`: the blocks of the tests selected in this
    session, started two at a time in the order of the tests on the first use."""
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="readme-block")
    futures: dict[int, Future] = {}

    def start(index: int) -> Future:
        if not futures:  # first use: every selected block of this module, in test order
            blocks = readme_blocks()
            selected = [item.callspec.params["block"] for item in request.session.items
                        if getattr(item, "originalname", None) == "test_readme_commands_run"
                        and item.module is request.module]
            for b in selected + [blocks[index]]:
                i = blocks.index(b)
                if i not in futures:
                    futures[i] = pool.submit(run_block, b, tmp_path_factory.mktemp(f"block{i}"))
        return futures[index]

    yield start
    for f in futures.values():
        f.cancel()  # a block not started yet (its test deselected or failed before) stays unrun
    pool.shutdown(wait=True)


@pytest.mark.parametrize("block", readme_blocks(), ids=lambda b: b[0][:40])
def test_readme_commands_run(block, block_runs):
    done = block_runs(readme_blocks().index(block)).result()
    for command, code, stderr in done:
        assert code == 0, f"{command}\n{stderr[-3000:]}"
    assert [command for command, _, _ in done] == block  # every command of the block ran
