"""Calls of TensorFlow functions instantiated without Grappler, on one thread (`without_grappler`).

TensorFlow instantiates a function (a `tf.function`'s trace, a loaded SavedModel's signature) at
its first call, and runs Grappler's graph passes over it then; the options a call carries
(this thread's "function call options") are part of what identifies the instantiation, so
calls made with other options instantiate the function again, and calls with the same options
reuse it. `without_grappler` gives the calls made on this thread inside it options with
Grappler off; other threads, and this one after the block, keep theirs.

zoo.serving calls an export's signature this way for a prediction of one input, where the
passes cost more at the first call than they save on any later one (`bench/one_input_ab.py`).
"""
import contextlib

from tensorflow.core.protobuf import config_pb2
from tensorflow.python.eager import context  # (TensorFlow has no public way to set these)


@contextlib.contextmanager
def without_grappler():
    """Functions called on this thread inside the block run as instantiated without Grappler's
    passes (instantiated so at their first such call). The thread's options are restored at
    the end of the block."""
    ctx = context.context()
    before = ctx.function_call_options
    config = config_pb2.ConfigProto.FromString(before.config_proto_serialized)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    ctx.function_call_options = context.FunctionCallOptions(
        executor_type=before.executor_type, config_proto=config)
    try:
        yield
    finally:
        ctx.function_call_options = before
