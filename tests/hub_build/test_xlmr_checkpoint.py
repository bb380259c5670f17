"""Hugging Face XLM-R folders (`sentencepiece.bpe.model`, model_type xlm-roberta): Hugging
Face's ids from the SentencePiece preprocessor, and the weights against a NumPy forward pass
(positions counted after XLM-R's padding rows)."""
import json
import os

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf
import tensorflow_hub as hub
from safetensors.numpy import save_file

from tests.hub_build import numpy_bert
from tests.hub_build.test_checkpoint import _hf_tensors
from zoo.hub_build import build
from zoo.hub_build.checkpoint import CheckpointError, read_checkpoint

HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = ["Ça coûte 12,50 € à Montréal.", "Привет, как дела?", "the cat sat on the mat ᚠᚢᚦ"]


def _xlmr_folder(path, with_pooler):
    """A tiny XLM-R: a unigram SentencePiece model trained here (as XLM-R's: `<unk>`, `<s>`,
    `</s>` first) and random weights under Hugging Face's `roberta.` names."""
    os.makedirs(path)
    spm.SentencePieceTrainer.train(
        input=os.path.join(HERE, "multilingual_sentences.txt"), vocab_size=600,
        model_prefix=os.path.join(path, "sentencepiece.bpe"), model_type="unigram",
        character_coverage=0.98, hard_vocab_limit=False, minloglevel=2)
    pieces = spm.SentencePieceProcessor(model_file=os.path.join(path, "sentencepiece.bpe.model"))
    config = dict(model_type="xlm-roberta", vocab_size=pieces.get_piece_size() + 2,
                  hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=16, hidden_act="gelu", max_position_embeddings=16 + 2,
                  type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1)
    tensors = _hf_tensors(config, np.random.default_rng(0), prefix="roberta.",
                          old_layer_norm_names=False)
    if not with_pooler:
        tensors = {k: v for k, v in tensors.items() if "pooler" not in k}
    save_file(tensors, os.path.join(path, "model.safetensors"))
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)
    return str(path), pieces, config, tensors


def _hf_ids(pieces, text):
    """XLMRobertaTokenizer's ids: SentencePiece's shifted by fairseq's one, its `<unk>` at 3."""
    return [0] + [i + 1 if i else 3 for i in pieces.encode(text)] + [2]


def test_an_xlmr_folder_builds_to_hugging_faces_ids_and_weights(tmp_path):
    folder, pieces, config, tensors = _xlmr_folder(tmp_path / "xlmr", with_pooler=False)
    checkpoint = read_checkpoint(folder)
    assert checkpoint.tokenizer == "sentencepiece" and checkpoint.position_offset == 2
    assert checkpoint.config.max_position_embeddings == 16
    out_dir = build.build(folder, str(tmp_path / "hub"))
    pre = hub.load(out_dir + "/preprocessor")
    packed = pre.bert_pack_inputs([pre.tokenize(tf.constant(TEXTS))], seq_length=tf.constant(64))
    for text, ids, mask in zip(TEXTS, packed["input_word_ids"].numpy(),
                               packed["input_mask"].numpy()):
        assert ids[:mask.sum()].tolist() == _hf_ids(pieces, text)
    assert 3 in _hf_ids(pieces, TEXTS[2])  # runes: unknown pieces
    word_ids = np.array([_hf_ids(pieces, "the cat sat")[:6]])
    oracle = dict(tensors, **{"roberta.embeddings.position_embeddings.weight":
                              tensors["roberta.embeddings.position_embeddings.weight"][2:]})
    oracle = {k.removeprefix("roberta."): v for k, v in oracle.items()}
    oracle.update({"pooler.dense.weight": np.zeros([8, 8]), "pooler.dense.bias": np.zeros(8)})
    expected, _ = numpy_bert.forward(oracle, config, word_ids, np.zeros_like(word_ids))
    out = hub.KerasLayer(out_dir + "/encoder")(dict(
        input_word_ids=tf.constant(word_ids, tf.int32), input_mask=tf.ones([1, 6], tf.int32),
        input_type_ids=tf.zeros([1, 6], tf.int32)))
    np.testing.assert_allclose(out["sequence_output"].numpy(), expected, atol=1e-4)
    info = json.load(open(os.path.join(out_dir, build.BUILD_INFO)))
    assert info["tokenizer"] == "sentencepiece" and info["config"]["type_vocab_size"] == 1


def test_an_xlmr_folder_needs_its_sentencepiece_model(tmp_path):
    folder, *_ = _xlmr_folder(tmp_path / "xlmr", with_pooler=True)
    os.remove(os.path.join(folder, "sentencepiece.bpe.model"))
    with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("[PAD]\n")
    with pytest.raises(CheckpointError, match="an XLM-R checkpoint without "
                                              "sentencepiece.bpe.model"):
        read_checkpoint(folder)
