"""Files and folders written whole: locally (one rename, with the permissions any new folder
gets) and on an object store (`ram://`: uploaded from a local copy, a folder's marker last)."""
import os
import stat
import subprocess
import uuid

import pytest

from zoo.base import fs
from zoo.base.files import (COMPLETE_FILE, atomic_directory, check_complete, load_json,
                            save_json, save_text)


@pytest.mark.parametrize("umask,mode", [(0o022, 0o755), (0o077, 0o700)])
def test_an_atomic_directory_appears_whole_with_the_umasks_permissions(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        with atomic_directory(tmp_path / "export" / "1") as staging:
            with open(os.path.join(staging, "saved_model.pb"), "w") as f:
                f.write("x")
    finally:
        os.umask(old)
    made = tmp_path / "export" / "1"
    assert (made / "saved_model.pb").read_text() == "x"
    assert stat.S_IMODE(os.stat(made).st_mode) == mode  # readable by a server of another user
    assert os.listdir(tmp_path / "export") == ["1"]  # no staging folder left


def test_a_failed_block_leaves_what_was_there(tmp_path):
    target = tmp_path / "1"
    target.mkdir()
    (target / "old").write_text("kept")
    with pytest.raises(RuntimeError):
        with atomic_directory(target):
            raise RuntimeError("disk full")
    assert (target / "old").read_text() == "kept" and os.listdir(tmp_path) == ["1"]


def _ram(name):
    return f"ram://files-{name}-{uuid.uuid4().hex}"


def test_on_an_object_store_a_folder_is_uploaded_with_its_marker_last(monkeypatch):
    target = _ram("export") + "/1"
    order = []
    copy = fs.copy
    monkeypatch.setattr(fs, "copy", lambda a, b: (order.append(fs.basename(b)), copy(a, b)))
    with atomic_directory(target) as staging:
        assert fs.is_local(staging)
        os.makedirs(os.path.join(staging, "variables"))
        for name in ("saved_model.pb", "variables/variables.index", "fingerprint.pb"):
            with open(os.path.join(staging, name), "w") as f:
                f.write(name)
    assert order[-2:] == ["saved_model.pb", COMPLETE_FILE]
    assert check_complete(target) is None
    assert load_json(fs.join(target, COMPLETE_FILE))["files"]["variables/variables.index"] == \
        len("variables/variables.index")
    assert not os.path.exists(staging)


def test_an_upload_stopped_half_way_is_refused_as_incomplete(monkeypatch):
    target = _ram("export") + "/1"
    copy = fs.copy

    def stop_at_the_graph(source, dest):
        if dest.endswith("saved_model.pb"):
            raise KeyboardInterrupt  # in-process stand-in for a kill: ram:// dies with it
        copy(source, dest)

    monkeypatch.setattr(fs, "copy", stop_at_the_graph)
    with pytest.raises(KeyboardInterrupt):
        with atomic_directory(target) as staging:
            for name in ("saved_model.pb", "variables.index"):
                with open(os.path.join(staging, name), "w") as f:
                    f.write(name)
    assert fs.exists(fs.join(target, "variables.index"))
    assert "no zoo_complete.json" in check_complete(target)
    fs.remove(fs.join(target, "variables.index"))
    monkeypatch.setattr(fs, "copy", copy)
    with fs.open(fs.join(target, COMPLETE_FILE), "w") as f:  # a marker that lies about a size
        f.write('{"files": {"saved_model.pb": 5}}')
    assert "saved_model.pb is missing or not whole" in check_complete(target)


def test_a_file_is_replaced_whole_or_not_at_all_on_an_object_store(monkeypatch):
    path = _ram("record") + "/run.json"
    save_json(path, {"step": 1})
    monkeypatch.setattr(fs, "copy", lambda a, b: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        save_json(path, {"step": 2})
    assert load_json(path) == {"step": 1}  # the previous complete state
    monkeypatch.undo()
    save_text(path, '{"step": 3}')
    assert load_json(path) == {"step": 3}


def test_a_killed_writers_staging_folder_is_removed_by_the_next_write(tmp_path):
    ended = subprocess.Popen(["true"])  # a process that has ended
    ended.wait()
    (tmp_path / f".1-{ended.pid}-abc").mkdir()  # as a killed export leaves it
    (tmp_path / f".1-{os.getpid()}-live").mkdir()  # a live process's: kept
    with atomic_directory(tmp_path / "1") as staging:
        assert os.path.basename(staging).startswith(f".1-{os.getpid()}-")
    assert sorted(os.listdir(tmp_path)) == [f".1-{os.getpid()}-live", "1"]
