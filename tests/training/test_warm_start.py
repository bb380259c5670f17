"""Warm starts (`--init_from`), in-process: the weights a new run starts from, which head
transfers, what run.json records, a resume that reads its own checkpoints, and the refusals."""
import dataclasses
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests.tasks.test_squad import _squad
from tests.tweets import LABEL_MAP, write_csv, write_two_class_csv
from zoo.base.errors import UsageError
from zoo.hub_build import build
from zoo.kinds import multitask, table
from zoo.run import runner
from zoo.training import checkpoints, warm_start

COMMON = dict(encoder_handle="tiny", train_batch_size=8, eval_batch_size=16, max_seq_length=32,
              learning_rate=3e-3)
TWEETS = dict(text_column="tweet", label_column="sentiment", id_column="id")


@pytest.fixture(scope="module")
def sources(tmp_path_factory, tiny_hub):
    """A classifier (mean pooling) and a SQuAD model trained on the tiny encoder."""
    root = tmp_path_factory.mktemp("warm")
    files = dict(train=write_csv(root / "train.csv", 96, 1), dev=write_csv(root / "dev.csv", 30, 2),
                 squad_file=_squad(root / "squad.json", 24))
    table.run("classify", "train", model_dir=str(root / "cls"), train_file=files["train"],
              label_map=LABEL_MAP, pooling="mean", num_train_epochs=2,
              export_dir=str(root / "cls" / "export" / "1"), **TWEETS, **COMMON)
    table.run("squad", "train", model_dir=str(root / "squad"), train_file=files["squad_file"],
              max_query_length=12, doc_stride=12, num_train_epochs=1, **COMMON)
    return dict(root=root, cls=str(root / "cls"), squad=str(root / "squad"), **files)


def _started(kind, values):
    """The task of a training run, its data prepared, and its core built and warm-started
    (what `runner._train` does before the first step; the record is what it keeps in run.json
    as `init_from`)."""
    data, settings = table.KINDS[kind].parts(dict(COMMON, **values))
    return _started_task(table.KINDS[kind].task, settings, table.KINDS[kind].reader(data, settings))


def _started_task(task_class, settings, read_split):
    task = runner.start("train", task_class, settings, read_split)
    task.prepare_training(False)
    core = runner.build_core(task)
    record = task.warm_start(core, task.run.warm_source)
    return task, core, record


def _saved(source_dir, layer):
    """{checkpoint key suffix: value} of `layer` (an edge of the core) in the newest
    checkpoint of `source_dir`."""
    reader = tf.train.load_checkpoint(checkpoints.newest_first(source_dir)[0])
    prefix = f"model/{layer}/"
    return {k[len(prefix):]: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
            if k.startswith(prefix)}


def _equal(layer, saved):
    """Whether every variable of `layer` has the value of the one of the same name saved."""
    values = {v.name.replace("/", ".S"): v.numpy() for v in layer.weights if v.dtype != tf.string}
    found = {key.split("/.ATTRIBUTES")[0]: value for key, value in saved.items()}
    assert values, "no weights"
    matched = [name for name in values if name in found or name.split(":")[0] in found]
    return matched and all(np.array_equal(values[n], found.get(n, found.get(n.split(":")[0])))
                           for n in matched) and len(matched) == len(values)


def _head_equal(head, saved):
    kernel, bias = [v.numpy() for v in head.weights]
    return (np.array_equal(kernel, saved["_dense/kernel/.ATTRIBUTES/VARIABLE_VALUE"])
            and np.array_equal(bias, saved["_dense/bias/.ATTRIBUTES/VARIABLE_VALUE"]))


def test_same_labels_start_from_the_source_encoder_and_head(sources, tmp_path):
    task, core, record = _started("classify", dict(
        model_dir=str(tmp_path / "m"), train_file=sources["dev"], label_map=LABEL_MAP,
        init_from=sources["cls"], **TWEETS))
    assert task.settings.pooling == "mean"  # --pooling=auto: the source's
    assert _equal(core.get_layer("encoder"), _saved(sources["cls"], warm_start.ENCODER_EDGE))
    assert _head_equal(core.layers[-1], _saved(sources["cls"], warm_start.HEAD_EDGE))
    assert record["head"] == "reused" and record["task"] == "classification"
    assert record["path"] == os.path.abspath(sources["cls"])


def test_other_labels_or_another_task_take_the_encoder_and_a_new_head(sources, tmp_path):
    two = write_two_class_csv(tmp_path / "two.csv", 32, 5, raw=("neg", "pos"))
    _, core, record = _started("classify", dict(
        model_dir=str(tmp_path / "m"), train_file=two, init_from=sources["cls"], **TWEETS))
    assert _equal(core.get_layer("encoder"), _saved(sources["cls"], warm_start.ENCODER_EDGE))
    assert core.layers[-1].weights[0].shape == (32, 2)  # a new head, for the new labels
    assert record["head"] == "new: the source predicts ['-1', '0', '1'], this run ['neg', 'pos']"
    _, core, record = _started("squad", dict(
        model_dir=str(tmp_path / "s"), train_file=sources["squad_file"], max_query_length=12,
        doc_stride=12, init_from=sources["cls"]))
    assert _equal(core.get_layer("encoder"), _saved(sources["cls"], warm_start.ENCODER_EDGE))
    assert "a classification head, this run's a squad one" in record["head"]


def test_an_fp32_export_gives_its_encoder_and_head_by_name(sources, tmp_path):
    export = os.path.join(sources["cls"], "export", "1")
    _, core, record = _started("classify", dict(
        model_dir=str(tmp_path / "m"), train_file=sources["dev"], label_map=LABEL_MAP,
        pooling="mean", init_from=export, **TWEETS))
    assert record["head"] == "reused" and record["checkpoint_kind"] == "export"
    encoder = core.get_layer("encoder")
    saved = _saved(sources["cls"], warm_start.ENCODER_EDGE)
    # the pooler, which a mean-pooling export never reads, keeps the encoder's own values
    assert _equal(encoder, {k: v for k, v in saved.items() if "pooler" not in k}
                  | {v.name.replace("/", ".S") + "/.ATTRIBUTES/VARIABLE_VALUE": v.numpy()
                     for v in encoder.weights if "pooler" in v.name})
    assert _head_equal(core.layers[-1], _saved(sources["cls"], warm_start.HEAD_EDGE))
    _, core, record = _started("classify", dict(
        model_dir=str(tmp_path / "n"), train_file=sources["dev"],
        label_map="-1:bad,0:meh,1:good", init_from=export, **TWEETS))
    assert record["head"].startswith("new: the export predicts ['negative', 'neutral'")


def test_squad_v1_to_v2_reuses_the_span_head(sources, tmp_path):
    _, core, record = _started("squad", dict(
        model_dir=str(tmp_path / "v2"), train_file=sources["squad_file"], max_query_length=12,
        doc_stride=12, version_2_with_negative=True, init_from=sources["squad"]))
    assert record["head"] == "reused"
    assert _equal(core.get_layer("encoder"), _saved(sources["squad"], warm_start.ENCODER_EDGE))
    assert _head_equal(core.layers[-1], _saved(sources["squad"], warm_start.HEAD_EDGE))


def test_run_json_records_the_source_and_a_rerun_resumes_its_own_checkpoints(sources, tmp_path):
    model_dir = str(tmp_path / "m")
    source = tmp_path / "source"
    shutil.copytree(sources["cls"], source)
    values = dict(model_dir=model_dir, train_file=sources["dev"], label_map=LABEL_MAP,
                  init_from=str(source), num_train_epochs=1, layer_decay=0.8, reinit_layers=1,
                  **TWEETS, **COMMON)
    table.run("classify", "train", **values)
    record = json.load(open(os.path.join(model_dir, "run.json")))
    assert (record["layer_decay"], record["reinit_layers"]) == (0.8, 1)
    assert record["encoder_handle"] == "tiny"
    assert record["init_from"]["path"] == str(source)
    assert record["init_from"]["task"] == "classification"
    assert record["init_from"]["checkpoint"] == "checkpoints/ckpt-24"
    assert record["init_from"]["git"] == json.load(open(source / "run.json"))["git"]
    # The source gone, a longer rerun resumes the new run's own checkpoint (step 4 of 30
    # dev rows / 8) and trains on from there.
    shutil.rmtree(source)
    timing = table.run("classify", "train", **dict(values, num_train_epochs=2,
                                                    allow_changed_settings=True))
    assert timing["steps"] == 3  # one more epoch of 3 steps, from step 3
    assert checkpoints.newest_first(model_dir)[0].endswith("ckpt-6")
    assert json.load(open(os.path.join(model_dir, "run.json")))["init_from"] == record["init_from"]
    # eval and predict with the same flags need no source either
    assert "accuracy" in table.run("classify", "eval", **dict(values, eval_file=sources["dev"]))


def test_multi_task_source_gives_the_named_task_head(sources, tiny_hub, tmp_path):
    specs = dict(tweets=dict(kind="classify", train_file=sources["train"], label_map=LABEL_MAP,
                             **TWEETS),
                 squad=dict(kind="squad", train_file=sources["squad_file"], max_query_length=12,
                            doc_stride=12))
    model_dir = str(tmp_path / "multi")
    runner.run("train", multitask.MultiTask, multitask.Settings(
        model_dir=model_dir, tasks=specs, num_train_epochs=1, **COMMON), None)
    assert json.load(open(os.path.join(model_dir, "run.json")))["heads"] == {
        "tweets": "classification", "squad": "squad"}
    _, core, record = _started("squad", dict(
        model_dir=str(tmp_path / "m"), train_file=sources["squad_file"], max_query_length=12,
        doc_stride=12, init_from=model_dir, init_from_task="squad"))
    assert record["head"] == "reused" and record["init_from_task"] == "squad"
    assert _head_equal(core.layers[-1], _saved(model_dir, "squad/" + warm_start.HEAD_EDGE))
    assert _equal(core.get_layer("encoder"),  # (saved once, under the first task)
                  _saved(model_dir, "tweets/" + warm_start.ENCODER_EDGE))
    _, core, record = _started("squad", dict(
        model_dir=str(tmp_path / "n"), train_file=sources["squad_file"], max_query_length=12,
        doc_stride=12, init_from=model_dir))
    assert record["head"].startswith("new: a multi-task source gives its encoder alone")
    # A multi-task run warm-started from it: the encoder, and each task's head by name.
    _, _, record = _started_task(multitask.MultiTask, multitask.Settings(
        model_dir=str(tmp_path / "multi2"), tasks=specs, init_from=model_dir, **COMMON), None)
    assert record["heads"]["tweets"]["head"] == record["heads"]["squad"]["head"] == "reused"
    # No --init_from for the run, one task's own in its spec: that task's head alone.
    specs["tweets"]["init_from"] = sources["cls"]
    _, _, record = _started_task(multitask.MultiTask, multitask.Settings(
        model_dir=str(tmp_path / "multi3"), tasks=specs, **COMMON), None)
    assert record == {"heads": {"tweets": dict(warm_start.Source(sources["cls"]).describe(True))}}


def test_refusals_name_what_is_wrong(sources, tiny_hub, tmp_path):
    def refused(**values):
        with pytest.raises(UsageError) as e:
            _started("classify", dict(model_dir=str(tmp_path / "m"), train_file=sources["dev"],
                                      label_map=LABEL_MAP, **TWEETS, **values))
        return str(e.value)

    assert "is this run's model_dir" in refused(init_from=str(tmp_path / "m"))
    assert "no run.json" in refused(init_from=str(tmp_path))
    assert "not a multi-task one" in refused(init_from=sources["cls"], init_from_task="x")
    # Another vocabulary, same shapes: refused naming both encoders.
    other = tmp_path / "other"
    shutil.copytree(tiny_hub, other)
    vocab = other / "encoder" / "assets" / "vocab.txt"
    lines = vocab.read_text().splitlines()
    vocab.write_text("\n".join([lines[1], lines[0]] + lines[2:]) + "\n")
    message = refused(init_from=sources["cls"], encoder_handle=str(other / "encoder"))
    assert "another vocabulary" in message and "tiny" in message and str(other) in message
    # Another architecture (a third layer), the same vocabulary: refused naming both.
    deeper = tmp_path / "deeper"
    shutil.copytree(os.path.join(tiny_hub, "preprocessor"), deeper / "preprocessor")
    _, config, vocab_file, lower = build.source_checkpoint(build.TINY)
    build.save_encoder(str(deeper / "encoder"), dataclasses.replace(config, num_hidden_layers=3),
                       vocab_file, lower)
    message = refused(init_from=sources["cls"], encoder_handle=str(deeper / "encoder"))
    assert "does not fit this run's encoder" in message
    assert "tiny" in message and str(deeper) in message
