"""The `dptext` commands of README.md's ```bash blocks: test_readme runs them, other tests
read them."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_blocks() -> list[list[str]]:
    """The shell lines of each ```bash block of the README that run dptext (comments
    stripped); a block's lines run in order in one directory (a later line may use what an
    earlier one wrote, e.g. the ledger)."""
    text = README.read_text(encoding="utf-8")
    blocks = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        lines = []
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if re.search(r"(^|\|\s*)dptext\s", line):
                lines.append(line)
        if lines:
            blocks.append(lines)
    return blocks


def readme_commands() -> list[str]:
    return [line for block in readme_blocks() for line in block]
