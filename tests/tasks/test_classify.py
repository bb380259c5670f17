"""tasks.classify.train as a user runs it: flags and flagfiles, one-line errors, shards, TFDS,
killed runs and a full disk. The command lines run in this process (`run_inline`: the same
`main`, flags parsed afresh) except the runs that are killed, which need a process of their own.
The kind's modes themselves are tested in tests/kinds/test_classification.py."""
import csv
import errno
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from tests.helpers import ROOT, run_inline
from tests.tweets import LABEL_MAP, write_csv


def _classify(model_dir, *extra):
    args = ["--encoder_handle=tiny", f"--model_dir={model_dir}", "--text_column=tweet",
            "--label_column=sentiment", "--id_column=id", f"--label_map={LABEL_MAP}",
            "--train_batch_size=8", "--eval_batch_size=16", "--max_seq_length=32", *extra]
    return run_inline("tasks.classify.train", *args)


@pytest.fixture(scope="module")
def trained(tweets, tiny_hub):
    model_dir = str(tweets["root"] / "model")
    result = _classify(model_dir, "--mode=train_and_eval", f"--train_file={tweets['train']}",
                       f"--eval_file={tweets['dev']}", "--num_train_epochs=1",
                       f"--export_dir={model_dir}/export/1")
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir


def test_a_run_saves_its_flags_and_a_flagfile_reruns_with_them(trained, tweets):
    flags = open(os.path.join(trained, "flags.txt")).read().splitlines()
    assert f"--train_file={tweets['train']}" in flags and "--text_column=tweet" in flags
    assert os.path.exists(os.path.join(trained, "eval_results.json"))
    result = run_inline("tasks.classify.train", f"--flagfile={trained}/flags.txt", "--mode=eval",
                        f"--eval_file={tweets['dev']}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert os.path.exists(os.path.join(trained, "flags_eval.txt"))  # flags.txt is kept


def test_a_killed_run_resumes_from_its_checkpoint(tweets, tiny_hub, tmp_path):
    model_dir = tmp_path / "model"
    big = write_csv(tmp_path / "big.csv", 300, 9)
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
    result = run_inline("tasks.classify.train", *args[3:])
    assert result.returncode == 0, result.stderr[-3000:]
    timing = json.load(open(model_dir / "train_results.json"))
    assert timing["steps"] == 150 - done_before  # only the rest was trained
    assert tf.train.latest_checkpoint(str(checkpoint_dir)).endswith("-150")


def test_bad_rows_and_unknown_labels_end_with_a_clear_error(tweets, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,tweet,sentiment\n1,fine,1\n2,oops,1,extra\n")
    result = _classify(str(tmp_path / "m1"), "--mode=train", f"--train_file={bad}")
    assert result.returncode != 0
    assert f"error: {bad}:3: 4 columns, the header has 3" in result.stderr
    assert "Traceback" not in result.stderr
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("id,tweet,sentiment\n1,fine,1\n2,meh,5\n")
    result = _classify(str(tmp_path / "m2"), "--mode=train_and_eval",
                       f"--train_file={tweets['train']}", f"--eval_file={unknown}")
    assert result.returncode != 0 and f"{unknown}:3: unknown label '5'" in result.stderr


def _sharded(root, tweets):
    """The training rows in three shards, with three bad rows in the second one."""
    rows = open(tweets["train"], encoding="utf-8").read().splitlines()
    header, body = rows[0], rows[1:]
    os.makedirs(root, exist_ok=True)
    for shard in range(3):
        lines = body[shard::3]
        if shard == 1:
            lines[2:2] = ["x1,,1", "x2,only two", "x3,so so,7"]  # empty text, 2 columns, label 7
        with open(os.path.join(root, f"part-{shard}.csv"), "w", encoding="utf-8") as f:
            f.write("\n".join([header] + lines) + "\n")
    return os.path.join(root, "part-*.csv")


def test_sharded_training_with_skipped_bad_rows_and_check_data(tweets, tmp_path):
    train_glob = _sharded(str(tmp_path / "shards"), tweets)
    model_dir = str(tmp_path / "skip")
    result = _classify(model_dir, "--mode=check_data", f"--train_file={train_glob}",
                       f"--eval_file={tweets['dev']}")
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

    predict_glob = _sharded(str(tmp_path / "predict_shards"), tweets)
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


def test_tfds_source_through_the_task(tmp_path, tiny_hub):
    import tensorflow_datasets as tfds
    model_dir = tmp_path / "tfds"
    with tfds.testing.mock_data(num_examples=24):
        result = run_inline(
            "tasks.classify.train", "--tfds_name=glue/mrpc", f"--model_dir={model_dir}",
            "--encoder_handle=tiny", "--mode=train_and_eval", "--num_train_epochs=1",
            "--train_batch_size=8", "--max_seq_length=32")
    assert result.returncode == 0, result.stderr[-3000:]
    labels = json.load(open(model_dir / "labels.json"))
    assert set(labels["names"]) <= {"equivalent", "not_equivalent"}
    assert json.load(open(model_dir / "eval_results.json"))["num_examples"] == 24


KILLED_WHILE_SAVING = """
import os, signal, sys
import tensorflow as tf
from absl import app
from zoo.cli import classify as train

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


def test_killed_while_writing_a_checkpoint_resumes_from_the_last_complete_one(tweets, tiny_hub,
                                                                              tmp_path):
    model_dir = tmp_path / "model"
    args = ["--encoder_handle=tiny", f"--model_dir={model_dir}", "--text_column=tweet",
            "--label_column=sentiment", f"--train_file={tweets['train']}", "--mode=train",
            "--train_batch_size=8", "--num_train_epochs=2", "--max_seq_length=32",
            "--checkpoint_every=4"]
    killed = subprocess.run([sys.executable, "-c", KILLED_WHILE_SAVING, *args], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    checkpoint_dir = str(model_dir / "checkpoints")
    assert tf.train.latest_checkpoint(checkpoint_dir).endswith("ckpt-8")  # the last complete
    assert any(n.startswith("ckpt-12.data") for n in os.listdir(checkpoint_dir))  # half-written
    result = run_inline("tasks.classify.train", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.load(open(model_dir / "train_results.json"))["steps"] == 24 - 8
    assert tf.train.latest_checkpoint(checkpoint_dir).endswith("ckpt-24")


def test_a_disk_that_fills_during_export_leaves_the_previous_export_intact(trained, monkeypatch):
    export_dir = os.path.join(trained, "export", "1")
    before = sorted(os.listdir(export_dir))
    texts = tf.constant(["loved it, brilliant", "boring and awful"])
    served = tf.saved_model.load(export_dir).signatures["serving_default"](text=texts)

    def save(obj, export_dir, signatures=None, options=None):  # the disk fills half-way
        del obj, signatures, options
        with open(os.path.join(export_dir, "saved_model.pb"), "wb") as f:
            f.write(b"half a model")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tf.saved_model, "save", save)
    result = run_inline(
        "tasks.classify.train", "--encoder_handle=tiny", f"--model_dir={trained}",
        "--text_column=tweet", "--label_column=sentiment", f"--label_map={LABEL_MAP}",
        "--max_seq_length=32", "--mode=export", f"--export_dir={export_dir}")
    monkeypatch.undo()
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: export to {export_dir} failed (No space left on device); the export that was "
        "there is unchanged")
    assert sorted(os.listdir(export_dir)) == before
    assert not [n for n in os.listdir(os.path.dirname(export_dir)) if n.startswith(".1-")]
    again = tf.saved_model.load(export_dir).signatures["serving_default"](text=texts)
    assert again["label"].numpy().tolist() == served["label"].numpy().tolist()
