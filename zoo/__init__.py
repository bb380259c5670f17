"""zoo: fine-tune TF Hub BERT encoders on classification and extractive QA, export for TF Serving.

Importing zoo selects Keras 2 (tf_keras) for `tf.keras`, which `hub.KerasLayer` needs on
TensorFlow >= 2.16 (tensorflow/hub#903), when tf_keras is installed (an environment with only
tensorflow and tensorflow_text, enough for `zoo.serving`, keeps TensorFlow's own Keras). The
variable only takes effect if TensorFlow has not been imported yet; zoo itself always uses
`tf_keras` directly, so it works either way. (`zoo.serving`, where it imports TensorFlow first,
keeps TensorFlow from importing any Keras at its start.)

It also adds the XLA flags that `zoo.compute.fusion` needs to TF_XLA_FLAGS (XLA reads them once,
when TensorFlow starts; they change nothing until a training run turns fusion on), and turns
TensorFlow's oneDNN rewrites on for every x86 CPU (`zoo.compute.onednn`: TensorFlow leaves them
off on CPUs with AVX2 alone), unless TF_ENABLE_ONEDNN_OPTS is set already.
"""
import importlib.util
import os

from zoo.compute import fusion as _fusion
from zoo.compute import onednn as _onednn

if importlib.util.find_spec("tf_keras") is not None:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
_fusion.set_xla_flags()
_onednn.enable()

__version__ = "0.1.0"
