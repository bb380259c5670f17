"""Why a text got its prediction: an attribution per word, computed in the graph.

`Explainer` takes raw texts (one or two segments) and gives, per word (as the preprocessor
splits words: at white space and punctuation; not per wordpiece), its character offsets and
how much it moved the score of a target class (the predicted one, or one the request names).
The export's `explain` signature (`ExplainServing`), `--mode=explain` and
`zoo.serving.Model.explain` all run it.

Two methods, and the output says which one ran:
- **integrated gradients** (Sundararajan et al., 2017) over the output of the encoder's
  embedding layer (word, position and token-type embeddings, normalized), when the encoder
  opens there (`zoo.model.hub.embedding_functions`: encoders that zoo-build-hub writes). The
  baseline is that output with [PAD] at every word position ([CLS], [SEP], positions and
  token types stay), and the path integral is a Gauss-Legendre quadrature of `steps` points
  (Captum's default rule), every point of every text of a call in one batch. A word's
  attribution is the sum over its pieces; the attributions add up to score - baseline score,
  and `completeness_gap` reports how far they are from it.
- **occlusion**, for any other Hub encoder: a word's attribution is the score minus the score
  of the text without that word (its pieces removed); there is no baseline
  (`baseline_score` and `completeness_gap` are NaN).

A word whose pieces did not all fit in `max_seq_length` is reported with `truncated` set
(its attribution covers the pieces the model saw, 0 if none): no word is dropped.
"""
import dataclasses
from typing import Callable

import numpy as np
import tensorflow as tf

from zoo.data.pipeline import trim_to_longest
from zoo.export.savedmodel import named_function
from zoo.model import hub as zoo_hub
from zoo.model.cores import after_encoder, text_input_names

DEFAULT_STEPS = 32
INTEGRATED_GRADIENTS, OCCLUSION = "integrated_gradients", "occlusion"


@dataclasses.dataclass(frozen=True)
class Objective:
    """What is explained, per row: `score(outputs, target)`, a quantity that changes smoothly
    along the integration path (a fine-tuned classifier's probability jumps from 0 to 1 within
    a few hundredths of it, which no quadrature of a few dozen points follows; its log does
    not); `probability(outputs, target)` of the target class for people to read (NaN for a
    score); `predicted(outputs)`, the target when a request names none; `name`, what
    `score` is."""

    score: Callable
    probability: Callable
    predicted: Callable
    name: str


def _gather_class(values, target):
    return tf.gather(values, tf.cast(target, tf.int32), batch_dims=1)


def _argmax(outputs):
    return tf.argmax(outputs, axis=-1, output_type=tf.int32)


def class_objective(temperature=1.0):
    """One class per row: the log-probability of the target class, at `temperature` (the
    logits divided by it: a calibrated model's probabilities, `zoo.evaluation.calibration`)."""
    def scaled(outputs):
        return tf.cast(outputs, tf.float32) / temperature
    return Objective(
        lambda outputs, target: _gather_class(tf.nn.log_softmax(scaled(outputs), -1), target),
        lambda outputs, target: _gather_class(tf.nn.softmax(scaled(outputs), -1), target),
        _argmax, "log_probability")


CLASS = class_objective()
LABEL_SET = Objective(_gather_class,  # the logit of a sigmoid: the log-odds of its class
                      lambda outputs, target: _gather_class(tf.math.sigmoid(outputs), target),
                      _argmax, "log_odds")
SCORE = Objective(lambda outputs, target: outputs,
                  lambda outputs, target: tf.fill(tf.shape(outputs), np.float32(np.nan)),
                  lambda outputs: tf.zeros(tf.shape(outputs)[:1], tf.int32), "score")


def quadrature(steps):
    """Gauss-Legendre nodes and weights of `steps` points on [0, 1] (float32 NumPy)."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    return ((nodes + 1) / 2).astype(np.float32), (weights / 2).astype(np.float32)


class Words:
    """The words of a batch of texts and where their pieces sit in the packed inputs.

    Words are numbered across the batch, every text's words of the first segment, then those
    of the second. Attributes: `packed` (the model inputs, cut to the longest row),
    `position_word` (`[batch, seq]`, each position's word number, -1 at [CLS], [SEP] and
    padding), `count` (words in the batch) and `per_text(values)` (a `[words]` vector as
    `[batch, (words)]`, in text order).
    """

    def __init__(self, packer, texts):
        self.texts = [tf.reshape(t, [-1]) for t in texts]
        self.segments = [packer.preprocessor.tokenize_with_offsets(t) for t in self.texts]
        self.ids = [ids for ids, _, _ in self.segments]
        self.packed = trim_to_longest(packer.preprocessor.bert_pack_inputs(
            self.ids, seq_length=packer.seq_length))
        self.packer = packer
        self.sizes = [ids.values.nrows() for ids in self.ids]  # words per segment
        self.count = tf.add_n(self.sizes) if len(self.sizes) > 1 else self.sizes[0]
        self.position_word = self._position_words()

    def _position_words(self):
        mask, types = self.packed["input_mask"], self.packed["input_type_ids"]
        position = tf.range(tf.shape(mask, out_type=tf.int64)[1])[tf.newaxis, :]
        found = -tf.ones(tf.shape(mask), tf.int64)
        start, first_word = tf.ones([tf.shape(mask)[0]], tf.int64), tf.constant(0, tf.int64)
        for segment, ids in enumerate(self.ids):
            real = tf.cast((types == segment) & (mask > 0), tf.int64)
            kept = tf.reduce_sum(real, axis=1) - (2 if segment == 0 else 1)  # less [CLS], [SEP]
            piece = position - start[:, tf.newaxis]
            inside = (piece >= 0) & (piece < kept[:, tf.newaxis])
            pieces = ids.merge_dims(1, 2)
            piece_word = tf.concat([ids.values.value_rowids(), [-1]], 0)  # and one for none
            flat = tf.where(inside, pieces.row_starts()[:, tf.newaxis] + piece,
                            tf.size(piece_word, out_type=tf.int64) - 1)
            found = tf.where(inside, tf.gather(piece_word, flat) + first_word, found)
            start += kept + 1
            first_word += self.sizes[segment]
        return found

    def per_text(self, values):
        """`[words]` values (numbered as `position_word`) -> `[batch, (words)]`."""
        parts, begin = [], 0
        for ids, size in zip(self.ids, self.sizes):
            parts.append(tf.RaggedTensor.from_row_splits(values[begin:begin + size],
                                                         tf.cast(ids.row_splits, tf.int64),
                                                         validate=False))
            begin += size
        return parts[0] if len(parts) == 1 else tf.concat(parts, axis=1)

    def sum_per_word(self, per_position):
        """`[batch, seq]` values -> their sum per word, `[words]` (0 for words not in the
        input)."""
        at = tf.where(self.position_word >= 0)
        return tf.math.unsorted_segment_sum(tf.gather_nd(per_position, at),
                                            tf.gather_nd(self.position_word, at), self.count)

    def described(self):
        """{word, word_start, word_end, segment, truncated} as `[batch, (words)]`: each word's
        text, character offsets into its segment's text (end exclusive), segment and whether
        some of its pieces were cut by `max_seq_length`."""
        parts = {key: [] for key in ("word", "word_start", "word_end", "segment", "pieces")}
        for segment, (text, (ids, starts, limits)) in enumerate(zip(self.texts, self.segments)):
            rows = tf.cast(ids.row_splits, tf.int64)
            pieces = starts.values
            first = tf.gather(pieces.flat_values, pieces.row_starts())
            last = tf.gather(limits.values.flat_values, limits.values.row_limits() - 1)
            def by_text(v, rows=rows):
                return tf.RaggedTensor.from_row_splits(v, rows, validate=False)
            parts["word"].append(tf.strings.substr(tf.gather(text, ids.value_rowids()),
                                                   first, last - first, unit="BYTE"))
            parts["word_start"].append(
                self.packer.char_offsets(text, by_text(first)).flat_values)
            parts["word_end"].append(self.packer.char_offsets(text, by_text(last)).flat_values)
            parts["segment"].append(tf.fill([ids.values.nrows()], segment))
            parts["pieces"].append(ids.values.row_lengths())
        flat = {key: tf.concat(value, 0) for key, value in parts.items()}
        seen = self.sum_per_word(tf.ones(tf.shape(self.position_word), tf.int64))
        flat["truncated"] = seen < tf.cast(flat.pop("pieces"), tf.int64)
        return {key: self.per_text(value) for key, value in flat.items()}


class Explainer:
    """Attributions per word for a pooled core (`zoo.model.cores.pooled_core`: class,
    multi-label and regression models); see the module docstring.

    Args:
        core: the trained core model (a Keras model, fp32).
        packer: its `zoo.model.cores.TextPacker` (a preprocessor with `tokenize_with_offsets`).
        objective: `CLASS`, `LABEL_SET` or `SCORE`.
        steps: integration points of integrated gradients.

    Example:
        explainer = Explainer(core, packer, CLASS)
        result = explainer([tf.constant(["a fine film"])], tf.constant([-1]))
    """

    def __init__(self, core, packer, objective: Objective, steps=DEFAULT_STEPS):
        if not hasattr(packer.preprocessor, "tokenize_with_offsets"):
            packer.tokens_with_offsets(tf.constant([""]))  # its HandleError names the handle
        self.core = core
        self.packer = packer
        self.objective = objective
        self.steps = steps
        self.pad_id = packer.special_tokens["padding_id"]
        self.head = after_encoder(core)
        self.embedding = zoo_hub.embedding_functions(core.get_layer("encoder"))

    @property
    def method(self):
        """The method that runs: integrated gradients if the encoder opens at its
        embeddings, else occlusion."""
        return INTEGRATED_GRADIENTS if self.embedding else OCCLUSION

    def __call__(self, texts, target=None):
        """{word, word_start, word_end, segment, truncated, attribution} as `[batch, (words)]`
        and per text `target` (the class id explained), `score`, `baseline_score`,
        `completeness_gap`, `method`. `texts`: one `[batch]` string tensor per segment;
        `target`: `[batch]` class ids, -1 (or None) for the predicted class."""
        words = Words(self.packer, texts)
        outputs = self.core(words.packed, training=False)
        predicted = self.objective.predicted(outputs)
        target = predicted if target is None else tf.where(target >= 0, target, predicted)
        if self.embedding:
            token_attributions, score, baseline = self._integrated(words, target)
        else:
            token_attributions, score, baseline = self._occluded(words, target, outputs)
        attribution = words.sum_per_word(token_attributions)
        result = dict(words.described(), attribution=words.per_text(attribution))
        total = tf.reduce_sum(result["attribution"], axis=1)
        result.update(target=target, score=score, baseline_score=baseline,
                      completeness_gap=total - (score - baseline),
                      probability=self.objective.probability(outputs, target),
                      method=tf.fill(tf.shape(score), self.method),
                      objective=tf.fill(tf.shape(score), self.objective.name))
        return result

    def _integrated(self, words, target):
        """(`[batch, seq]` attributions per position, score, baseline score): every text's
        steps, and its two ends, in one batch of `batch x (steps + 2)` sequences."""
        embed, call_embedded = self.embedding
        nodes, weights = quadrature(self.steps)
        alphas = tf.constant(np.concatenate([nodes, [0.0, 1.0]]), tf.float32)
        packed, inside = words.packed, words.position_word >= 0
        types = packed["input_type_ids"]
        actual = embed(dict(input_word_ids=packed["input_word_ids"], input_type_ids=types))
        baseline = embed(dict(input_word_ids=tf.where(inside, self.pad_id,
                                                      packed["input_word_ids"]),
                              input_type_ids=types))
        path = baseline + alphas[:, tf.newaxis, tf.newaxis, tf.newaxis] * (actual - baseline)
        shape = tf.shape(actual)
        path = tf.reshape(path, tf.concat([[-1], shape[1:]], 0))  # [points x batch, seq, hidden]
        repeat = lambda t: tf.tile(t, [len(alphas)] + [1] * (t.shape.rank - 1))  # noqa: E731
        with tf.GradientTape() as tape:
            tape.watch(path)
            encoded = call_embedded(dict(input_embeddings=path,
                                         input_mask=repeat(packed["input_mask"])))
            scores = self.objective.score(self.head(encoded, repeat(packed["input_mask"])),
                                          repeat(target))
        gradients = tf.reshape(tape.gradient(scores, path),
                               tf.concat([[len(alphas)], shape], 0))[:self.steps]
        mean_gradient = tf.tensordot(weights, gradients, axes=1)
        per_position = tf.reduce_sum(mean_gradient * (actual - baseline), axis=-1)
        scores = tf.reshape(scores, [len(alphas), -1])
        return per_position * tf.cast(inside, per_position.dtype), scores[-1], scores[-2]

    def _occluded(self, words, target, outputs):
        """(`[batch, seq]` attributions at each word's first position, score, NaN baselines):
        the score minus that of the text without the word, for every word in the input."""
        score = self.objective.score(outputs, target)
        in_input = tf.unique(tf.boolean_mask(words.position_word, words.position_word >= 0))[0]
        variants, text_of = [], []
        begin = tf.constant(0, tf.int64)
        for segment, (ids, size) in enumerate(zip(words.ids, words.sizes)):
            chosen = tf.boolean_mask(in_input, (in_input >= begin) & (in_input < begin + size))
            local = chosen - begin  # word numbers within this segment's batch
            text = tf.gather(ids.value_rowids(), local)
            rows = tf.cast(ids.row_splits, tf.int64)
            keep = tf.ragged.range(tf.gather(rows, text), tf.gather(rows, text + 1))
            keep = tf.ragged.boolean_mask(keep, keep != local[:, tf.newaxis])
            variants.append([tf.gather(ids.values, keep) if s == segment
                             else tf.gather(other, text) for s, other in enumerate(words.ids)])
            text_of.append((text, chosen))
            begin += size
        segments = [tf.concat([v[s] for v in variants], 0) for s in range(len(words.ids))]
        text, chosen = (tf.concat([t[k] for t in text_of], 0) for k in (0, 1))
        packed = trim_to_longest(self.packer.preprocessor.bert_pack_inputs(
            segments, seq_length=self.packer.seq_length))
        without = self.objective.score(self.core(packed, training=False),
                                       tf.gather(target, text))
        change = tf.gather(score, text) - without
        first = tf.math.unsorted_segment_min(  # each chosen word's first position
            tf.range(tf.size(words.position_word, out_type=tf.int64)),
            tf.reshape(tf.where(words.position_word >= 0, words.position_word, words.count), [-1]),
            words.count + 1)
        at = tf.gather(first, chosen)
        width = tf.shape(words.position_word, out_type=tf.int64)[1]
        per_position = tf.scatter_nd(tf.stack([at // width, at % width], axis=1), change,
                                     tf.shape(words.position_word, out_type=tf.int64))
        nan = tf.fill(tf.shape(score), np.float32(np.nan))
        return per_position, score, nan


class ExplainServing(tf.Module):
    """`serve`: `text` (or `text_a`, `text_b`), and for class and multi-label models `target`
    (a label name per text; "" for the predicted class) -> the `Explainer`'s outputs, padded to
    the request's most words (`word` "", `word_start` -1 after a text's last word), with
    `num_words` and `target` as a label name (regression: "score").

    Args:
        core: the trained core (fp32 Keras model).
        packer: its `TextPacker`.
        objective: `CLASS`, `LABEL_SET` or `SCORE`.
        label_names: the class names (None for regression).
        pair: whether the model reads two texts.
        steps: integration points of integrated gradients.
    """

    def __init__(self, core, packer, objective, label_names=None, pair=False,
                 steps=DEFAULT_STEPS):
        super().__init__()
        self.explainer = Explainer(core, packer, objective, steps)
        self.preprocessor = packer.preprocessor
        self.core = core
        names = list(label_names) if label_names is not None else ["score"]
        self.label_names = tf.Variable(names, trainable=False, name="label_names")
        self.targeted = label_names is not None
        names = list(text_input_names(pair)) + (["target"] if self.targeted else [])
        self.serve = named_function(self._serve, names,
                                    [tf.TensorSpec([None], tf.string, name=n) for n in names])

    def _target_ids(self, target):
        """Label names -> ids (-1 for ""); an unknown name is an InvalidArgumentError."""
        matches = tf.equal(target[:, tf.newaxis], self.label_names[tf.newaxis, :])
        known = tf.reduce_any(matches, axis=1) | tf.equal(target, "")
        unknown = tf.boolean_mask(target, ~known)
        check = tf.debugging.Assert(
            tf.size(unknown) == 0,
            ["target names no class of this model:", unknown[:1], "; its classes:",
             self.label_names], summarize=100)
        with tf.control_dependencies([check]):
            return tf.where(tf.equal(target, ""), -1,
                            tf.argmax(tf.cast(matches, tf.int32), axis=1, output_type=tf.int32))

    def _serve(self, *inputs):
        texts, target = (inputs[:-1], self._target_ids(inputs[-1])) if self.targeted \
            else (inputs, None)
        result = self.explainer(list(texts), target)
        padded = dict(word=result["word"].to_tensor(default_value=""),
                      word_start=result["word_start"].to_tensor(default_value=-1),
                      word_end=result["word_end"].to_tensor(default_value=-1),
                      segment=result["segment"].to_tensor(default_value=-1),
                      truncated=result["truncated"].to_tensor(default_value=False),
                      attribution=result["attribution"].to_tensor(default_value=0.0),
                      num_words=tf.cast(result["word"].row_lengths(), tf.int32))
        padded.update({k: result[k] for k in ("score", "baseline_score", "completeness_gap",
                                              "probability", "method", "objective")},
                      target=tf.gather(self.label_names, result["target"]))
        return padded
