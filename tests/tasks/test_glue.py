"""tasks.mrpc.train and tasks.sst2.train on small GLUE-layout folders made here."""
import csv
import json
import os

from tests.helpers import run_module

MRPC_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


def _mrpc_dir(root):
    os.makedirs(root, exist_ok=True)
    for name, n in (("train.tsv", 24), ("dev.tsv", 10), ("test.tsv", 7)):
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
    return run_module(f"tasks.{task}.train", f"--data_dir={data_dir}", f"--model_dir={model_dir}",
                      "--encoder_handle=tiny", "--train_batch_size=8", "--max_seq_length=32",
                      *extra)


def test_mrpc_train_and_eval_then_predict_on_test(tmp_path, tiny_hub):
    data_dir, model_dir = _mrpc_dir(str(tmp_path / "mrpc")), str(tmp_path / "model")
    result = _run("mrpc", data_dir, model_dir, "--num_train_epochs=15", "--learning_rate=3e-3")
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
