"""What a federated run trains: initial parameters, a per-sentence loss, and the evaluation.

* :class:`NextWordTask` - the LSTM language model (perplexity).
* :class:`ClassificationTask` - a linear softmax head on frozen sentence embeddings of the packaged
  MiniLM encoder (paper section VI, text classification; error rate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from dptext.training.lstm import Params, init_lstm, perplexity, sentence_nll


@dataclass
class NextWordTask:
    vocab_size: int
    test: torch.Tensor
    dim: int = 48
    hidden: int = 96

    def init(self, generator: torch.Generator) -> Params:
        return init_lstm(self.vocab_size, dim=self.dim, hidden=self.hidden, generator=generator)

    def to(self, device) -> NextWordTask:
        """Evaluate on ``device`` (where the trainer keeps the parameters)."""
        self.test = self.test.to(device)
        return self

    @staticmethod
    def loss(params: Params, tokens: torch.Tensor):
        return sentence_nll(params, tokens)

    @staticmethod
    def count_tokens(tokens: torch.Tensor) -> int:
        """Predicted tokens of ``tokens`` [n, L] (0 = padding; the first position is not
        predicted)."""
        return int((tokens[..., 1:] != 0).sum())

    def evaluate(self, params: Params) -> dict:
        ppl = perplexity(params, self.test)
        return {"perplexity": ppl, "loss": math.log(ppl)}

    @property
    def uniform_loss(self) -> float:
        """Per-token NLL (nats) of the uniform distribution over the vocabulary."""
        return math.log(self.vocab_size)

    @property
    def baseline(self) -> tuple[str, float]:
        """What a model must beat to have learned something: the uniform distribution."""
        return "uniform", self.uniform_loss

    @torch.no_grad()
    def sentence_losses(self, params: Params, batch: int = 256):
        """Per held-out sentence: summed NLL and predicted tokens ([n] each, on the CPU)."""
        parts = [sentence_nll(params, self.test[i:i + batch])
                 for i in range(0, len(self.test), batch)]
        return (torch.cat([p[0] for p in parts]).cpu(), torch.cat([p[1] for p in parts]).cpu())


def classification_rows(features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Pack embeddings and integer labels into one float row per sentence (label last)."""
    return torch.cat([features.float(), labels.float().unsqueeze(-1)], dim=-1)


@dataclass
class ClassificationTask:
    dim: int
    n_classes: int
    test: torch.Tensor = field(repr=False)  # rows from classification_rows

    def init(self, generator: torch.Generator) -> Params:
        return {"w": torch.zeros(self.n_classes, self.dim), "b": torch.zeros(self.n_classes)}

    def to(self, device) -> ClassificationTask:
        """Evaluate on ``device`` (where the trainer keeps the parameters)."""
        self.test = self.test.to(device)
        return self

    @staticmethod
    def count_tokens(rows: torch.Tensor) -> int:
        """One prediction per text."""
        return int(rows.shape[0])

    @staticmethod
    def loss(params: Params, rows: torch.Tensor):
        x, y = rows[..., :-1], rows[..., -1].long()
        logp = torch.log_softmax(x @ params["w"].T + params["b"], dim=-1)
        return (-logp.gather(-1, y.unsqueeze(-1)).squeeze(-1),
                torch.ones(rows.shape[:-1], device=rows.device))

    @torch.no_grad()
    def evaluate(self, params: Params) -> dict:
        x, y = self.test[:, :-1], self.test[:, -1].long()
        logits = x @ params["w"].T + params["b"]
        loss = float(torch.nn.functional.cross_entropy(logits, y))
        accuracy = float((logits.argmax(-1) == y).float().mean())
        return {"loss": loss, "accuracy": accuracy, "error_rate": 1.0 - accuracy}

    @property
    def uniform_loss(self) -> float:
        """Cross-entropy (nats) of the uniform distribution over the classes."""
        return math.log(self.n_classes)

    @property
    def baseline(self) -> tuple[str, float]:
        """What a model must beat to have learned something: the class prior of the held-out
        examples (the best constant prediction on them: its cross-entropy is the entropy of
        their label frequencies). Against uniform alone a head that learned only the class
        frequencies would pass (issue 35: error rate 0.57 -> 0.59 while the loss fell)."""
        counts = torch.bincount(self.test[:, -1].long().cpu(), minlength=self.n_classes)
        p = counts[counts > 0].double() / max(int(counts.sum()), 1)
        return "class prior", float(-(p * p.log()).sum())

    @torch.no_grad()
    def sentence_losses(self, params: Params):
        """Per held-out example: its NLL and 1 ([n] each, on the CPU)."""
        nll, count = self.loss(params, self.test)
        return nll.cpu(), count.cpu()


def minilm_embeddings(sentences: list[str], batch_size: int = 64) -> torch.Tensor:
    """Normalized all-MiniLM-L6-v2 sentence embeddings from the packaged model (offline)."""
    from sentence_transformers import SentenceTransformer

    from dptext.lm.quiet import quiet_loading
    from dptext.resources import minilm_dir

    with quiet_loading():
        model = SentenceTransformer(str(minilm_dir()), device="cpu")
    return torch.as_tensor(model.encode(sentences, batch_size=batch_size,
                                        normalize_embeddings=True, show_progress_bar=False))
