r"""Python inference on a LiteRT export (`--export_format=litert`), with the outputs of
`zoo.serving`.

    from zoo import litert
    model = litert.load("runs/sst2/litert")          # the folder, or its model.tflite
    model.predict(["great film", ...])               # [{"label": ..., "probabilities": ...}]
    model.predict([("The cat sat.", "A cat was sitting."), ...])   # pair models

`predict` returns one dict per input, in input order, as `zoo.serving.Model.predict` does for
the SavedModel of the same run: `label` and `probabilities` by label name with `score`
(class), `score` (regression), `labels` and `probabilities` (multi-label). The file runs in
LiteRT's interpreter with tensorflow_text's custom ops registered
(`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`): the one in TensorFlow
(`tensorflow.lite.python.interpreter`), the build those ops are compiled against. On a device,
link the same ops into the app (tensorflow_text's `tflite_registrar`).
"""
import json
import os
import warnings

import numpy as np

from zoo.base import fs
from zoo.serving import DEFAULT_BATCH_SIZE, Model as SavedModelModel, paused_collector

with paused_collector():
    import tensorflow_text
    from tensorflow.lite.python import interpreter as tflite_interpreter
    from tensorflow.lite.tools import flatbuffer_utils

FILE_NAME = "model.tflite"  # zoo.export.litert.FILE_NAME
METADATA_NAME = "zoo"  # zoo.export.litert.METADATA_NAME


def model_path(path):
    """The `.tflite` file of `path` (the file, or the folder --export_dir wrote); a
    FileNotFoundError that says what is there instead."""
    path = fs.check(os.fspath(path), "path")
    if fs.isdir(path):
        inside = fs.join(path, FILE_NAME)
        if not fs.exists(inside):
            raise FileNotFoundError(f"{path}: no {FILE_NAME} (export with "
                                    "--export_format=litert)")
        return inside
    if not fs.exists(path):
        raise FileNotFoundError(f"{path}: no such file or folder")
    return path


def read_metadata(path, content=None):
    """The `zoo` metadata (label names, input names, seq_length, quantization) of a `.tflite`
    file (its `content`, if already read); a ValueError when the file is not a LiteRT model or
    not one zoo wrote."""
    if content is None:
        with fs.open(path, "rb") as f:
            content = f.read()
    try:
        flat = flatbuffer_utils.convert_bytearray_to_object(bytearray(content))
    except Exception as e:  # a flatbuffer that does not parse raises what it meets
        raise ValueError(f"{path}: not a LiteRT model ({type(e).__name__})") from None
    for entry in flat.metadata or []:
        name = entry.name.decode() if isinstance(entry.name, bytes) else entry.name
        if name == METADATA_NAME:
            return json.loads(bytes(flat.buffers[entry.buffer].data).decode("utf-8"))
    raise ValueError(f"{path}: a LiteRT model without zoo's metadata (not written by "
                     "--export_format=litert)")


def interpreter(path, num_threads=None, content=None):
    """LiteRT's interpreter on `path` (or its `content`, read already: a file in a bucket)
    with tensorflow_text's ops registered."""
    with warnings.catch_warnings():  # its notice that it moves to the ai_edge_litert package
        warnings.simplefilter("ignore")
        where = dict(model_path=path) if content is None else dict(model_content=content)
        return tflite_interpreter.InterpreterWithCustomOps(
            **where, num_threads=num_threads,
            custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)


class Model(SavedModelModel):
    """A LiteRT export (`load`); `predict(inputs)` gives one dict per input.

    Args:
        path: the `.tflite` file, or the folder `--export_dir` wrote.
        batch_size: inputs per call.
        num_threads: the interpreter's threads (None: LiteRT's default).
    """

    def __init__(self, path, batch_size=DEFAULT_BATCH_SIZE, num_threads=None):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a whole number, at least 1, not {batch_size!r}")
        self.export_dir = model_path(path)
        self.batch_size = batch_size
        with fs.open(self.export_dir, "rb") as f:
            self._content = f.read()  # the interpreter reads this buffer: it stays alive
        self.metadata = read_metadata(self.export_dir, self._content)
        self.input_names = self.metadata["input_names"]
        self.label_names = self.metadata["label_names"]
        self._interpreter = interpreter(self.export_dir, num_threads, self._content)
        runner = self._interpreter.get_signature_runner("serving_default")
        self.one_label = "label_id" in runner.get_output_details()
        self._serve = lambda **batch: runner(**{k: np.asarray(v) for k, v in batch.items()})
        self._one_input_without_grappler = False  # (the interpreter runs no TensorFlow function)

    def _signature(self, name, what):
        raise ValueError(f"{self.export_dir} is a LiteRT export, which has serving_default "
                         f"alone; {what} needs the SavedModel's {name} signature")


def load(path, batch_size=DEFAULT_BATCH_SIZE, num_threads=None):
    """The LiteRT export at `path`, ready for `predict`."""
    return Model(path, batch_size, num_threads)
