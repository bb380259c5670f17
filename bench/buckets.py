r"""What a bucket costs: the same work with its files local and in a bucket, alternating.

  .venv/bin/python bench/buckets.py >> bench/results/buckets.jsonl   # ./install.sh test

Training: `zoo.kinds.table.run("mrpc", "train", ...)` on MiniLM for --steps steps with a
checkpoint every --checkpoint_every, its model dir on the local disk or on TensorFlow's
in-memory file system (`ram://`, served by the same `tf.io.gfile` layer as `gs://`; one per
process, so each run is a process of its own that reads its results back before it ends).
From each run's train_results.json: the steady training rate (the steps alone, without the
first call) and the fit's wall seconds (data, checkpoints, records and plots included).

Batch prediction: `zoo batch-predict` (Beam's local runner, 2 workers) on --rows SST-2
sentences in 4 CSV shards, with an fp32 MiniLM classifier export (its head untrained: the work
is the same), input and output local or in a bucket on a GCS API server on 127.0.0.1
(gcp-storage-emulator, in memory; Google's storage client and so Beam reach it through
STORAGE_EMULATOR_HOST). From each run's summary: rows/s. An emulator in the same machine is no
cloud bucket: it measures what zoo's own path through Beam's file systems adds, not a
network's latency.

Each of --repeats rounds runs each side once, the order alternating. One JSON line: the
machine, every run, and per part the medians and the ratio bucket / local.
"""
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from absl import app, flags

from common import machine, run_script, sst2_sentences

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared", "data")
flags.DEFINE_string("mrpc_dir", os.path.join(SHARED, "mrpc"), "GLUE MRPC folder.")
flags.DEFINE_string("sst2_dir", os.path.join(SHARED, "sst2"), "GLUE SST-2 folder.")
flags.DEFINE_integer("steps", 30, "Training steps per run.")
flags.DEFINE_integer("checkpoint_every", 10, "Checkpoint every N steps.")
flags.DEFINE_integer("rows", 10_000, "Rows to batch-predict.")
flags.DEFINE_integer("repeats", 2, "Rounds; each runs each side once.")
flags.DEFINE_list("parts", ["train", "batch_predict"], "Which parts to run.")
FLAGS = flags.FLAGS

TRAIN = """
import json, sys
from zoo.kinds import table
model_dir, data_dir, steps, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
timing = table.run("mrpc", "train", data_dir=data_dir, model_dir=model_dir,
                   max_train_steps=steps, checkpoint_every=every, seed=0)  # train_results.json
print(json.dumps({k: timing[k] for k in ("steady_examples_per_second", "wall_seconds", "steps",
                                         "precision")}))
"""

EXPORT = """
import sys
from zoo import models
encoder, preprocessor = models.resolve_handles("minilm_l6_h384_uncased")
models.export_classifier(sys.argv[1], models.classifier_core(encoder, num_classes=2),
                         models.TextPacker(preprocessor, seq_length=128), ["negative", "positive"])
"""

UPLOAD = """
import sys
from apache_beam.io.filesystems import FileSystems
for local in sys.argv[2:]:
    with open(local, "rb") as f, FileSystems.create(sys.argv[1] + local.rsplit("/", 1)[1]) as g:
        g.write(f.read())
"""

SUMMARY = """
import sys
from apache_beam.io.filesystems import FileSystems
print(FileSystems.open(sys.argv[1]).read().decode())
"""


def train_run(where, work):
    model_dir = (f"ram://bench-{uuid.uuid4().hex}/mrpc" if where == "bucket"
                 else os.path.join(work, f"local-{uuid.uuid4().hex}"))
    one = json.loads(run_script(["-c", TRAIN, model_dir, FLAGS.mrpc_dir, str(FLAGS.steps),
                                 str(FLAGS.checkpoint_every)]).strip().splitlines()[-1])
    return dict(where=where, **one)


def emulator(work):
    """Starts the GCS API server; returns (process, environment for its clients)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    credentials = os.path.join(work, "credentials.json")
    with open(credentials, "w", encoding="utf-8") as f:  # a token the emulator does not check
        json.dump(dict(type="authorized_user", client_id="bench", client_secret="bench",
                       refresh_token="unused", token="emulator",
                       expiry="2099-01-01T00:00:00Z"), f)
    server = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "gcp-storage-emulator"), "start",
         "--host=127.0.0.1", f"--port={port}", "--default-bucket=zoo", "--in-memory", "-q"],
        cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    return server, dict(os.environ, STORAGE_EMULATOR_HOST=f"http://127.0.0.1:{port}",
                        NO_GCE_CHECK="true", GOOGLE_CLOUD_PROJECT="bench",
                        GOOGLE_APPLICATION_CREDENTIALS=credentials)


def shards(work):
    """--rows SST-2 sentences (drawn with a fixed seed) in 4 CSV shards; their paths."""
    pool = sst2_sentences(os.path.join(FLAGS.sst2_dir, "train.tsv"))
    rng = random.Random(0)
    rows = [rng.choice(pool) for _ in range(FLAGS.rows)]
    paths = []
    for s in range(4):
        path = os.path.join(work, f"part-{s}.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("id,sentence\n")
            for i in range(s, len(rows), 4):
                f.write(f"r{i},\"{rows[i].replace(chr(34), chr(34) * 2)}\"\n")
        paths.append(path)
    return paths


def predict_run(where, work, export, env, round_):
    if where == "bucket":
        inputs, output = "gs://zoo/in/part-*.csv", f"gs://zoo/out/{round_}/sst2"
    else:
        inputs = os.path.join(work, "part-*.csv")
        output = os.path.join(work, f"out{round_}", "sst2")
    began = time.perf_counter()
    run_script(["-m", "zoo.cli.batch_predict", f"--export_dir={export}", f"--input={inputs}",
                f"--output={output}", "--text_column=sentence", "--id_column=id",
                "--direct_num_workers=2"], env=env)
    seconds = time.perf_counter() - began
    summary = json.loads(run_script(["-c", SUMMARY, f"{output}-summary.json"], env=env))
    assert summary["input_rows"] == summary["predictions"] == FLAGS.rows, summary
    return dict(where=where, rows_per_second=summary["rows_per_second"],
                wall_seconds=round(seconds, 1))


def rounds(run):
    runs = []
    for round_ in range(FLAGS.repeats):
        for where in ("local", "bucket") if round_ % 2 == 0 else ("bucket", "local"):
            one = dict(run(where, round_), round=round_)
            print(json.dumps(one), file=sys.stderr, flush=True)
            runs.append(one)
    return runs


def medians(runs, keys):
    result = {}
    for where in ("local", "bucket"):
        result[where] = {k: statistics.median(r[k] for r in runs if r["where"] == where)
                         for k in keys}
    result["bucket_over_local"] = {k: round(result["bucket"][k] / result["local"][k], 3)
                                   for k in keys}
    return result


def main(argv):
    del argv
    line = dict(benchmark="buckets", machine=machine(ROOT))
    with tempfile.TemporaryDirectory(prefix="zoo-bench-buckets-") as work:
        if "train" in FLAGS.parts:
            runs = rounds(lambda where, _: train_run(where, work))
            line["train"] = dict(steps=FLAGS.steps, checkpoint_every=FLAGS.checkpoint_every,
                                 runs=runs, **medians(runs, ("steady_examples_per_second",
                                                             "wall_seconds")))
        if "batch_predict" in FLAGS.parts:
            export = os.path.join(work, "export", "1")
            run_script(["-c", EXPORT, export])
            server, env = emulator(work)
            try:
                paths = shards(work)
                run_script(["-c", UPLOAD, "gs://zoo/in/", *paths], env=env)
                runs = rounds(lambda where, r: predict_run(where, work, export, env, r))
            finally:
                server.terminate()
                server.wait()
            line["batch_predict"] = dict(rows=FLAGS.rows, workers=2, runs=runs,
                                         **medians(runs, ("rows_per_second", "wall_seconds")))
    print(json.dumps(line))


if __name__ == "__main__":
    app.run(main)
