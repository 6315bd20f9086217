"""Rule recognizers for the identifiers a data steward expects (HIPAA Safe Harbor's list).

spaCy's NER and Presidio find names, places and some contact details; the identifiers of
clinical and administrative records - record numbers after "MRN", phone numbers in every
national and international format, ages, street addresses, ZIP codes - need rules. Each
recognizer here is registered like the built-in ones of Presidio's registry (a name, the
categories it reports, ``find(text) -> [Entity]``), one line of the table
:data:`~dptext.detect.recognizers.builtin.RECOGNIZERS`:

- :class:`PatternRecognizer`: a regular expression, optionally only where a *context word*
  stands shortly before the match ("MRN", "acct #", "plate"), optionally a validator
  (checksums, address ranges);
- :class:`PhoneRecognizer`: the ``phonenumbers`` library (Google's libphonenumber, as Presidio
  uses), which reads national and E.164 formats of every region;
- :class:`ContextIdRecognizer`: an identifier-shaped token (two or more digits) right after a
  context word of its category, the nearest context winning ("Record number 6578712",
  "health plan member ID is HPX-77-40921");
- :class:`DenyListRecognizer`: the user's names of staff, patients and places, case-folded,
  each word of a several-word entry found alone too ("Lee" of "Anna Lee").

:func:`builtin_recognizers` is the default set (the table built) and :func:`supported_categories`
what it reports; :func:`parse_pattern` reads the command line's ``--pattern
NAME[@ctx1,ctx2]=REGEX``; :func:`read_word_list` reads a deny or allow list file.

The package: ``atoms`` (regular-expression pieces and the context-word search; a leaf),
``base`` (the interface, patterns, the user's patterns), ``phone``, ``ids``, ``names``,
``deny``, ``builtin`` (the table).
"""

from dptext.detect.places import PlaceGazetteerRecognizer
from dptext.detect.recognizers.base import PatternRecognizer, Recognizer, parse_pattern
from dptext.detect.recognizers.builtin import (
    RECOGNIZERS,
    builtin_recognizers,
    register,
    supported_categories,
    unregister,
)
from dptext.detect.recognizers.deny import DenyListRecognizer, read_word_list
from dptext.detect.recognizers.ids import ContextIdRecognizer
from dptext.detect.recognizers.names import NameContextRecognizer
from dptext.detect.recognizers.phone import PhoneRecognizer, SpelledDigitsRecognizer

__all__ = ["RECOGNIZERS", "ContextIdRecognizer", "DenyListRecognizer", "NameContextRecognizer",
           "PatternRecognizer", "PhoneRecognizer", "PlaceGazetteerRecognizer", "Recognizer",
           "SpelledDigitsRecognizer", "builtin_recognizers", "parse_pattern", "read_word_list",
           "register", "supported_categories", "unregister"]
