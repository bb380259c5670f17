"""Fingerprints of training data, recorded in MODEL_DIR/run.json (`zoo.training.run_record`)
so that a rerun on changed data is caught before it resumes."""
import hashlib

from zoo.base import fs

FINGERPRINT_BYTES = 1 << 20


def file_fingerprint(path):
    """{path, bytes, sha1 of the first MiB}: a changed file is caught without reading it all."""
    digest = hashlib.sha1()
    with fs.open(path, "rb") as f:
        digest.update(f.read(FINGERPRINT_BYTES))
    return dict(path=fs.absolute(path), bytes=fs.size(path),
                head_sha1=digest.hexdigest())


def data_fingerprint(files=None, examples=None):
    """The training data's fingerprint: its files', or a hash of examples held in memory."""
    if files:
        return [file_fingerprint(f) for f in files]
    digest = hashlib.sha1()
    count = 0
    for count, example in enumerate(examples or (), 1):  # noqa: B007  (read after the loop)
        digest.update(repr(example).encode("utf-8"))
    return dict(examples=count, sha1=digest.hexdigest())
