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
}
DEFAULT_CATEGORIES = ("PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "DATE", "EVENT",
                      "PRODUCT", "WORK_OF_ART", "LAW") + PII_CATEGORIES[1:]
KNOWN = frozenset(SPACY_CATEGORIES) | frozenset(PII_CATEGORIES)


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
        else:
            raise DPTextError(
                f"unknown entity category {raw!r}; choose from {sorted(KNOWN)} or groups "
                f"{sorted(CATEGORY_GROUPS)} or ALL")
    return frozenset(out)
