"""The one file layer for paths a user gives: local files, and every file system TensorFlow
serves (`gs://`, `ram://`, and `s3://` or `hdfs://` where a TensorFlow plugin adds them).

A local path (or `file://...`) takes Python's own file calls, the fast ones for reading line by
line; a path with a scheme goes to the remote backend: `tf.io.gfile`, imported only then (a
process that reads local files does not pay for it), or, inside a Beam pipeline, Beam's own file
systems (`use_remote`, `zoo.batch.files`). Every function takes either kind of path, so code
above never asks which:

    with fs.open("gs://bucket/data/train.csv", newline="") as f:
        rows = list(csv.reader(f))
    fs.makedirs("ram://runs/m")

What differs on an object store (no folders, no atomic rename of a folder, no `flock`) is
handled by the writers in `zoo.base.files` and the model dir's lease in `zoo.run.lock`;
`is_local` tells them which case they are in. A path whose scheme no file system serves is
refused (`problem`, `check`) with the schemes there are, instead of becoming a local folder
named "gcs:".
"""
import builtins
import contextlib
import errno
import glob as _glob
import io
import os
import shutil
import tempfile

from zoo.base.errors import UsageError

SCHEME = "://"


def scheme(path):
    """The scheme of `path` ("gs" for gs://bucket/x), "" for a plain local path."""
    head, sep, _ = os.fspath(path).partition(SCHEME)
    return head.lower() if sep and head and "/" not in head else ""


def is_local(path):
    """Whether `path` is on the local file system (no scheme, or file://)."""
    return scheme(path) in ("", "file")


def _local(path):
    path = os.fspath(path)
    if scheme(path) == "file":
        path = path[len("file://"):]
    return os.path.expanduser(path)


class TensorflowFiles:
    """The remote backend of `tf.io.gfile` (the default): `gs://`, `ram://` and plugins'."""

    @property
    def gfile(self):
        import tensorflow as tf
        return tf.io.gfile

    def schemes(self):
        return sorted(s for s in self.gfile.get_registered_schemes() if s and s != "file")

    def open(self, path, mode):
        """A raw binary stream ("rb" or "wb") of `path`."""
        if "w" in mode and scheme(path) == "ram" and self.gfile.exists(path):
            self.gfile.remove(path)  # ram:// writes after the old content instead of over it
        return RawStream(self.gfile.GFile(path, mode), mode)

    def exists(self, path):
        return self.gfile.exists(path)

    def isdir(self, path):
        return self.gfile.isdir(path)

    def glob(self, pattern):
        return self.gfile.glob(pattern)

    def size(self, path):
        return self.gfile.stat(path).length

    def mtime_ns(self, path):
        return self.gfile.stat(path).mtime_nsec or None

    def listdir(self, path):
        return [n.rstrip("/") for n in self.gfile.listdir(path)]

    def walk(self, path):
        return self.gfile.walk(path)

    def makedirs(self, path):
        self.gfile.makedirs(path)

    def remove(self, path):
        self.gfile.remove(path)

    def rmtree(self, path):
        self.gfile.rmtree(path)

    def rename(self, source, target):
        self.gfile.rename(source, target, overwrite=True)

    def copy(self, source, target):
        if scheme(target) == "ram" and self.gfile.exists(target):
            self.gfile.remove(target)  # (as in `open`)
        self.gfile.copy(source, target, overwrite=True)


_remote = TensorflowFiles()


def use_remote(backend):
    """Serves paths with a scheme by `backend` (`TensorflowFiles`'s interface) in this process
    from now on; returns the one it replaces."""
    global _remote
    previous, _remote = _remote, backend
    return previous


def registered_schemes():
    """The schemes the remote backend serves in this process, sorted."""
    return _remote.schemes()


def problem(value):
    """What is wrong with a path setting's value (comma-separated paths each) as a phrase, or
    None: for `zoo.base.fields.setting(check=...)`, whose message names the flag."""
    for part in str(value).split(","):
        name = scheme(part.strip())
        if name and name != "file" and name not in (known := registered_schemes()):
            known = ", ".join(f"{s}://" for s in known)
            return (f"a local path or one on a file system this TensorFlow serves ({known}; "
                    f"s3:// and hdfs:// come with the tensorflow-io plugin), and {name}:// "
                    "is none of them")
    return None


def check(path, flag=None):
    """`path` if a file system serves it; a `UsageError` naming `flag` (or the path) if not."""
    what = problem(path)
    if what:
        raise UsageError(f"{flag or 'the path'} must be {what}, not {path!r}")
    return path


def absolute(path):
    """`path` made absolute if local (a user's `~` expanded); a URL as it is."""
    return os.path.abspath(_local(path)) if is_local(path) else os.fspath(path)


def join(path, *parts):
    return os.path.join(os.fspath(path), *parts)


def basename(path):
    return os.path.basename(os.fspath(path).rstrip("/"))


def dirname(path):
    """The folder of `path` (of its absolute form when local)."""
    return os.path.dirname(absolute(path).rstrip("/") or "/")


def exists(path):
    return os.path.exists(_local(path)) if is_local(path) else _remote.exists(path)


def isdir(path):
    return os.path.isdir(_local(path)) if is_local(path) else _remote.isdir(path)


def makedirs(path):
    """Makes folder `path` and its parents if missing (on an object store, where folders are
    only prefixes of names, what the file system keeps of one)."""
    if is_local(path):
        os.makedirs(_local(path), exist_ok=True)
    else:
        _remote.makedirs(path)


def listdir(path):
    """The names in folder `path`, sorted (sub-folders without a trailing slash)."""
    if is_local(path):
        return sorted(os.listdir(_local(path)))
    return sorted(_remote.listdir(path))


def walk_files(path):
    """Every file under folder `path`, as paths relative to it (with "/"), sorted."""
    local = is_local(path)
    top = _local(path) if local else os.fspath(path).rstrip("/")
    found = []
    for folder, _, files in (os.walk(top) if local else _remote.walk(top)):
        relative = os.path.relpath(folder, top) if local else folder[len(top):].strip("/")
        found += [os.path.normpath(os.path.join(relative, f)).replace(os.sep, "/")
                  for f in files]
    return sorted(found)


def has_magic(pattern):
    return _glob.has_magic(pattern)


def glob(pattern):
    """The paths matching a glob (`*`, `?`, `[...]`), sorted."""
    if is_local(pattern):
        return sorted(_glob.glob(_local(pattern)))
    return sorted(_remote.glob(pattern))


def size(path):
    return os.path.getsize(_local(path)) if is_local(path) else _remote.size(path)


def mtime_ns(path):
    """When `path` last changed, in nanoseconds (None where the file system does not say)."""
    return os.stat(_local(path)).st_mtime_ns if is_local(path) else _remote.mtime_ns(path)


def remove(path, missing_ok=True):
    if is_local(path):
        try:
            os.remove(_local(path))
        except FileNotFoundError:
            if not missing_ok:
                raise
    elif not missing_ok or _remote.exists(path):
        _remote.remove(path)


def rmtree(path):
    """Removes folder `path` and all it holds, if it exists."""
    if is_local(path):
        shutil.rmtree(_local(path), ignore_errors=True)
    elif _remote.exists(path):
        _remote.rmtree(path)


def replace(source, target):
    """Renames file `source` to `target`, replacing it. Local: atomic. On an object store a
    copy then a delete: `target` is one whole object, the old one or the new one, at any time."""
    if is_local(source):
        os.replace(_local(source), _local(target))
    else:
        _remote.rename(source, target)


def copy(source, target):
    """Copies file `source` to `target` (either may be local or not), replacing it."""
    if is_local(source) and is_local(target):
        shutil.copyfile(_local(source), _local(target))
    else:
        _remote.copy(_local(source) if is_local(source) else source,
                     _local(target) if is_local(target) else target)


@contextlib.contextmanager
def local_copy(folder):
    """Yields a local path of folder `folder`: itself if local; else a temporary copy of all
    it holds, removed when the block ends (for readers that need a local file: memory maps,
    libraries that take only local paths)."""
    if is_local(folder):
        yield _local(folder)
        return
    with tempfile.TemporaryDirectory(prefix="zoo-copy-") as local:
        for name in walk_files(folder):
            target = os.path.join(local, *name.split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            copy(join(folder, name), target)
        yield local


def samefile(a, b):
    """Whether `a` and `b` name the same existing file."""
    if is_local(a) and is_local(b):
        return exists(a) and exists(b) and os.path.samefile(_local(a), _local(b))
    return not is_local(a) and not is_local(b) and a.rstrip("/") == b.rstrip("/")


def writable_folder(path):
    """Whether new files can be made in folder `path` (an object store: assumed, its
    permissions are the server's to check at the first write)."""
    if not is_local(path):
        return True
    path = _local(path)
    return os.path.isdir(path) and os.access(path, os.W_OK)


def readable(path):
    return os.access(_local(path), os.R_OK) if is_local(path) else True


def open(path, mode="r", encoding=None, newline=None):
    """A file object like the builtin `open`'s (text or binary; "r" or "w"). A path with a
    scheme is read or written through the remote backend, buffered, with the same newline and
    encoding rules; a missing file is a FileNotFoundError as for a local one."""
    if is_local(path):
        return builtins.open(_local(path), mode, encoding=encoding, newline=newline)
    reading = "r" in mode
    if reading and not _remote.exists(path):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
    raw = _remote.open(path, "rb" if reading else "wb")
    buffered = io.BufferedReader(raw) if reading else io.BufferedWriter(raw)
    if "b" in mode:
        return buffered
    return io.TextIOWrapper(buffered, encoding=encoding or "utf-8", newline=newline)


class RawStream(io.RawIOBase):
    """A file object of another library (a `tf.io.gfile.GFile`, a Beam file) that reads, writes,
    seeks and tells, as a raw stream: io's buffering and text layers then apply to it. `mode`:
    "rb" or "wb"."""

    def __init__(self, file, mode):
        super().__init__()
        self.mode = mode
        self._file = file

    def readable(self):
        return "r" in self.mode

    def writable(self):
        return "r" not in self.mode

    def seekable(self):
        return "r" in self.mode

    def readinto(self, buffer):
        data = self._file.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def write(self, data):
        self._file.write(bytes(data))
        return len(data)

    def seek(self, offset, whence=io.SEEK_SET):
        self._file.seek(offset, whence)
        return self._file.tell()

    def tell(self):
        return self._file.tell()

    def close(self):
        if not self.closed:
            self._file.close()
        super().close()
