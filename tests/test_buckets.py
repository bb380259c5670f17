"""A whole model life in a bucket: TensorFlow's in-memory file system (`ram://`, one per
process, served by the same `tf.io.gfile` layer as `gs://`) holds the data, the model dir, the
predictions and the exports, and nothing lands on the local disk."""
import csv
import json
import os
import uuid

import numpy as np
import pytest

from tests.helpers import zoo_inline
from tests.tweets import LABEL_MAP, write_csv
from zoo.base import fs
from zoo.base.errors import UsageError
from zoo.data.conll import ConllSource
from zoo.data.sources import iterate
from zoo.data.squad import SquadFile
from zoo.kinds import table
from zoo.training import checkpoints

SETTINGS = dict(encoder_handle="tiny", text_column="tweet", label_column="sentiment",
                id_column="id", label_map=LABEL_MAP, train_batch_size=16, eval_batch_size=16,
                max_seq_length=24, learning_rate=3e-3, warmup_proportion=0.05)


def _upload(local, remote):
    fs.makedirs(fs.dirname(remote))
    fs.copy(local, remote)
    return remote


def _read_csv(path):
    with fs.open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def bucket(tmp_path_factory, tiny_hub):
    """ram://zoo-N/data: train shards (a glob), dev and predict files, as a user uploads them."""
    del tiny_hub
    local = tmp_path_factory.mktemp("uploads")
    root = f"ram://zoo-{uuid.uuid4().hex}"
    for shard in range(2):
        _upload(write_csv(local / f"part-{shard}.csv", 160, shard + 10),
                f"{root}/data/train/part-{shard}.csv")
    _upload(write_csv(local / "dev.csv", 40, 2), f"{root}/data/dev.csv")
    _upload(write_csv(local / "predict.csv", 23, 3, with_label=False), f"{root}/data/predict.csv")
    return root


def _stop_at_second_save(monkeypatch):
    """The run stops (as if killed) when it goes to save its second checkpoint."""
    save, calls = checkpoints.Saver.save, []

    def stop(self):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        save(self)
    monkeypatch.setattr(checkpoints.Saver, "save", stop)


def test_a_whole_model_life_in_a_bucket(bucket, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a path misread as local would land here
    model_dir = f"{bucket}/runs/tweets"
    train = dict(SETTINGS, train_file=f"{bucket}/data/train/part-*.csv",
                 eval_file=f"{bucket}/data/dev.csv", num_train_epochs=2, checkpoint_every=5)
    _stop_at_second_save(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        table.run("classify", "train_and_eval", model_dir=model_dir, **train)
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    assert [int(p.rsplit("-", 1)[1]) for p in checkpoints.newest_first(model_dir)] == [5]
    timing = table.run("classify", "train_and_eval", model_dir=model_dir, **train)
    assert timing["steps"] == 40 - 5  # resumed at step 5, not started again
    for name in ("run.json", "labels.json", "history.json", "eval_results.json",
                 "train_results.json", "training_curves.png",
                 "confusion_matrix.png", "errors.csv"):
        assert fs.exists(fs.join(model_dir, name)), name
    assert fs.listdir(fs.join(model_dir, "train"))  # TensorBoard summaries
    assert not fs.exists(fs.join(model_dir, ".lock"))  # the lease ends with the run
    trained = json.loads(fs.open(fs.join(model_dir, "eval_results.json")).read())
    assert trained["accuracy"] > 0.5

    again = table.run("classify", "eval", model_dir=model_dir, **SETTINGS,
                      eval_file=f"{bucket}/data/dev.csv")
    assert again["accuracy"] == trained["accuracy"]

    predictions = f"{bucket}/out/predictions.csv"
    assert table.run("classify", "predict", model_dir=model_dir, **SETTINGS,
                     predict_file=f"{bucket}/data/predict.csv", output_file=predictions) == 23
    rows = _read_csv(predictions)
    assert [r["id"] for r in rows] == [r["id"] for r in _read_csv(f"{bucket}/data/predict.csv")]

    export = f"{bucket}/export/tweets/1"
    table.run("classify", "export", model_dir=model_dir, **SETTINGS, export_dir=export)
    assert fs.exists(fs.join(export, "zoo_complete.json"))
    from zoo import serving
    served = serving.load(export).predict(
        [r["tweet"] for r in _read_csv(f"{bucket}/data/predict.csv")])
    assert [s["label"] for s in served] == [r["label"] for r in rows]
    assert np.allclose([s["score"] for s in served], [float(r["score"]) for r in rows],
                       atol=1e-4)
    from zoo import litert
    table.run("classify", "export", model_dir=model_dir, **SETTINGS,
              export_dir=f"{bucket}/export/tweets_litert", export_format="litert")
    lite = litert.load(f"{bucket}/export/tweets_litert").predict(["loved it, brilliant"])
    assert lite[0]["label"] in ("negative", "neutral", "positive")

    explained = f"{bucket}/out/explanations.jsonl"
    assert table.run("classify", "explain", model_dir=model_dir, **SETTINGS,
                     predict_file=f"{bucket}/data/predict.csv", output_file=explained) == 23
    assert "<html" in fs.open(f"{bucket}/out/explanations.html").read().lower()

    checked = f"{bucket}/runs/checked"
    table.run("classify", "check_data", model_dir=checked, **SETTINGS,
              train_file=f"{bucket}/data/train/part-*.csv")
    report = json.loads(fs.open(fs.join(checked, "data_check_train.json")).read())
    assert report["rows"] == 320

    warm = f"{bucket}/runs/warm"
    table.run("classify", "train", model_dir=warm, **dict(train, num_train_epochs=1),
              init_from=model_dir)
    record = json.loads(fs.open(fs.join(warm, "run.json")).read())
    assert record["init_from"]["path"] == model_dir and record["init_from"]["head"] == "reused"

    assert os.listdir(tmp_path) == []  # no local folder named "ram:", nothing else either


def test_squad_and_conll_files_are_read_from_a_bucket(bucket):
    squad = f"{bucket}/data/squad.json"
    with fs.open(squad, "w") as f:
        json.dump({"version": "1.1", "data": [{"title": t, "paragraphs": [{
            "context": f"{t} is a city.", "qas": [{"id": f"{t}-q", "question": f"What is {t}?",
                                                   "answers": [{"text": "a city",
                                                                "answer_start": len(t) + 4}]}]}]}
            for t in ("Paris", "Rome", "Oslo")]}, f)
    reader = SquadFile(squad)
    assert [e.id for e in reader.questions()] == ["Paris-q", "Rome-q", "Oslo-q"]
    assert [e.id for e in reader.questions(order=[2, 0])] == ["Oslo-q", "Paris-q"]  # by seeking
    for name in ("a", "b"):
        with fs.open(f"{bucket}/data/conll/{name}.txt", "w") as f:
            f.write(f"-DOCSTART- O\n\n{name.upper()}ngela B-PER\nsings O\n\n")
    sentences = list(iterate(ConllSource(f"{bucket}/data/conll/*.txt")))
    assert [s.tokens[0] for s in sentences] == ["Angela", "Bngela"]
    assert sentences[0].source == f"{bucket}/data/conll/a.txt:3"


def test_an_unknown_scheme_is_one_error_and_makes_no_folder(bucket, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for flag, value in (("model_dir", "gcs://b/runs/m"), ("train_file", "s3://b/train.csv")):
        values = dict(SETTINGS, **{"model_dir": f"{bucket}/runs/refused",
                                   "train_file": f"{bucket}/data/dev.csv", flag: value})
        with pytest.raises(UsageError, match=f"^{flag} must be a local path or one on a file "
                                             "system this TensorFlow serves .*ram://"):
            table.run("classify", "train", **values)
    result = zoo_inline("train", "classify", "--model_dir=gcs://b/runs/m",
                        f"--train_file={bucket}/data/dev.csv")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: --model_dir must be a local path or one on a file system this TensorFlow serves "
        f"({', '.join(f'{s}://' for s in fs.registered_schemes())}; s3:// and hdfs:// come with "
        "the tensorflow-io plugin), and gcs:// is none of them, not 'gcs://b/runs/m'"]
    assert os.listdir(tmp_path) == []
    assert not fs.exists(f"{bucket}/runs/refused")


def test_a_hub_build_written_to_and_loaded_from_a_bucket(bucket, tmp_path, monkeypatch):
    import tensorflow as tf
    from zoo.hub_build import build
    from zoo.model import hub

    monkeypatch.chdir(tmp_path)
    folder = f"{bucket}/models/tiny"
    build.build("tiny", folder)
    assert build.build_format(folder) == build.BUILD_FORMAT
    assert fs.exists(f"{folder}/zoo_complete.json")
    encoder, preprocessor = hub.resolve_handles(folder)
    assert (encoder, preprocessor) == (f"{folder}/encoder", f"{folder}/preprocessor")
    texts = tf.constant(["a bucket holds the model", "and its vocabulary"])
    local_encoder, local_preprocessor = hub.resolve_handles("tiny")
    outputs = [hub.encoder_layer(e)(hub.load_preprocessor(p).bert_pack_inputs(
        [hub.load_preprocessor(p).tokenize(texts)], tf.constant(16)))["pooled_output"]
        for e, p in ((encoder, preprocessor), (local_encoder, local_preprocessor))]
    np.testing.assert_allclose(outputs[0].numpy(), outputs[1].numpy(), atol=1e-6)
    assert os.listdir(tmp_path) == []
