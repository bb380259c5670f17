"""Plain helpers for the tests (fixtures live in conftest.py)."""
import collections
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
REFERENCE = os.path.join(SHARED, "reference")


def reference_file(name):
    path = os.path.join(REFERENCE, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not here (../shared/reference is needed)")
    return path


def run_module(module, *args, env=None, timeout=600):
    """Runs `python -m module args` from the project root; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def profiled_ops(logdir, fn, *args, runs=3):
    """{"node name:op type": times run} over `runs` calls of `fn`, after 3 warm-up calls (XLA
    compiles a cluster lazily, after its first runs)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=import-outside-toplevel

    for _ in range(3):
        fn(*args)
    tf.profiler.experimental.start(logdir)
    for _ in range(runs):
        tf.nest.map_structure(lambda t: t.numpy(), fn(*args))
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    with open(glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)[0], "rb") as f:
        space.ParseFromString(f.read())
    counts = collections.Counter()
    for plane in space.planes:
        names = {k: v.name for k, v in plane.event_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                name = names.get(event.metadata_id, "")
                if ":" in name:
                    counts[name] += 1
    return counts
