"""What the cells of one grid run share: data, encoder (with its cache), space, the fitted
mechanism, the attack's language model."""

from __future__ import annotations

import time

import numpy as np

from dptext.datasets import Dataset, load_dataset, load_file_dataset
from dptext.embeddings import EmbeddingSpace
from dptext.evaluation.baselines import build_mechanism
from dptext.evaluation.cells import GridConfig
from dptext.evaluation.encoders import CachedEncoder, make_encoder
from dptext.mechanisms.base import Mechanism
from dptext.mechanisms.registry import registered
from dptext.text import split_words


class GridContext:
    """What the cells of one run share: data, encoder (with its cache), space, fitted mechanisms."""

    def __init__(self, config: GridConfig, space: EmbeddingSpace | None,
                 encoder: CachedEncoder | None) -> None:
        self.config = config
        self._space = space
        self.encoder = encoder or make_encoder(config.encoder)
        self._data: dict[tuple[str, str], Dataset] = {}
        self._mechanism: tuple[tuple[str, float | None], Mechanism] | None = None
        self._prefitted: set[str] = set()
        self._lm = None

    @property
    def space(self) -> EmbeddingSpace:
        if self._space is None:
            from dptext.resources import default_space

            self._space = default_space()
        return self._space

    def data(self, name: str, split: str, n: int | None) -> Dataset:
        key = (name, split)
        if key not in self._data:
            c = self.config
            if c.data_file is not None and name == c.dataset:
                self._data[key] = load_file_dataset(c.data_file, text_field=c.text_field,
                                                    label_field=c.label_field, split=split,
                                                    seed=c.split_seed,
                                                    require_label=c.needs_labels)
            else:
                self._data[key] = load_dataset(name, split=split, seed=c.split_seed)
        return self._data[key].head(n)

    def mechanism(self, name: str, epsilon: float | None) -> tuple[Mechanism, float]:
        """The fitted mechanism (the last one is kept: cells of one mechanism run together)."""
        if self._mechanism is not None and self._mechanism[0] == (name, epsilon):
            return self._mechanism[1], 0.0
        self._mechanism = None
        start = time.perf_counter()
        self._prefit(name)
        m = build_mechanism(name, epsilon, self.space)
        m.fit()
        self._mechanism = ((name, epsilon), m)
        return m, time.perf_counter() - start

    def embed_clean(self, *texts: list[str]) -> None:
        """Embed clean texts (a split's originals) before any sanitized text of a cell: each
        list is embedded in one pass the first time, so its embeddings do not depend on which
        cells ran before in this process (parallel grids give a serial grid's values)."""
        for batch in texts:
            self.encoder.encode(batch)

    def finetune_dir(self):
        """Encoder directory fine-tuned by ``classifier="finetune"``: the packaged MiniLM."""
        from dptext.resources import minilm_dir

        return minilm_dir()

    def lm(self):
        """(LM, tokenizer) of the LM inference attack (``lm_kind``), loaded once per run."""
        if self._lm is None:
            from dptext.lm.loading import load_model, resolve_model

            causal = self.config.lm_kind == "causal"
            self._lm = load_model(resolve_model(self.config.lm_model, causal=causal),
                                  causal=causal)
        return self._lm

    def _prefit(self, name: str) -> None:
        """Mechanisms with ``fit_many`` (SanText) fit all the grid's epsilons of ``name`` in one
        shared pass the first time one of them is needed (saved to the fitted-table cache, from
        which each cell's ``fit`` then loads)."""
        cls = registered().get(name)
        if name in self._prefitted or cls is None or not cls.supports("fit_many"):
            return
        self._prefitted.add(name)
        cls.fit_many(self.config.epsilons.get(name, []), space=self.space)

    def deniability_words(self) -> list[str]:
        """The same word sample for every mechanism: distinct in-vocabulary words of the test
        texts, drawn with the grid seed."""
        test = self.data(self.config.dataset, "test", self.config.n_test)
        words = sorted({w.lower() for t in test.texts for w in split_words(t)[1::2]
                        if self.space.lookup(w) >= 0})
        rng = np.random.default_rng(self.config.seed)
        n = min(self.config.deniability_words, len(words))
        return sorted(rng.choice(words, size=n, replace=False).tolist()) if n else []
