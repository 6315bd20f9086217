"""The learned PHI detector (docs/learned_detector.md): a small token tagger trained on seeded
synthetic notes (:mod:`.synth`, ``benchmarks/train_detector.py``), its weights shipped here
(``model.npz``, fingerprinted in ``model.sha256``), run in numpy. Importing this package reads
no weights and imports no torch: :class:`LearnedDetector` loads them on first use."""

from dptext.detect.learned.detector import LearnedDetector, load_weights
from dptext.detect.learned.tags import CATEGORIES, LearnedSpan

__all__ = ["CATEGORIES", "LearnedDetector", "LearnedSpan", "load_weights"]
