"""zoo: fine-tune TF Hub BERT encoders on classification and extractive QA, export for TF Serving.

Importing zoo selects Keras 2 (tf_keras) for `tf.keras`, which `hub.KerasLayer` needs on
TensorFlow >= 2.16 (tensorflow/hub#903). The variable only takes effect if TensorFlow has not been
imported yet; zoo itself always uses `tf_keras` directly, so it works either way.

`zoo.serving` (inference on an export) needs no Keras at all: imported before TensorFlow, it
takes that choice back, so a serving process loads neither tf_keras nor tensorflow_hub.

It also adds the XLA flags that `zoo.fusion` needs to TF_XLA_FLAGS (XLA reads them once, when
TensorFlow starts); they change nothing until a training run turns fusion on.
"""
import os

from zoo import fusion as _fusion

# Whether zoo (not the user) chose Keras 2: `zoo.serving` undoes it, as serving needs no Keras.
LEGACY_KERAS_SET_BY_ZOO = "TF_USE_LEGACY_KERAS" not in os.environ
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
_fusion.set_xla_flags()

__version__ = "0.1.0"
