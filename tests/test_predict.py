"""Prediction: length-sorted batches, one output row per input row, in input order."""
import csv
import json

import numpy as np
import pytest
import tensorflow as tf

from zoo import models, predict
from zoo.data.pipeline import trim_to_longest
from zoo.data.text_files import Example


@pytest.fixture(scope="module")
def core_and_packer(tiny_hub):
    core = models.classifier_core(tiny_hub + "/encoder", num_classes=3)
    return core, models.TextPacker(tiny_hub + "/preprocessor", seq_length=32)


def _examples(n):
    rng = np.random.default_rng(0)
    words = ["good", "bad", "film", "plot", "actor", "long", "the", "a"]
    return [Example(text_a=" ".join(rng.choice(words, size=rng.integers(1, 20))), id=f"r{i}")
            for i in range(n)]


def test_sorted_batches_give_the_same_predictions_in_input_order(core_and_packer):
    core, packer = core_and_packer
    examples = _examples(37)
    sorted_probs = predict.predict_probabilities(core, packer, examples, batch_size=8)
    plain_probs = predict.predict_probabilities(core, packer, examples, batch_size=8,
                                                sort_by_length=False)
    assert sorted_probs.shape == (37, 3)
    np.testing.assert_allclose(sorted_probs, plain_probs, atol=1e-5)
    one_by_one = np.concatenate([
        tf.nn.softmax(core(packer(tf.constant([e.text_a])), training=False)).numpy()
        for e in examples[:5]])
    np.testing.assert_allclose(sorted_probs[:5], one_by_one, atol=1e-5)


def test_length_order_is_stable():
    examples = [Example(text_a=t) for t in ["ccc", "a", "bb", "a", "dddd"]]
    assert predict.length_order(examples).tolist() == [1, 3, 2, 0, 4]


def test_trim_to_longest_cuts_padding_only():
    packed = dict(input_mask=tf.constant([[1, 1, 0, 0], [1, 1, 1, 0]]),
                  input_word_ids=tf.constant([[5, 6, 0, 0], [5, 6, 7, 0]]),
                  input_type_ids=tf.zeros([2, 4], tf.int32))
    trimmed = trim_to_longest(packed)
    assert trimmed["input_word_ids"].numpy().tolist() == [[5, 6, 0], [5, 6, 7]]


def test_writes_csv_and_jsonl_one_row_per_input(tmp_path):
    examples = [Example("a", id="x1"), Example("b", id="x2"), Example("c", id="x3")]
    probs = np.array([[0.1, 0.9], [0.8, 0.2], [0.5, 0.5]])
    names = ["neg", "pos"]
    assert predict.write_predictions(str(tmp_path / "p.csv"), examples, probs, names) == 3
    rows = list(csv.DictReader(open(tmp_path / "p.csv")))
    assert [(r["id"], r["label"]) for r in rows] == [("x1", "pos"), ("x2", "neg"), ("x3", "neg")]
    assert float(rows[0]["score"]) == pytest.approx(0.9)
    predict.write_predictions(str(tmp_path / "p.jsonl"), examples, probs, names)
    lines = [json.loads(l) for l in open(tmp_path / "p.jsonl")]
    assert lines[1] == {"id": "x2", "label": "neg", "score": 0.8,
                        "probabilities": {"neg": 0.8, "pos": 0.2}}
    with pytest.raises(ValueError, match=".csv or .jsonl"):
        predict.write_predictions(str(tmp_path / "p.txt"), examples, probs, names)
