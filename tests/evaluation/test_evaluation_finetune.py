"""``--classifier finetune`` on a tiny random BERT built here (no download): it learns a separable
task, cannot beat chance on labels independent of the text, and is reproducible from the seed."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast  # noqa: E402

from dptext.evaluation.finetune import finetune_accuracy  # noqa: E402

FILLER = ["movie", "plot", "actor", "scene", "film", "story", "cast", "music"]


# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> str:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + FILLER + ["wonderful", "dreadful", "x"])}
    tk = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]",
                                  cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1,
                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("bert")
    tok.save_pretrained(path)
    BertModel(cfg).save_pretrained(path)
    return str(path)


def separable(n: int, rng) -> tuple[list[str], list[str]]:
    texts, labels = [], []
    for i in range(n):
        label = "pos" if i % 2 else "neg"
        word = "wonderful" if label == "pos" else "dreadful"
        texts.append(" ".join([*rng.choice(FILLER, size=3), word, *rng.choice(FILLER, size=2)]))
        labels.append(label)
    return texts, labels


FAST = dict(epochs=4, batch_size=8, lr=1e-3, head_lr=3e-2)


def test_finetuned_classifier_learns_a_separable_task(bert_dir):
    rng = np.random.default_rng(1)
    train, y_train = separable(64, rng)
    test, y_test = separable(40, rng)
    out = finetune_accuracy(bert_dir, train, y_train, test, y_test,
                            rng=np.random.default_rng(2), **FAST)
    assert out["accuracy"] == 1.0 and out["macro_f1"] == 1.0


def test_finetuned_classifier_is_at_chance_when_the_signal_is_removed(bert_dir):
    rng = np.random.default_rng(3)
    train, y_train = separable(64, rng)
    test, y_test = separable(200, rng)
    scrubbed = [t.replace("wonderful", "x").replace("dreadful", "x") for t in train]
    out = finetune_accuracy(bert_dir, scrubbed, y_train, test, y_test,
                            rng=np.random.default_rng(4), **FAST)
    # balanced test set, no signal in training: 0.5 +- 4 binomial standard errors (n = 200);
    # a classifier that always answers one class also lands at 0.5
    assert abs(out["accuracy"] - 0.5) <= 4 * np.sqrt(0.25 / 200)


def test_same_seed_same_model(bert_dir):
    rng = np.random.default_rng(5)
    train, y_train = separable(24, rng)
    test, y_test = separable(60, rng)
    scrubbed = [t.replace("wonderful", "x") for t in train]  # half the signal: not trivially 1
    runs = [finetune_accuracy(bert_dir, scrubbed, y_train, test, y_test,
                              rng=np.random.default_rng(6), epochs=1, batch_size=4)
            for _ in range(2)]
    assert runs[0] == runs[1]


def test_grid_utility_cell_with_the_finetune_classifier(bert_dir, tmp_path, monkeypatch):
    import wordfreq

    from dptext.embeddings import EmbeddingSpace
    from dptext.errors import DPTextError
    from dptext.evaluation.grid import GridConfig, run_grid
    from dptext.evaluation.grid import GridContext as _Context

    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_Context, "finetune_dir", lambda self: bert_dir)
    words = [w for w in wordfreq.top_n_list("en", 200) if w.isalpha()][:80]
    space = EmbeddingSpace(words, np.random.default_rng(2).standard_normal((len(words), 4)),
                           name="ft-grid")
    config = GridConfig(mechanisms=["noiseless"], epsilons={}, metrics=["utility"],
                        n_train=30, n_test=20, classifier="finetune", encoder="hashing",
                        baselines=False)
    (record,) = run_grid(config, tmp_path / "grid", space=space, progress=False)
    assert record["status"] == "ok" and 0.0 <= record["values"]["accuracy"] <= 1.0
    assert record["values"]["n_train"] == 30
    with pytest.raises(DPTextError, match="unknown classifier"):
        GridConfig(mechanisms=["noiseless"], epsilons={}, classifier="svm")
