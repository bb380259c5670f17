"""`without_grappler`: calls inside it are instantiated without Grappler, on this thread only."""
import threading

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2
from tensorflow.python.eager import context

from tests.helpers import executed_graphs
from zoo.compute import call_options


def _identities(graphs):
    return sum(node.op == "Identity" for graph in graphs for node in graph.node)


def _meta_optimizer_off():
    options = context.context().function_call_options
    config = config_pb2.ConfigProto.FromString(options.config_proto_serialized)
    return config.graph_options.rewrite_options.disable_meta_optimizer


def test_a_function_first_called_inside_runs_without_grappler_and_outside_with_it():
    @tf.function
    def chained(x):
        for _ in range(5):
            x = tf.identity(x)  # Grappler's dependency optimizer removes such a chain
        return x * 2.0

    x = tf.constant(1.5)

    def inside():
        with call_options.without_grappler():
            assert chained(x).numpy() == 3.0

    assert _identities(executed_graphs(inside)) >= 5
    # the same function under the thread's own options again: instantiated anew, with Grappler
    assert _identities(executed_graphs(lambda: chained(x))) == 0


def test_the_options_are_this_threads_and_come_back_after_the_block_even_after_an_error():
    before = context.context().function_call_options.config_proto_serialized
    seen = {}

    def other_thread():
        seen["other"] = _meta_optimizer_off()

    try:
        with call_options.without_grappler():
            seen["inside"] = _meta_optimizer_off()
            thread = threading.Thread(target=other_thread)
            thread.start()
            thread.join()
            raise KeyError("in the block")
    except KeyError:
        pass
    assert seen == {"inside": True, "other": False}
    assert context.context().function_call_options.config_proto_serialized == before
