"""One writer per model dir: the lock a run holds while it writes into its model dir.

Training, evaluation and data checks write into the model dir (checkpoints, run.json, results);
two such runs at once would leave it mixed (one run's record, the other's checkpoint). `held`
takes an exclusive `flock` on MODEL_DIR/.lock and writes the holder into it (process id, host,
mode, start time); a second writer is refused with a `ModelDirBusy` that names the holder.
The operating system drops the lock when its process ends, however it ends (a SIGKILL
included), so a killed run never leaves the dir stuck; the file stays, naming its last holder.
Predict and export only read the model dir and take no lock.

On a file system without `flock` (some network mounts) the lock is skipped with a warning.
"""
import contextlib
import datetime
import fcntl
import json
import os
import socket

from absl import logging

from zoo.base.errors import ModelDirBusy

LOCK_FILE = ".lock"


def _holder(fd):
    """What the lock file says of its holder ({} if unreadable)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return json.loads(os.read(fd, 4096).decode("utf-8") or "{}")
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def held(model_dir, mode):
    """Holds the model dir's lock for the block; a `ModelDirBusy` if another live run holds
    it."""
    path = os.path.join(model_dir, LOCK_FILE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            raise ModelDirBusy(
                f"{model_dir} is in use by another run (--mode={holder.get('mode', '?')}, "
                f"process {holder.get('pid', '?')} on {holder.get('host', '?')}, since "
                f"{holder.get('started', '?')}): wait for it to end, or use another "
                "--model_dir") from None
        except OSError as e:  # no flock on this file system
            logging.warning("%s: cannot lock the model dir (%s); nothing stops another run "
                            "from writing into it at the same time", path, e)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(dict(
            pid=os.getpid(), host=socket.gethostname(), mode=mode,
            started=datetime.datetime.now().isoformat(timespec="seconds"))).encode("utf-8"))
        yield
    finally:
        os.close(fd)  # releases the lock
