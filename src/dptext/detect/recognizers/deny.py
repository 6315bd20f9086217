"""The user's deny list (:class:`DenyListRecognizer`) and the word-list files (deny and allow
lists, :func:`read_word_list`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from dptext.detect.entities import Entity
from dptext.detect.recognizers.base import Recognizer
from dptext.errors import DPTextError


@dataclass
class DenyListRecognizer(Recognizer):
    """Every entry of a deny list (case-folded, on word boundaries or where lower case turns
    upper, :meth:`find`); each word of an entry of several words, three letters or more, is
    found alone too."""

    entries: tuple[str, ...] = ()
    _re: re.Pattern | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        terms = set()
        for entry in self.entries:
            entry = " ".join(entry.split())
            if not entry:
                continue
            terms.add(entry)
            words = re.findall(r"[^\W\d_][\w'-]*", entry)
            if len(words) > 1:
                terms.update(w for w in words if len(w) >= 3)
        alts = "|".join(re.escape(t).replace(r"\ ", r"\s+")
                        for t in sorted(terms, key=len, reverse=True))
        self._re = re.compile(rf"(?i)(?:{alts})") if alts else None

    def find(self, text: str) -> list[Entity]:
        """Each entry on word boundaries, or where the case changes from lower to upper: a
        name glued to a word ("seenThornbury", in the view of "seen\u200bThornbury" with a
        zero-width space) is found too."""
        if self._re is None:
            return []
        out, pos = [], 0
        while (m := self._re.search(text, pos)) is not None:
            a = m.start()
            # the longest entry starting here that ends on an edge: a shorter one where a
            # longer ends inside a word ("John" of "John Smith" in "John Smithers")
            while m is not None and not _edge(text, m.end()):
                m = self._re.match(text, a, m.end() - 1) if m.end() - 1 > a else None
            if m is not None and _edge(text, a):
                out.append(self._entity(text, a, m.end()))
                pos = m.end()
            else:
                pos = a + 1
        return out


def _edge(text: str, at: int) -> bool:
    """Whether ``at`` is a word boundary of ``text``, or a change from a lower-case letter to
    an upper-case one."""
    if at == 0 or at == len(text):
        return True
    before, after = text[at - 1], text[at]
    return not _is_word_char(before) or not _is_word_char(after) or (
        before.islower() and after.isupper())


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def read_word_list(path: str | Path, what: str) -> tuple[str, ...]:
    """One entry per line (blank lines and lines starting with # skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DPTextError(f"{what} {path}: no such file") from None
    except UnicodeDecodeError:
        raise DPTextError(f"{what} {path}: not UTF-8 text") from None
    out = tuple(s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#"))
    if not out:
        raise DPTextError(f"{what} {path}: the file has no entries")
    return out
