"""The classify kind in-process (`zoo.kinds.table.run`): every mode on one trained model, label
maps, settings a rerun may not change, a corrupt checkpoint. The command line's own behaviour
(flags, flagfiles, one-line errors, killed processes) is in tests/tasks/test_classify.py."""
import csv
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests.helpers import zoo_inline
from tests.tweets import classify, write_csv, write_two_class_csv
from zoo.base.errors import UsageError
from zoo.data.text_files import DataError
from zoo.compute import precision
from zoo.kinds import table


_classify = classify


@pytest.fixture(scope="module")
def trained(tweets, tiny_hub):
    model_dir = str(tweets["root"] / "model")
    # 120 steps in 2 epochs of 480 rows (not 10 of 96): as many steps, a fifth of the
    # evaluations and epoch starts
    train = write_csv(tweets["root"] / "train_480.csv", 480, 1)
    _classify("train_and_eval", model_dir, train_file=train, eval_file=tweets["dev"],
              num_train_epochs=2, learning_rate=3e-3, warmup_proportion=0.05,
              export_dir=f"{model_dir}/export/1", checkpoint_every=5)
    return model_dir


def test_train_and_eval_writes_everything_to_the_model_dir(trained):
    for name in ("eval_results.json", "history.json", "train_results.json", "labels.json",
                 "run.json", "training_curves.png", "confusion_matrix.png"):
        assert os.path.exists(os.path.join(trained, name)), name
    assert os.listdir(os.path.join(trained, "train"))  # TensorBoard summaries
    results = json.load(open(os.path.join(trained, "eval_results.json")))
    assert results["label_names"] == ["negative", "neutral", "positive"]
    assert {"accuracy", "f1_macro", "f1_weighted", "mcc", "loss"} <= set(results)
    # The words give the label away. A 32-wide random BERT sometimes merges two of the three
    # classes for a while, so ask for well above chance (1/3), not for perfection.
    assert results["accuracy"] > 0.5
    timing = json.load(open(os.path.join(trained, "train_results.json")))
    assert timing["precision"] == precision.resolve("auto")  # the default, as applied
    assert timing["xla_fusion"] is False  # bucketed batches vary in length: not fused
    history = json.load(open(os.path.join(trained, "history.json")))
    assert [h["epoch"] for h in history] == [1, 2]
    assert history[-1]["train_loss"] < 0.75 * history[0]["train_loss"]
    assert os.path.exists(os.path.join(trained, "export", "1", "saved_model.pb"))


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_predict_writes_one_labelled_row_per_input_in_order(trained, tweets, suffix):
    output = os.path.join(trained, f"predictions.{suffix}")
    assert _classify("predict", trained, predict_file=tweets["predict"], output_file=output) == 23
    inputs = list(csv.DictReader(open(tweets["predict"])))
    if suffix == "csv":
        rows = list(csv.DictReader(open(output)))
    else:
        rows = [json.loads(line) for line in open(output)]
    assert [r["id"] for r in rows] == [r["id"] for r in inputs]
    assert all(0 < float(r["score"]) <= 1 for r in rows)
    # Row by row the same as the exported model (trained fixture's export) on the same texts:
    # order restored after length sorting, label ids mapped to the right names.
    served = tf.saved_model.load(os.path.join(trained, "export", "1")).signatures[
        "serving_default"](text=tf.constant([r["tweet"] for r in inputs]))
    assert [r["label"] for r in rows] == [x.decode() for x in served["label"].numpy()]
    scores = served["probabilities"].numpy().max(axis=1)
    assert [float(r["score"]) for r in rows] == pytest.approx(scores.tolist(), abs=1e-4)


TEXTS = ["loved it, brilliant", "boring and awful", "released on monday",
         "great actors, terrible film"]


def _serve(export_dir, texts=TEXTS):
    return tf.saved_model.load(export_dir).signatures["serving_default"](text=tf.constant(texts))


def test_export_mode_in_bf16_gives_the_labels_of_the_fp32_export(trained, tmp_path):
    export_dir = str(tmp_path / "bf16" / "1")
    if not precision.cpu_flags() & precision.REWRITE_CPU_FLAGS:
        with pytest.raises(UsageError, match="export_precision=bf16 needs a CPU"):
            _classify("export", trained, export_dir=export_dir, export_precision="bf16")
        return
    _classify("export", trained, export_dir=export_dir, export_precision="bf16")
    served, fp32 = _serve(export_dir), _serve(os.path.join(trained, "export", "1"))
    np.testing.assert_allclose(served["probabilities"].numpy(), fp32["probabilities"].numpy(),
                               atol=0.03)
    assert served["label"].numpy().tolist() == fp32["label"].numpy().tolist()


@pytest.mark.skipif(not {"amx_bf16", "avx512_bf16"} & precision.cpu_flags(),
                    reason="this CPU has no bf16 instructions (amx_bf16, avx512_bf16)")
def test_bf16_training_end_to_end(tmp_path, tiny_hub):
    """precision="bf16" asked for on a CPU with bf16 instructions (AMX or AVX512_BF16, where auto
    picks it too): the run trains in bf16, learns, and evaluates in bf16 as asked."""
    model_dir = str(tmp_path / "model")
    _classify("train_and_eval", model_dir, precision="bf16",
              train_file=write_two_class_csv(tmp_path / "train.csv", 192, 1),
              eval_file=write_two_class_csv(tmp_path / "dev.csv", 16, 2),
              num_train_epochs=2, learning_rate=3e-3, warmup_proportion=0.05)
    timing = json.load(open(os.path.join(model_dir, "train_results.json")))
    assert timing["precision"] == "bf16"
    assert json.load(open(os.path.join(model_dir, "eval_results.json")))["accuracy"] >= 0.9


@pytest.mark.parametrize("raw,label_map", [(("1", "2"), "1:0,2:1"),  # 1-based renamed 0-based
                                           (("0", "1"), "0:1,1:0")])  # a swap
def test_a_label_map_whose_names_are_other_raw_labels(tmp_path, tiny_hub, raw, label_map):
    """A raw label always means its raw value, also when a mapped name spells another raw label
    (before, raw "1" took the id of the name "1", and the swap undid itself)."""
    names = dict(item.split(":") for item in label_map.split(","))
    model_dir = str(tmp_path / "model")
    train_file = write_two_class_csv(tmp_path / "train.csv", 192, 1, raw)  # 48 steps in 2 epochs
    dev_file = write_two_class_csv(tmp_path / "dev.csv", 16, 2, raw)
    results = _classify("train_and_eval", model_dir, train_file=train_file, eval_file=dev_file,
                        label_map=label_map, num_train_epochs=2, learning_rate=3e-3,
                        warmup_proportion=0.05, export_dir=f"{model_dir}/export/1")
    assert results["steps"] == 48
    assert json.load(open(os.path.join(model_dir, "eval_results.json")))["accuracy"] == 1.0
    labels = json.load(open(os.path.join(model_dir, "labels.json")))
    assert labels["raw_labels"] == list(raw) and labels["names"] == [names[r] for r in raw]
    output = os.path.join(model_dir, "predictions.csv")
    _classify("predict", model_dir, predict_file=dev_file, label_map=label_map,
              output_file=output)
    gold = [r["sentiment"] for r in csv.DictReader(open(dev_file))]
    predicted = [r["label"] for r in csv.DictReader(open(output))]
    assert predicted == [names[g] for g in gold]
    served = _serve(os.path.join(model_dir, "export", "1"), TEXTS[:2])
    assert [x.decode() for x in served["label"].numpy()] == [names[raw[1]], names[raw[0]]]


def test_a_rerun_with_other_settings_stops_unless_allowed(trained, tweets, tmp_path):
    """A rerun that changes the schedule or the data is refused, naming each change (a
    resume that is allowed to change them is in tests/kinds/test_every_kind.py)."""
    model_dir = str(tmp_path / "copy")
    shutil.copytree(trained, model_dir)
    saved = json.load(open(os.path.join(model_dir, "run.json")))
    assert saved["task"] == "classification" and saved["outputs"] == ["-1", "0", "1"]
    assert saved["pooling"] == "cls"  # pooling="auto", resolved: the tiny encoder's pooler
    assert (saved["learning_rate"], saved["head_learning_rate_multiplier"]) == (3e-3, 10.0)

    train_file = tmp_path / "train.csv"  # the data changes too
    train_file.write_text(open(os.path.join(tweets["root"], "train_480.csv"),
                               encoding="utf-8").read() + "x1,loved it,1\n", encoding="utf-8")
    with pytest.raises(UsageError) as refused:
        _classify("train", model_dir, train_file=str(train_file), num_train_epochs=3,
                  train_batch_size=16, learning_rate=3e-3, warmup_proportion=0.05)
    for change in ("train_batch_size: 8 -> 16", "num_train_epochs: 2.0 -> 3.0", "data: ",
                   "allow_changed_settings"):
        assert change in str(refused.value)

    # A restore with another encoder or task names what differs, before any weights are used.
    with pytest.raises(UsageError, match="encoder_handle: 'tiny' -> 'minilm_l6_h384_uncased'"):
        _classify("eval", model_dir, eval_file=tweets["dev"],
                  encoder_handle="minilm_l6_h384_uncased")
    with pytest.raises(UsageError, match="task: 'classification' -> 'squad'"):
        table.run("squad", "eval", eval_file=tweets["dev"], model_dir=model_dir,
                  encoder_handle="tiny")


def test_a_corrupt_latest_checkpoint_falls_back_to_the_one_before(trained, tweets, tmp_path,
                                                                  capsys):
    model_dir = tmp_path / "copy"
    shutil.copytree(trained, model_dir)
    checkpoint_dir = model_dir / "checkpoints"
    latest = tf.train.latest_checkpoint(str(checkpoint_dir))
    for name in os.listdir(checkpoint_dir):  # a copy cut short: the newest data file truncated
        if name.startswith(os.path.basename(latest) + ".data"):
            os.truncate(checkpoint_dir / name, os.path.getsize(checkpoint_dir / name) // 2)
    capsys.readouterr()
    assert _classify("eval", model_dir, eval_file=tweets["dev"])["examples"] == 30  # evaluated
    assert f"warning: {latest}: unreadable checkpoint" in capsys.readouterr().out


def test_unknown_keys_and_kinds_are_refused():
    with pytest.raises(UsageError, match=r"classify: unknown keys \['text_colum'\]"):
        table.run("classify", "train", model_dir="m", text_colum="tweet")
    with pytest.raises(UsageError, match="kind must be one of"):
        table.run("clasify", "train", model_dir="m")


def test_the_model_dir_gives_later_modes_its_model_and_columns(trained, tweets, tmp_path):
    """Trained on the tiny encoder at length 32 with columns and a label map: predict and eval
    given only the model dir and the data read them from run.json."""
    full, short = tmp_path / "full.csv", tmp_path / "short.csv"
    _classify("predict", trained, predict_file=tweets["predict"], output_file=str(full))
    assert table.run("classify", "predict", model_dir=trained, predict_file=tweets["predict"],
                     output_file=str(short)) == 23
    assert short.read_text() == full.read_text()
    numbers = [{k: v for k, v in results.items() if isinstance(v, float)} for results in (
        table.run("classify", "eval", model_dir=trained, eval_file=tweets["dev"]),
        _classify("eval", trained, eval_file=tweets["dev"]))]
    assert numbers[0] and numbers[0] == pytest.approx(numbers[1], abs=1e-6)
    # what would change the model is still refused
    with pytest.raises(UsageError, match="another model than this run builds:\n  pooling: "
                                         "'cls' -> 'mean'"):
        table.run("classify", "predict", model_dir=trained, predict_file=tweets["predict"],
                  output_file=str(short), pooling="mean")


def test_a_refused_training_run_takes_back_what_it_wrote(tmp_path, tiny_hub):
    del tiny_hub
    one_label = tmp_path / "one_label.csv"
    one_label.write_text("id,tweet,sentiment\n" + "".join(f"{i},great film {i},1\n"
                                                          for i in range(12)))
    result = zoo_inline("train", "classify", f"--model_dir={tmp_path / 'new'}",
                        f"--train_file={one_label}", f"--eval_file={one_label}",
                        "--text_column=tweet",
                        "--label_column=sentiment", "--encoder_handle=tiny")
    assert result.returncode == 1 and "need at least 2" in result.stderr
    assert not (tmp_path / "new").exists()  # flags.txt, .lock, run.json, labels.json: gone
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    with pytest.raises(DataError, match="need at least 2"):
        _classify("train", kept, train_file=str(one_label), label_map="")
    assert os.listdir(kept) == ["notes.txt"]
