"""tasks.stsb.train (regression) as a user runs it: what training learns and reports, explain,
bad scores. The modes every kind has (resume, eval, predict, export, serving) are checked on
every kind in tests/kinds/test_every_kind.py."""
import csv
import json
import os
import random

import pytest

from tests.helpers import run_inline

HEADER = ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
          "sentence2", "score"]


def _pairs(n, seed):
    """The score is how many times "great" is in the first sentence (0 to 5)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        k = rng.randint(0, 5)
        words = ["the", "film"] + ["great"] * k + rng.sample(["plot", "cast", "music"], 2)
        rng.shuffle(words)
        rows.append([i, "main", "f", "2012", i, "none", "none", " ".join(words), "a film", k])
    return rows


def _write(path, rows, labelled=True):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writerow(HEADER if labelled else HEADER[:-1])
        writer.writerows(rows if labelled else [r[:-1] for r in rows])


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_hub):
    root = tmp_path_factory.mktemp("stsb")
    data = root / "data"
    data.mkdir()
    _write(data / "train.tsv", _pairs(480, 1))  # 120 steps in 4 epochs, 4 evaluations
    _write(data / "dev.tsv", _pairs(40, 2))
    _write(data / "test.tsv", _pairs(12, 3), labelled=False)
    model_dir = str(root / "model")
    result = run_inline("tasks.stsb.train", f"--data_dir={data}", f"--model_dir={model_dir}",
                        "--encoder_handle=tiny", "--max_seq_length=32", "--train_batch_size=16",
                        "--num_train_epochs=4", "--learning_rate=3e-3",
                        "--warmup_proportion=0.05", f"--export_dir={model_dir}/export/1")
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(model_dir=model_dir, data=data)


def test_regression_reports_pearson_and_spearman_with_a_scatter_plot(trained):
    results = json.load(open(os.path.join(trained["model_dir"], "eval_results.json")))
    assert {"pearson", "spearman", "mse", "rmse", "mae", "loss"} <= set(results)
    # The count of "great" sets the score: a model that learned nothing correlates ~0.
    assert results["pearson"] > 0.8 and results["spearman"] > 0.8, results
    assert os.path.exists(os.path.join(trained["model_dir"], "scatter.png"))
    assert json.load(open(os.path.join(trained["model_dir"], "labels.json")))["kind"] == \
        "regression"


def test_a_score_outside_its_range_names_the_file_and_line(tmp_path, tiny_hub):
    data = tmp_path / "data"
    data.mkdir()
    rows = _pairs(20, 4)
    rows[6][-1] = 7.5
    _write(data / "train.tsv", rows)
    result = run_inline("tasks.stsb.train", f"--data_dir={data}", "--mode=train",
                        f"--model_dir={tmp_path / 'model'}", "--encoder_handle=tiny")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"error: {data / 'train.tsv'}:8: score 7.5 is outside the range [0, 5]" in result.stderr


def test_explain_mode_credits_the_words_that_set_the_score(trained, tmp_path):
    output = str(tmp_path / "explanations.jsonl")
    result = run_inline("tasks.stsb.train", "--mode=explain", f"--data_dir={trained['data']}",
                        f"--model_dir={trained['model_dir']}", "--encoder_handle=tiny",
                        "--max_seq_length=32", f"--output_file={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "explain: 12 input rows = 12 explained + 0 rejected" in result.stdout
    lines = [json.loads(line) for line in open(output, encoding="utf-8")]
    assert [line["id"] for line in lines] == [str(i) for i in range(12)]
    assert os.path.exists(str(tmp_path / "explanations.html"))
    strong = [line for line in lines if "great" in [w["text"] for w in line["words"]]]
    assert len(strong) >= 8
    for line in strong:
        assert line["objective"] == "score" and line["method"] == "integrated_gradients"
        assert {w["segment"] for w in line["words"]} == {0, 1}  # both sentences' words
        top = max(line["words"], key=lambda w: w["attribution"])
        assert top["text"] == "great" and top["segment"] == 0
