"""SavedModels for TF Serving whose signatures take raw text (preprocessing inside the graph).

The exported model needs nothing of zoo: TF Serving, or a Python process that imports only
tensorflow and tensorflow_text, loads it and feeds it strings. Each kind of head has a serving
module here (`TextServing` with class, score or label-set outputs, `SpanServing`,
`TaggingServing`): a `tf.Module` holding the core model, the preprocessor and what the outputs
need (label names, tag names), with its `serve` function; `save` writes one or more of them as
one SavedModel, each as one flat function (`zoo.export.flat_serving`; weights they share are stored
once).
"""
import inspect

import numpy as np
import tensorflow as tf

from zoo.base import fs, stages
from zoo.base.errors import OutputError
from zoo.base.files import atomic_directory
from zoo.data import tagging as tagging_data
from zoo.data.pipeline import trim_to_longest
from zoo.data.squad_windows import Windower, check_room
from zoo.evaluation import spans
from zoo.export.flat_serving import FlatServing
from zoo.model.cores import text_input_names


def save(export_dir, signatures):
    """Writes {signature name: serving module} as one SavedModel; the first is also
    `serving_default`. Each module is saved as one flat function (`zoo.export.flat_serving`), which
    loads several times faster than the module's own object graph. A failure (a full disk)
    leaves what was at `export_dir` as it was."""
    signatures = {name: FlatServing(module) for name, module in signatures.items()}
    root = tf.Module()
    root.tasks = list(signatures.values())
    functions = {name: module.serve for name, module in signatures.items()}
    functions.setdefault("serving_default", next(iter(functions.values())))
    # which module serves each signature (`zoo.serving` reads its label names there)
    root.signature_modules = {name: signatures.get(name, root.tasks[0]) for name in functions}
    try:
        with atomic_directory(export_dir) as staging:
            tf.saved_model.save(root, staging, signatures=functions)
    except (OSError, tf.errors.OpError) as e:
        reason = getattr(e, "strerror", None) or stages.first_line(e)
        raise OutputError(f"export to {export_dir} failed ({reason}); the export that was there "
                          "is unchanged") from e
    return fs.absolute(export_dir)


def named_function(fn, names, specs):
    """`tf.function(fn)` on `specs` whose arguments are called `names` (a signature's input
    names are its function's argument names)."""
    def call(*args):
        return fn(*args)
    call.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    return tf.function(call, input_signature=specs)


class TextServing(tf.Module):
    """`serve`: `text` (or `text_a`, `text_b`), then the `extra` inputs -> what
    `outputs(self, core outputs, *extra inputs)` returns.

    With `trim_padding` each request is cut to its longest row instead of the packer's full
    length: the same results (padding is masked), with less work for short texts, most of all
    when a client sends texts of similar length together. `label_names` are kept in the model
    as `self.label_names` (a string variable) for `outputs` to use. `extra`: TensorSpecs of
    inputs besides the texts, named (a request's `top_k`).
    """

    def __init__(self, core, packer, outputs, pair=False, trim_padding=True, label_names=None,
                 extra=()):
        super().__init__()
        self.core = core
        self.preprocessor = packer.preprocessor
        if label_names is not None:
            self.label_names = tf.Variable(list(label_names), trainable=False,
                                           name="label_names")
        names = text_input_names(pair)

        def serve(*inputs):
            packed = packer(*inputs[:len(names)])
            if trim_padding:
                packed = trim_to_longest(packed)
            return outputs(self, core(packed, training=False), *inputs[len(names):])

        self.serve = named_function(
            serve, list(names) + [spec.name for spec in extra],
            [tf.TensorSpec([None], tf.string, name=n) for n in names] + list(extra))


def class_outputs(module, logits, temperature=1.0):
    """One class per row: `label` (name), `label_id`, `probabilities` (the softmax of the
    logits divided by `temperature`, `zoo.evaluation.calibration`; the same most probable class
    at any temperature) and `logits` (as the model gives them)."""
    logits = tf.cast(logits, tf.float32)
    probabilities = tf.nn.softmax(logits / temperature, axis=-1)
    label_id = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    return dict(label=tf.gather(module.label_names, label_id), label_id=label_id,
                probabilities=probabilities, logits=logits)


def calibrated_class_outputs(temperature):
    """`class_outputs` at `temperature`."""
    def outputs(module, logits):
        return class_outputs(module, logits, temperature)
    return outputs


def top_k_outputs(default_k, temperature=1.0):
    """`class_outputs` and the `top_k` most probable classes of each row, most probable first:
    `top_k_labels` and `top_k_probabilities`, `[batch, k]` for the request's largest k (a row
    asking fewer gets "" and 0 after its own); a row's `top_k` of 0 or less takes
    `default_k`, and no row gets more than the classes there are."""
    def outputs(module, logits, top_k):
        result = class_outputs(module, logits, temperature)
        classes = tf.shape(logits)[-1]
        k = tf.minimum(tf.where(top_k > 0, top_k, default_k), classes)
        ranked = tf.math.top_k(result["probabilities"], k=tf.reduce_max(tf.concat([k, [0]], 0)))
        wanted = tf.range(tf.shape(ranked.indices)[1])[tf.newaxis, :] < k[:, tf.newaxis]
        result.update(
            top_k_labels=tf.where(wanted, tf.gather(module.label_names, ranked.indices), ""),
            top_k_probabilities=tf.where(wanted, ranked.values, 0.0))
        return result
    return outputs


def min_score_outputs(default_min_score, temperature=1.0):
    """`class_outputs` with abstention: a row whose `score` (its most probable class's
    probability, also an output) is below its `min_score` gets `label` "" and `label_id` -1,
    and keeps its probabilities. A row's `min_score` in (0, 1] is its own; 0 or less takes
    `default_min_score` (0: the row always gets its label)."""
    def outputs(module, logits, min_score):
        result = class_outputs(module, logits, temperature)
        score = tf.reduce_max(result["probabilities"], axis=-1)
        limit = tf.where((min_score > 0) & (min_score <= 1), min_score, default_min_score)
        kept = score >= limit
        result.update(label=tf.where(kept, result["label"], ""),
                      label_id=tf.where(kept, result["label_id"], -1), score=score)
        return result
    return outputs


def score_outputs(module, scores):
    """A score per row (regression)."""
    del module
    return dict(score=scores)


def label_set_outputs(threshold, separator=","):
    """Several classes per row: `labels` (the names at or over `threshold`, joined by
    `separator`), `label_mask` and `probabilities`. Given a `[batch]` tensor of thresholds
    too (a request's `threshold` input), a row's value in (0, 1] replaces `threshold`."""
    def outputs(module, logits, row_threshold=None):
        probabilities = tf.math.sigmoid(logits)
        limit = threshold if row_threshold is None else tf.where(
            (row_threshold > 0) & (row_threshold <= 1), row_threshold, threshold)[:, tf.newaxis]
        chosen = probabilities >= limit
        names = tf.ragged.boolean_mask(
            tf.broadcast_to(module.label_names, tf.shape(probabilities)), chosen)
        return dict(labels=tf.strings.reduce_join(names, axis=-1, separator=separator),
                    label_mask=chosen, probabilities=probabilities)
    return outputs


class ClassifierServing(TextServing):
    """`serve`: `text` (or `text_a`, `text_b`) -> `label`, `label_id`, `probabilities`."""

    def __init__(self, core, packer, label_names, pair=False, trim_padding=True):
        super().__init__(core, packer, class_outputs, pair, trim_padding, label_names)


class SpanServing(tf.Module):
    """`serve`: `question`, `context` -> `answer`, `start`, `end` (character offsets into the
    context, end exclusive) and `score`, for contexts of any length: the windowing
    (`zoo.data.squad_windows.Windower`) and the span search (`zoo.evaluation.spans`) are the ones
    `--mode=predict` runs. A question without a valid span gets "" at 0, 0 with score 0.

    With a `null_score_diff_threshold` (SQuAD 2.0) it also returns `null_score`, and the answer
    is "" at 0, 0 when null score - best span score is above the threshold (`score` stays the
    best span's).
    """

    def __init__(self, core, windower, n_best_size=20, max_answer_length=30,
                 null_score_diff_threshold=None):
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
                outputs["start_logits"], outputs["end_logits"], windows["input_mask"],
                windows["char_start"], windows["char_end"], windows["max_context"], n_best_size,
                max_answer_length)
            best = spans.merge_candidates(candidates, null_score, windows["example"],
                                          tf.size(question, out_type=tf.int64), n_best_size)
            score = best["score"][:, 0]
            found = score > -np.inf
            answered = found
            if null_score_diff_threshold is not None:
                answered &= best["null_score"] - score <= null_score_diff_threshold
            start = tf.where(answered, best["char_start"][:, 0], 0)
            end = tf.where(answered, best["char_end"][:, 0], 0)
            answer = tf.strings.substr(context, start, end - start, unit="UTF8_CHAR")
            result = dict(answer=answer, start=tf.cast(start, tf.int64),
                          end=tf.cast(end, tf.int64), score=tf.where(found, score, 0.0))
            if null_score_diff_threshold is not None:
                result["null_score"] = best["null_score"]
            return result

        self.serve = serve


class TaggingServing(tf.Module):
    """`serve`: `text` -> the entities in it and every word's tag.

    The text is split into words by the preprocessor (BERT splits at white space and
    punctuation), windowed and tagged as `--mode=predict` does (`zoo.data.tagging`); entities
    are decoded from the words' tags as the CoNLL scorer reads them. Outputs, per text, padded
    to the longest in the request: `entity_text`, `entity_type`, `entity_start`, `entity_end`
    (character offsets, end exclusive), `entity_score` (the mean probability of its words'
    tags), `num_entities`; and per word `tags`, `word_start`, `word_end` ("" and -1 after the
    last word).
    """

    def __init__(self, core, windower, vocab):
        super().__init__()
        self.core = core
        self.preprocessor = windower.packer.preprocessor
        self.tag_names = tf.Variable(vocab.tags, trainable=False, name="tag_names")
        self.type_names = tf.Variable(vocab.types or [""], trainable=False, name="type_names")
        tag_type = tf.constant(vocab.tag_type, tf.int64)
        tag_begins = tf.constant(vocab.tag_begins)
        packer = windower.packer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def serve(text):
            ids, byte_starts, byte_limits = self.preprocessor.tokenize_with_offsets(text)
            windows = windower.windows(ids)
            logits = core({k: windows[k] for k in ("input_word_ids", "input_mask",
                                                   "input_type_ids")}, training=False)
            at = tf.where(windows["max_context"])  # each word's first piece, once
            num_words = tf.size(ids.values.row_lengths())
            word_probabilities = tf.scatter_nd(
                tf.gather_nd(windows["word"], at)[:, None],
                tf.nn.softmax(tf.gather_nd(logits, at), axis=-1),
                tf.stack([tf.cast(num_words, tf.int64), tf.cast(len(vocab), tf.int64)]))
            tag_ids = tf.argmax(word_probabilities, axis=-1, output_type=tf.int32)
            tag_scores = tf.reduce_max(word_probabilities, axis=-1)
            by_text = lambda values: tf.RaggedTensor.from_row_splits(  # noqa: E731
                values, tf.cast(ids.row_splits, tf.int64), validate=False)
            pieces = ids.values  # [words, (pieces)]
            first_byte = tf.gather(byte_starts.flat_values, pieces.row_starts())
            last_byte = tf.gather(byte_limits.flat_values, pieces.row_limits() - 1)
            word_start = packer.char_offsets(text, by_text(first_byte)).flat_values
            word_end = packer.char_offsets(text, by_text(last_byte)).flat_values
            entities = tagging_data.decode_entities(by_text(tag_ids), tag_type, tag_begins)
            first_word = tf.gather(ids.row_starts(), entities["row"])
            start = tf.gather(word_start, first_word + entities["start"])
            end = tf.gather(word_end, first_word + entities["end"])
            entity = tf.cast(tf.ragged.range(first_word + entities["start"],
                                             first_word + entities["end"] + 1).value_rowids(),
                             tf.int32)
            score = tf.math.unsorted_segment_mean(
                tf.gather(tag_scores, tf.ragged.range(first_word + entities["start"],
                                                      first_word + entities["end"] + 1)
                          .flat_values), entity, tf.size(start))
            rows = tf.size(text, out_type=tf.int64)
            per_text = lambda values, default: tf.RaggedTensor.from_value_rowids(  # noqa: E731
                values, entities["row"], rows, validate=False).to_tensor(default_value=default)
            return dict(
                entity_text=per_text(tf.strings.substr(tf.gather(text, entities["row"]), start,
                                                       end - start, unit="UTF8_CHAR"), ""),
                entity_type=per_text(tf.gather(self.type_names, entities["type"]), ""),
                entity_start=per_text(start, -1), entity_end=per_text(end, -1),
                entity_score=per_text(score, 0.0),
                num_entities=tf.math.bincount(tf.cast(entities["row"], tf.int32),
                                              minlength=tf.cast(rows, tf.int32),
                                              maxlength=tf.cast(rows, tf.int32)),
                tags=by_text(tf.gather(self.tag_names, tag_ids)).to_tensor(default_value=""),
                word_start=by_text(word_start).to_tensor(default_value=-1),
                word_end=by_text(word_end).to_tensor(default_value=-1))

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
