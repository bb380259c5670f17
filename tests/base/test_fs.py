"""The file layer: local paths and TensorFlow's in-memory file system (`ram://`, served by the
same `tf.io.gfile` layer as `gs://`) give the same answers; an unknown scheme is refused."""
import csv
import os
import uuid

import pytest

from zoo.base import fs
from zoo.base.errors import UsageError


@pytest.fixture(params=["local", "ram"])
def root(request, tmp_path):
    """A folder on the local disk or on ram:// (its name fresh per test: ram:// lives as long as
    the process)."""
    return str(tmp_path) if request.param == "local" else f"ram://fs-{uuid.uuid4().hex}"


def test_text_written_and_read_back_with_the_same_newline_rules(root):
    path = fs.join(root, "data", "rows.csv")
    fs.makedirs(fs.dirname(path))
    with fs.open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([["id", "text"], ["1", "a \"quoted\"\nline"], ["2", "é"]])
    with fs.open(path, encoding="utf-8", newline="") as f:
        assert list(csv.reader(f)) == [["id", "text"], ["1", "a \"quoted\"\nline"], ["2", "é"]]
    with fs.open(path, "rb") as f:
        assert f.readline() == b"id,text\r\n"  # csv's own line ends, untranslated
        f.seek(0)
        assert f.read(2) == b"id"
    assert fs.size(path) == len("id,text\r\n1,\"a \"\"quoted\"\"\nline\"\r\n2,é\r\n".encode())


def test_folders_globs_and_removal(root):
    for name in ("part-0.csv", "part-1.csv", "other.tsv", "sub/part-2.csv"):
        fs.makedirs(fs.dirname(fs.join(root, name)))
        with fs.open(fs.join(root, name), "w") as f:
            f.write(name)
    assert [fs.basename(p) for p in fs.glob(fs.join(root, "part-*.csv"))] == \
        ["part-0.csv", "part-1.csv"]
    assert fs.listdir(root) == ["other.tsv", "part-0.csv", "part-1.csv", "sub"]
    assert fs.walk_files(root) == ["other.tsv", "part-0.csv", "part-1.csv", "sub/part-2.csv"]
    assert fs.isdir(fs.join(root, "sub")) and not fs.isdir(fs.join(root, "other.tsv"))
    fs.remove(fs.join(root, "other.tsv"))
    fs.remove(fs.join(root, "other.tsv"))  # a missing file is fine unless asked otherwise
    assert not fs.exists(fs.join(root, "other.tsv"))
    fs.rmtree(fs.join(root, "sub"))
    assert fs.walk_files(root) == ["part-0.csv", "part-1.csv"]


def test_a_missing_file_is_a_file_not_found_error(root):
    with pytest.raises(FileNotFoundError):
        fs.open(fs.join(root, "nothing.txt"))


def test_a_folder_in_a_bucket_is_copied_for_local_readers(tmp_path):
    root = f"ram://copy-{uuid.uuid4().hex}"
    for name in ("config.json", "weights/model.bin"):
        fs.makedirs(fs.dirname(fs.join(root, name)))
        with fs.open(fs.join(root, name), "wb") as f:
            f.write(name.encode())
    with fs.local_copy(root) as local:
        assert open(os.path.join(local, "weights", "model.bin"), "rb").read() == \
            b"weights/model.bin"
    assert not os.path.exists(local)
    with fs.local_copy(str(tmp_path)) as same:
        assert same == str(tmp_path)


def test_paths_made_absolute_only_where_local(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert fs.absolute("runs/m") == os.path.join(str(tmp_path), "runs", "m")
    assert fs.absolute("ram://b/runs/m") == "ram://b/runs/m"
    assert fs.absolute("file:///tmp/x") == "/tmp/x"
    assert fs.dirname("ram://b/runs/m/") == "ram://b/runs"
    assert fs.scheme("gs://b/x") == "gs" and fs.scheme("/a/b://c") == "" and fs.is_local("x")


def test_an_unknown_scheme_is_refused_with_the_schemes_there_are(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as caught:
        fs.check("gcs://bucket/data.csv", "`train_file`")
    message = str(caught.value)
    assert message.startswith("train_file must be a local path or one on a file system")
    assert "gs://" in message and "ram://" in message and "'gcs://bucket/data.csv'" in message
    assert fs.problem("a.csv,ram://b/c.csv") is None
    assert "s3://" in fs.problem("a.csv,s3://b/c.csv")  # the second of a list
    assert os.listdir(tmp_path) == []
