"""tasks.mrpc.train and tasks.sst2.train on small GLUE-layout folders made here, and from TFDS
(mock data) when no folder is given."""
import csv
import json
import os

from tests.helpers import run_inline

MRPC_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


def _mrpc_dir(root, train_rows=24):
    os.makedirs(root, exist_ok=True)
    for name, n in (("train.tsv", train_rows), ("dev.tsv", 10), ("test.tsv", 7)):
        with open(os.path.join(root, name), "w", encoding="utf-8") as f:
            f.write(MRPC_HEADER)
            for i in range(n):
                same = i % 2
                f.write(f"{same}\t{i}\t{i + 100}\tThe cat \"sat\" {i}.\t"
                        f"{'The cat sat' if same else 'A dog ran'} {i}.\n")
    return root


def _sst2_dir(root):
    os.makedirs(root, exist_ok=True)
    for name, n in (("train.tsv", 24), ("dev.tsv", 10)):
        with open(os.path.join(root, name), "w", encoding="utf-8") as f:
            f.write("sentence\tlabel\n")
            for i in range(n):
                f.write(f"{'a great film' if i % 2 else 'a dull film'} {i} \t{i % 2}\n")
    with open(os.path.join(root, "test.tsv"), "w", encoding="utf-8") as f:
        f.write("index\tsentence\n" + "".join(f"{i}\tfilm number {i}\n" for i in range(9)))
    return root


def _run(task, data_dir, model_dir, *extra):
    return run_inline(f"tasks.{task}.train", f"--data_dir={data_dir}", f"--model_dir={model_dir}",
                      "--encoder_handle=tiny", "--train_batch_size=8", "--max_seq_length=32",
                      *extra)


def test_mrpc_train_and_eval_then_predict_on_test(tmp_path, tiny_hub):
    # 44 steps in 2 epochs of 180 rows (not 15 of 24): about the same training, two evaluations
    data_dir, model_dir = _mrpc_dir(str(tmp_path / "mrpc"), 180), str(tmp_path / "model")
    result = _run("mrpc", data_dir, model_dir, "--num_train_epochs=2", "--learning_rate=3e-3")
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.load(open(os.path.join(model_dir, "eval_results.json")))
    assert results["num_examples"] == 10
    # "A dog ran" in the second text gives the label away: a trained head gets every dev pair
    # right, while a broken one (one class for all, labels swapped) scores f1 0.67 or less.
    assert results["accuracy"] >= 0.9 and results["f1"] >= 0.9 and results["mcc"] >= 0.8
    assert results["label_names"] == ["not_paraphrase", "paraphrase"]
    output = os.path.join(model_dir, "test.csv")
    result = _run("mrpc", data_dir, model_dir, "--mode=predict", f"--output_file={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(list(csv.DictReader(open(output)))) == 7


def test_sst2_predictions_carry_the_test_index(tmp_path, tiny_hub):
    data_dir, model_dir = _sst2_dir(str(tmp_path / "sst2")), str(tmp_path / "model")
    result = _run("sst2", data_dir, model_dir, "--mode=train", "--num_train_epochs=1")
    assert result.returncode == 0, result.stderr[-3000:]
    output = os.path.join(model_dir, "test.jsonl")
    result = _run("sst2", data_dir, model_dir, "--mode=predict", f"--output_file={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in open(output)]
    assert [r["id"] for r in rows] == [str(i) for i in range(9)]
    assert {r["label"] for r in rows} <= {"negative", "positive"}


def _without_data_dir(model_dir, *extra):
    return run_inline("tasks.mrpc.train", f"--model_dir={model_dir}", "--encoder_handle=tiny",
                      "--train_batch_size=8", "--max_seq_length=32", *extra)


def test_mrpc_without_a_data_dir_reads_tfds(tmp_path, tiny_hub):
    import tensorflow_datasets as tfds
    model_dir = tmp_path / "model"
    with tfds.testing.mock_data(num_examples=16):
        result = _without_data_dir(model_dir, "--num_train_epochs=1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "no --data_dir: reading glue/mrpc [train] from TensorFlow Datasets" in result.stdout
    labels = json.load(open(model_dir / "labels.json"))
    assert labels["names"] == ["not_paraphrase", "paraphrase"]  # TFDS label ids, mapped
    assert json.load(open(model_dir / "eval_results.json"))["num_examples"] == 16


def test_mrpc_without_a_data_dir_offline_says_how_to_pass_a_folder(tmp_path, monkeypatch):
    import requests
    import tensorflow_datasets as tfds

    def load(*args, **kwargs):  # what tfds.load raised here, offline, after 204 s of retries
        raise requests.exceptions.ConnectionError(
            "HTTPSConnectionPool(host='firebasestorage.googleapis.com', port=443): Max retries "
            "exceeded with url: /v0/b/mtl-sentence-representations.appspot.com/o/data")

    monkeypatch.setattr(tfds, "load", load)
    result = _without_data_dir(tmp_path / "model", "--mode=train")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert ("error: tfds:glue/mrpc[train]: TensorFlow Datasets could not load it "
            "(ConnectionError: HTTPSConnectionPool(host='firebasestorage.googleapis.com'") \
        in result.stderr
    assert ("without the internet, pass a local GLUE folder: --data_dir=DIR holding train.tsv, "
            "dev.tsv and test.tsv (e.g. ../shared/data/mrpc)") in result.stderr
