"""Strategies: names and wiring, mirrored == one device, multi-worker on 127.0.0.1, TPU settings."""
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.helpers import ROOT, run_inline
from zoo.model import cores
from zoo.training import distribute


def test_strategies_by_name():
    assert distribute.make_strategy("default").num_replicas_in_sync == 1
    assert isinstance(distribute.make_strategy("one_device"), tf.distribute.OneDeviceStrategy)
    assert isinstance(distribute.make_strategy("mirrored"), tf.distribute.MirroredStrategy)
    auto = distribute.make_strategy("auto")  # no TPU, no GPU here: the default strategy
    assert auto.num_replicas_in_sync == 1 and not distribute.is_tpu(auto)
    with pytest.raises(ValueError, match="strategy must be one of"):
        distribute.make_strategy("horovod")


def test_tpu_strategy_without_a_tpu_says_what_to_pass():
    with pytest.raises(ValueError, match="no TPU found.*tpu=local"):
        distribute.make_strategy("tpu", tpu="local")


@pytest.mark.parametrize("task_type,task_id,cluster,chief", [
    (None, None, None, True),
    ("chief", 0, {"chief": ["a"], "worker": ["b"]}, True),
    ("worker", 0, {"chief": ["a"], "worker": ["b"]}, False),
    ("worker", 0, {"worker": ["a", "b"]}, True),
    ("worker", 1, {"worker": ["a", "b"]}, False),
])
def test_which_task_is_chief(task_type, task_id, cluster, chief):
    assert distribute.is_chief_task(task_type, task_id, cluster) is chief


def test_chief_from_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert distribute.chief_from_env()
    config = {"cluster": {"worker": ["h:1", "h:2"]}, "task": {"type": "worker", "index": 1}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    assert not distribute.chief_from_env()


def test_tpu_settings_fixed_shapes_and_host_reads(tiny_hub):
    """What runs differently on a TPU: host-side SavedModel reads, no dynamic padding."""
    # the layer that reads the SavedModel ("cls" pooling wraps its loaded model again, reading
    # no file: `zoo.model.hub.pooled_view`)
    layer = cores.classifier_core(tiny_hub + "/encoder", 2, pooling="mean",
                                   on_tpu=True).get_layer("encoder")
    assert layer._load_options.experimental_io_device == "/job:localhost"
    from zoo.kinds import classification
    settings = classification.Settings(model_dir="unused", padding="dynamic")
    assert classification.dynamic_padding(settings, on_tpu=True) is False
    assert classification.dynamic_padding(settings, on_tpu=False) is True


def test_map_batches_traces_its_function_once_for_batches_of_any_shape():
    """Bucketed batches differ in length and the last one is smaller: one trace serves them all
    (`compiled` with the dataset's spec), the outputs in order."""
    rows = tf.ragged.constant([[1] * (1 + i % 5) for i in range(11)])
    dataset = tf.data.Dataset.from_tensor_slices(rows).batch(4).map(lambda r: r.to_tensor())
    traces = []

    def fn(batch):  # its Python body runs once per trace
        traces.append(batch.shape)
        return tf.reduce_sum(batch, axis=1)

    strategy = distribute.make_strategy("default")
    step = distribute.compiled(strategy, fn, dataset.element_spec)
    sums = [s for out in distribute.map_batches(strategy, step, dataset, 4) for s in out]
    assert sums == [1 + i % 5 for i in range(11)]
    assert len(traces) == 1 and traces[0].as_list() == [None, None]
    again = [s for out in distribute.map_batches(strategy, fn, dataset, 4) for s in out]
    assert again == sums and len(traces) == 2  # a plain function: compiled for this call, once


MIRRORED = r"""
import json, sys
import zoo
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from zoo.data.sources import ListSource
from zoo.data.text_files import Example
from zoo.kinds import classification
from zoo.run import runner

encoder, preprocessor, out = sys.argv[1:4]
words = ["good", "bad", "film", "plot", "long", "fun", "dull", "great"]
examples = [Example(" ".join(words[(i * k) % 8] for k in range(1, 2 + i % 6)), label=str(i % 2),
                    source=f"made:{i}") for i in range(40)]
results = {}
for name, devices in (("one", None), ("mirrored", ["/cpu:0", "/cpu:1"])):
    settings = classification.Settings(
        model_dir=f"{out}/{name}", encoder_handle=encoder, preprocessor_handle=preprocessor,
        strategy="default" if devices is None else "mirrored", devices=devices, dropout=0.0,
        max_seq_length=16, train_batch_size=8, eval_batch_size=6, num_train_epochs=1,
        learning_rate=1e-3, warmup_proportion=0.0, steps_per_execution=2,
        head_learning_rate_multiplier=3.0, frozen_encoder_steps=1,
        precision="fp32")  # bf16 rounding differs with the per-replica batch size
    split = lambda s: ListSource(examples if s != "predict" else examples[:13])
    runner.run("train_and_eval", classification.Classification, settings, split)
    settings.output_file = f"{out}/{name}.jsonl"
    runner.run("predict", classification.Classification, settings, split)
    reader = tf.train.load_checkpoint(f"{out}/{name}/checkpoints")
    results[name] = {k: reader.get_tensor(k).tolist() for k in reader.get_variable_to_shape_map()
                     if k.startswith("model/") and "OPTIMIZER" not in k}
    results[name + "_eval"] = json.load(open(f"{out}/{name}/eval_results.json"))
    results[name + "_replicas"] = json.load(open(f"{out}/{name}/train_results.json"))["replicas"]
json.dump(results, open(f"{out}/results.json", "w"))
"""


@pytest.fixture(scope="module")
def dropout_free_hub(tiny_hub, tmp_path_factory):
    """The tiny encoder without dropout, so that runs under different strategies can match."""
    from zoo.hub_build import build
    from zoo.hub_build.encoder import BertConfig
    path = str(tmp_path_factory.mktemp("nodrop") / "encoder")
    _, config, vocab, lower = build.source_checkpoint("tiny")
    config = BertConfig(**dict(config.__dict__, hidden_dropout_prob=0.0,
                               attention_probs_dropout_prob=0.0))
    build.save_encoder(path, config, vocab, lower)
    return path, os.path.join(tiny_hub, "preprocessor")


def test_mirrored_on_two_cpus_takes_the_same_steps_as_one_device(dropout_free_hub, tmp_path):
    encoder, preprocessor = dropout_free_hub
    result = subprocess.run([sys.executable, "-c", MIRRORED, encoder, preprocessor, str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.load(open(tmp_path / "results.json"))
    assert (results["one_replicas"], results["mirrored_replicas"]) == (1, 2)
    one, mirrored = results["one"], results["mirrored"]
    assert one.keys() == mirrored.keys() and len(one) > 30
    for name in one:
        np.testing.assert_allclose(mirrored[name], one[name], atol=1e-5, err_msg=name)
    assert results["mirrored_eval"]["accuracy"] == results["one_eval"]["accuracy"]
    assert results["mirrored_eval"]["loss"] == pytest.approx(results["one_eval"]["loss"], abs=1e-5)
    rows = [[json.loads(line) for line in open(tmp_path / f"{n}.jsonl")] for n in ("one", "mirrored")]
    assert len(rows[0]) == len(rows[1]) == 13  # 13 rows in batches of 6: padded, then dropped
    assert [r["score"] for r in rows[1]] == pytest.approx([r["score"] for r in rows[0]], abs=1e-5)


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _start_workers(tmp_path, tag, model_dirs, extra, cluster=None):
    """Starts two multi-worker processes on 127.0.0.1; returns (processes, log files)."""
    cluster = cluster or {"worker": [f"127.0.0.1:{p}" for p in _free_ports(2)]}
    processes, logs = [], []
    for index in (0, 1):
        env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster,
                                                      "task": {"type": "worker", "index": index}}),
                   TMPDIR=str(tmp_path / f"{tag}tmp{index}"))
        os.makedirs(env["TMPDIR"], exist_ok=True)
        log = open(tmp_path / f"{tag}worker{index}.log", "w+")
        logs.append(log)
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "tasks.classify.train", "--strategy=multi_worker_mirrored",
             f"--model_dir={model_dirs[index]}", *extra],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))
    return processes, logs


def _wait(processes, seconds):
    """Waits for the processes; kills any still running after `seconds` (none is left behind)."""
    try:
        deadline = time.time() + seconds
        while time.time() < deadline and any(p.poll() is None for p in processes):
            time.sleep(0.5)
        return all(p.poll() is not None for p in processes)
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)


def _read(logs):
    texts = []
    for log in logs:
        log.seek(0)
        texts.append(log.read())
    return texts


@pytest.fixture(scope="module")
def worker_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("workers")
    for name, n in (("train.csv", 48), ("dev.csv", 14)):
        (root / name).write_text("text,label\n" + "".join(
            f"{'great fun' if i % 2 else 'dull and long'} {i},{i % 2}\n" for i in range(n)))
    return root


def test_two_workers_on_localhost_train_identically_and_only_the_chief_writes(
        dropout_free_hub, tmp_path, worker_data):
    encoder, preprocessor = dropout_free_hub
    common = [f"--encoder_handle={encoder}", f"--preprocessor_handle={preprocessor}",
              f"--train_file={worker_data / 'train.csv'}", "--max_seq_length=16"]
    extra = common + ["--mode=train_and_eval", f"--eval_file={worker_data / 'dev.csv'}",
                      "--num_train_epochs=2", "--train_batch_size=8", "--checkpoint_every=4",
                      "--eval_batch_size=6", "--print_json"]
    processes, log_files = _start_workers(
        tmp_path, "", [tmp_path / "model0", tmp_path / "model1"],
        extra + [f"--export_dir={tmp_path / 'export'}"])
    assert _wait(processes, 600), "workers did not finish in time"
    logs = _read(log_files)
    assert [p.returncode for p in processes] == [0, 0], logs[1][-3000:] + logs[0][-3000:]
    fingerprints = [json.loads(next(line[len("train: "):] for line in log.splitlines()
                                    if line.startswith("train: ")))["weights_fingerprint"]
                    for log in logs]
    assert fingerprints[0] == pytest.approx(fingerprints[1], rel=1e-9)
    assert "replicas: 2" in logs[0] and "replicas: 2" in logs[1]
    chief = set(os.listdir(tmp_path / "model0"))
    assert {"checkpoints", "labels.json", "flags.txt", "history.json", "eval_results.json",
            "train_results.json"} <= chief
    assert os.listdir(tmp_path / "model1") == []  # the worker wrote nothing of its own
    assert os.path.exists(tmp_path / "export" / "saved_model.pb")  # written once, by the chief
    assert os.listdir(tmp_path / "tmp1") == []  # its temporary checkpoints were removed
    # The evaluation written under two workers equals a one-process evaluation of those weights
    # (this test's process: no TF_CONFIG).
    distributed = json.load(open(tmp_path / "model0" / "eval_results.json"))
    single = run_inline("tasks.classify.train", f"--model_dir={tmp_path / 'model0'}",
                        "--mode=eval", *common, f"--eval_file={worker_data / 'dev.csv'}")
    assert single.returncode == 0, single.stderr[-3000:]
    again = json.load(open(tmp_path / "model0" / "eval_results.json"))
    assert again["accuracy"] == distributed["accuracy"]
    assert again["loss"] == pytest.approx(distributed["loss"], abs=1e-5)


def test_a_killed_worker_run_resumes_from_the_chiefs_checkpoint(dropout_free_hub, tmp_path,
                                                                worker_data):
    encoder, preprocessor = dropout_free_hub
    model_dir = tmp_path / "shared_model"
    extra = [f"--encoder_handle={encoder}", f"--preprocessor_handle={preprocessor}",
             f"--train_file={worker_data / 'train.csv'}", "--max_seq_length=16", "--mode=train",
             "--num_train_epochs=2", "--train_batch_size=8", "--checkpoint_every=3"]
    processes, _ = _start_workers(tmp_path, "a", [model_dir, model_dir], extra)
    checkpoints = str(model_dir / "checkpoints")
    try:
        deadline = time.time() + 300
        while time.time() < deadline and not tf.train.latest_checkpoint(checkpoints):
            assert all(p.poll() is None for p in processes), "a worker ended early"
            time.sleep(0.2)
        processes[1].kill()  # worker 1 dies; the chief cannot go on without it
    finally:
        _wait(processes, 5)
    done_before = int(tf.train.latest_checkpoint(checkpoints).rsplit("-", 1)[1])
    total = 48 // 8 * 2
    assert 0 < done_before < total
    processes, log_files = _start_workers(tmp_path, "b", [model_dir, model_dir], extra)
    assert _wait(processes, 600), "restarted workers did not finish in time"
    logs = _read(log_files)
    assert [p.returncode for p in processes] == [0, 0], logs[1][-3000:] + logs[0][-3000:]
    timing = json.load(open(model_dir / "train_results.json"))
    assert timing["steps"] == total - done_before  # resumed, not started over
    assert tf.train.latest_checkpoint(checkpoints).endswith(f"-{total}")
