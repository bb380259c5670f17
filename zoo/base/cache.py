"""Where zoo keeps what it makes once and reuses: `$ZOO_CACHE_DIR`, else `~/.cache/zoo` (local
builds of named models under `hub/`, `zoo.model.hub`; TensorFlow's op lists under
`op_registry/`, `zoo.export.conformance`)."""
import os


def cache_dir():
    """The cache folder: `$ZOO_CACHE_DIR`, else `~/.cache/zoo`."""
    return os.path.expanduser(os.environ.get("ZOO_CACHE_DIR", "~/.cache/zoo"))
