"""One writer per model dir: the lock (local disk) or lease (object store) a run holds while it
writes into its model dir.

Training, evaluation and data checks write into the model dir (checkpoints, run.json, results);
two such runs at once would leave it mixed (one run's record, the other's checkpoint). `held`
makes sure only one does, and a second writer is refused with a `ModelDirBusy` that names the
holder (process id, host, mode, start time). Predict and export only read the model dir and take
neither.

- **Local disk**: an exclusive `flock` on MODEL_DIR/.lock, which holds the holder's record. The
  operating system drops it when its process ends, however it ends (a SIGKILL included), so a
  killed run never leaves the dir stuck; the file stays, naming its last holder. On a file
  system without `flock` (some network mounts) the lock is skipped with a warning.
- **An object store** (`gs://`, and any file system with a scheme): no `flock` exists, so
  MODEL_DIR/.lock is a lease: the holder's record with a heartbeat, rewritten every
  `HEARTBEAT_SECONDS` by a thread of the run and removed when the run ends. A lease whose
  heartbeat is younger than `LEASE_SECONDS` refuses a second writer; an older one was left by a
  run that is gone (killed, its machine lost) and is taken over, with a warning that names it.
  The heartbeat is the holder's clock: machines sharing a model dir need clocks within a minute
  of each other (NTP keeps them far closer). Two runs starting within the same second can both
  write a lease; each reads it back after `SETTLE_SECONDS` and the one whose lease is not there
  stops.
"""
import contextlib
import datetime
import fcntl
import json
import os
import socket
import threading
import time
import uuid

from absl import logging

from zoo.base import fs
from zoo.base.errors import ModelDirBusy
from zoo.base.files import load_json, save_json

LOCK_FILE = ".lock"
LEASE_SECONDS = 300  # a lease whose heartbeat is older than this is taken over
HEARTBEAT_SECONDS = 30
SETTLE_SECONDS = 1.0  # how long a new lease waits before reading itself back


def _record(mode):
    return dict(pid=os.getpid(), host=socket.gethostname(), mode=mode,
                started=datetime.datetime.now().isoformat(timespec="seconds"))


def _busy(model_dir, holder, extra=""):
    return ModelDirBusy(
        f"{model_dir} is in use by another run (--mode={holder.get('mode', '?')}, process "
        f"{holder.get('pid', '?')} on {holder.get('host', '?')}, since "
        f"{holder.get('started', '?')}){extra}: wait for it to end, or use another --model_dir")


@contextlib.contextmanager
def held(model_dir, mode):
    """Holds the model dir's lock (local) or lease (object store) for the block; a
    `ModelDirBusy` if another live run holds it."""
    with (_flock if fs.is_local(model_dir) else _lease)(model_dir, mode):
        yield


def _holder(fd):
    """What the lock file says of its holder ({} if unreadable)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return json.loads(os.read(fd, 4096).decode("utf-8") or "{}")
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def _flock(model_dir, mode):
    path = os.path.join(fs.absolute(model_dir), LOCK_FILE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _busy(model_dir, _holder(fd)) from None
        except OSError as e:  # no flock on this file system
            logging.warning("%s: cannot lock the model dir (%s); nothing stops another run "
                            "from writing into it at the same time", path, e)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(_record(mode)).encode("utf-8"))
        yield
    finally:
        os.close(fd)  # releases the lock


def _read_lease(path):
    try:
        return load_json(path) or {}
    except ValueError:  # a lease being replaced as it was read: as good as none
        return {}


@contextlib.contextmanager
def _lease(model_dir, mode):
    path = fs.join(model_dir, LOCK_FILE)
    holder = _read_lease(path)
    age = time.time() - holder.get("heartbeat", 0)
    if holder and age < LEASE_SECONDS:
        raise _busy(model_dir, holder, f", its lease renewed {age:.0f} s ago; it is taken over "
                    f"once {LEASE_SECONDS} s pass without renewal")
    if holder:
        logging.warning("%s: taking over the lease of process %s on %s (--mode=%s), not renewed "
                        "for %.0f s: that run is gone", model_dir, holder.get("pid"),
                        holder.get("host"), holder.get("mode"), age)
    lease = dict(_record(mode), token=uuid.uuid4().hex, heartbeat=time.time())
    save_json(path, lease)
    time.sleep(SETTLE_SECONDS)
    now = _read_lease(path)
    if now.get("token") != lease["token"]:
        raise _busy(model_dir, now, ", which took its lease at the same moment")
    stop = threading.Event()

    def renew():
        while not stop.wait(HEARTBEAT_SECONDS):
            if _read_lease(path).get("token") != lease["token"]:
                logging.error("%s: another run took over this run's lease", model_dir)
                return
            save_json(path, dict(lease, heartbeat=time.time()))

    thread = threading.Thread(target=renew, name="zoo-lease", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if _read_lease(path).get("token") == lease["token"]:
            fs.remove(path)
