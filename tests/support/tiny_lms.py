"""The tiny random language models of the LM tests, built here (no download): a BERT, a
RoBERTa and a Llama on a 25-word vocabulary (moved from test_lm_mechanisms, which others
imported)."""

from __future__ import annotations

import torch
from tiny_tokenizers import byte_level_bpe
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import (
    BertConfig,
    BertForMaskedLM,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaForMaskedLM,
)

WORDS = ("the a cat dog sat on mat big small red house run walk john paris anna river "
         "tree car road blue green went saw").split()


CORPUS = ["the cat sat on the mat", "a dog ran to the big house", "my name is anna",
          "john went to paris", "the red car saw a green tree by the river road"] * 4


CLIP = {"clip_low": -2.0, "clip_high": 2.0}


def _bert(path):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + WORDS + ["##s", "##ing", "##ed", ".", ","])}
    tk = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]",
                                  cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    torch.manual_seed(0)
    tok.save_pretrained(path)
    BertForMaskedLM(cfg).save_pretrained(path)
    return str(path)


def _byte_level(specials):
    return byte_level_bpe(CORPUS, specials, vocab_size=330)


def _roberta(path):
    tk = _byte_level(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tk.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>",
                                  unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
                                  cls_token="<s>", sep_token="</s>")
    cfg = RobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=66,
                        pad_token_id=1)
    torch.manual_seed(1)
    tok.save_pretrained(path)
    RobertaForMaskedLM(cfg).save_pretrained(path)
    return str(path)


def _llama(path):
    tk = _byte_level(["<|endoftext|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|endoftext|>",
                                  bos_token="<|endoftext|>")
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, intermediate_size=64,
                      max_position_embeddings=256, eos_token_id=0, bos_token_id=0)
    torch.manual_seed(2)
    tok.save_pretrained(path)
    LlamaForCausalLM(cfg).save_pretrained(path)
    return str(path)
