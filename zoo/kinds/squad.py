"""Extractive question answering (SQuAD v1.1 and 2.0): a task of the one runner (`zoo.run.runner`).

`read_split(split)` returns a `zoo.data.squad.SquadFile` (or `SquadList`). Questions stream
from it through the one windowing (`zoo.data.squad_windows`) into the encoder and a `SpanHead`; the
best span over all windows of a question (`zoo.evaluation.spans`) is its answer. Evaluation reports
the official exact match and F1; `predict` writes `predictions.json` (id -> answer) and, beside it,
`nbest_predictions.json`, as answers come.

SQuAD 2.0 (`version_2_with_negative`): as in Google's BERT, "no answer" is the span at [CLS]
(unanswerable questions train every window towards it); a question's null score is the
smallest over its windows, and the answer is "" when null score - best span score exceeds
`null_score_diff_threshold`. Evaluation is the official v2.0 one (overall, HasAns, NoAns, and
the best threshold on the eval set); `predict` also writes `null_odds.json` (that difference
per question).
"""
import dataclasses

import numpy as np
import tensorflow as tf
import tf_keras as keras

from zoo.base import fs, stages
from zoo.base.fields import override, setting
from zoo.base.files import JsonObjectWriter, written
from zoo.data import specs, squad_windows, windows
from zoo.data.sources import Pending
from zoo.data.squad import SquadList
from zoo.data.text_files import DataError
from zoo.evaluation import spans, squad_eval
from zoo.export import savedmodel
from zoo.kinds.kind import Kind
from zoo.model.cores import span_core
from zoo.run.task import SingleTask, TrainingData
from zoo.run.settings import RunSettings

OUTPUTS = "start_end_logits"  # in MODEL_DIR/run.json
# A question's candidates from all its windows, merged: traced once for the process.
MERGE = tf.function(spans.merge_candidates, reduce_retracing=True)


@dataclasses.dataclass
class Settings(RunSettings):
    """SQuAD settings: the common ones (longer windows, fewer epochs) plus windowing and
    answer search."""

    max_seq_length: int = override(RunSettings, "max_seq_length", 384,
                                   "Tokens per window ([CLS] question [SEP] context [SEP]).")
    num_train_epochs: float = override(RunSettings, "num_train_epochs", 2.0)
    doc_stride: int = setting(
        128, "Step, in tokens, between the starts of consecutive context windows (the step, "
        "as in Google's BERT; not the overlap, as Hugging Face's `stride`).", low=1, group="model")
    max_query_length: int = setting(64, "Question tokens kept (longer questions are cut).",
                                   low=1, group="model")
    n_best_size: int = setting(20, "Start and end candidates considered per window, and "
                               "answers kept per question in nbest_predictions.json.", low=1,
                               group="model")
    max_answer_length: int = setting(30, "Longest answer, in tokens.", low=1, group="model")
    version_2_with_negative: bool = setting(
        False, "SQuAD 2.0: questions may have no answer in their context (is_impossible); the "
        "model answers \"\" when the null score beats the best span by more than "
        "--null_score_diff_threshold.", group="model")
    null_score_diff_threshold: float = setting(
        0.0, "SQuAD 2.0: answer \"\" when null score - best span score is above this.",
        group="model")
    shuffle_buffer: int = setting(
        10_000, "Questions in the training shuffle buffer (articles are read in a random "
        "order, their questions shuffled through this buffer).", low=1, group="data")
    output_file: str = override(
        RunSettings, "output_file", None, "predictions.json of --mode=predict (question id -> "
        "answer; nbest_predictions.json goes beside it). Default: MODEL_DIR/predictions.json.")


def span_loss(targets, outputs):
    """Per window: the mean of the start and end cross-entropies."""
    def ce(labels, logits):
        return keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    return (ce(targets["start_positions"], outputs["start_logits"])
            + ce(targets["end_positions"], outputs["end_logits"])) / 2


def unique_ids(questions):
    """`questions`, with a `DataError` at the first id that repeats an earlier question's: answers
    are keyed by id (predictions.json, the evaluation), so a repeat would lose one."""
    seen = {}
    for example in questions:
        if example.id in seen:
            raise DataError(f"{example.source or 'the data'}: question id {example.id!r} "
                            f"repeats the id of {seen[example.id] or 'an earlier question'}; "
                            "ids must be unique (answers are keyed by id)")
        seen[example.id] = example.source
        yield example


def _as_source(data):
    return SquadList(data) if isinstance(data, (list, tuple)) else data


class Squad(SingleTask):
    """Start and end logits per token over windows of (question, context)."""

    NAME = "squad"  # in MODEL_DIR/run.json
    OUTPUT_FILES = "a .json file"
    PREDICTIONS = "predictions.json"

    @staticmethod
    def check_settings(settings):
        squad_windows.check_room(settings.max_seq_length, settings.max_query_length)

    @classmethod
    def metric_names(cls, settings):
        if settings.version_2_with_negative:  # the official v2.0 evaluation's numbers
            return tuple(f"{part}{metric}" for part in ("", "HasAns_", "NoAns_", "best_")
                         for metric in ("exact", "f1"))
        return ("exact_match", "f1")

    def __init__(self, run, read_split):
        super().__init__(run, read_split)
        self.train_source = self.eval_source = None

    @property
    def windower(self):
        s = self.settings
        layout = (s.max_seq_length, s.doc_stride, s.max_query_length)
        return self.run.packer.derived(
            ("squad", *layout), lambda: squad_windows.Windower(self.run.packer, *layout))

    def prepare_training(self, evaluate_each_epoch):
        self.train_source = _as_source(self.read_split("train"))
        with stages.stage(f"SQuAD windowing of {self.train_source!r}"):
            questions, windows = squad_windows.count_windows(self.windower, self.train_source)
        print(f"SQuAD training data: {questions:,} questions, {windows:,} windows")
        if evaluate_each_epoch:
            self.eval_source = _as_source(self.read_split("eval"))
            for _ in self.eval_source.questions():  # checked before training starts
                pass
        return TrainingData(windows, "windows", self.train_source.fingerprint(),
                            dict(train_questions=questions, doc_stride=self.settings.doc_stride))

    def outputs(self):
        return OUTPUTS

    def build_core(self, encoder):
        return span_core(encoder)

    def train_dataset(self, epoch):
        s = self.settings
        return squad_windows.training_windows(self.windower, self.train_source,
                                              s.train_batch_size, s.seed + epoch,
                                              s.shuffle_buffer)

    def loss(self, targets, outputs):
        return span_loss(targets, outputs)

    def answers(self, core, source, description):
        """Yields (example, n-best entries, null score) for every question of `source`, in
        order, as their windows come out of the model."""
        s = self.settings
        questions = Pending()
        ds = squad_windows.inference_windows(
            self.windower, lambda: ((index, example.question, example.context) for index, example
                                    in questions.read(unique_ids(source.questions()))),
            s.eval_batch_size)

        def candidates(batch):
            inputs, meta = batch
            outputs = core(inputs, training=False)
            found, null_score = spans.window_candidates(
                outputs["start_logits"], outputs["end_logits"], inputs["input_mask"],
                meta["char_start"], meta["char_end"], meta["max_context"], s.n_best_size,
                s.max_answer_length)
            return dict(found, null_score=null_score, index=meta["index"],
                        windows=meta["windows"])

        batches = self.run.infer(candidates, ds, description, "window",
                                 key=(core, "squad.candidates"))
        for ready, bounds in windows.complete_groups(batches):
            example = np.repeat(np.arange(len(bounds)), [end - first for first, end in bounds])
            merged = MERGE({k: ready[k] for k in spans.FIELDS}, ready["null_score"], example,
                           tf.constant(len(bounds), tf.int64), s.n_best_size)
            merged = {k: v.numpy() for k, v in merged.items()}
            for row, (first, _) in enumerate(bounds):
                item = questions.items.pop(int(ready["index"][first]))
                yield (item, spans.nbest_entries(item.context, merged, row),
                       float(merged["null_score"][row]))
        questions.raise_error()
        if questions.items:  # a bug, not bad data
            raise RuntimeError(f"{len(questions.items)} questions got no answer")

    def decide(self, entries, null_score):
        """(answer, null score - best span score) of a question: with SQuAD 2.0, "" when the
        difference is above the threshold (or there is no valid span)."""
        best = entries[0]
        score = best["start_logit"] + best["end_logit"] if "start_logit" in best else -np.inf
        difference = null_score - score
        if self.settings.version_2_with_negative and \
                difference > self.settings.null_score_diff_threshold:
            return "", difference
        return best["text"], difference

    def evaluate(self, core):
        """The official SQuAD v1.1 exact match and F1 of the eval split, or the official
        v2.0 evaluation with `version_2_with_negative`."""
        source = self.eval_source or _as_source(self.read_split("eval"))
        version_2 = self.settings.version_2_with_negative
        evaluation = squad_eval.EvaluationV2() if version_2 else squad_eval.Evaluation()
        for example, entries, null_score in self.answers(core, source, "eval"):
            answer, difference = self.decide(entries, null_score)
            if version_2:
                evaluation.add(example, answer, difference, entries[0]["text"])
            else:
                evaluation.add(example, answer)
        results = evaluation.results()
        if version_2:
            results["null_score_diff_threshold"] = self.settings.null_score_diff_threshold
        return results

    def default_output_file(self):
        return fs.join(self.settings.model_dir, "predictions.json")

    def predict(self, core, path):
        """predictions.json (id -> answer) and nbest_predictions.json beside it (SQuAD 2.0:
        also null_odds.json, id -> null score - best span score), written as answers come;
        returns the number of questions."""
        folder = fs.dirname(path)
        names = ["nbest_predictions.json"] + (
            ["null_odds.json"] if self.settings.version_2_with_negative else [])
        writers = [JsonObjectWriter(path)] + [JsonObjectWriter(fs.join(folder, name))
                                              for name in names]
        with written(*writers):
            for example, entries, null_score in self.answers(
                    core, _as_source(self.read_split("predict")), "predict"):
                answer, difference = self.decide(entries, null_score)
                writers[0].add(example.id, answer)
                writers[1].add(example.id, entries)
                if len(writers) > 2:
                    writers[2].add(example.id, difference if np.isfinite(difference) else None)
        return writers[0].count

    def serving(self, core):
        s = self.settings
        return savedmodel.SpanServing(
            core, self.windower, s.n_best_size, s.max_answer_length,
            null_score_diff_threshold=s.null_score_diff_threshold if s.version_2_with_negative
            else None)


KIND = Kind("squad", Squad, Settings, specs.SquadFiles, ("f1", "exact_match"))
