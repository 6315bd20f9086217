"""Where practitioners already work: Presidio, spaCy, Hugging Face datasets, pandas.

Each integration is its own module and imports its library only when imported itself
(``dptext[presidio]``, ``dptext[datasets]``, ``dptext[pandas]``; spaCy is a core dependency):
``dptext.integrations.presidio``, ``.spacy``, ``.hf``, ``.pandas``. docs/integrations.md has
one runnable example per integration.
"""
