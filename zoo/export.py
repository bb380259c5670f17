"""SavedModels for TF Serving whose signatures take raw text (preprocessing inside the graph).

The exported model needs nothing of zoo: TF Serving, or a Python process that imports only
tensorflow and tensorflow_text, loads it and feeds it strings.
"""
import os

import tensorflow as tf

from zoo.files import atomic_directory
from zoo.models import text_input_names


def _save(module, export_dir, signature):
    with atomic_directory(export_dir) as staging:
        tf.saved_model.save(module, staging, signatures={"serving_default": signature})
    return os.path.abspath(export_dir)


def export_classifier(export_dir, core, packer, label_names, pair=False):
    """`serving_default`: `text` (or `text_a`, `text_b`) -> `label`, `label_id`, `probabilities`."""
    module = tf.Module()
    module.core = core
    module.preprocessor = packer.preprocessor
    module.label_names = tf.Variable(list(label_names), trainable=False, name="label_names")
    specs = [tf.TensorSpec([None], tf.string, name=n) for n in text_input_names(pair)]

    def outputs(*texts):
        probabilities = tf.nn.softmax(core(packer(*texts), training=False), axis=-1)
        label_id = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        return dict(label=tf.gather(module.label_names, label_id), label_id=label_id,
                    probabilities=probabilities)

    if pair:
        serve = tf.function(lambda text_a, text_b: outputs(text_a, text_b), input_signature=specs)
    else:
        serve = tf.function(lambda text: outputs(text), input_signature=specs)  # pylint: disable=unnecessary-lambda
    module.serve = serve
    return _save(module, export_dir, serve)
