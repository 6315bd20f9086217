"""Evaluation: utility, empirical privacy and plausible deniability of any registered mechanism.

One module per metric (``deniability``, ``inversion``, ``lm_inference``, ``utility``,
``attribute``, ``cost``),
the reference mechanisms every grid runs beside the real ones (``baselines``), the cached text
encoder (``encoders``) and the grid runner with its results store, plots and report (``grid``,
``store``, ``plots``, ``report``). docs/evaluation.md describes the protocols and the results.
"""

METRICS = ("utility", "inversion", "deniability", "cost", "attribute", "lm_inference")
CLASSIFIERS = ("logreg", "finetune")
ENCODERS = ("minilm", "hashing")
