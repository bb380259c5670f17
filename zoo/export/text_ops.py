"""TF Text's ops for a process that runs an export, without importing tensorflow_text.

An export's preprocessing runs TF Text's ops (normalizing, splitting, word pieces, trimming), so
TensorFlow must know them before it loads the SavedModel. `import tensorflow_text` registers them
all, but its Python modules also import a Keras, which takes a serving process a few tenths of a
second before its first answer. `register_for(export_dir)` reads which ops the export's graph
runs and loads only the op libraries that define them (`tf.load_library`: the ops and kernels,
no Python), using `LIBRARIES`: the libraries of the preprocessors of TF Hub's BERT family and of
`zoo-build-hub` (word pieces and sentence pieces). An export that runs an op of any other
library gets tensorflow_text imported whole.

TensorFlow keeps one copy of a library however often it is loaded, so importing tensorflow_text
later in the same process still works. `tests/export/test_text_ops.py` checks `LIBRARIES`
against the installed tensorflow_text.
"""
import importlib
import importlib.util
import sys

import tensorflow as tf
from google.protobuf import message
from tensorflow.python.framework import op_def_registry

from zoo.base import fs
from zoo.export import python_load

# {library file in tensorflow_text/python/ops: the ops it defines}
LIBRARIES = {
    "_normalize_ops.so": ("CaseFoldUTF8", "NormalizeUTF8", "NormalizeUTF8WithOffsetsMap",
                          "FindSourceOffsets"),
    "_fast_bert_normalizer.so": ("FastBertNormalize",),
    "_regex_split_ops.so": ("RegexSplitWithOffsets",),
    "_wordpiece_tokenizer.so": ("WordpieceTokenizeWithOffsets",),
    "_fast_wordpiece_tokenizer.so": ("FastWordpieceTokenizeWithOffsets",
                                     "TFText>FastWordpieceDetokenize"),
    "_sentencepiece_tokenizer.so": (
        "SentencepieceOp", "SentencepieceTokenizeOp", "SentencepieceTokenizeWithOffsetsOp",
        "SentencepieceDetokenizeOp", "SentencepieceVocabSizeOp", "SentencepieceIdToStringOp",
        "SentencepieceStringToIdOp"),
    "_fast_sentencepiece_tokenizer.so": ("TFText>FastSentencepieceTokenize",
                                         "TFText>FastSentencepieceDetokenize"),
    "_trimmer_ops.so": ("TFText>RoundRobinGenerateMasks", "TFText>RoundRobinTrim"),
}
LIBRARY_OF = {op: library for library, ops in LIBRARIES.items() for op in ops}


def library_dir():
    """tensorflow_text's folder of op libraries (found without importing tensorflow_text)."""
    spec = importlib.util.find_spec("tensorflow_text")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("tensorflow_text is not installed; an export's preprocessing needs it "
                          "(pip install tensorflow-text, the same minor version as tensorflow)")
    return fs.join(spec.submodule_search_locations[0], "python", "ops")


def graph_ops(export_dir, saved=None):
    """The op types that the SavedModel in `export_dir` runs (its graphs and functions);
    `saved`: its SavedModel proto, where the caller has read it already."""
    if saved is None:
        saved = python_load.read(export_dir)
    return {node.op for node in python_load.nodes(saved)}


def register_for(export_dir, saved=None):
    """Registers the ops of `export_dir`'s graph that TensorFlow does not know yet; returns the
    libraries loaded (empty when nothing was missing, None when it imported tensorflow_text).
    `saved`: its SavedModel proto, where the caller has read it already. An unreadable
    saved_model.pb is left for TensorFlow's loader to report. Where tensorflow_text is
    imported already, every op library of it is loaded, and the graph is not read."""
    if "tensorflow_text" in sys.modules:
        return []
    try:
        missing = {op for op in graph_ops(export_dir, saved)
                   if op_def_registry.get(op) is None}
    except (OSError, ValueError, tf.errors.OpError, message.DecodeError):
        return []
    if not missing:
        return []
    if not missing <= LIBRARY_OF.keys():
        importlib.import_module("tensorflow_text")
        return None
    libraries = sorted({LIBRARY_OF[op] for op in missing})
    for library in libraries:
        tf.load_library(fs.join(library_dir(), library))
    return libraries
