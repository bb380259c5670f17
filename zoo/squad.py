"""Extractive question answering (SQuAD v1.1) end to end: train, eval, predict, export.

The same plumbing as classification (`zoo.train.fit`, `zoo.distribute`, checkpoints, export):
windows of [CLS] question [SEP] context [SEP] go through the encoder and a `SpanHead`; the best
span over all windows of a question is its answer.
"""
import dataclasses
import json
import os
import time

import numpy as np
import tensorflow as tf
import tf_keras as keras
from absl import logging
from tqdm import tqdm

from zoo import distribute, export, hub, run_record, spans, squad_eval, stages, train
from zoo.data import squad as squad_data
from zoo.errors import UsageError
from zoo.files import save_json
from zoo.heads import SpanHead
from zoo.models import encoder_inputs
from zoo.settings import RunSettings, start_run

TASK, OUTPUTS = "squad", "start_end_logits"  # in MODEL_DIR/run.json


@dataclasses.dataclass
class Settings(RunSettings):
    """SQuAD settings: the common ones plus windowing and answer search."""

    max_seq_length: int = 384
    doc_stride: int = 128  # step between window starts, in tokens (not the overlap)
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    num_train_epochs: float = 2.0


def span_core(encoder_handle, on_tpu=False):
    """Packed int32 inputs -> {"start_logits", "end_logits"}: a Hub encoder and a `SpanHead`."""
    inputs = encoder_inputs()
    encoder = hub.encoder_layer(encoder_handle, trainable=True, on_tpu=on_tpu)
    outputs = SpanHead(name="span")(encoder(inputs)["sequence_output"])
    return keras.Model(inputs, outputs, name="span_core")


def windows_dataset(windows, batch_size, training=False, seed=0):
    """Batches of packed inputs (with start/end targets when `training`)."""
    if training:  # a permutation that depends on the seed alone: exact resume
        order = np.random.default_rng(seed).permutation(len(windows))
        windows = [windows[i] for i in order]
    inputs = {name: np.stack([getattr(w, name) for w in windows]) for name in
              ("input_word_ids", "input_mask", "input_type_ids")}
    if not training:
        return tf.data.Dataset.from_tensor_slices(inputs).batch(batch_size)
    targets = dict(start_positions=np.array([w.start_position for w in windows], np.int32),
                   end_positions=np.array([w.end_position for w in windows], np.int32))
    ds = tf.data.Dataset.from_tensor_slices((inputs, targets))
    return ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def span_loss(targets, outputs):
    """Per window: the mean of the start and end cross-entropies."""
    def ce(labels, logits):
        return keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    return (ce(targets["start_positions"], outputs["start_logits"])
            + ce(targets["end_positions"], outputs["end_logits"])) / 2


class Reader:
    """The preprocessor, windowing and span model of one model dir."""

    def __init__(self, settings: Settings, strategy):
        self.settings = settings
        self.strategy = strategy
        self.chief = distribute.is_chief(strategy)
        on_tpu = distribute.is_tpu(strategy)
        encoder, preprocessor = hub.resolve_handles(settings.encoder_handle,
                                                    settings.preprocessor_handle)
        self.preprocessor = hub.load_preprocessor(preprocessor, on_tpu=on_tpu)
        self.special_tokens = {k: int(v) for k, v in
                               self.preprocessor.tokenize.get_special_tokens_dict().items()}
        keras.utils.set_random_seed(settings.seed)
        with strategy.scope():
            self.core = span_core(encoder, on_tpu=on_tpu)

    def windows(self, examples, training=False):
        s = self.settings
        with stages.stage(f"SQuAD windowing of {len(examples):,} questions"):
            return squad_data.make_windows(self.preprocessor, examples, self.special_tokens,
                                           s.max_seq_length, s.doc_stride, s.max_query_length,
                                           training)

    def answers(self, examples):
        """({id: answer}, {id: n-best}) for `examples`."""
        windows = self.windows(examples)
        batch_size = self.settings.eval_batch_size
        starts, ends = [], []
        with tqdm(total=len(windows), unit="window", desc="predict", dynamic_ncols=True,
                  mininterval=2, disable=not self.chief) as bar:
            for batch in distribute.map_batches(
                    self.strategy, lambda b: self.core(b, training=False),
                    windows_dataset(windows, batch_size), batch_size):
                starts.append(batch["start_logits"])
                ends.append(batch["end_logits"])
                bar.update(len(batch["start_logits"]))
        return spans.best_answers(examples, windows, np.concatenate(starts), np.concatenate(ends),
                                  self.settings.n_best_size, self.settings.max_answer_length)

    def evaluate(self, examples, step=None):
        predictions, _ = self.answers(examples)
        results = squad_eval.evaluate(examples, predictions)
        if step is not None:
            results["step"] = step
        if self.chief:
            save_json(os.path.join(self.settings.model_dir, "eval_results.json"), results)
            if step is not None:
                train.write_eval_summaries(self.settings.model_dir, step,
                                           {k: results[k] for k in ("exact_match", "f1")})
        logging.info("eval: %s", results)
        print("eval:", json.dumps(results))
        return results

    def export(self):
        s = self.settings
        return export.export_span_model(s.export_dir, self.core, self.preprocessor,
                                        s.max_seq_length, s.doc_stride, s.max_query_length,
                                        s.max_answer_length, s.n_best_size)


def _train(settings, read_split, evaluate_each_epoch, strategy, compute):
    examples = read_split("train")
    eval_examples = read_split("eval") if evaluate_each_epoch else None
    reader = Reader(settings, strategy)
    run_record.start_training(
        settings.model_dir, run_record.describe(TASK, settings, OUTPUTS,
                                                run_record.data_fingerprint(examples=examples)),
        settings.allow_changed_settings, reader.chief)
    windows = reader.windows(examples, training=True)
    batch = settings.train_batch_size
    plan = train.plan_epochs(len(windows), settings, "windows")
    with strategy.scope():
        optimizer = train.optimizer_for(settings, plan.total_steps, compute.xla_fusion)

    def on_epoch_end(epoch, record):
        if not eval_examples:
            return {}
        return {k: float(v) for k, v in reader.evaluate(eval_examples, record["step"]).items()
                if k in ("exact_match", "f1")}

    began = time.time()
    timing = train.fit(reader.core, optimizer, span_loss,
                       lambda epoch: windows_dataset(windows, batch, True, settings.seed + epoch),
                       plan.steps_per_epoch, plan.epochs, batch, settings.model_dir,
                       settings.checkpoint_every, on_epoch_end, strategy=strategy,
                       steps_per_execution=settings.steps_per_execution,
                       xla_fusion=compute.xla_fusion, total_steps=plan.total_steps)
    timing.update(wall_seconds=time.time() - began, train_questions=len(examples),
                  train_windows=len(windows), batch_size=batch,
                  max_seq_length=settings.max_seq_length, doc_stride=settings.doc_stride,
                  windows_per_second=timing["examples_per_second"],
                  strategy=type(strategy).__name__, replicas=strategy.num_replicas_in_sync)
    print("train:", json.dumps(timing))
    if reader.chief:
        save_json(os.path.join(settings.model_dir, "train_results.json"), timing)
        if settings.export_dir:
            with stages.stage("export"):
                print("exported to", reader.export())


def run(mode, settings: Settings, read_split):
    """Runs one mode. `read_split(split)` returns SquadExamples of 'train', 'eval', 'predict'."""
    if mode == "check_data":
        raise UsageError("--mode=check_data is for the classification tasks; SQuAD files are "
                         "checked as they are read (every problem names its question)")
    if settings.max_seq_length - settings.max_query_length - 3 < 1:  # before any work
        raise UsageError(export.no_room_message(settings.max_seq_length,
                                                settings.max_query_length))
    strategy, compute = start_run(mode, settings, padding="fixed")  # windows: max_seq_length
    with stages.stage(f"--mode={mode}"):
        return _run(mode, settings, read_split, strategy, compute)


def _run(mode, settings, read_split, strategy, compute):
    if mode in ("train", "train_and_eval"):
        return _train(settings, read_split, mode == "train_and_eval", strategy, compute)
    run_record.check_restore(settings.model_dir, run_record.describe(TASK, settings, OUTPUTS))
    reader = Reader(settings, strategy)
    checkpoint = train.restore_model(reader.core, settings.model_dir)
    if mode == "eval":
        return reader.evaluate(read_split("eval"), int(checkpoint.rsplit("-", 1)[1]))
    if not reader.chief:
        return None
    if mode == "predict":
        examples = read_split("predict")
        predictions, nbest = reader.answers(examples)
        path = settings.output_file or os.path.join(settings.model_dir, "predictions.json")
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        save_json(path, predictions)
        save_json(os.path.join(os.path.dirname(os.path.abspath(path)),
                                "nbest_predictions.json"), nbest)
        print(f"wrote {len(predictions)} answers to {path}")
        return len(predictions)
    if not settings.export_dir:
        raise UsageError("--mode=export needs --export_dir")
    path = reader.export()
    print("exported to", path)
    return path
