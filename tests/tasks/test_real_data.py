"""Slow tests on the real data in ../shared/data (run with `pytest -m slow`; skipped without it)."""
import csv
import json
import os

import pytest

from tests.helpers import SHARED, run_module

pytestmark = pytest.mark.slow
BANKING77 = os.path.join(SHARED, "data", "banking77", "train.csv")


def _subset(path, out, every, offset):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(out, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["id", "text", "category"])
        writer.writeheader()
        for i, row in enumerate(rows[offset::every]):
            writer.writerow(dict(id=f"b{i}", **row))
    return str(out)


def test_banking77_intents_come_back_by_name(tmp_path):
    if not os.path.exists(BANKING77):
        pytest.skip(f"{BANKING77} is not here")
    train = _subset(BANKING77, tmp_path / "train.csv", every=4, offset=0)  # ~2500 rows
    dev = _subset(BANKING77, tmp_path / "dev.csv", every=20, offset=1)  # ~500 rows
    model_dir = str(tmp_path / "model")
    result = run_module("tasks.classify.train", f"--train_file={train}", f"--eval_file={dev}",
                        "--label_column=category", "--id_column=id", f"--model_dir={model_dir}",
                        "--num_train_epochs=2", "--learning_rate=2e-4", "--max_seq_length=64",
                        timeout=3600)
    assert result.returncode == 0, result.stderr[-3000:]
    categories = json.load(open(os.path.join(SHARED, "data", "banking77", "categories.json")))
    labels = json.load(open(os.path.join(model_dir, "labels.json")))
    assert sorted(labels["names"]) == sorted(categories)
    results = json.load(open(os.path.join(model_dir, "eval_results.json")))
    assert results["accuracy"] > 1 / 77 * 5  # far above chance after two short epochs
    output = os.path.join(model_dir, "predictions.jsonl")
    result = run_module("tasks.classify.train", f"--predict_file={dev}", "--mode=predict",
                        f"--output_file={output}", f"--model_dir={model_dir}",
                        "--label_column=category", "--id_column=id", "--max_seq_length=64")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in open(output)]
    assert len(rows) == len(list(csv.DictReader(open(dev))))
    assert {r["label"] for r in rows} <= set(categories)
