"""Entity categories: spaCy labels, Presidio labels mapped onto them, and named groups."""

from __future__ import annotations

from dptext.errors import DPTextError

SPACY_CATEGORIES = ("PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT",
                    "WORK_OF_ART", "LAW", "LANGUAGE", "DATE", "TIME", "PERCENT", "MONEY",
                    "QUANTITY", "ORDINAL", "CARDINAL")
# Presidio's names for what spaCy calls the same thing; the others keep their Presidio name.
PRESIDIO_TO_CATEGORY = {"ORGANIZATION": "ORG", "LOCATION": "GPE", "DATE_TIME": "DATE",
                        "NRP": "NORP"}
PII_CATEGORIES = ("PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE",
                  "IP_ADDRESS", "US_SSN", "US_PASSPORT", "US_DRIVER_LICENSE", "URL")
# Named groups (paper Table I: PII, GPE/location, organization, miscellaneous, all).
CATEGORY_GROUPS = {
    "PII": PII_CATEGORIES,
    "LOCATION": ("GPE", "LOC", "FAC"),
    "MISC": ("NORP", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"),
    "TIME": ("DATE", "TIME"),
    "NUMBERS": ("PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"),
    "CONTACT": ("EMAIL_ADDRESS", "PHONE_NUMBER", "URL"),
}
# Short names accepted on the command line (``--entities PERSON,EMAIL,PHONE``).
ALIASES = {"EMAIL": "EMAIL_ADDRESS", "PHONE": "PHONE_NUMBER", "IP": "IP_ADDRESS",
           "SSN": "US_SSN", "IBAN": "IBAN_CODE", "PASSPORT": "US_PASSPORT",
           "DRIVER_LICENSE": "US_DRIVER_LICENSE"}
DEFAULT_CATEGORIES = ("PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "DATE", "EVENT",
                      "PRODUCT", "WORK_OF_ART", "LAW") + PII_CATEGORIES[1:]
# Categories only the rule recognizers (dptext.detect.recognizers) report.
ID_CATEGORIES = ("MEDICAL_RECORD", "ACCOUNT_NUMBER", "HEALTH_PLAN", "LICENSE_NUMBER",
                 "VEHICLE_ID", "DEVICE_ID", "ID_NUMBER")
RULE_ONLY = ("AGE", "STREET_ADDRESS", "ZIP_CODE", "DENY_LIST") + ID_CATEGORIES
# The residual net's category (dptext.detect.residual): tokens outside every span that are not
# ordinary words.
RESIDUAL = "RESIDUAL"
# HIPAA Safe Harbor's identifiers as categories (names, places smaller than a state, dates and
# ages, contact details, numbers of every kind), plus organisations (hospitals, employers):
# what spaCy and the rule recognizers find (Presidio's passport, driver licence and IBAN
# recognizers add US_PASSPORT, US_DRIVER_LICENSE, IBAN_CODE: ask for them with --detector both).
PHI_CATEGORIES = ("PERSON", "GPE", "LOC", "FAC", "ORG", "STREET_ADDRESS", "ZIP_CODE", "DATE",
                  "AGE", "PHONE_NUMBER", "EMAIL_ADDRESS", "URL", "IP_ADDRESS", "US_SSN",
                  "CREDIT_CARD", "DENY_LIST") + ID_CATEGORIES
CATEGORY_GROUPS["IDS"] = ID_CATEGORIES + ("US_SSN", "US_PASSPORT", "US_DRIVER_LICENSE",
                                          "CREDIT_CARD", "IBAN_CODE")
CATEGORY_GROUPS["PHI"] = PHI_CATEGORIES
ALIASES.update({"MRN": "MEDICAL_RECORD", "ZIP": "ZIP_CODE", "STREET": "STREET_ADDRESS",
                "ACCOUNT": "ACCOUNT_NUMBER", "LICENSE": "LICENSE_NUMBER",
                "VEHICLE": "VEHICLE_ID", "DEVICE": "DEVICE_ID", "ID": "ID_NUMBER"})
KNOWN = frozenset(SPACY_CATEGORIES) | frozenset(PII_CATEGORIES) | frozenset(RULE_ONLY)


def resolve_categories(names: list[str] | tuple[str, ...] | None) -> frozenset[str]:
    """Expand group names (``PII``, ``ALL``, ...) into categories; reject unknown names."""
    if not names:
        return frozenset(DEFAULT_CATEGORIES)
    out: set[str] = set()
    for raw in names:
        name = raw.strip().upper()
        if name == "ALL":
            out |= KNOWN
        elif name in CATEGORY_GROUPS:
            out |= set(CATEGORY_GROUPS[name])
        elif name in KNOWN:
            out.add(name)
        elif name in PRESIDIO_TO_CATEGORY:
            out.add(PRESIDIO_TO_CATEGORY[name])
        elif name in ALIASES:
            out.add(ALIASES[name])
        else:
            raise DPTextError(
                f"unknown entity category {raw!r}; choose from {sorted(KNOWN)} or groups "
                f"{sorted(CATEGORY_GROUPS)}, short names {sorted(ALIASES)} or ALL")
    return frozenset(out)


# What each detector can report (after PRESIDIO_TO_CATEGORY). spaCy's NER has no recognizers for
# contact details or IDs; Presidio reports every location as LOCATION (-> GPE), times as
# DATE_TIME (-> DATE), and has no product/event/work-of-art/law/language/number labels.
DETECTABLE = {
    "spacy": frozenset(SPACY_CATEGORIES),
    "presidio": frozenset({"PERSON", "ORG", "GPE", "NORP", "DATE"}) | frozenset(PII_CATEGORIES),
}
DETECTABLE["both"] = DETECTABLE["spacy"] | DETECTABLE["presidio"]
# the learned detector's categories (detect/learned/tags.py), beside an engine ("+learned")
LEARNED_CATEGORIES = frozenset({"PERSON", "DATE", "AGE", "PHONE_NUMBER", "EMAIL_ADDRESS", "URL",
                                "IP_ADDRESS", "ID_NUMBER", "STREET_ADDRESS", "GPE", "ZIP_CODE",
                                "ORG"})
for _engine in ("spacy", "presidio", "both"):
    DETECTABLE[f"{_engine}+learned"] = DETECTABLE[_engine] | LEARNED_CATEGORIES
def undetectable(categories: frozenset[str], backend: str,
                 rules: frozenset[str] = frozenset()) -> list[str]:
    """The requested categories that detector ``backend`` never reports (sorted); ``rules``:
    the categories its rule recognizers report (the built-in ones:
    :func:`dptext.detect.recognizers.supported_categories`; the user's patterns and deny list)."""
    found = DETECTABLE[backend] | rules
    return sorted(categories - found)
