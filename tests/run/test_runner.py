"""The one runner, driving a task defined here in a few lines: modes, results files, checks."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from zoo.base.errors import UsageError
from zoo.export import savedmodel
from zoo.model.cores import classifier_core
from zoo.run import runner, task
from zoo.run.settings import RunSettings

WORDS = ["red", "blue", "green", "tall", "small", "old"]


class WordCount(task.SingleTask):
    """Toy task: is the number of words in a text even? (A classifier on the shared plumbing.)"""

    NAME = "word_count"
    OUTPUT_FILES = "a .txt file"
    METRICS = ("accuracy",)

    def prepare_training(self, evaluate_each_epoch):
        self.texts = self.read_split("train")
        return task.TrainingData(len(self.texts), "texts", dict(texts=len(self.texts)),
                                   dict(extra="reported"))

    def outputs(self):
        return ["odd", "even"]

    def build_core(self, encoder):
        return classifier_core(encoder, 2)

    def _batches(self, texts, batch_size, seed=None):
        labels = np.array([1 - len(t.split()) % 2 for t in texts], np.int32)
        ds = tf.data.Dataset.from_tensor_slices((texts, labels))
        if seed is not None:
            ds = ds.shuffle(len(texts), seed=seed)
        return ds.batch(batch_size, drop_remainder=seed is not None).map(
            lambda t, y: (self.run.packer(t), y))

    def train_dataset(self, epoch):
        return self._batches(self.texts, self.settings.train_batch_size, self.settings.seed + epoch)

    def loss(self, targets, outputs):
        return keras.losses.sparse_categorical_crossentropy(targets, outputs, from_logits=True)

    def evaluate(self, core):
        texts = self.read_split("eval")
        right = 0
        for logits, labels in self.run.infer(lambda b: (core(b[0], training=False), b[1]),
                                             self._batches(texts, 4), "eval", "text"):
            right += int((logits.argmax(-1) == labels).sum())
        return dict(accuracy=right / len(texts), texts=len(texts))

    def predict(self, core, path):
        texts = self.read_split("predict")
        with open(path, "w", encoding="utf-8") as f:
            for logits, _ in self.run.infer(lambda b: (core(b[0], training=False), b[1]),
                                            self._batches(texts, 4), "predict", "text"):
                f.writelines(f"{i}\n" for i in logits.argmax(-1))
        return len(texts)

    def serving(self, core):
        return savedmodel.ClassifierServing(core, self.run.packer, self.outputs())


def _texts(n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(1, 6))) for _ in range(n)]


def _run(mode, tmp_path, **settings):
    settings = RunSettings(model_dir=str(tmp_path / "model"), encoder_handle="tiny",
                           max_seq_length=16, train_batch_size=8, eval_batch_size=4,
                           num_train_epochs=2, learning_rate=1e-3, xla_fusion="off", **settings)
    splits = dict(train=_texts(32, 0), eval=_texts(12, 1), predict=_texts(7, 2))
    return runner.run(mode, WordCount, settings, lambda split: splits[split])


def test_a_task_definition_is_all_a_new_task_needs(tiny_hub, tmp_path):
    timing = _run("train_and_eval", tmp_path)
    model_dir = tmp_path / "model"
    assert timing["steps"] == 8 and timing["train_texts"] == 32 and timing["extra"] == "reported"
    assert timing["texts_per_second"] > 0  # the unit's rate, for units other than examples
    saved = json.load(open(model_dir / "train_results.json"))
    assert saved["train_texts"] == 32 and saved["replicas"] == 1
    record = json.load(open(model_dir / "run.json"))
    assert record["task"] == "word_count" and record["outputs"] == ["odd", "even"]
    assert [h["epoch"] for h in json.load(open(model_dir / "history.json"))] == [1, 2]
    assert os.path.exists(model_dir / "training_curves.png")
    results = json.load(open(model_dir / "eval_results.json"))
    assert results["texts"] == 12 and results["epoch"] == 2 and results["step"] == 8

    again = _run("eval", tmp_path)  # the newest checkpoint, restored: the same accuracy
    assert again["accuracy"] == results["accuracy"] and again["step"] == 8

    with pytest.raises(UsageError, match=r"mode=predict needs output_file \(a .txt file\)"):
        _run("predict", tmp_path)
    assert _run("predict", tmp_path, output_file=str(tmp_path / "out" / "p.txt")) == 7
    assert len(open(tmp_path / "out" / "p.txt").read().split()) == 7

    with pytest.raises(UsageError, match="mode=export needs export_dir"):
        _run("export", tmp_path)
    path = _run("export", tmp_path, export_dir=str(tmp_path / "export" / "1"))
    served = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(["red"]))
    assert served["label"].numpy()[0] in (b"odd", b"even")

    with pytest.raises(UsageError, match="mode must be one of"):
        _run("check_data", tmp_path)  # not one of this task's modes


def test_eval_without_training_and_a_model_dir_of_another_task(tiny_hub, tmp_path):
    with pytest.raises(UsageError, match="model does not exist: mode=eval needs the model dir "
                                         "of a trained model"):
        _run("eval", tmp_path)
    os.makedirs(tmp_path / "model", exist_ok=True)
    with pytest.raises(FileNotFoundError, match="no checkpoint; train first"):
        _run("eval", tmp_path)
    with open(tmp_path / "model" / "run.json", "w") as f:
        json.dump(dict(task="squad", encoder_handle="tiny", preprocessor_handle=None,
                       outputs="start_end_logits"), f)
    with pytest.raises(UsageError, match="task: 'squad' -> 'word_count'"):
        _run("eval", tmp_path)


def test_gradient_accumulation_counts_a_step_per_update(tiny_hub, tmp_path):
    timing = _run("train", tmp_path, gradient_accumulation_steps=2)
    # 32 texts in batches of 8, two batches an update: 2 updates an epoch, 2 epochs
    assert timing["steps"] == 4 and timing["examples"] == 64
    assert timing["gradient_accumulation_steps"] == 2
    assert json.load(open(tmp_path / "model" / "run.json"))["gradient_accumulation_steps"] == 2
    with pytest.raises(UsageError, match=r"gradient_accumulation_steps: 2 -> 4"):
        _run("train", tmp_path, gradient_accumulation_steps=4)


def test_frozen_word_embeddings_stay_as_pretrained_without_optimizer_state(tiny_hub, tmp_path):
    _run("train", tmp_path, freeze_word_embeddings=True)
    pretrained = {v.name: v.numpy() for v in tf.saved_model.load(
        os.path.join(tiny_hub, "encoder")).variables if "embeddings" in v.name}
    reader = tf.train.load_checkpoint(str(tmp_path / "model" / "checkpoints"))
    saved = {key: reader.get_tensor(key) for key, shape in reader.get_variable_to_shape_map()
             .items() if shape in ([30522, 32], [512, 32])}
    tables = [v for key, v in saved.items() if v.shape == (30522, 32)]
    # saved once (for the export), as pretrained, and no optimizer moments beside it
    assert len(tables) == 1 and not any("OPTIMIZER_SLOT" in k and saved[k].shape == (30522, 32)
                                        for k in saved)
    np.testing.assert_array_equal(tables[0], pretrained["bert_encoder/embeddings/word_embeddings:0"])
    positions = [v for key, v in saved.items() if v.shape == (512, 32) and "OPTIMIZER" not in key]
    assert not np.allclose(positions[0],  # the rest of the encoder trained
                           pretrained["bert_encoder/embeddings/position_embeddings:0"])
    assert json.load(open(tmp_path / "model" / "run.json"))["freeze_word_embeddings"] is True
    with pytest.raises(UsageError, match=r"freeze_word_embeddings: True -> False"):
        _run("train", tmp_path)  # unset: tiny's English vocabulary trains


class Scripted(WordCount):
    """WordCount whose evaluations report accuracies from a script."""

    SCRIPT = [0.5, 0.8, 0.6, 0.7, 0.4, 0.9]
    METRICS = ("accuracy", "f1")  # f1 is declared but never reported: the check at the end
    calls = []

    def evaluate(self, core):
        results = super().evaluate(core)
        results["accuracy"] = self.SCRIPT[len(Scripted.calls) % len(self.SCRIPT)]
        Scripted.calls.append(results["accuracy"])
        return results


def _scripted(mode, tmp_path, **settings):
    settings = RunSettings(**dict(dict(
        model_dir=str(tmp_path / "model"), encoder_handle="tiny", max_seq_length=16,
        train_batch_size=8, eval_batch_size=4, num_train_epochs=6, learning_rate=1e-3,
        xla_fusion="off"), **settings))
    splits = dict(train=_texts(32, 0), eval=_texts(12, 1), predict=_texts(7, 2))
    return runner.run(mode, Scripted, settings, lambda split: splits[split])


def test_keep_best_exports_the_best_checkpoint_and_patience_stops_training(tiny_hub, tmp_path):
    Scripted.calls.clear()
    export_dir = str(tmp_path / "export" / "1")
    timing = _scripted("train_and_eval", tmp_path, keep_best="accuracy",
                       early_stopping_patience=2, export_dir=export_dir)
    # accuracies 0.5, 0.8 (best, epoch 2, step 8), 0.6, 0.7: two without a better one
    assert Scripted.calls == [0.5, 0.8, 0.6, 0.7]
    assert timing["stopped_early_after_epoch"] == 4 and timing["steps"] == 16
    model_dir = tmp_path / "model"
    record = json.load(open(model_dir / "best.json"))
    assert (record["metric"], record["value"], record["step"], record["epoch"]) == (
        "accuracy", 0.8, 8, 2)
    assert json.load(open(model_dir / "train_results.json"))["best"]["step"] == 8
    assert [h["epoch"] for h in json.load(open(model_dir / "history.json"))] == [1, 2, 3, 4]

    # the export holds the best weights (step 8), not the latest (step 16)
    texts = tf.constant(_texts(6, 3))
    served = tf.saved_model.load(export_dir).signatures["serving_default"](text=texts)
    task = runner.start("export", Scripted, RunSettings(
        model_dir=str(model_dir), encoder_handle="tiny", max_seq_length=16))
    best_core, latest_core = runner.build_core(task), runner.build_core(task)
    from zoo.run import best
    from zoo.training import checkpoints
    assert best.restore(best_core, str(model_dir)) == 8
    checkpoints.restore_model(latest_core, str(model_dir))
    packed = task.run.packer(texts)
    np.testing.assert_allclose(served["probabilities"],
                               tf.nn.softmax(best_core(packed, training=False)), atol=1e-5)
    assert not np.allclose(served["probabilities"],
                           tf.nn.softmax(latest_core(packed, training=False)), atol=1e-5)

    # a rerun does not train again; eval with --keep_best evaluates the best checkpoint
    again = _scripted("train_and_eval", tmp_path, keep_best="accuracy",
                      early_stopping_patience=2)
    assert again["steps"] == 0
    assert _scripted("eval", tmp_path, keep_best="accuracy")["step"] == 8


def test_keep_best_settings_that_cannot_work(tiny_hub, tmp_path):
    with pytest.raises(UsageError, match="early_stopping_patience needs keep_best"):
        _scripted("train_and_eval", tmp_path, early_stopping_patience=2)
    with pytest.raises(UsageError, match="keep_best needs evaluations"):
        _scripted("train", tmp_path, keep_best="accuracy")
    with pytest.raises(UsageError, match=r"keep_best=f1: the evaluation has no number 'f1' "
                                         r"\(it has accuracy, epoch, step, texts\)"):
        _scripted("train_and_eval", tmp_path, keep_best="f1", num_train_epochs=1)
    with pytest.raises(UsageError, match="keep_best=acuracy is not a metric of this task; it "
                                         "reports accuracy, f1"):  # before any training
        _scripted("train_and_eval", tmp_path, keep_best="acuracy",
                  model_dir=str(tmp_path / "misspelled"))
    assert not os.path.exists(tmp_path / "misspelled")


def test_auto_pooling_is_the_trained_one_else_the_encoders(monkeypatch, tmp_path):
    from zoo.kinds import classification
    from zoo.training import run_record
    monkeypatch.setattr(classification.hub, "default_pooling",
                        lambda handle: {"minilm": "mean", "tiny": "cls"}[handle])

    def resolved(model_dir, handle="minilm", pooling="auto"):
        settings = classification.Settings(model_dir=str(model_dir), encoder_handle=handle,
                                           pooling=pooling)
        return classification.Classification.resolve_settings(settings).pooling

    assert classification.Settings().pooling == "auto"
    assert resolved(tmp_path / "new") == "mean" and resolved(tmp_path / "new", "tiny") == "cls"
    assert resolved(tmp_path / "new", pooling="cls_mean") == "cls_mean"  # said is said
    trained = tmp_path / "trained"
    trained.mkdir()
    run_record.save(str(trained), dict(task="classification", encoder_handle="minilm",
                                       pooling="cls"))
    assert resolved(trained) == "cls"  # what the weights were trained with
    assert resolved(trained, "tiny") == "cls"  # another encoder: its own (restore says more)
    run_record.save(str(trained), dict(task="classification", encoder_handle="minilm"))
    assert resolved(trained) == "cls"  # a run.json from before --pooling
    old = tmp_path / "older"
    (old / "checkpoints").mkdir(parents=True)
    assert resolved(old) == "cls"  # checkpoints from before run.json
