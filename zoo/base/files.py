"""File-system helpers."""
import contextlib
import json
import os
import shutil
import tempfile


def load_json(path, missing=None):
    """The JSON value in `path`, or `missing` when there is no such file."""
    if not os.path.exists(path):
        return missing
    with open(path, encoding="utf-8") as f:
        return json.load(f)


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
    destroys the good one that was there before. The folder gets the permissions a new folder
    gets (the umask's), as `os.makedirs` would give it: a server running as another user can
    read an export (the staging folder itself is private until it is renamed).
    """
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}-", dir=parent)
    try:
        yield staging
        os.chmod(staging, 0o777 & ~_umask())
        if os.path.exists(path):
            shutil.rmtree(path)
        os.replace(staging, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


class PartialFile:
    """A text file written as PATH.partial that appears under PATH, complete, on `close`
    (`abort` removes it); `count` is for what the writer counts (rows, members)."""

    def __init__(self, path, newline=None):
        self.path = path
        self.count = 0
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.file = open(path + ".partial", "w", encoding="utf-8",  # pylint: disable=consider-using-with
                         newline=newline)

    def close(self):
        """Closes and renames the file; returns `count`."""
        self.file.close()
        os.replace(self.path + ".partial", self.path)
        return self.count

    def abort(self):
        self.file.close()
        os.remove(self.path + ".partial")


@contextlib.contextmanager
def written(*writers):
    """Each `PartialFile` of `writers` appears under its name, complete, when the block ends,
    or is removed if the block raises: a failed or interrupted run never leaves a file that
    looks whole."""
    try:
        yield writers
    except BaseException:
        for writer in writers:
            writer.abort()
        raise
    for writer in writers:
        writer.close()


class JsonObjectWriter(PartialFile):
    """Writes one JSON object member by member (`add(key, value)`), so that an object of any
    size never sits in memory; the file appears under its name, complete, on `close`."""

    def __init__(self, path):
        super().__init__(path)
        self.file.write("{")

    def add(self, key, value):
        text = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  ")
        self.file.write(("," if self.count else "") + f"\n  {json.dumps(key)}: {text}")
        self.count += 1

    def close(self):
        self.file.write("\n}\n")
        return super().close()
