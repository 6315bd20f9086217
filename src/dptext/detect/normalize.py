"""The view of a text that detection reads: obfuscation inside identifiers undone, with every
position mapped back to the original text.

An identifier can be hidden from rules, NER and word lists by characters a reader does not
see or does not tell apart: zero-width characters and the soft hyphen inside a name
("Sm\\u200bith"), letters of another script that look like Latin ones ("\\u0410nna" with a
Cyrillic A), fullwidth or mathematical letters and digits ("\\uff15\\uff15\\uff155"), digits of
another script, overlaid combining marks. :func:`fold` makes the view (in the spirit of
Unicode TR39's skeleton, on the standard library's :mod:`unicodedata`):

1. default-ignorable code points are dropped (format characters - zero-width space, joiners,
   word joiner, BOM, soft hyphen, bidirectional marks - variation selectors, Hangul fillers);
2. each character with its marks (an invisible character between them is dropped, not a
   break) is put in NFKC (fullwidth, mathematical, circled letters and digits, ligatures,
   non-breaking and other spaces become their plain forms); a non-spacing or enclosing mark
   of any block that composes with no letter and follows a Latin, Greek or Cyrillic one in
   the view (an overlay or strike-through on a letter) is dropped;
3. every decimal digit of another script is its ASCII digit;
4. a word (a run of letters and digits) that mixes Latin letters with look-alike letters of
   another script, or whose letters are all look-alikes of Latin ones (Cyrillic
   "\\u0420\\u0430\\u0440\\u0430" reads "Papa"), has them folded to Latin by the table below (the
   common Cyrillic, Greek and Armenian confusables of TR39's list that map to one Latin
   letter); a word of another script with letters that look like no Latin one (Cyrillic
   "\\u041f\\u0435\\u0442\\u0440\\u043e\\u0432") is left as written;
5. in a run of digits and separators (no letter beside it) with two digits or more, at most
   one of the letters O/o and l/I for two digits read 0 and 1 ("555-l23-4567", "ext. l92";
   "O2" and "IO2" stay, and so does an ICD-10-CM code: "I48.91", "O80").

:class:`Folded` keeps, for each character of the view, the range of the original it came
from: a span found in the view maps back to the original (:meth:`Folded.to_original`, which
takes the dropped characters at its edges too), so the whole obfuscated span is replaced and
the text outside it is released exactly as it was. An ASCII text is its own view (nothing to
fold; no copy made).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cache

# Common confusables of Unicode TR39 (confusables.txt) that map to one Latin letter.
_CONFUSABLES = {
    # Cyrillic capitals
    "\u0410": "A", "\u0412": "B", "\u0415": "E", "\u041a": "K", "\u041c": "M", "\u041d": "H",
    "\u041e": "O", "\u0420": "P", "\u0421": "C", "\u0422": "T", "\u0425": "X", "\u0423": "Y",
    "\u0405": "S", "\u0406": "I", "\u0408": "J", "\u04ae": "Y", "\u04c0": "I", "\u051a": "Q",
    "\u051c": "W", "\u04bb": "h", "\u0417": "3",
    # Cyrillic small letters
    "\u0430": "a", "\u0435": "e", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0443": "y",
    "\u0445": "x", "\u0455": "s", "\u0456": "i", "\u0458": "j", "\u0501": "d", "\u051b": "q",
    "\u051d": "w", "\u04cf": "l", "\u04af": "y", "\u0457": "i", "\u0450": "e", "\u0451": "e",
    # Greek capitals
    "\u0391": "A", "\u0392": "B", "\u0395": "E", "\u0396": "Z", "\u0397": "H", "\u0399": "I",
    "\u039a": "K", "\u039c": "M", "\u039d": "N", "\u039f": "O", "\u03a1": "P", "\u03a4": "T",
    "\u03a5": "Y", "\u03a7": "X", "\u03f9": "C", "\u037f": "J",
    # Greek small letters
    "\u03bf": "o", "\u03b1": "a", "\u03bd": "v", "\u03b9": "i", "\u03c1": "p", "\u03c5": "u",
    "\u03b3": "y", "\u03f2": "c", "\u03f3": "j", "\u03ba": "k",
    # Armenian small letters
    "\u0585": "o", "\u0578": "n", "\u057d": "u", "\u0570": "h", "\u0566": "q", "\u0581": "g",
    # Latin letters that read as ASCII ones
    "\u0131": "i", "\u0251": "a", "\u0261": "g", "\u0269": "i", "\u026a": "i",
}
# the few default-ignorable code points that are not format characters (Cf)
_IGNORABLE_EXTRA = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0")
# format characters that are not default-ignorable (prepended concatenation marks, the
# interlinear annotation characters)
_NOT_IGNORABLE = frozenset("\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\u070f\u0890\u0891"
                           "\u08e2\ufff9\ufffa\ufffb")
_LETTER_IN_NUMBER = re.compile(r"[0-9](?:(?<=[OolI][0-9])|(?=[OolI]))")  # starts at a digit
_DIGIT_LETTERS = {"O": "0", "o": "0", "l": "1", "I": "1"}
_NUMERIC_RUN = re.compile(r"(?<![^\W\d_])[0-9OolI][0-9OolI().+/-]*[0-9OolI](?![^\W\d_])")


def is_ignorable(c: str) -> bool:
    """A default-ignorable code point (Unicode's Default_Ignorable_Code_Point, without the
    unassigned ones): zero-width characters, joiners, soft hyphen, BOM, bidirectional marks,
    variation selectors, ..."""
    if c in _IGNORABLE_EXTRA:
        return True
    o = ord(c)
    if 0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF or 0x180B <= o <= 0x180F:
        return True
    return unicodedata.category(c) == "Cf" and c not in _NOT_IGNORABLE \
        and not 0x13430 <= o <= 0x1343F and not 0x110BD <= o <= 0x110CD


@cache
def _suspect() -> frozenset[str]:
    """A character the view drops or folds in a text already in NFKC: a default-ignorable
    code point, a look-alike of the table, a non-spacing or enclosing mark, a decimal digit
    other than 0-9 (a scan of the planes that hold them, once
    per process, about 0.05 s)."""
    chars = []
    for o in [*range(0x80, 0x20000), *range(0xE0000, 0xE1000)]:
        c = chr(o)
        cat = unicodedata.category(c)
        # every non-spacing or enclosing mark: any of them may follow a Latin letter (an
        # overlay the view drops), whatever its block
        if cat in ("Nd", "Mn", "Me") or c in _CONFUSABLES or is_ignorable(c):
            chars.append(c)
    return frozenset(chars)


def _is_mark(c: str) -> bool:
    """A mark (non-spacing, spacing or enclosing; variation selectors are non-spacing marks):
    it belongs to the character before it."""
    return unicodedata.category(c)[0] == "M"


def _latin(c: str) -> bool:
    o = ord(c)
    return o < 0x250 or 0x1E00 <= o <= 0x1EFF


@dataclass
class Folded:
    """A text and its view (module docstring): ``starts[i]``, ``ends[i]`` - the range of
    ``original`` that character ``i`` of ``text`` came from."""

    original: str
    text: str
    starts: list[int] = field(default_factory=list, repr=False)
    ends: list[int] = field(default_factory=list, repr=False)

    @property
    def identity(self) -> bool:
        """Whether the view is the original, character for character."""
        return not self.starts and len(self.text) == len(self.original)

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """The range of the original that view range ``[start, end)`` came from, with the
        characters dropped from the view at its edges (a zero-width character or a mark
        glued to the identifier, never a space) taken in too."""
        if self.identity:
            return start, end
        n = len(self.text)
        if end <= start:
            at = self.starts[start] if start < n else len(self.original)
            return at, at
        a, b = self.starts[start], self.ends[end - 1]
        # dropped characters glued to the span (between it and its neighbours in the view)
        lo = self.ends[start - 1] if start > 0 else 0
        hi = self.starts[end] if end < n else len(self.original)
        while a > lo and not self.original[a - 1].isspace():
            a -= 1
        while b < hi and not self.original[b].isspace():
            b += 1
        return a, b

    def to_view(self, start: int, end: int) -> tuple[int, int]:
        """The view range of original range ``[start, end)`` (the view characters that came
        from inside it)."""
        if self.identity:
            return start, end
        return bisect_left(self.starts, start), bisect_left(self.starts, end)


def fold(text: str) -> Folded:
    """The view of ``text`` (module docstring)."""
    if text.isascii() or (unicodedata.is_normalized("NFKC", text)
                          and _suspect().isdisjoint(text)):
        # nothing to drop, normalize or fold (ASCII, accented names, "\u00b0"): step 5 only,
        # which replaces one character by one
        view = _NUMERIC_RUN.sub(_digit_letters, text) if _LETTER_IN_NUMBER.search(text) \
            else text
        if view == text:
            return Folded(text, text)
        return Folded(text, view, list(range(len(text))), list(range(1, len(text) + 1)))
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i, n = 0, len(text)
    base_latin = False
    while i < n:
        c = text[i]
        if is_ignorable(c):
            i += 1
            continue
        # the character with its marks, and the invisible characters between them (a zero-width
        # space between a letter and its overlay is inside the letter, not a word break)
        j = k = i + 1
        while k < n:
            if _is_mark(text[k]):
                j = k = k + 1
            elif is_ignorable(text[k]):
                k += 1
            else:
                break
        group = text[i:j]
        if j - i > 1:
            group = group[0] + "".join(c for c in group[1:] if not is_ignorable(c))
        norm = unicodedata.normalize("NFKC", group) if not group.isascii() else group
        for ch in norm:
            if unicodedata.category(ch) in ("Mn", "Me"):
                if base_latin:  # the view's character before it (one group's or another's)
                    continue  # a mark that composed with nothing: an overlay on a letter
            elif not _is_mark(ch):
                base_latin = _latin(ch) or 0x370 <= ord(ch) < 0x530
            if not ch.isascii() and unicodedata.category(ch) == "Nd":
                ch = str(unicodedata.decimal(ch))
            out.append(ch)
            starts.append(i)
            ends.append(j)
        i = j
    view = "".join(out)
    view = _fold_words(view)
    view = _NUMERIC_RUN.sub(_digit_letters, view)
    if view == text:
        return Folded(text, text)
    return Folded(text, view, starts, ends)


_WORD = re.compile(r"[^\W_]+")


def _fold_words(view: str) -> str:
    """Step 4 of the module docstring (lengths unchanged: every fold is one character)."""
    if view.isascii():
        return view
    parts, pos = [], 0
    for m in _WORD.finditer(view):
        w = m.group()
        if w.isascii():
            continue
        letters = [c for c in w if c.isalpha()]
        mixed = any(_latin(c) for c in letters)
        foldable = all(_latin(c) or c in _CONFUSABLES for c in letters)
        if mixed or foldable:
            folded = "".join(_CONFUSABLES.get(c, c) for c in w)
            if folded != w:
                parts.append(view[pos:m.start()])
                parts.append(folded)
                pos = m.end()
    if not parts:
        return view
    parts.append(view[pos:])
    return "".join(parts)


_ICD_SHAPE = re.compile(r"[IO]\d\d(?:\.\d{1,4})?")


def _digit_letters(m: re.Match) -> str:
    run = m.group()
    if _ICD_SHAPE.fullmatch(run):  # "I48.91", "O80": a diagnosis code, not an obfuscated number
        from dptext.detect.clinical import icd10cm_codes

        if run in icd10cm_codes():
            return run
    digits = sum(c.isdigit() for c in run)
    letters = sum(c in _DIGIT_LETTERS for c in run)
    if digits < 2 or letters == 0 or letters * 2 > digits:
        return run
    return "".join(_DIGIT_LETTERS.get(c, c) for c in run)


def fold_text(text: str) -> str:
    """The view alone (:func:`fold`)."""
    return fold(text).text
