"""tasks.classify.train as a user runs it: every mode, label map, resume, flagfile, bad input."""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.helpers import ROOT, run_module
from zoo import precision

WORDS = {"-1": ["awful", "boring", "hated", "terrible"], "0": ["released", "monday", "actors"],
         "1": ["great", "loved", "wonderful", "brilliant"]}
LABEL_MAP = "-1:negative,0:neutral,1:positive"


def _write_csv(path, n, seed, with_label=True):
    import random  # pylint: disable=import-outside-toplevel
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "tweet"] + (["sentiment"] if with_label else []))
        for i in range(n):
            label = rng.choice(sorted(WORDS))
            text = " ".join(rng.choice(WORDS[label]) for _ in range(rng.randint(1, 12)))
            writer.writerow([f"{seed}-{i}", text] + ([label] if with_label else []))
    return str(path)


def _classify(model_dir, *extra, **kwargs):
    args = ["--encoder_handle=tiny", f"--model_dir={model_dir}", "--text_column=tweet",
            "--label_column=sentiment", "--id_column=id", f"--label_map={LABEL_MAP}",
            "--train_batch_size=8", "--eval_batch_size=16", "--max_seq_length=32", *extra]
    return run_module("tasks.classify.train", *args, **kwargs)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("tweets")
    return dict(train=_write_csv(root / "train.csv", 96, 1), dev=_write_csv(root / "dev.csv", 30, 2),
                predict=_write_csv(root / "predict.csv", 23, 3, with_label=False), root=root)


@pytest.fixture(scope="module")
def trained(data, tiny_hub):
    model_dir = str(data["root"] / "model")
    result = _classify(model_dir, "--mode=train_and_eval", f"--train_file={data['train']}",
                       f"--eval_file={data['dev']}", "--num_train_epochs=10",
                       "--learning_rate=3e-3", "--warmup_proportion=0.05",
                       f"--export_dir={model_dir}/export/1", "--checkpoint_every=5")
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir


def test_train_and_eval_writes_everything_to_the_model_dir(trained):
    for name in ("eval_results.json", "history.json", "train_results.json", "labels.json",
                 "flags.txt", "training_curves.png", "confusion_matrix.png"):
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
    assert [h["epoch"] for h in history] == list(range(1, 11))
    assert history[-1]["train_loss"] < 0.75 * history[0]["train_loss"]
    assert os.path.exists(os.path.join(trained, "export", "1", "saved_model.pb"))


def test_eval_mode_reproduces_the_last_evaluation(trained, data):
    last = json.load(open(os.path.join(trained, "eval_results.json")))
    result = _classify(trained, "--mode=eval", f"--eval_file={data['dev']}")
    assert result.returncode == 0, result.stderr[-3000:]
    again = json.load(open(os.path.join(trained, "eval_results.json")))
    assert again["accuracy"] == last["accuracy"]
    assert again["loss"] == pytest.approx(last["loss"], abs=1e-5)


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_predict_writes_one_labelled_row_per_input_in_order(trained, data, suffix):
    output = os.path.join(trained, f"predictions.{suffix}")
    result = _classify(trained, "--mode=predict", f"--predict_file={data['predict']}",
                       f"--output_file={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    inputs = list(csv.DictReader(open(data["predict"])))
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


def test_export_mode_and_the_exported_label_names(trained, tmp_path):
    export_dir = str(tmp_path / "serving" / "7")
    result = _classify(trained, "--mode=export", f"--export_dir={export_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    texts = tf.constant(["loved it, brilliant", "boring and awful", "released on monday"])
    served = tf.saved_model.load(export_dir).signatures["serving_default"](text=texts)
    first = tf.saved_model.load(os.path.join(trained, "export", "1")).signatures[
        "serving_default"](text=texts)
    assert {x.decode() for x in served["label"].numpy()} <= {"negative", "neutral", "positive"}
    assert served["label"].numpy().tolist() == first["label"].numpy().tolist()


def test_export_mode_in_bf16_gives_the_labels_of_the_fp32_export(trained, tmp_path):
    export_dir = str(tmp_path / "bf16" / "1")
    result = _classify(trained, "--mode=export", f"--export_dir={export_dir}",
                       "--export_precision=bf16")
    if not precision.cpu_flags() & precision.REWRITE_CPU_FLAGS:
        assert result.returncode != 0
        assert "--export_precision=bf16 needs a CPU" in result.stderr
        return
    assert result.returncode == 0, result.stderr[-3000:]
    texts = tf.constant(["loved it, brilliant", "boring and awful", "released on monday",
                         "great actors, terrible film"])
    served = tf.saved_model.load(export_dir).signatures["serving_default"](text=texts)
    fp32 = tf.saved_model.load(os.path.join(trained, "export", "1")).signatures[
        "serving_default"](text=texts)
    np.testing.assert_allclose(served["probabilities"].numpy(), fp32["probabilities"].numpy(),
                               atol=0.03)
    assert served["label"].numpy().tolist() == fp32["label"].numpy().tolist()


def test_flagfile_reruns_with_the_saved_flags(trained, data):
    result = run_module("tasks.classify.train", f"--flagfile={trained}/flags.txt", "--mode=eval",
                        f"--eval_file={data['dev']}")
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_killed_run_resumes_from_its_checkpoint(data, tiny_hub, tmp_path):
    model_dir = tmp_path / "model"
    big = _write_csv(tmp_path / "big.csv", 300, 9)
    args = [sys.executable, "-m", "tasks.classify.train", "--encoder_handle=tiny",
            f"--model_dir={model_dir}", "--text_column=tweet", "--label_column=sentiment",
            f"--train_file={big}", "--mode=train", "--train_batch_size=4", "--num_train_epochs=2",
            "--max_seq_length=32", "--checkpoint_every=10"]
    process = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    checkpoint_dir = model_dir / "checkpoints"
    while time.time() < deadline and process.poll() is None:
        if tf.train.latest_checkpoint(str(checkpoint_dir)):  # a complete, recorded checkpoint
            break
        time.sleep(0.05)
    assert process.poll() is None, "training ended before it could be interrupted"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    done_before = int(tf.train.latest_checkpoint(str(checkpoint_dir)).rsplit("-", 1)[1])
    assert 0 < done_before < 150
    result = run_module("tasks.classify.train", *args[3:])
    assert result.returncode == 0, result.stderr[-3000:]
    timing = json.load(open(model_dir / "train_results.json"))
    assert timing["steps"] == 150 - done_before  # only the rest was trained
    assert tf.train.latest_checkpoint(str(checkpoint_dir)).endswith("-150")


def _two_class_csv(path, n, seed, raw=("-1", "1")):
    """Rows alternating between raw[0] (negative words) and raw[1] (positive words)."""
    import random  # pylint: disable=import-outside-toplevel
    rng = random.Random(seed)
    words = {raw[0]: WORDS["-1"], raw[1]: WORDS["1"]}
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "tweet", "sentiment"])
        for i in range(n):
            label = raw[i % 2]
            writer.writerow([i, " ".join(rng.choice(words[label]) for _ in range(4)), label])
    return str(path)


@pytest.mark.skipif(not {"amx_bf16", "avx512_bf16"} & precision.cpu_flags(),
                    reason="this CPU has no bf16 instructions (amx_bf16, avx512_bf16)")
def test_bf16_training_end_to_end(tmp_path, tiny_hub):
    """--precision=bf16 asked for on a CPU with bf16 instructions (AMX or AVX512_BF16, where auto
    picks it too): the run trains in bf16, learns, and evaluates in bf16 as asked."""
    model_dir = str(tmp_path / "model")
    result = _classify(model_dir, "--mode=train_and_eval", "--precision=bf16",
                       f"--train_file={_two_class_csv(tmp_path / 'train.csv', 192, 1)}",
                       f"--eval_file={_two_class_csv(tmp_path / 'dev.csv', 16, 2)}",
                       "--num_train_epochs=2", "--learning_rate=3e-3", "--warmup_proportion=0.05")
    assert result.returncode == 0, result.stderr[-3000:]
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
    train_file = _two_class_csv(tmp_path / "train.csv", 192, 1, raw)  # 48 steps in 2 epochs
    dev_file = _two_class_csv(tmp_path / "dev.csv", 16, 2, raw)
    result = _classify(model_dir, "--mode=train_and_eval", f"--train_file={train_file}",
                       f"--eval_file={dev_file}", f"--label_map={label_map}",
                       "--num_train_epochs=2", "--learning_rate=3e-3", "--warmup_proportion=0.05",
                       f"--export_dir={model_dir}/export/1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.load(open(os.path.join(model_dir, "eval_results.json")))["accuracy"] == 1.0
    labels = json.load(open(os.path.join(model_dir, "labels.json")))
    assert labels["raw_labels"] == list(raw) and labels["names"] == [names[r] for r in raw]
    output = os.path.join(model_dir, "predictions.csv")
    result = _classify(model_dir, "--mode=predict", f"--predict_file={dev_file}",
                       f"--label_map={label_map}", f"--output_file={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    gold = [r["sentiment"] for r in csv.DictReader(open(dev_file))]
    predicted = [r["label"] for r in csv.DictReader(open(output))]
    assert predicted == [names[g] for g in gold]
    served = tf.saved_model.load(os.path.join(model_dir, "export", "1")).signatures[
        "serving_default"](text=tf.constant(["loved it, brilliant", "boring and awful"]))
    assert [x.decode() for x in served["label"].numpy()] == [names[raw[1]], names[raw[0]]]


def test_a_rerun_with_other_settings_stops_unless_allowed(data, tiny_hub, tmp_path):
    model_dir = str(tmp_path / "model")
    train_file = tmp_path / "train.csv"
    train_file.write_text(open(data["train"], encoding="utf-8").read(), encoding="utf-8")
    result = _classify(model_dir, "--mode=train", f"--train_file={train_file}",
                       "--num_train_epochs=1")
    assert result.returncode == 0, result.stderr[-3000:]
    saved = json.load(open(os.path.join(model_dir, "run.json")))
    assert saved["task"] == "classification" and saved["outputs"] == ["-1", "0", "1"]
    assert saved["pooling"] == "cls"  # --pooling=auto, resolved: the tiny encoder's pooler
    assert (saved["learning_rate"], saved["head_learning_rate_multiplier"]) == (1e-4, 10.0)

    with open(train_file, "a", encoding="utf-8") as f:  # the data changes too
        f.write("x1,loved it,1\n")
    result = _classify(model_dir, "--mode=train", f"--train_file={train_file}",
                       "--num_train_epochs=2", "--train_batch_size=16")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    for change in ("train_batch_size: 8 -> 16", "num_train_epochs: 1.0 -> 2.0", "data: "):
        assert change in result.stderr, result.stderr[-2000:]
    assert "--allow_changed_settings" in result.stderr

    result = _classify(model_dir, "--mode=train", f"--train_file={train_file}",
                       "--num_train_epochs=2", "--allow_changed_settings")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning: resuming with a changed setting: num_train_epochs: 1.0 -> 2.0" in \
        result.stdout
    timing = json.load(open(os.path.join(model_dir, "train_results.json")))
    assert timing["steps"] == 12  # 97 rows: 12 steps an epoch; the second epoch only
    assert json.load(open(os.path.join(model_dir, "run.json")))["num_train_epochs"] == 2.0

    # A restore with another encoder or task names what differs, before any weights are used.
    result = _classify(model_dir, "--mode=eval", f"--eval_file={data['dev']}",
                       "--encoder_handle=minilm_l6_h384_uncased")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "encoder_handle: 'tiny' -> 'minilm_l6_h384_uncased'" in result.stderr
    result = run_module("tasks.squad.train", "--mode=eval", f"--eval_file={data['dev']}",
                        f"--model_dir={model_dir}", "--encoder_handle=tiny")
    assert result.returncode != 0 and "task: 'classification' -> 'squad'" in result.stderr


def test_bad_rows_and_unknown_labels_end_with_a_clear_error(data, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,tweet,sentiment\n1,fine,1\n2,oops,1,extra\n")
    result = _classify(str(tmp_path / "m1"), "--mode=train", f"--train_file={bad}")
    assert result.returncode != 0
    assert f"error: {bad}:3: 4 columns, the header has 3" in result.stderr
    assert "Traceback" not in result.stderr
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("id,tweet,sentiment\n1,fine,1\n2,meh,5\n")
    result = _classify(str(tmp_path / "m2"), "--mode=train_and_eval",
                       f"--train_file={data['train']}", f"--eval_file={unknown}")
    assert result.returncode != 0 and f"{unknown}:3: unknown label '5'" in result.stderr


def _sharded(root, data):
    """The training rows in three shards, with three bad rows in the second one."""
    rows = open(data["train"], encoding="utf-8").read().splitlines()
    header, body = rows[0], rows[1:]
    os.makedirs(root, exist_ok=True)
    for shard in range(3):
        lines = body[shard::3]
        if shard == 1:
            lines[2:2] = ["x1,,1", "x2,only two", "x3,so so,7"]  # empty text, 2 columns, label 7
        with open(os.path.join(root, f"part-{shard}.csv"), "w", encoding="utf-8") as f:
            f.write("\n".join([header] + lines) + "\n")
    return os.path.join(root, "part-*.csv")


def test_sharded_training_with_skipped_bad_rows_and_check_data(data, tmp_path):
    train_glob = _sharded(str(tmp_path / "shards"), data)
    model_dir = str(tmp_path / "skip")
    result = _classify(model_dir, "--mode=check_data", f"--train_file={train_glob}",
                       f"--eval_file={data['dev']}")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.load(open(os.path.join(model_dir, "data_check_train.json")))
    assert (report["files"], report["rows"], report["bad_rows"]) == (3, 99, 3)
    assert report["rows_used"] == 96 and report["token_lengths"]["max_seq_length"] == 32
    assert len(report["shards"]) == 3 and not report["single_label_shards"]
    assert "data check, train: 99 rows in 3 file(s), 96 used, 3 bad" in result.stdout
    assert os.path.exists(os.path.join(model_dir, "data_check_eval.json"))

    result = _classify(model_dir, "--mode=train", f"--train_file={train_glob}",
                       "--num_train_epochs=1")
    assert result.returncode != 0 and "part-1.csv:4: empty text" in result.stderr

    result = _classify(model_dir, "--mode=train", f"--train_file={train_glob}",
                       "--num_train_epochs=1", "--bad_rows=skip")
    assert result.returncode == 0, result.stderr[-3000:]
    trained = json.load(open(os.path.join(model_dir, "train_results.json")))
    assert (trained["train_examples"], trained["skipped_bad_rows"], trained["steps"]) == (96, 3, 12)
    rejected = [json.loads(line) for line in open(os.path.join(model_dir,
                                                               "rejected_rows_train.jsonl"))]
    assert [(r["source"].rsplit("/", 1)[1], r["reason"].split(" ")[0]) for r in rejected] == [
        ("part-1.csv:4", "empty"), ("part-1.csv:5", "2"), ("part-1.csv:6", "unknown")]

    predict_glob = _sharded(str(tmp_path / "predict_shards"), data)
    output = tmp_path / "out.csv"
    result = _classify(model_dir, "--mode=predict", f"--predict_file={predict_glob}",
                       f"--output_file={output}", "--bad_rows=skip")
    assert result.returncode == 0, result.stderr[-3000:]
    written = list(csv.DictReader(open(output, encoding="utf-8")))
    expected_ids = [line.split(",")[0] for shard in sorted(os.listdir(tmp_path / "predict_shards"))
                    for line in open(tmp_path / "predict_shards" / shard).read().splitlines()[1:]]
    assert len(written) == 99 and [w["id"] for w in written] == [
        i if i != "x2" else "" for i in expected_ids]
    assert [w["error"] != "" for w in written].count(True) == 2  # label 7 is no error in predict
    assert all(w["label"] for w in written if not w["error"])


TFDS_RUN = """
import sys
import tensorflow_datasets as tfds
from absl import app
from tasks.classify import train
with tfds.testing.mock_data(num_examples=24):
    app.run(train.main, argv=["train"] + sys.argv[1:])
"""


def test_tfds_source_through_the_task(tmp_path, tiny_hub):
    model_dir = tmp_path / "tfds"
    result = subprocess.run(
        [sys.executable, "-c", TFDS_RUN, "--tfds_name=glue/mrpc", f"--model_dir={model_dir}",
         "--encoder_handle=tiny", "--mode=train_and_eval", "--num_train_epochs=1",
         "--train_batch_size=8", "--max_seq_length=32"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    labels = json.load(open(model_dir / "labels.json"))
    assert set(labels["names"]) <= {"equivalent", "not_equivalent"}
    assert json.load(open(model_dir / "eval_results.json"))["num_examples"] == 24


KILLED_WHILE_SAVING = """
import os, signal, sys
import tensorflow as tf
from absl import app
from tasks.classify import train

real_save = tf.train.CheckpointManager.save
calls = []

def save(self, checkpoint_number=None, **kwargs):
    calls.append(checkpoint_number)
    if len(calls) < 3:
        return real_save(self, checkpoint_number=checkpoint_number, **kwargs)
    # The third checkpoint: its files are being written when the process is killed (-9).
    prefix = os.path.join(self.directory, f"ckpt-{checkpoint_number}")
    written = self._checkpoint.write(prefix)
    for name in os.listdir(self.directory):
        if name.startswith(f"ckpt-{checkpoint_number}.data"):
            path = os.path.join(self.directory, name)
            os.truncate(path, os.path.getsize(path) // 2)
    os.kill(os.getpid(), signal.SIGKILL)

tf.train.CheckpointManager.save = save
app.run(train.main, argv=["train"] + sys.argv[1:])
"""


def test_killed_while_writing_a_checkpoint_resumes_from_the_last_complete_one(data, tiny_hub,
                                                                              tmp_path):
    model_dir = tmp_path / "model"
    args = ["--encoder_handle=tiny", f"--model_dir={model_dir}", "--text_column=tweet",
            "--label_column=sentiment", f"--train_file={data['train']}", "--mode=train",
            "--train_batch_size=8", "--num_train_epochs=2", "--max_seq_length=32",
            "--checkpoint_every=4"]
    killed = subprocess.run([sys.executable, "-c", KILLED_WHILE_SAVING, *args], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    checkpoint_dir = str(model_dir / "checkpoints")
    assert tf.train.latest_checkpoint(checkpoint_dir).endswith("ckpt-8")  # the last complete
    assert any(n.startswith("ckpt-12.data") for n in os.listdir(checkpoint_dir))  # half-written
    result = run_module("tasks.classify.train", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.load(open(model_dir / "train_results.json"))["steps"] == 24 - 8
    assert tf.train.latest_checkpoint(checkpoint_dir).endswith("ckpt-24")


def test_a_corrupt_latest_checkpoint_falls_back_to_the_one_before(trained, data, tmp_path):
    model_dir = tmp_path / "copy"
    shutil.copytree(trained, model_dir)
    checkpoint_dir = model_dir / "checkpoints"
    latest = tf.train.latest_checkpoint(str(checkpoint_dir))
    for name in os.listdir(checkpoint_dir):  # a copy cut short: the newest data file truncated
        if name.startswith(os.path.basename(latest) + ".data"):
            os.truncate(checkpoint_dir / name, os.path.getsize(checkpoint_dir / name) // 2)
    result = _classify(str(model_dir), "--mode=eval", f"--eval_file={data['dev']}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"warning: {latest}: unreadable checkpoint" in result.stdout
    os.remove(model_dir / "eval_results.json")
    result = _classify(str(model_dir), "--mode=eval", f"--eval_file={data['dev']}")
    assert result.returncode == 0 and "unreadable checkpoint" in result.stdout
    assert json.load(open(model_dir / "eval_results.json"))["examples"] == 30  # evaluated


FULL_DISK_EXPORT = """
import errno, os, sys
import tensorflow as tf
from absl import app
from tasks.classify import train

def save(obj, export_dir, signatures=None, options=None):  # the disk fills half-way
    with open(os.path.join(export_dir, "saved_model.pb"), "wb") as f:
        f.write(b"half a model")
    raise OSError(errno.ENOSPC, "No space left on device")

tf.saved_model.save = save
app.run(train.main, argv=["train"] + sys.argv[1:])
"""


def test_a_disk_that_fills_during_export_leaves_the_previous_export_intact(trained):
    export_dir = os.path.join(trained, "export", "1")
    before = sorted(os.listdir(export_dir))
    texts = tf.constant(["loved it, brilliant", "boring and awful"])
    served = tf.saved_model.load(export_dir).signatures["serving_default"](text=texts)
    result = subprocess.run(
        [sys.executable, "-c", FULL_DISK_EXPORT, "--encoder_handle=tiny",
         f"--model_dir={trained}", "--text_column=tweet", "--label_column=sentiment",
         f"--label_map={LABEL_MAP}", "--max_seq_length=32", "--mode=export",
         f"--export_dir={export_dir}"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: export to {export_dir} failed (No space left on device); the export that was "
        "there is unchanged")
    assert sorted(os.listdir(export_dir)) == before
    assert not [n for n in os.listdir(os.path.dirname(export_dir)) if n.startswith(".1-")]
    again = tf.saved_model.load(export_dir).signatures["serving_default"](text=texts)
    assert again["label"].numpy().tolist() == served["label"].numpy().tolist()
