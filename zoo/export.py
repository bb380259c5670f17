"""SavedModels for TF Serving whose signatures take raw text (preprocessing inside the graph).

The exported model needs nothing of zoo: TF Serving, or a Python process that imports only
tensorflow and tensorflow_text, loads it and feeds it strings. Each kind of head has a serving
module here (`ClassifierServing`, `SpanServing`): a `tf.Module` holding the core model, the
preprocessor and what the outputs need, with its `serve` function; `save` writes one or more of
them as one SavedModel (weights they share are stored once).
"""
import os

import numpy as np
import tensorflow as tf

from zoo import spans, stages
from zoo.data.pipeline import trim_to_longest
from zoo.data.squad_windows import Windower, check_room
from zoo.errors import OutputError
from zoo.files import atomic_directory
from zoo.models import text_input_names


def save(export_dir, signatures):
    """Writes {signature name: serving module} as one SavedModel; the first is also
    `serving_default`. A failure (a full disk) leaves what was at `export_dir` as it was."""
    root = tf.Module()
    root.tasks = list(signatures.values())
    functions = {name: module.serve for name, module in signatures.items()}
    functions.setdefault("serving_default", next(iter(functions.values())))
    try:
        with atomic_directory(export_dir) as staging:
            tf.saved_model.save(root, staging, signatures=functions)
    except (OSError, tf.errors.OpError) as e:
        reason = getattr(e, "strerror", None) or stages.first_line(e)
        raise OutputError(f"export to {export_dir} failed ({reason}); the export that was there "
                          "is unchanged") from e
    return os.path.abspath(export_dir)


class ClassifierServing(tf.Module):
    """`serve`: `text` (or `text_a`, `text_b`) -> `label`, `label_id`, `probabilities`.

    With `trim_padding` each request is cut to its longest row instead of the packer's full
    length: the same results (padding is masked), with less work for short texts, most of all
    when a client sends texts of similar length together.
    """

    def __init__(self, core, packer, label_names, pair=False, trim_padding=True):
        super().__init__()
        self.core = core
        self.preprocessor = packer.preprocessor
        self.label_names = tf.Variable(list(label_names), trainable=False, name="label_names")
        specs = [tf.TensorSpec([None], tf.string, name=n) for n in text_input_names(pair)]

        def outputs(*texts):
            packed = packer(*texts)
            if trim_padding:
                packed = trim_to_longest(packed)
            probabilities = tf.nn.softmax(core(packed, training=False), axis=-1)
            label_id = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
            return dict(label=tf.gather(self.label_names, label_id), label_id=label_id,
                        probabilities=probabilities)

        if pair:
            self.serve = tf.function(lambda text_a, text_b: outputs(text_a, text_b),
                                     input_signature=specs)
        else:
            self.serve = tf.function(lambda text: outputs(text),  # pylint: disable=unnecessary-lambda
                                     input_signature=specs)


class SpanServing(tf.Module):
    """`serve`: `question`, `context` -> `answer`, `start`, `end` (character offsets into the
    context, end exclusive) and `score`, for contexts of any length: the windowing
    (`zoo.data.squad_windows.Windower`) and the span search (`zoo.spans`) are the ones
    `--mode=predict` runs. A question without a valid span gets "" at 0, 0 with score 0.
    """

    def __init__(self, core, windower, n_best_size=20, max_answer_length=30):
        super().__init__()
        self.core = core
        self.preprocessor = windower.packer.preprocessor
        specs = [tf.TensorSpec([None], tf.string, name="question"),
                 tf.TensorSpec([None], tf.string, name="context")]

        @tf.function(input_signature=specs)
        def serve(question, context):
            windows = windower(question, context)
            outputs = core({k: windows[k] for k in ("input_word_ids", "input_mask",
                                                    "input_type_ids")}, training=False)
            candidates, null_score = spans.window_candidates(
                outputs["start_logits"], outputs["end_logits"], windows["char_start"],
                windows["char_end"], windows["max_context"], n_best_size, max_answer_length)
            best = spans.merge_candidates(candidates, null_score, windows["example"],
                                          tf.size(question, out_type=tf.int64), n_best_size)
            found = best["score"][:, 0] > -np.inf
            start = tf.where(found, best["char_start"][:, 0], 0)
            end = tf.where(found, best["char_end"][:, 0], 0)
            answer = tf.strings.substr(context, start, end - start, unit="UTF8_CHAR")
            return dict(answer=answer, start=tf.cast(start, tf.int64),
                        end=tf.cast(end, tf.int64),
                        score=tf.where(found, best["score"][:, 0], 0.0))

        self.serve = serve


def export_classifier(export_dir, core, packer, label_names, pair=False, trim_padding=True):
    """Writes a classifier SavedModel (`ClassifierServing` as `serving_default`)."""
    return save(export_dir, {"serving_default": ClassifierServing(core, packer, label_names, pair,
                                                                  trim_padding)})


def export_span_model(export_dir, core, packer, seq_length=384, doc_stride=128,
                      max_query_length=64, max_answer_length=30, n_best_size=20):
    """Writes an answer-span SavedModel (`SpanServing` as `serving_default`).

    A question is cut to `max_query_length` tokens; `seq_length` must leave room after it for
    [CLS], two [SEP] and at least one context token, or the export is refused.
    """
    check_room(seq_length, max_query_length)
    windower = Windower(packer, seq_length, doc_stride, max_query_length)
    return save(export_dir, {"serving_default": SpanServing(core, windower, n_best_size,
                                                            max_answer_length)})
