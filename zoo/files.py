"""File-system helpers."""
import contextlib
import json
import os
import shutil
import tempfile


def save_json(path, value):
    """Writes `value` as indented JSON; readers never see a half-written file."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
    os.replace(tmp, path)


@contextlib.contextmanager
def atomic_directory(path):
    """Yields a staging folder beside `path` that replaces `path` only if the block succeeds.

    A build or export that fails half-way never leaves a half-written folder at `path`, nor
    destroys the good one that was there before.
    """
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}-", dir=parent)
    try:
        yield staging
        if os.path.exists(path):
            shutil.rmtree(path)
        os.replace(staging, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
