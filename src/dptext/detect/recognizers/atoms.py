"""The leaf atoms of the rule recognizers: regular-expression pieces (months, states, name
words, titles, e-mail separators) and the context-word search every recognizer uses. Imports no
other module of the package."""

from __future__ import annotations

import re
from collections.abc import Iterable

from dptext.detect.vocabulary import ID_CONTEXTS, SALUTATIONS, TITLES

_CONTEXT_WINDOW = 40  # characters before a match searched for a context word
_CONTEXT_WORDS = frozenset(w for words in ID_CONTEXTS.values() for w in words)


def _context_re(words: Iterable[str]) -> re.Pattern:
    alts = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len,
                                                                         reverse=True))
    return re.compile(rf"(?i)(?<![A-Za-z])(?:{alts})(?![a-z])")


_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_WEEKDAY = r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day"
_ORDINAL_WORDS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|"
                  "twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|"
                  "nineteenth|twentieth|twenty-\\w+|thirtieth|thirty-first")
_STREET_TYPES = (r"(?:St|Street|Rd|Road|Ave|Avenue|Blvd|Boulevard|Dr|Drive|Ln|Lane|Way|Ct|"
                 r"Court|Pl|Place|Ter|Terrace|Pkwy|Parkway|Hwy|Highway|Cir|Circle|Sq|Square|"
                 r"Trl|Trail|Loop|Row)")
_STATE_NAMES = ("(?:Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|"
                "Florida|Georgia|Hawaii|Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|"
                "Maine|Maryland|Massachusetts|Michigan|Minnesota|Mississippi|Missouri|Montana|"
                "Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|New York|North Carolina|"
                "North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|South Carolina|"
                "South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|West Virginia|"
                "Wisconsin|Wyoming)")
_US_STATES = ("AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE "
              "NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC PR")
# upper and lower case letters of Latin script, accents included ("Salómonsson", "Øster")
_UP = "".join(c for c in map(chr, range(0x41, 0x250)) if c.isalpha() and c.isupper())
_LO = "".join(c for c in map(chr, range(0x61, 0x250)) if c.isalpha() and c.islower())
_NAME_WORD = rf"[{_UP}][{_LO}]+(?:[{_UP}][{_LO}]+)?(?:[-'][{_UP}][{_LO}]+)?"  # McDonald, O'Neil
_CAPS_WORD = rf"[{_UP}][{_UP}{_LO}]+(?:[-'][{_UP}][{_UP}{_LO}]+)?"  # "Bright" or "BRIGHT"
# titles and salutations before a name (split_title keeps them in a name's replacement)
_SALUTATION = "(?:" + "|".join(SALUTATIONS) + r")[.:]?"
_INITIALS = r"(?:[A-Z]\.[ \t]*){1,2}"
# surname particles ("van der Torre", "de la Cruz", "bin Said")
_PARTICLES = (r"(?:(?:van|von|der|den|de|del|della|di|da|du|la|le|bin|ibn|al|el|ten|ter|dos|"
              r"das|do)[ \t]+){0,3}")
_NAME_PART = rf"{_PARTICLES}{_NAME_WORD}"
# one to three name words after a title, initials allowed ("J. Lopez", "Ana M. Ruiz"), on
# one line; a CAPITALS title takes one CAPITALS name ("DR. SMITH"; a second word in
# capitals may be the sentence going on: "DR. OKAFOR IN THE ED")
_TITLED_NAME = (
    rf"\b(?:{_SALUTATION}[ \t]+)?(?:"
    rf"(?:{'|'.join(TITLES + tuple(t.lower() for t in TITLES))})\.?[ \t]+(?:{_INITIALS})?"
    rf"{_NAME_PART}"
    rf"(?:[ \t]+(?:{_INITIALS})?{_NAME_PART}){{0,2}}|"
    rf"(?:{'|'.join(t.upper() for t in TITLES if len(t) > 1)})\.?[ \t]+(?:{_INITIALS})?"
    rf"[{_UP}]{{2,}}(?:[-'][{_UP}]{{2,}})?)(?!\w)")  # "Dr. Thorne's": the name, not the 's
# "Dear Ana Ruiz," - a salutation before a name without a title; the first word must not be
# an ordinary word ("Dear Colleague", "Dear Sir")
_SALUTED_NAME = (rf"\b(?:{_SALUTATION})[ \t]+(?:{_INITIALS})?{_NAME_WORD}"
                 rf"(?:[ \t]+(?:{_INITIALS})?{_NAME_PART}){{0,2}}(?=[ \t]*[,:\n!])")
_TLDS = ("com|org|net|edu|gov|io|us|uk|de|ca|au|fr|es|nl|ch|se|dk|fi|ie|nz|jp|br|mx|eu|biz|"
         "care|clinic|hospital|app|dev|online|site|info|health|example")
_DOT = r"(?:\.|[ \t]*[(\[{<][ \t]*dot[ \t]*[)\]}>][ \t]*|[ \t]+dot[ \t]+)"
_AT = r"(?:@|[ \t]*[(\[{<][ \t]*at[ \t]*[)\]}>][ \t]*|[ \t]+at[ \t]+)"
_CREDENTIALS = r"(?:M\.?D|D\.?O|R\.?N|N\.?P|P\.?A|Ph\.?D|LPN|CNA|APRN|PharmD|MSW|LCSW|PT|OT)"
