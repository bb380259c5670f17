"""zoo-batch-predict on Beam's local runner: every row once, predictions equal to zoo.serving's,
bad rows rejected with FILE:LINE, a summary that adds up, no output left by a killed run, and
one error line before any worker for a wrong export or column."""
import csv
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.helpers import ROOT, SHARED
from zoo import serving
from zoo.cli import batch_predict
from zoo.data import squad_windows, tagging
from zoo.export import savedmodel
from zoo.model import cores

SST2 = os.path.join(SHARED, "data", "sst2", "train.tsv")


def _sentences(n):
    """`n` real SST-2 sentences (../shared), or made-up ones where the data is not here."""
    if not os.path.exists(SST2):
        return [f"a {'fine' if i % 3 else 'dull'} film, number {i}" for i in range(n)]
    with open(SST2, encoding="utf-8") as f:
        next(f)
        return [line.split("\t")[0].strip() for _, line in zip(range(n), f)]


@pytest.fixture(scope="module")
def export(tiny_hub, tmp_path_factory):
    core = cores.classifier_core(tiny_hub + "/encoder", num_classes=2)
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)
    path = str(tmp_path_factory.mktemp("batch") / "export" / "1")
    savedmodel.export_classifier(path, core, packer, ["negative", "positive"])
    return path


def _shards(folder, sentences, count):
    """`sentences` as `count` CSV shards with an id column; returns the glob."""
    os.makedirs(folder, exist_ok=True)
    for s in range(count):
        with open(os.path.join(folder, f"part-{s}.csv"), "w", encoding="utf-8") as f:
            f.write("id,sentence\n")
            for i in range(s, len(sentences), count):
                f.write(f"r{i},\"{sentences[i].replace(chr(34), chr(34) * 2)}\"\n")
    return os.path.join(folder, "part-*")


def _batch_predict(*argv):
    return subprocess.run([sys.executable, "-m", "zoo.cli.batch_predict", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def _read(prefix):
    lines = []
    for path in sorted(glob.glob(f"{prefix}-[0-9]*-of-*.jsonl")):
        with open(path, encoding="utf-8") as f:
            lines += [json.loads(line) for line in f]
    return lines


def test_two_workers_predict_every_row_once_as_zoo_serving_does(export, tmp_path):
    sentences = _sentences(2000)
    pattern = _shards(tmp_path / "in", sentences, 3)
    with open(tmp_path / "in" / "part-3.jsonl", "wb") as f:  # a JSONL shard of bad rows
        f.write(b'{"id": "b0", "sentence": "fine"}\n{"id": "b1", "sentence": ""}\n'
                b'{"id": "b2", "words": "no sentence"}\n{"id": "b3", \n'
                b'{"id": "b4", "sentence": "bad \xff byte"}\n')
    prefix = str(tmp_path / "out" / "sst2")
    result = _batch_predict(f"--export_dir={export}", f"--input={pattern}", f"--output={prefix}",
                            "--text_column=sentence", "--id_column=id",
                            "--direct_num_workers=2")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = _read(prefix)
    ids = [row["id"] for row in rows]
    assert sorted(ids) == sorted([f"r{i}" for i in range(2000)] + ["b0"])  # each once
    by_id = {row["id"]: row for row in rows}
    expected = serving.load(export).predict(sentences)
    for i, want in enumerate(expected):
        got = by_id[f"r{i}"]
        assert got["label"] == want["label"] and got["source"].endswith(
            f"part-{i % 3}.csv:{i // 3 + 2}")
        for name, p in want["probabilities"].items():
            assert got["probabilities"][name] == pytest.approx(p, abs=1e-5)
    rejected = [json.loads(line) for path in glob.glob(f"{prefix}-rejected-*.jsonl")
                for line in open(path, encoding="utf-8")]
    shard = str(tmp_path / "in" / "part-3.jsonl")
    assert sorted(r["source"] for r in rejected) == [f"{shard}:{n}" for n in (2, 3, 4, 5)]
    reasons = " ".join(r["reason"] for r in rejected)
    assert "empty text" in reasons and "no text column" in reasons and "not valid JSON" in \
        reasons and "invalid UTF-8" in reasons
    summary = json.load(open(f"{prefix}-summary.json"))
    assert (summary["input_rows"], summary["predictions"], summary["rejected"]) == (2005, 2001, 4)
    assert sum(summary["rejected_by_reason"].values()) == 4
    assert "2005 input rows = 2001 predictions + 4 rejected" in result.stdout
    # the workers' counts reach the launcher's progress (a line in a log: not a terminal)
    assert "batch-predict: 2,001/2,001 row" in result.stderr


def test_tagging_and_squad_exports(tiny_hub, tmp_path, capsys):
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=24)
    vocab = tagging.TagVocab(["O", "B-LOC", "I-LOC", "B-PER", "I-PER"])
    tagger = savedmodel.save(str(tmp_path / "ner"), {"serving_default": savedmodel.TaggingServing(
        cores.tagging_core(tiny_hub + "/encoder", len(vocab)),
        tagging.TagWindower(packer, 24, 8), vocab)})
    squad = savedmodel.save(str(tmp_path / "squad"), {"serving_default": savedmodel.SpanServing(
        cores.span_core(tiny_hub + "/encoder"), squad_windows.Windower(packer, 48, 16, 12))})
    texts = [f"John {i} lives in New York." for i in range(30)]
    (tmp_path / "texts.jsonl").write_text("".join(json.dumps(dict(text=t)) + "\n" for t in texts))
    local = ("--direct_num_workers=1", "--direct_running_mode=in_memory")
    batch_predict.main([f"--export_dir={tagger}", f"--input={tmp_path / 'texts.jsonl'}",
                        f"--output={tmp_path / 'ner_out'}", *local])
    rows = sorted(_read(tmp_path / "ner_out"), key=lambda r: int(r["source"].rsplit(":", 1)[1]))
    assert len(rows) == 30
    assert rows == [dict(r, source=rows[i]["source"]) for i, r in enumerate(
        serving.load(tagger).predict(texts))]
    contexts = [f"It is in Paris {i}, the capital of France." for i in range(20)]
    (tmp_path / "qa.csv").write_text("q,c\n" + "".join(f"Where?,\"{c}\"\n" for c in contexts))
    batch_predict.main([f"--export_dir={squad}", f"--input={tmp_path / 'qa.csv'}",
                        f"--output={tmp_path / 'qa_out'}", "--question_column=q",
                        "--context_column=c", *local])
    answers = _read(tmp_path / "qa_out")
    assert len(answers) == 20
    for row in answers:
        context = contexts[int(row["source"].rsplit(":", 1)[1]) - 2]
        assert context[row["start"]:row["end"]] == row["answer"]
    assert "20 input rows = 20 predictions + 0 rejected" in capsys.readouterr().out


@pytest.mark.parametrize("extra,message", [
    (("--text_column=words",), "no text column 'words'"),
    (("--signature=nope",), "has no signature 'nope'"),
    (("--batch_size=0",), "--batch_size must be at least 1"),
])
def test_mistakes_are_one_error_line_before_any_worker(export, tmp_path, extra, message):
    pattern = _shards(tmp_path / "in", ["a film"] * 4, 1)
    with pytest.raises(SystemExit, match=f"error: .*{message}"):
        batch_predict.main([f"--export_dir={export}", f"--input={pattern}",
                            f"--output={tmp_path / 'out'}", "--text_column=sentence",
                            *extra])
    with pytest.raises(SystemExit, match="error: .*nowhere: no such directory"):
        batch_predict.main([f"--export_dir={tmp_path / 'nowhere'}", f"--input={pattern}",
                            f"--output={tmp_path / 'out'}"])
    assert not glob.glob(str(tmp_path / "out*"))


def test_a_killed_pipeline_leaves_no_complete_looking_output(export, tmp_path):
    pattern = _shards(tmp_path / "in", _sentences(2000) * 3, 2)
    prefix = str(tmp_path / "out" / "p")
    argv = [sys.executable, "-m", "zoo.cli.batch_predict", f"--export_dir={export}",
            f"--input={pattern}", f"--output={prefix}", "--text_column=sentence",
            "--id_column=id", "--direct_num_workers=2"]
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 600  # an AVX2-only CPU starts far slower
    while time.time() < deadline and not glob.glob(f"{tmp_path}/out/**/*", recursive=True):
        time.sleep(0.1)  # the sink's temporary files appear once predictions flow
    time.sleep(2)
    killed = process.poll() is None
    os.killpg(process.pid, signal.SIGKILL)  # the main process and its workers
    process.wait()
    assert killed, "the pipeline ended before it could be killed"
    assert _read(prefix) == [] and not os.path.exists(f"{prefix}-summary.json")
    result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(row["id"] for row in _read(prefix)) == sorted(f"r{i}" for i in range(6000))


def test_csv_output_has_a_header_and_json_for_nested_values(export, tmp_path):
    sentences = _sentences(12)
    pattern = _shards(tmp_path / "in", sentences, 2)
    batch_predict.main([f"--export_dir={export}", f"--input={pattern}",
                        f"--output={tmp_path / 'out'}", "--text_column=sentence",
                        "--id_column=id", "--output_format=csv",
                        "--direct_num_workers=1", "--direct_running_mode=in_memory"])
    rows = []
    for path in glob.glob(str(tmp_path / "out-*-of-*.csv")):
        with open(path, encoding="utf-8", newline="") as f:
            rows += list(csv.DictReader(f))
    assert sorted(r["id"] for r in rows) == sorted(f"r{i}" for i in range(12))
    expected = serving.load(export).predict(sentences)
    for row in rows:
        want = expected[int(row["id"][1:])]
        assert row["label"] == want["label"]
        assert json.loads(row["probabilities"]) == pytest.approx(want["probabilities"], abs=1e-5)


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    """A GCS API server on 127.0.0.1 (gcp-storage-emulator, in memory) with a bucket `zoo`;
    yields the environment that points Google's storage client (and so Beam) at it, with
    credentials that need no network: an access token the emulator does not check, valid far
    into the future (without any, Beam looks for credentials for half a minute in every
    process)."""
    folder = tmp_path_factory.mktemp("gcs")
    (folder / "credentials.json").write_text(json.dumps(dict(
        type="authorized_user", client_id="zoo-test", client_secret="zoo-test",
        refresh_token="unused", token="emulator", expiry="2099-01-01T00:00:00Z")))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "gcp-storage-emulator"), "start",
         "--host=127.0.0.1", f"--port={port}", "--default-bucket=zoo", "--in-memory", "-q"],
        cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ, STORAGE_EMULATOR_HOST=f"http://127.0.0.1:{port}", NO_GCE_CHECK="true",
               GOOGLE_CLOUD_PROJECT="zoo-test",
               GOOGLE_APPLICATION_CREDENTIALS=str(folder / "credentials.json"))
    deadline = time.time() + 60
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    try:
        yield env
    finally:
        server.terminate()
        server.wait()


def _gcs_run(env, code):
    """Runs Python `code` with Beam's file systems against the emulator; returns its stdout."""
    done = subprocess.run([sys.executable, "-c", "from apache_beam.io.filesystems import "
                           "FileSystems as F\nimport json\n" + code], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_inputs_and_outputs_in_a_bucket_through_beams_file_systems(export, gcs, tmp_path):
    sentences = _sentences(300)
    _shards(tmp_path / "upload", sentences, 2)
    _gcs_run(gcs, "".join(
        f"with open({str(tmp_path / 'upload' / name)!r}, 'rb') as f, "
        f"F.create('gs://zoo/in/{name}') as g: g.write(f.read())\n"
        for name in ("part-0.csv", "part-1.csv")))
    work = tmp_path / "cwd"
    work.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "zoo.cli.batch_predict", f"--export_dir={export}",
         "--input=gs://zoo/in/part-*.csv", "--output=gs://zoo/out/sst2",
         "--text_column=sentence", "--id_column=id", "--direct_num_workers=2"],
        cwd=work, env=gcs, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(_gcs_run(gcs, """
names = sorted(m.path for m in F.match(['gs://zoo/out/**'])[0].metadata_list)
lines = [json.loads(l) for n in names if n.endswith('.jsonl') and '-rejected-' not in n
         for l in F.open(n).read().decode().splitlines()]
summary = json.loads(F.open('gs://zoo/out/sst2-summary.json').read())
print(json.dumps(dict(names=names, lines=lines, summary=summary)))"""))
    by_id = {row["id"]: row for row in out["lines"]}
    assert sorted(by_id) == sorted(f"r{i}" for i in range(300)) and len(out["lines"]) == 300
    expected = serving.load(export).predict(sentences)
    assert [by_id[f"r{i}"]["label"] for i in range(300)] == [e["label"] for e in expected]
    assert by_id["r1"]["source"] == "gs://zoo/in/part-1.csv:2"
    summary = out["summary"]
    assert (summary["input_rows"], summary["predictions"], summary["rejected"]) == (300, 300, 0)
    assert not [n for n in out["names"] if "beam-temp" in n]  # the sink's temporary files
    assert os.listdir(work) == []  # nothing written locally
