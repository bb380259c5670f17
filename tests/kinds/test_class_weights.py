"""class_weights of the classify kind: rare classes weigh more in the loss, and their recall
goes up; weights from a file; as flags, a class weight of another --task_type is refused."""
import csv
import json
import random

import pytest

from tests.helpers import run_inline
from zoo.base.errors import UsageError
from zoo.kinds import table


def _write(path, n, seed):
    """One row in ten is "rare". The word "maybe" is in 80% of rare rows and 30% of common
    ones: it makes a row rare with probability 0.23 at these priors (so an unweighted model says
    "common"), 0.73 when both classes weigh the same."""
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        for i in range(n):
            rare = i % 10 == 0
            words = rng.sample(["the", "a", "film", "show", "today", "was", "it"], 3)
            if rng.random() < (0.8 if rare else 0.3):
                words.insert(rng.randrange(4), "maybe")
            writer.writerow([" ".join(words), "rare" if rare else "common"])
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("imbalanced")
    return dict(train=_write(root / "train.csv", 800, 1), dev=_write(root / "dev.csv", 200, 2),
                root=root)


def _train(data, model_dir, **values):
    table.run("classify", "train_and_eval", **dict(dict(
        train_file=data["train"], eval_file=data["dev"], model_dir=str(model_dir),
        encoder_handle="tiny", max_seq_length=16, train_batch_size=16, num_train_epochs=2,
        learning_rate=3e-3, pooling="mean"), **values))
    with open(f"{model_dir}/eval_results.json", encoding="utf-8") as f:
        results = json.load(f)
    with open(f"{model_dir}/train_results.json", encoding="utf-8") as f:
        timing = json.load(f)
    names = results["label_names"]
    matrix = results["confusion_matrix"][names.index("rare")]
    return matrix[names.index("rare")] / sum(matrix), timing


def test_balanced_weights_raise_the_recall_of_the_rare_class(data, tiny_hub):
    plain_recall, plain = _train(data, data["root"] / "plain")
    balanced_recall, balanced = _train(data, data["root"] / "balanced", class_weights="balanced")
    assert "class_weights" not in plain
    # 800 rows, 80 rare: rare weighs 800 / (2 x 80) = 5, common 800 / (2 x 720)
    assert balanced["class_weights"] == pytest.approx({"common": 800 / 1440, "rare": 5.0})
    # seen here: rare-class recall 0.0 without weights, 0.9 with them (bf16 and fp32)
    assert balanced_recall >= plain_recall + 0.3, (plain_recall, balanced_recall)


def test_weights_from_a_file_and_flags_of_another_task_type(data, tiny_hub, tmp_path):
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"rare": 3}))
    _, timing = _train(data, tmp_path / "file", class_weights=str(weights), num_train_epochs=0.5)
    assert timing["class_weights"] == {"common": 1.0, "rare": 3.0}
    weights.write_text(json.dumps({"unheard": 2}))
    with pytest.raises(UsageError, match=f"{weights}: unknown label 'unheard'"):
        _train(data, tmp_path / "bad", class_weights=str(weights), num_train_epochs=1)
    result = run_inline("tasks.classify.train", f"--train_file={data['train']}", "--mode=train",
                        f"--model_dir={tmp_path / 'other'}", "--encoder_handle=tiny",
                        "--task_type=regression", "--class_weights=balanced")
    assert result.returncode != 0
    assert "error: --class_weights is for --task_type=classification, not regression" in \
        result.stderr
