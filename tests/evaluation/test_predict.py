"""Prediction: length-sorted batches, one output row per input row, in input order."""
import csv
import json

import numpy as np
import pytest
import tensorflow as tf

from zoo.data.pipeline import trim_to_longest
from zoo.data.text_files import Example
from zoo.evaluation import predict
from zoo.model import cores


@pytest.fixture(scope="module")
def core_and_packer(tiny_hub):
    core = cores.classifier_core(tiny_hub + "/encoder", num_classes=3)
    return core, cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)


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
    lines = [json.loads(line) for line in open(tmp_path / "p.jsonl")]
    assert lines[1] == {"id": "x2", "label": "neg", "score": 0.8,
                        "probabilities": {"neg": 0.8, "pos": 0.2}}
    with pytest.raises(ValueError, match=".csv or .jsonl"):
        predict.write_predictions(str(tmp_path / "p.txt"), examples, probs, names)


def _shard_files(tmp_path):
    """Three CSV shards, 25 rows in all, two of them bad (an empty text, a broken row)."""
    rows = [[f"s0-{i}", "good film " * (i % 7 + 1)] for i in range(10)]
    rows += [["s1-0", ""]] + [[f"s1-{i}", "a dull plot " * (i % 5 + 1)] for i in range(1, 8)]
    rows += [[f"s2-{i}", "the actor " * (i % 3 + 1)] for i in range(7)]
    bounds = [(0, 10), (10, 18), (18, 25)]
    for shard, (begin, end) in enumerate(bounds):
        with open(tmp_path / f"part-{shard}.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["id", "text"])
            for i, row in enumerate(rows[begin:end]):
                if shard == 2 and i == 3:
                    f.write("s2-3,too,many,columns\n")
                else:
                    writer.writerow(row)
    return [r[0] for r in rows]


def test_streamed_prediction_keeps_order_and_count_over_shards(core_and_packer, tmp_path):
    from zoo.data.sources import FileSource
    from zoo.data.text_files import Columns

    core, packer = core_and_packer
    ids = _shard_files(tmp_path)
    source = FileSource(str(tmp_path / "part-*.csv"), Columns(text="text", id="id"),
                        require_label=False)
    out = str(tmp_path / "p.jsonl")
    # Chunks of 2 batches of 4: sorting and re-ordering happen many times over the stream.
    rows = list(predict.stream_predictions(core, packer, source, batch_size=4, chunk_batches=2))
    assert len(rows) == 25
    assert [p is None for _, p in rows].count(True) == 2
    count = predict.predict_to_file(core, packer, source, out, ["a", "b", "c"], batch_size=4,
                                    bad_rows="skip")
    written = [json.loads(line) for line in open(out, encoding="utf-8")]
    assert count == len(written) == 25
    assert [w["id"] for w in written] == ids[:21] + [None] + ids[22:]  # a broken row has no id
    errors = {i: w["error"] for i, w in enumerate(written) if w["error"]}
    assert sorted(errors) == [10, 21]
    assert "part-1.csv:2: empty text" in errors[10] and "part-2.csv:5: 4 columns" in errors[21]
    assert written[10]["label"] is None and written[0]["label"] in ("a", "b", "c")
    # The same probabilities as predicting the good rows one list, unsorted.
    good = [item for item, p in rows if p is not None]
    expected = predict.predict_probabilities(core, packer, good, batch_size=4,
                                             sort_by_length=False)
    np.testing.assert_allclose(np.stack([p for _, p in rows if p is not None]), expected,
                               atol=1e-5)


def test_a_bad_row_stops_prediction_by_default_and_leaves_no_file(core_and_packer, tmp_path):
    from zoo.data.sources import FileSource
    from zoo.data.text_files import Columns, DataError

    core, packer = core_and_packer
    _shard_files(tmp_path)
    source = FileSource(str(tmp_path / "part-*.csv"), Columns(text="text", id="id"),
                        require_label=False)
    out = tmp_path / "p.csv"
    with pytest.raises(DataError, match=r"part-1.csv:2: empty text"):
        predict.predict_to_file(core, packer, source, str(out), ["a", "b", "c"], batch_size=4)
    assert not out.exists() and not (tmp_path / "p.csv.partial").exists()
