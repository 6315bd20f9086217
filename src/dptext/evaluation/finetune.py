"""Utility with a fine-tuned classifier (``--classifier finetune``): the CusText/SanText protocol
with the encoder trained too (custext_customized_sanitization.txt section "Experiments" fine-tunes
BERT on the sanitized training set and tests on the clean test set).

Here: the packaged MiniLM encoder (any local BERT-style encoder directory works) with mean
pooling over the attention mask, as the sentence encoder uses it, plus a linear head; AdamW,
cross-entropy, constant learning rates (encoder ``lr``, head ``head_lr``), ``epochs`` passes over
the sanitized training texts in a shuffled order, on CPU. The initialisation of the head, the
order and dropout are drawn from the cell's generator, so a seeded grid gives the same model.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from dptext.evaluation.utility import scores


def _pooled(encoder, batch):
    hidden = encoder(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)


def finetune_accuracy(model_dir: str, train_texts: Sequence[str], train_labels: Sequence[str],
                      test_texts: Sequence[str], test_labels: Sequence[str], *,
                      rng: np.random.Generator, epochs: int = 1, batch_size: int = 16,
                      lr: float = 5e-5, head_lr: float = 1e-3, max_length: int = 128,
                      ) -> dict[str, float]:
    """Fine-tune on (sanitized) ``train_texts``, score on (clean) ``test_texts``."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local directories only (RESOURCES.md)
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    classes = sorted(set(train_labels))
    index = {c: i for i, c in enumerate(classes)}
    y = torch.tensor([index[label] for label in train_labels])
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    encoder = AutoModel.from_pretrained(model_dir, dtype=torch.float32)

    def tokens(texts):
        return tokenizer(list(texts), padding=True, truncation=True, max_length=max_length,
                         return_tensors="pt")

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.integers(2**62)))
        head = torch.nn.Linear(encoder.config.hidden_size, len(classes))
        opt = torch.optim.AdamW([{"params": encoder.parameters(), "lr": lr},
                                 {"params": head.parameters(), "lr": head_lr}])
        encoder.train()
        for _ in range(epochs):
            order = rng.permutation(len(train_texts))
            for s in range(0, len(order), batch_size):
                idx = order[s : s + batch_size]
                logits = head(_pooled(encoder, tokens(train_texts[i] for i in idx)))
                loss = torch.nn.functional.cross_entropy(logits, y[torch.from_numpy(idx)])
                opt.zero_grad()
                loss.backward()
                opt.step()
        encoder.eval()
        predicted = np.empty(len(test_texts), dtype=np.int64)
        by_length = np.argsort([len(t) for t in test_texts], kind="stable")
        with torch.inference_mode():
            for s in range(0, len(by_length), 64):
                idx = by_length[s : s + 64]
                logits = head(_pooled(encoder, tokens(test_texts[i] for i in idx)))
                predicted[idx] = logits.argmax(-1).numpy()
    return scores(list(test_labels), [classes[i] for i in predicted])
