"""One writer per model dir: a `flock` on a local disk, a lease on an object store (`ram://`)."""
import json
import time
import uuid

import pytest

from zoo.base import fs
from zoo.base.errors import ModelDirBusy
from zoo.base.files import load_json, save_json
from zoo.run import lock


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(lock, "SETTLE_SECONDS", 0.0)


def test_a_second_local_writer_is_refused(tmp_path):
    with lock.held(str(tmp_path), "train"):
        with pytest.raises(ModelDirBusy, match="in use by another run .--mode=train"):
            with lock.held(str(tmp_path), "eval"):
                pass
    with lock.held(str(tmp_path), "eval"):  # released when the block ends
        pass


def test_a_second_writer_on_an_object_store_is_refused_by_the_lease():
    model_dir = f"ram://lease-{uuid.uuid4().hex}/m"
    fs.makedirs(model_dir)
    with lock.held(model_dir, "train"):
        lease = load_json(fs.join(model_dir, lock.LOCK_FILE))
        assert {"pid", "host", "mode", "started", "heartbeat", "token"} <= set(lease)
        with pytest.raises(ModelDirBusy, match=r"lease renewed \d+ s ago; it is taken over once "
                                               f"{lock.LEASE_SECONDS} s pass"):
            with lock.held(model_dir, "eval"):
                pass
    assert not fs.exists(fs.join(model_dir, lock.LOCK_FILE))  # released: removed
    with lock.held(model_dir, "eval"):
        pass


def test_the_lease_is_renewed_while_the_run_lasts(monkeypatch):
    monkeypatch.setattr(lock, "HEARTBEAT_SECONDS", 0.05)
    model_dir = f"ram://lease-{uuid.uuid4().hex}/m"
    with lock.held(model_dir, "train"):
        first = load_json(fs.join(model_dir, lock.LOCK_FILE))["heartbeat"]
        time.sleep(0.3)
        assert load_json(fs.join(model_dir, lock.LOCK_FILE))["heartbeat"] > first


def test_a_stale_lease_is_taken_over_and_a_fresh_one_is_not(caplog):
    model_dir = f"ram://lease-{uuid.uuid4().hex}/m"
    path = fs.join(model_dir, lock.LOCK_FILE)
    gone = dict(pid=4242, host="lost-vm", mode="train", started="2026-01-01T00:00:00",
                token="theirs", heartbeat=time.time() - lock.LEASE_SECONDS - 5)
    save_json(path, gone)
    with lock.held(model_dir, "train"):
        assert load_json(path)["token"] != "theirs"
    assert "taking over the lease of process 4242 on lost-vm" in caplog.text
    save_json(path, dict(gone, heartbeat=time.time() - lock.LEASE_SECONDS + 60))
    with pytest.raises(ModelDirBusy, match="process 4242 on lost-vm"):
        with lock.held(model_dir, "train"):
            pass
    assert json.loads(fs.open(path).read())["token"] == "theirs"  # left as it was
