"""Beam's own file systems as `zoo.base.fs`'s remote backend, for `zoo batch-predict`.

Inside a Beam pipeline, paths with a scheme (`gs://`, and `s3://` or `hdfs://` where Beam's
matching extra is installed) are read and written by Beam's `FileSystems`, with the credentials
and settings of the pipeline's runner (Dataflow workers have no others), not by TensorFlow's.
`BeamFiles` gives them `zoo.base.fs.TensorflowFiles`'s interface, so zoo's readers stream each
input file through it unchanged: `used()` for the launcher's run, `use()` in each worker process
as its first `DoFn` starts. Local paths stay with Python's own file
calls. TFRecord inputs are read by TensorFlow's file systems (`tf.data.TFRecordDataset`), which
reach `gs://` with the machine's credentials as well.
"""
import contextlib
import posixpath
import shutil

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from zoo.base import fs

KNOWN_SCHEMES = ("gs", "s3", "hdfs", "azfs")


class BeamFiles:
    """`zoo.base.fs`'s remote backend on Beam's `FileSystems`."""

    def schemes(self):
        found = []
        for name in KNOWN_SCHEMES:
            try:
                FileSystems.get_filesystem(f"{name}://bucket/x")
            except Exception:  # Beam's extra for it is missing
                continue
            found.append(name)
        return found

    def open(self, path, mode):
        opener = FileSystems.open if "r" in mode else FileSystems.create
        return fs.RawStream(opener(path, compression_type=CompressionTypes.UNCOMPRESSED), mode)

    def exists(self, path):
        return FileSystems.exists(path)

    def isdir(self, path):
        """An object store has no folders: a path is one when names lie below it."""
        return not FileSystems.exists(path) and bool(self.glob(path.rstrip("/") + "/*"))

    def glob(self, pattern):
        try:
            return [m.path for m in FileSystems.match([pattern])[0].metadata_list]
        except Exception:  # Beam raises BeamIOError for no match
            return []

    def size(self, path):
        return FileSystems.match([path])[0].metadata_list[0].size_in_bytes

    def mtime_ns(self, path):
        seconds = FileSystems.match([path])[0].metadata_list[0].last_updated_in_seconds
        return int(seconds * 1e9) if seconds else None

    def listdir(self, path):
        top = path.rstrip("/") + "/"
        return sorted({m[len(top):].split("/")[0] for m in self.glob(top + "**")})

    def walk(self, path):
        top = path.rstrip("/")
        folders = {}
        for name in self.glob(top + "/**"):
            folder, file = posixpath.split(name)
            folders.setdefault(folder, []).append(file)
        return [(folder, [], files) for folder, files in sorted(folders.items())]

    def makedirs(self, path):
        del path  # an object store makes folders as it writes the names below them

    def remove(self, path):
        FileSystems.delete([path])

    def rmtree(self, path):
        names = self.glob(path.rstrip("/") + "/**")
        if names:
            FileSystems.delete(names)

    def rename(self, source, target):
        FileSystems.rename([source], [target])

    def copy(self, source, target):
        if fs.is_local(source) or fs.is_local(target):  # Beam copies within one file system
            with FileSystems.open(source, compression_type=CompressionTypes.UNCOMPRESSED) as a, \
                    FileSystems.create(target, compression_type=CompressionTypes.UNCOMPRESSED) as b:
                shutil.copyfileobj(a, b, 1 << 22)
            return
        FileSystems.copy([source], [target])


def use():
    """Serves paths with a scheme by Beam's file systems in this process from now on (a Beam
    worker's)."""
    fs.use_remote(BeamFiles())


@contextlib.contextmanager
def used():
    """Serves paths with a scheme by Beam's file systems for the block (the launcher's, and
    the workers' of Beam's in-memory runner, which share its process), then as before."""
    previous = fs.use_remote(BeamFiles())
    try:
        yield
    finally:
        fs.use_remote(previous)
