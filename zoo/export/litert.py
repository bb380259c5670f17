"""LiteRT (TFLite) exports: one `.tflite` file that takes raw text, for phones and edge boxes.

TF Hub's BERT preprocessors do not convert to LiteRT (their `BertTokenizer` and ragged packing
have no LiteRT kernels). The file instead tokenizes with tensorflow_text's `FastBertTokenizer`
(LiteRT custom ops that tensorflow_text registers in an interpreter:
`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`) on the encoder's own vocabulary and
casing, trims round-robin with `RoundRobinTrimmer` (also a registered custom op) and packs
`[CLS] a [SEP] b [SEP]` with plain gathers into a fixed `seq_length`; the encoder and the head
are LiteRT builtin ops. No Flex (TensorFlow) op is needed.

The outputs are the SavedModel's `serving_default` outputs where LiteRT has the ops: `label`,
`label_id`, `probabilities` (class), `score` (regression), `label_mask`, `probabilities`
(multi-label; the joined `labels` string is `zoo.litert`'s to make). The file's metadata
`zoo` (JSON) holds the label names, the input names, `seq_length` and the quantization, which
`zoo.litert` reads.

Quantization (`QUANTIZATIONS`): "none" (fp32), "dynamic" (int8 weights, activations quantized
per call), "int8" (the dense layers' weights and inputs in int8, calibrated on representative
texts; the ops of `FLOAT_OPS` and the tokenizer in float).
"""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf
import tensorflow_text as text
from tensorflow.lite.python import schema_py_generated as schema
from tensorflow.lite.tools import flatbuffer_utils

from zoo.base import fs
from zoo.base.errors import UsageError
from zoo.base.files import atomic_directory
from zoo.export import flat_serving, savedmodel
from zoo.model.cores import text_input_names
from zoo.model.hub import HandleError

QUANTIZATIONS = ("none", "dynamic", "int8")
FILE_NAME = "model.tflite"
METADATA_NAME = "zoo"
# Ops that --litert_quantization=int8 keeps in float: the elementwise ops and normalizations
# around the dense layers (residual adds, layer norms, GELU, the attention's softmax and
# masking) and the attention's matmuls of two activations: each, quantized as well, changed
# many more labels (of a tiny SST-2 model in the tests, of MiniLM on MRPC when this was
# chosen). The dense layers alone run in int8.
FLOAT_OPS = ["SOFTMAX", "ADD", "SUB", "MUL", "MEAN", "SQUARED_DIFFERENCE", "RSQRT",
             "BATCH_MATMUL"]


def encoder_vocabulary(encoder):
    """(vocabulary list, lower case) of a Hub BERT encoder layer: its `vocab_file` asset and
    `do_lower_case` variable, which TF Hub's BERT encoders and zoo-build-hub's carry."""
    loaded = getattr(encoder, "resolved_object", encoder)
    if hasattr(loaded, "sentencepiece_model"):
        raise HandleError("a LiteRT export tokenizes with TF Text's WordPiece kernels, and this "
                          "encoder's vocabulary is SentencePiece (the XLM-R family, e.g. "
                          "multilingual_e5_small); export it as a SavedModel")
    if not (hasattr(loaded, "vocab_file") and hasattr(loaded, "do_lower_case")):
        raise HandleError("a LiteRT export tokenizes with the encoder's vocab_file and "
                          "do_lower_case, and this encoder has neither (TF Hub BERT encoders and "
                          "zoo-build-hub's have them)")
    path = loaded.vocab_file.asset_path.numpy().decode("utf-8")
    with tf.io.gfile.GFile(path) as f:
        vocab = [line.rstrip("\n") for line in f]
    return vocab, bool(loaded.do_lower_case.numpy())


class FastPacker:
    """Raw strings (one or two segments) -> packed int32 BERT inputs of `seq_length`, with ops
    LiteRT runs (see the module docstring); the same ids as the Hub preprocessor's packing.

    Args:
        vocab: the WordPiece vocabulary (a list of tokens, in id order).
        lower_case: lower-case, NFD-normalize and strip accents first (uncased models).
        seq_length: the packed length.
        special_tokens: ids of `start_of_sequence_id`, `end_of_segment_id`, `padding_id` (the
            Hub preprocessor's `get_special_tokens_dict()`).
    """

    def __init__(self, vocab, lower_case, seq_length, special_tokens):
        self.seq_length = seq_length
        self.special_tokens = dict(special_tokens)
        self.preprocessor = None  # nothing of TF Hub's preprocessor is in the model
        self.tokenizer = text.FastBertTokenizer(
            vocab, token_out_type=tf.int32, lower_case_nfd_strip_accents=lower_case)

    def __call__(self, *texts):
        special = self.special_tokens
        segments = [self.tokenizer.tokenize(tf.reshape(t, [-1])) for t in texts]
        trimmer = text.RoundRobinTrimmer(self.seq_length - len(texts) - 1)
        segments = trimmer.trim(segments)
        pad = tf.cast(special["padding_id"], tf.int32)
        position = tf.range(self.seq_length, dtype=tf.int32)[tf.newaxis, :]
        batch = tf.size(segments[0].row_splits) - 1
        word_ids = tf.fill([batch, self.seq_length], pad)
        word_ids = tf.where(position == 0, special["start_of_sequence_id"], word_ids)
        type_ids = tf.zeros_like(word_ids)
        start = tf.ones([batch, 1], tf.int32)  # each row's position of the segment's first token
        for i, segment in enumerate(segments):
            splits = tf.cast(segment.row_splits, tf.int32)
            length = (splits[1:] - splits[:-1])[:, tf.newaxis]
            inside = (position >= start) & (position < start + length)
            values = tf.concat([segment.flat_values, [pad]], 0)
            index = tf.clip_by_value(splits[:-1, tf.newaxis] + position - start,
                                     0, tf.size(values) - 1)
            word_ids = tf.where(inside, tf.gather(values, index), word_ids)
            end = position == start + length
            word_ids = tf.where(end, special["end_of_segment_id"], word_ids)
            if i:
                type_ids = tf.where(inside | end, i, type_ids)
            start += length + 1
        return dict(input_word_ids=word_ids, input_mask=tf.cast(position < start, tf.int32),
                    input_type_ids=type_ids)


def fast_packer(core, packer):
    """The `FastPacker` of a trained `core` (its encoder's vocabulary) with `packer`'s length and
    special tokens (`packer`: the run's `zoo.model.cores.TextPacker`)."""
    vocab, lower = encoder_vocabulary(core.get_layer("encoder"))
    return FastPacker(vocab, lower, packer.seq_length, packer.special_tokens)


def convert(saved_model_dir, quantization, representative=None):
    """The `.tflite` bytes of the SavedModel's `serving_default` at `quantization`;
    `representative`: the calibration inputs of "int8" (a list of {input name: [one string]})."""
    if quantization not in QUANTIZATIONS:
        raise UsageError(f"`litert_quantization` must be one of {', '.join(QUANTIZATIONS)}, "
                         f"not {quantization!r}")
    converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir, ["serving_default"])
    converter.allow_custom_ops = True  # the tokenizer's, from tensorflow_text's registrar
    if quantization == "none":
        return converter.convert()
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantization == "dynamic":
        return converter.convert()
    if not representative:
        raise UsageError("`litert_quantization`=int8 needs representative texts to calibrate "
                         "on (the training data's first rows)")
    dataset = lambda: ({k: np.array(v, dtype=object) for k, v in row.items()}  # noqa: E731
                       for row in representative)
    converter.representative_dataset = dataset
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8,
                                           tf.lite.OpsSet.TFLITE_BUILTINS]
    # The calibration runs the model, tokenizer included, so it needs the same registrar (no
    # public setting for it; tf.lite reads this list when it calibrates).
    converter.target_spec._experimental_custom_op_registerers = list(
        text.tflite_registrar.SELECT_TFTEXT_OPS)
    debugger = tf.lite.experimental.QuantizationDebugger(
        converter=converter, debug_dataset=dataset,
        debug_options=tf.lite.experimental.QuantizationDebugOptions(denylisted_ops=FLOAT_OPS))
    return debugger.get_nondebug_quantized_model()


def with_metadata(model, metadata):
    """The `.tflite` flatbuffer `model` (bytes) with `metadata` (JSON-ready) as its
    `METADATA_NAME` entry."""
    flat = flatbuffer_utils.convert_bytearray_to_object(bytearray(model))
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(json.dumps(metadata).encode("utf-8"), dtype=np.uint8)
    flat.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name, entry.buffer = METADATA_NAME, len(flat.buffers) - 1
    flat.metadata = list(flat.metadata or []) + [entry]
    return bytes(flatbuffer_utils.convert_object_to_bytearray(flat))


def _converted(module):
    """What the converter reads of a serving `module`: its `serve` and the variables and tables
    that `serve` reads. Not the module itself: saving its Keras core traces every layer again
    for tf_keras's own object graph, which the converter never reads."""
    root = tf.Module()
    root.serve = module.serve
    root.resources = list(flat_serving.owners(module).values())
    return root


def export(export_dir, module, quantization="dynamic", representative=None, metadata=None):
    """Writes `export_dir/model.tflite` of a serving `module` (`serve`: strings -> outputs,
    e.g. a `zoo.export.savedmodel.TextServing` on a `FastPacker`) at `quantization`, with
    `metadata` (plus the quantization); returns the file's path. A failure leaves what was at
    `export_dir` as it was."""
    with tempfile.TemporaryDirectory(prefix="zoo_litert_") as staging:
        tf.saved_model.save(_converted(module), staging,
                            signatures={"serving_default": module.serve})
        model = convert(staging, quantization, representative)
    model = with_metadata(model, dict(metadata or {}, quantization=quantization))
    with atomic_directory(export_dir) as staging:
        with open(os.path.join(staging, FILE_NAME), "wb") as f:
            f.write(model)
    return fs.join(fs.absolute(export_dir), FILE_NAME)


def export_text_model(export_dir, core, packer, outputs, label_names=None, pair=False,
                      quantization="dynamic", representative=None):
    """Writes the LiteRT file of a text `core` (class, multi-label or regression) with the
    `outputs(module, core outputs)` of its kind (`zoo.export.savedmodel`)."""
    module = savedmodel.TextServing(core, fast_packer(core, packer), outputs, pair,
                                    trim_padding=False, label_names=label_names)
    metadata = dict(label_names=None if label_names is None else list(label_names),
                    input_names=list(text_input_names(pair)),
                    seq_length=packer.seq_length)
    return export(export_dir, module, quantization, representative, metadata)


def mask_outputs(threshold):
    """Multi-label outputs that LiteRT has the ops for: `label_mask` (probability at or over
    `threshold`) and `probabilities` (no joined `labels` string)."""
    def outputs(module, logits):
        del module
        probabilities = tf.math.sigmoid(logits)
        return dict(label_mask=probabilities >= threshold, probabilities=probabilities)
    return outputs
