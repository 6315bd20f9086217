"""A language guess on a short or tabular English record does not withhold it (issue 44 item
6: table-style English notes were taken for Nigerian Pidgin, ``pcm``), while notes in other
languages are still found."""

from __future__ import annotations

import pytest

from dptext.detect.language import _identifier, detect_language, english_share

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

TABLE = "Emeka Tran | 1/27 | dey no pain don f/u\nChidi Nwosu | 11/7 | yes BP meds f/u nt/nd"


def test_a_table_the_model_takes_for_pidgin_is_english():
    code, prob = _identifier().classify(TABLE)
    assert code == "pcm" and prob >= 0.6  # the model's guess, which withheld such records
    assert detect_language(TABLE).code == "en"


@pytest.mark.parametrize("code, text", [
    ("fr", "Le patient est arrivé à l'hôpital avec une douleur thoracique depuis trois jours."),
    ("es", "El paciente llegó al hospital con dolor abdominal desde hace tres días."),
    ("de", "Der Patient kam mit Bauchschmerzen ins Krankenhaus, seit drei Tagen."),
])
def test_notes_in_other_languages_are_still_found(code, text):
    assert detect_language(text).code == code
    assert english_share(text, code) < 0.6


def test_english_share_leaves_names_out_and_counts_lower_case_words():
    assert english_share("Chidi Okafor seen today, no pain, meds given") == 1.0
    assert english_share("") == 0.0
