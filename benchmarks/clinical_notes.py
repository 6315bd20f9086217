"""A generated clinical-notes corpus by patient (no real person in it), for the training recipes
of docs/uedp.md: ``patients`` patients with 1-6 short notes each, written from templates by a
few dozen doctors in a dozen towns, so that doctors and towns are entities held by many
patients (the "wide entities" of docs/uedp.md) and a patient's own name is held by one.

    .venv/bin/python benchmarks/clinical_notes.py notes.jsonl [--patients 400] [--seed 0]

One JSON object a line: {"patient_id": ..., "note": ..., "note_type": ...}; ``note_type`` is the
kind of note its template writes (visit, follow-up, phone call, results, emergency, review): a
public label set, readable from the text and varying within a patient (the classifier recipe of
docs/uedp.md). Seeded: the same arguments give the same file.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

FIRST = ["James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda",
         "William", "Elizabeth", "David", "Barbara", "Richard", "Susan", "Joseph", "Jessica",
         "Thomas", "Sarah", "Charles", "Karen", "Daniel", "Nancy", "Matthew", "Lisa", "Anthony",
         "Betty", "Mark", "Margaret", "Paul", "Sandra", "Steven", "Ashley", "Andrew", "Emily"]
LAST = ["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis",
        "Rodriguez", "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson",
        "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White",
        "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young"]
TOWNS = ["Springfield", "Riverton", "Fairview", "Georgetown", "Salem", "Madison", "Clinton",
         "Franklin", "Greenville", "Bristol", "Dover", "Milford"]
CONDITIONS = [("chest pain", "an ECG"), ("shortness of breath", "a chest X-ray"),
              ("high blood pressure", "a blood pressure check"), ("diabetes", "a blood test"),
              ("back pain", "an MRI"), ("a cough", "a chest X-ray"), ("headaches", "a CT scan"),
              ("knee pain", "an X-ray of the knee"), ("fatigue", "a blood test"),
              ("a skin rash", "a skin biopsy"), ("abdominal pain", "an ultrasound"),
              ("dizziness", "an ECG")]
MEDS = ["metformin", "lisinopril", "ibuprofen", "amoxicillin", "atorvastatin", "omeprazole",
        "paracetamol", "amlodipine", "prednisone", "insulin"]
# the kind of note each template writes (the ``note_type`` label), in TEMPLATES' order
NOTE_TYPES = ["visit", "follow-up", "phone call", "results", "emergency", "review"]
TEMPLATES = [
    "{name} was seen by Dr. {doctor} in {town} for {condition}. The patient was stable. "
    "We ordered {test} and started {med}.",
    "Follow-up visit for {name} with Dr. {doctor}. The {condition} is better since the patient "
    "started {med}. Review in two weeks.",
    "{name} called the clinic in {town} about {condition}. Dr. {doctor} advised the patient to "
    "continue {med} and to come in for {test}.",
    "The results of {test} for {name} were normal. Dr. {doctor} discussed the results with the "
    "patient. No change to {med}.",
    "{name} came to the emergency department in {town} with {condition}. The patient was given "
    "{med} and sent home. Dr. {doctor} will see the patient next week.",
    "Dr. {doctor} reviewed {name} today. The patient reports less {condition} and no side "
    "effects from {med}.",
]


def generate(patients: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    doctors = [f"{LAST[i]}" for i in rng.permutation(len(LAST))[:24]]
    rows = []
    for p in range(patients):
        name = f"{FIRST[rng.integers(len(FIRST))]} {LAST[rng.integers(len(LAST))]}"
        town = TOWNS[rng.integers(len(TOWNS))]
        doctor = doctors[rng.integers(len(doctors))]
        condition, test = CONDITIONS[rng.integers(len(CONDITIONS))]
        med = MEDS[rng.integers(len(MEDS))]
        for _ in range(int(rng.integers(1, 7))):
            if rng.random() < 0.2:  # sometimes another doctor or test
                doctor = doctors[rng.integers(len(doctors))]
            kind = int(rng.integers(len(TEMPLATES)))
            rows.append({"patient_id": f"P{p:05d}",
                         "note": TEMPLATES[kind].format(name=name, doctor=doctor, town=town,
                                                        condition=condition, test=test, med=med),
                         "note_type": NOTE_TYPES[kind]})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output")
    ap.add_argument("--patients", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows = generate(args.patients, args.seed)
    with open(args.output, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(f"wrote {len(rows)} notes of {args.patients} patients to {args.output}")


if __name__ == "__main__":
    main()
