"""tasks.multitask.train as a user runs it: two classification tasks and SQuAD on one encoder,
per-task evaluation, one export with a signature per task, resume, bad specs and data."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.helpers import check_the_model_dir_suffices, run_inline
from tests.tweets import write_csv as _write_csv
from tests.tasks.test_glue import _sst2_dir
from tests.tasks.test_squad import _squad

SERVE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
loaded = tf.saved_model.load(sys.argv[1])
texts = json.loads(sys.argv[2])
out = {name: loaded.signatures[name](text=tf.constant(texts))["probabilities"].numpy().tolist()
       for name in ("tweets", "sst2", "serving_default")}
out["signatures"] = sorted(loaded.signatures)
print(json.dumps(out))
"""
COMMON = ("--encoder_handle=tiny", "--train_batch_size=8", "--max_seq_length=32",
          "--learning_rate=3e-3", "--warmup_proportion=0.05")


def _specs(root):
    tweets = dict(kind="classify", train_file=_write_csv(root / "train.csv", 96, 1),
                  eval_file=_write_csv(root / "dev.csv", 30, 2), text_column="tweet",
                  label_column="sentiment", label_map="-1:negative,0:neutral,1:positive")
    sst2 = dict(kind="sst2", data_dir=_sst2_dir(str(root / "sst2")))
    squad = dict(kind="squad", train_file=_squad(root / "squad_train.json", 32),
                 eval_file=_squad(root / "squad_dev.json", 6), max_seq_length=64,
                 max_query_length=24, doc_stride=24)
    return dict(tweets=tweets, sst2=sst2, squad=squad)


def _multitask(model_dir, tasks_file, *extra):
    return run_inline("tasks.multitask.train", f"--tasks_file={tasks_file}",
                      f"--model_dir={model_dir}", *COMMON, *extra)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_hub):
    root = tmp_path_factory.mktemp("multitask")
    tasks_file = root / "tasks.json"
    tasks_file.write_text(json.dumps(_specs(root)))
    model_dir = root / "model"
    result = _multitask(model_dir, tasks_file, "--num_train_epochs=4",
                        "--task_sampling=temperature", "--temperature=2",
                        "--keep_best=sst2/accuracy", f"--export_dir={model_dir}/export/1")
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(root=root, model_dir=model_dir, tasks_file=tasks_file, stdout=result.stdout)


def test_each_task_is_evaluated_under_its_name(trained):
    results = json.load(open(trained["model_dir"] / "eval_results.json"))
    for key in ("tweets/accuracy", "tweets/f1_macro", "sst2/accuracy", "sst2/f1",
                "squad/exact_match", "squad/f1"):
        assert isinstance(results[key], float), key
    # The words give the labels away; a head that learned nothing is at chance
    assert results["tweets/accuracy"] > 0.5 and results["sst2/accuracy"] > 0.8, results
    assert results["squad/num_questions"] == 6
    best = json.load(open(trained["model_dir"] / "best_per_task.json"))
    assert set(best) == {"tweets", "sst2", "squad"} and best["squad"]["metric"] == "f1"
    assert best["sst2"]["metric"] == "f1" and best["tweets"]["metric"] == "accuracy"
    kept = json.load(open(trained["model_dir"] / "best.json"))  # --keep_best=sst2/accuracy
    assert kept["metric"] == "sst2/accuracy" and kept["step"] % 19 == 0
    for name in ("tweets", "sst2"):  # each task keeps its own files
        assert os.path.exists(trained["model_dir"] / "tasks" / name / "data_check_train.json")
        assert os.path.exists(trained["model_dir"] / "tasks" / name / "confusion_matrix.png")
    assert os.path.exists(trained["model_dir"] / "tasks" / "tweets" / "labels.json")


def test_the_mix_is_logged_and_saved(trained):
    mixture = json.load(open(trained["model_dir"] / "mixture.json"))
    tasks = mixture["tasks"]
    # 96 tweets, 24 SST-2 rows, 32 SQuAD windows: 12 + 3 + 4 = 19 steps an epoch; p ~ n^(1/2)
    assert mixture["steps_per_epoch"] == 19 and mixture["task_sampling"] == "temperature"
    assert tasks["tweets"]["training"] == 96 and tasks["squad"]["unit"] == "windows"
    roots = {name: np.sqrt(t["training"]) for name, t in tasks.items()}
    for name, t in tasks.items():
        assert t["probability"] == pytest.approx(roots[name] / sum(roots.values()), abs=1e-3)
    assert "task mix: tweets" in trained["stdout"]
    timing = json.load(open(trained["model_dir"] / "train_results.json"))
    assert timing["steps"] == 4 * 19 and timing["mixture"] == mixture
    assert sum(timing["steps_per_task"].values()) == 4 * 19
    assert set(timing["steps_per_task"]) == {"tweets", "sst2", "squad"}


def test_one_export_with_a_signature_per_task_and_the_encoder_stored_once(trained, tiny_hub):
    export_dir = trained["model_dir"] / "export" / "1"
    texts = ["great loved wonderful", "awful boring hated", "a great film 3", "a dull film 4"]
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    served = subprocess.run([sys.executable, "-c", SERVE, str(export_dir), json.dumps(texts)],
                            capture_output=True, text=True, timeout=600, env=env)
    assert served.returncode == 0, served.stderr[-3000:]
    out = json.loads(served.stdout.strip().splitlines()[-1])
    assert out["signatures"] == ["serving_default", "squad", "sst2", "tweets"]
    assert out["serving_default"] == out["tweets"]  # the first task
    # each signature gives what the multi-task model itself predicts
    from zoo.kinds import multitask
    from zoo.run import runner
    settings = multitask.Settings(model_dir=str(trained["model_dir"]), encoder_handle="tiny",
                                  max_seq_length=32, keep_best="sst2/accuracy",  # as exported
                                  tasks=json.load(open(trained["tasks_file"])))
    task = runner.start("export", multitask.MultiTask, settings)
    cores, _ = runner.restored(task)
    for name in ("tweets", "sst2"):  # each class head with its own temperature
        fitted = json.load(open(trained["model_dir"] / "tasks" / name / "temperature.json"))
        assert fitted["fitted_on"] == "eval" and fitted["temperature"] > 0
        packed = task.tasks[name].run.packer(tf.constant(texts))
        expected = tf.nn.softmax(cores[name](packed, training=False) / fitted["temperature"])
        np.testing.assert_allclose(out[name], expected.numpy(), atol=1e-5)
    assert not os.path.exists(trained["model_dir"] / "tasks" / "squad" / "temperature.json")
    # three heads, one encoder: the export's weights take about what the encoder's take
    def variables_size(path):
        folder = os.path.join(path, "variables")
        return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))

    ratio = variables_size(export_dir) / variables_size(os.path.join(tiny_hub, "encoder"))
    assert ratio < 1.1, ratio


def test_a_rerun_resumes_and_eval_evaluates_every_task(trained):
    result = _multitask(trained["model_dir"], trained["tasks_file"], "--num_train_epochs=4",
                        "--task_sampling=temperature", "--temperature=2", "--mode=train")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.load(open(trained["model_dir"] / "train_results.json"))["steps"] == 0
    # each pooled task's --pooling=auto, resolved (the tiny encoder's pooler), in run.json
    assert json.load(open(trained["model_dir"] / "run.json"))["pooling"] == dict(tweets="cls",
                                                                                sst2="cls")
    result = _multitask(trained["model_dir"], trained["tasks_file"], "--mode=eval")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.load(open(trained["model_dir"] / "eval_results.json"))["step"] == 4 * 19


def test_bad_specs_and_bad_rows_name_what_is_wrong(trained, tmp_path):
    from zoo.base.errors import UsageError
    from zoo.kinds import multitask
    specs = _specs(tmp_path)

    def check(tasks):
        multitask.check_specs(multitask.Settings(model_dir="m", tasks=tasks,
                                                 tasks_file="tasks.json"))

    with pytest.raises(UsageError, match="tasks.json: task 'extra': 'kind' must be one of"):
        check(dict(specs, extra=dict(kind="translate")))
    with pytest.raises(UsageError, match=r"tasks.json: task 'tweets': unknown keys \['colour'\]"):
        check(dict(tweets=dict(specs["tweets"], colour="blue")))
    with pytest.raises(UsageError, match="tasks.json: task 'my-task': a task name is letters"):
        check({"my-task": specs["sst2"]})
    rows = open(specs["tweets"]["train_file"]).read().splitlines()
    rows[5] = "x5,,negative"  # an empty text on line 6
    broken = tmp_path / "broken.csv"
    broken.write_text("\n".join(rows) + "\n")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(sst2=specs["sst2"],
                                   tweets=dict(specs["tweets"], train_file=str(broken)))))
    result = _multitask(tmp_path / "m3", bad, "--mode=train")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"error: {broken}:6: " in result.stderr
    with pytest.raises(UsageError, match=r"tasks.json: task 'tweets': dropout must be at least "
                                         r"0 and less than 1, not 1.5"):
        multitask.MultiTask.check_settings(multitask.Settings(
            model_dir="m", tasks=dict(tweets=dict(specs["tweets"], dropout=1.5)),
            tasks_file="tasks.json"))


def test_predict_writes_each_tasks_predictions_into_a_folder(trained):
    specs = json.load(open(trained["tasks_file"]))  # tweets gives no predict data: left out
    specs["squad"]["predict_file"] = specs["squad"]["eval_file"]  # sst2: its folder's test.tsv
    predict_tasks = trained["root"] / "predict_tasks.json"
    predict_tasks.write_text(json.dumps(specs))
    out = trained["root"] / "predictions"
    result = _multitask(trained["model_dir"], predict_tasks, "--mode=predict",
                        "--keep_best=sst2/accuracy", f"--output_file={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = open(out / "sst2" / "predictions.csv").read().splitlines()
    assert rows[0].endswith("label,score") and len(rows) == 10
    answers = json.load(open(out / "squad" / "predictions.json"))
    assert len(answers) == 6 and (out / "squad" / "nbest_predictions.json").exists()
    assert not (out / "tweets").exists()
    assert "predict: 9 input rows = 9 predicted + 0 rejected" in result.stdout


def test_the_model_dir_gives_predict_eval_and_export_its_tasks_and_model(trained, tmp_path):
    specs = json.load(open(trained["tasks_file"]))
    specs["squad"]["predict_file"] = specs["squad"]["eval_file"]
    predict_tasks = tmp_path / "predict_tasks.json"
    predict_tasks.write_text(json.dumps(specs))
    # run.json gives the tasks (their kinds, data and settings), the encoder, the sequence
    # length and --keep_best as the last training run had it (the module's rerun: none)
    keep_best = json.load(open(trained["model_dir"] / "run.json"))["values"]["keep_best"]
    check_the_model_dir_suffices(
        str(trained["model_dir"]), lambda *flags: _multitask(
            trained["model_dir"], predict_tasks, f"--keep_best={keep_best}", *flags),
        dict(predict=[f"--predict_file={specs['squad']['eval_file']}", "--tasks=squad"],
             eval=[]), tmp_path, suffix="", export=False, full_data=dict(predict=[], eval=[]))


class _Head:
    """A task of a multi-task run that counts its evaluations; `fits`: it has a calibration."""

    def __init__(self, fits):
        self.fits, self.evaluations = fits, 0

    def calibrate(self, core, reuse=False):
        del core, reuse
        return {"temperature": 2.0} if self.fits else None

    def evaluate(self, core):
        del core
        self.evaluations += 1
        return {"score": float(self.evaluations)}


@pytest.mark.parametrize("reuse", [True, False])
def test_after_calibration_a_head_it_left_alone_is_not_evaluated_again(reuse):
    from zoo.kinds.multitask import MultiTask

    task = object.__new__(MultiTask)  # (the plumbing alone: no encoder, no data)
    task.tasks = {"tweets": _Head(fits=True), "squad": _Head(fits=False)}
    task._last, task._unchanged = {}, set()
    cores = {"tweets": None, "squad": None}
    task.evaluate(cores)  # the last epoch's evaluation
    assert task.calibrate(cores, reuse) == {"tweets": {"temperature": 2.0}}
    results = task.evaluate(cores)
    assert task.tasks["tweets"].evaluations == 2
    # with the same weights (no --keep_best restore), SQuAD's results stand as they were
    assert task.tasks["squad"].evaluations == (1 if reuse else 2)
    assert results["squad/score"] == (1.0 if reuse else 2.0)
    task.evaluate(cores)  # later evaluations evaluate every task
    assert task.tasks["squad"].evaluations == (2 if reuse else 3)
