"""Files written whole or not at all, on any file system `zoo.base.fs` serves.

A reader never sees a half-written file under its final name, locally or in a bucket: a local
file is written beside its name and renamed (atomic); a file for an object store (`gs://`,
`ram://`) is written to a local temporary file, uploaded whole under a name of its own and
renamed onto its name (on an object store a copy of one whole object onto another: readers see
the old one or the new one). A folder (`atomic_directory`: an export, a Hub
build) is staged and then appears under its name (locally: one rename; on an object store: the
files one by one, `COMPLETE_FILE` last, which readers check).
"""
import contextlib
import json
import os
import shutil
import tempfile
import uuid

from zoo.base import fs

# Written last into every folder `atomic_directory` makes: the files it holds and their sizes.
# On an object store a folder appears file by file; a reader that finds it (`check_complete`)
# knows the folder is whole.
COMPLETE_FILE = "zoo_complete.json"


def load_json(path, missing=None):
    """The JSON value in `path`, or `missing` when there is no such file."""
    if not fs.exists(path):
        return missing
    with fs.open(path, encoding="utf-8") as f:
        return json.load(f)


def save_json(path, value):
    """Writes `value` as indented JSON; readers never see a half-written file."""
    writer = PartialFile(path)
    with written(writer):
        json.dump(value, writer.file, indent=2, ensure_ascii=False)


def save_text(path, text):
    """Writes `text` (UTF-8) to `path` whole; readers never see a part of it."""
    writer = PartialFile(path)
    with written(writer):
        writer.file.write(text)


def save_bytes(path, data):
    """Writes `data` to `path` whole (a plot, a model file); readers never see a part of it."""
    writer = PartialFile(path, binary=True)
    with written(writer):
        writer.file.write(data)


@contextlib.contextmanager
def atomic_directory(path):
    """Yields a local staging folder whose files replace folder `path` only if the block
    succeeds.

    A build or export that fails half-way never leaves a half-written folder at `path`, nor
    destroys the good one that was there before. Locally the staging folder is beside `path`
    (`.NAME-PID-XXXX`: the next write of `path` removes one whose process was killed) and
    renamed onto it; it gets the permissions a new folder gets (the umask's), as
    `os.makedirs` would give it: a server running as another user can read an export. On an
    object store, which cannot rename a folder, the staged files are uploaded into `path` (what
    was there removed first) with `COMPLETE_FILE` last: until it is there, `check_complete`
    refuses the folder.
    """
    local = fs.is_local(path)
    if local:
        path = fs.absolute(path)
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        _remove_stale_staging(parent, os.path.basename(path))
        staging = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}-{os.getpid()}-",
                                   dir=parent)
    else:
        staging = tempfile.mkdtemp(prefix="zoo-staging-")
    try:
        yield staging
        _write_complete(staging)
        if local:
            os.chmod(staging, 0o777 & ~_umask())
            if os.path.exists(path):
                shutil.rmtree(path)
            os.replace(staging, path)
        else:
            _upload(staging, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _remove_stale_staging(parent, name):
    """Removes the staging folders of `name` in `parent` that a killed process left
    (`.NAME-PID-XXXX` whose process is gone)."""
    for entry in os.listdir(parent):
        head, _, rest = entry.partition(f".{name}-")
        pid = rest.split("-", 1)[0]
        if head or not pid.isdigit() or not os.path.isdir(os.path.join(parent, entry)):
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)
        except PermissionError:  # another user's live process
            pass


# The files a staged folder's upload writes last, in this order: a SavedModel is found by its
# saved_model.pb (TF Serving polls for it), and the folder is whole once COMPLETE_FILE is there.
LAST = ("saved_model.pb", COMPLETE_FILE)


def _upload(staging, path):
    fs.rmtree(path)
    files = fs.walk_files(staging)
    files.sort(key=lambda name: LAST.index(name) + 1 if name in LAST else 0)
    for name in files:
        target = fs.join(path, name)
        fs.makedirs(fs.dirname(target))
        fs.copy(os.path.join(staging, *name.split("/")), target)


def _write_complete(staging):
    sizes = {name: os.path.getsize(os.path.join(staging, *name.split("/")))
             for name in fs.walk_files(staging)}
    with open(os.path.join(staging, COMPLETE_FILE), "w", encoding="utf-8") as f:
        json.dump(dict(files=sizes), f, indent=2)


def check_complete(path):
    """None if folder `path` (made by `atomic_directory`) is whole, else what is missing. A
    local folder without `COMPLETE_FILE` (written before zoo wrote one) counts as whole: a
    local folder appears in one rename."""
    marker = fs.join(path, COMPLETE_FILE)
    if not fs.exists(marker):
        return None if fs.is_local(path) else (
            f"no {COMPLETE_FILE}: the folder is still being written, or its upload stopped "
            "half-way (write it again)")
    for name, size in load_json(marker)["files"].items():
        target = fs.join(path, name)
        if not fs.exists(target) or fs.size(target) != size:
            return f"{name} is missing or not whole ({COMPLETE_FILE} lists {size} bytes)"
    return None


def export_inside(path):
    """The SavedModel folder one or two levels below folder `path` (a TF Serving base path,
    a model dir holding an export), or None: a hint for a user who gave the folder above."""
    for depth in (1, 2):
        found = fs.glob(fs.join(path, *["*"] * depth, "saved_model.pb"))
        if found:
            return fs.dirname(found[0])
    return None


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


class PartialFile:
    """A file written whole or not at all (text, or bytes with `binary`): it appears under
    `path`, complete, on `close`, and `abort` drops it. Locally it is written as PATH.partial
    and renamed; for an object store, to a local temporary file uploaded (and renamed) on
    `close`. `count` is for what the writer counts (rows, members)."""

    def __init__(self, path, newline=None, binary=False):
        self.path = path
        self.count = 0
        if fs.is_local(path):
            os.makedirs(fs.dirname(path), exist_ok=True)
            self.staged = fs.absolute(path) + ".partial"
        else:
            handle, self.staged = tempfile.mkstemp(prefix="zoo-upload-")
            os.close(handle)
        self.file = open(self.staged, "wb" if binary else "w",
                         **({} if binary else dict(encoding="utf-8", newline=newline)))

    def close(self):
        """Closes the file and puts it under its name; returns `count`."""
        self.file.close()
        if fs.is_local(self.path):
            os.replace(self.staged, fs.absolute(self.path))
        else:  # uploaded under a name of its own, then renamed onto its name in one step
            temporary = f"{self.path}.upload-{uuid.uuid4().hex}"
            try:
                fs.makedirs(fs.dirname(self.path))
                fs.copy(self.staged, temporary)
                fs.replace(temporary, self.path)
            finally:
                os.remove(self.staged)
                fs.remove(temporary)
        return self.count

    def abort(self):
        self.file.close()
        os.remove(self.staged)


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
