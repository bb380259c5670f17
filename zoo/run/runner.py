"""The one runner: the modes of every task, on one plumbing.

`run(mode, task_class, settings, read_split)` starts the run (mode and settings checked, model
dir, strategy, precision and fusion: `zoo.run.settings.start_run`), then trains (with an evaluation
after each epoch for `train_and_eval`), restores and evaluates, predicts, exports or checks data. It
owns everything a task does not: `MODEL_DIR/run.json` (`zoo.training.run_record`), the encoder, the
core model under the strategy, restoring the newest checkpoint, the training loop
(`zoo.training.loop.fit`), `train_results.json`, `eval_results.json`, TensorBoard summaries, the
history plot, where predictions go and the SavedModel (`zoo.export.savedmodel.save`).

A task is a subclass of `zoo.run.task.Task` that supplies only what is its own, described with
its settings and data by a `zoo.kinds.kind.Kind`; a new kind never copies this plumbing
(BUILD.md, "Add a task").
"""
import contextlib
import dataclasses
import time

from zoo.base import fs
from zoo.base import stages
from zoo.base.errors import UsageError
from zoo.base.fields import check_fields, group_of
from zoo.base.files import save_json
from zoo.compute import Compute, precision, seeds
from zoo.data.text_files import DataError
from zoo.evaluation import explain_files, plots
from zoo.export import frozen_core, litert, savedmodel
from zoo.model import hub
from zoo.model.cores import TextPacker, encoder_variables, head_variables
from zoo.run import best, lock, paths, report
from zoo.run.paths import WRITING_MODES
from zoo.run.settings import RunSettings, start_run
from zoo.training import checkpoints, distribute, loop
from zoo.training import optimizer as zoo_optimizer
from zoo.training import encoder_layers, run_record, warm_start

TRAINING_MODES = ("train", "train_and_eval")


class Run:
    """What a task gets from the runner: its settings and the run's shared pieces.

    The model handles are resolved, and the preprocessor loaded, when first asked for: a
    restore whose model dir was trained with another model stops before either.
    """

    def __init__(self, mode, settings, strategy, compute: Compute, recorded=None):
        self.mode = mode
        self.report = report.Report(settings.print_json)
        self.recorded = recorded or {}  # what run.json records of the kind (`Kind.run`)
        self.settings = settings  # the task's settings class, a `RunSettings`
        self.strategy = strategy
        self.compute = compute
        self._handles = self._packer = None
        self._compiled = {}  # (key...) -> tf.function, see `infer`
        self.warm_source = None  # the `zoo.training.warm_start.Source` training starts from

    @property
    def handles(self):
        """Loadable (encoder, preprocessor) handles (`zoo.model.hub.resolve_handles`)."""
        if self._handles is None:
            self._handles = hub.resolve_handles(self.settings.encoder_handle,
                                                self.settings.preprocessor_handle)
        return self._handles

    @property
    def packer(self) -> TextPacker:
        """The preprocessor at the run's `max_seq_length` (`TextPacker.shared`)."""
        if self._packer is None:
            self._packer = TextPacker.shared(self.handles[1], self.settings.max_seq_length,
                                             on_tpu=self.on_tpu)
        return self._packer

    @property
    def chief(self):
        """Whether this process writes outputs (`zoo.training.distribute.is_chief`)."""
        return distribute.is_chief(self.strategy)

    @property
    def on_tpu(self):
        return distribute.is_tpu(self.strategy)

    def infer(self, fn, dataset, description, unit, total=None, key=None):
        """`fn(batch)` as NumPy for every batch of `dataset` in order, on every replica, with a
        progress bar (`zoo.training.distribute.map_batches`).

        With a `key` (a tuple naming the model and what `fn` does with it, e.g. `(core,
        "tagging.tag")`), `fn` is compiled the first time and the same compiled function serves
        every later call with that key: on one device (or per worker) the evaluation after each
        epoch traces the model once in a run, not once per epoch (under mirrored and TPU
        strategies `map_batches` still builds its replica step per call). `fn` must then depend
        only on what the key names and on the run's settings.
        """
        if key is not None:
            key = (*key, repr(distribute.any_shape(dataset.element_spec)))
            if key not in self._compiled:
                self._compiled[key] = distribute.compiled(self.strategy, fn,
                                                          dataset.element_spec)
            fn = self._compiled[key]
        return distribute.map_batches(self.strategy, fn, dataset, self.settings.eval_batch_size,
                                      progress=(description, unit, total))


def start(mode, task_class, settings: RunSettings, read_split=None, recorded=None):
    """The task of a run, started: mode and settings checked, model dir, strategy, precisions
    and fusion resolved, the preprocessor loaded. `run` uses it; so can a benchmark or a
    notebook that wants a trained model (`restored(start("predict", ...))`)."""
    check_fields(settings)
    task_class.check_settings(settings)
    check_export_format(task_class, settings)
    best.check_settings(group_of(settings, "trainer"), mode, task_class.metric_names(settings))
    strategy, compute = start_run(mode, settings, task_class.training_padding(settings),
                                  task_class.CAN.modes)
    source = None
    if settings.init_from:
        settings, source = warm_start.begin(settings, mode in TRAINING_MODES)
    if source is not None and run_record.load(settings.model_dir) is None:
        # --pooling=auto: the source's pooling
        settings = task_class.resolve_settings(settings, source.path, source.task or None)
    settings = task_class.resolve_settings(settings)
    task = task_class(Run(mode, settings, strategy, compute, recorded), read_split)
    task.run.warm_source = source
    return task


def run(mode, task_class, settings: RunSettings, read_split, started=None, recorded=None):
    """Runs one mode of a task; returns what it produced (training timing, eval results,
    prediction count, export dir, data check reports). A mode that writes into the model dir
    holds its lock (`zoo.run.lock`); `started()`, if given, is called once the run has started
    (settings checked, model dir ready and locked): the CLIs save their flags then. `recorded`
    ({"kind": name, "values": {...}}) goes into a training run's run.json, for later modes.

    A training run refused before its first checkpoint (bad flags, data or handles) takes back
    what it put into the model dir (its flags, record, labels, lock; the dir itself if it made
    it): a corrected rerun starts clean, and no model dir is left that holds no model."""
    before = paths.entries(settings.model_dir) if mode in TRAINING_MODES else paths.UNTRACKED
    try:
        return _run(mode, task_class, settings, read_split, started, recorded)
    except (UsageError, DataError, hub.HandleError, FileNotFoundError):
        if before is not paths.UNTRACKED and distribute.chief_from_env() and \
                not checkpoints.newest_first(settings.model_dir):
            paths.take_back(settings.model_dir, before)
        raise


def _run(mode, task_class, settings, read_split, started, recorded):
    task = start(mode, task_class, settings, read_split, recorded)
    writes = mode in WRITING_MODES and task.run.chief
    with lock.held(settings.model_dir, mode) if writes else contextlib.nullcontext():
        if started is not None:
            started()
        with stages.stage(f"--mode={mode}"):
            if mode == "check_data":
                return task.check_data()
            if mode in TRAINING_MODES:
                return _train(task, mode == "train_and_eval")
            with precision.scope(task.run.compute.eval_precision):
                return _use_trained(task, mode)


def _use_trained(task, mode):
    s = task.settings
    path = None
    if mode in ("predict", "explain"):
        path = s.output_file or task.default_output_file()
        if not path:
            raise UsageError(f"`mode`={mode} needs `output_file` "
                             f"({'.jsonl' if mode == 'explain' else task.OUTPUT_FILES})")
        if mode == "explain":
            explain_files.check_path(path)
        task.check_output(path)
    if mode == "export" and not s.export_dir:
        raise UsageError("`mode`=export needs `export_dir`")
    began = time.time()
    core, step = restored(task)
    if mode == "eval":
        results = evaluate(task, core, step=step, announce=False)
        task.run.report.evaluated(results, s.model_dir, task.metric_names(s), step,
                                  time.time() - began)
        return results
    if not task.run.chief:  # predictions and exports are the chief's to write
        return None
    if mode in ("predict", "explain"):
        fs.makedirs(fs.dirname(path))
        if mode == "explain":
            count = task.explain(core, path)
            task.run.report.wrote(count, path, time.time() - began,
                                  f" and {explain_files.html_path(path)}")
            return count
        count = task.predict(core, path)
        task.run.report.wrote(count, path, time.time() - began)
        return count
    return export(task, core)


def check_export_format(task_class, settings):
    """A `UsageError`, before any work, for an --export_format the task or the other export
    settings cannot give."""
    if settings.export_format != "litert":
        return
    if not task_class.CAN.litert:
        raise UsageError(
            "`export_format`=litert is for class, multi-label and regression models (one text "
            "or pair, of a fixed length); this task exports a SavedModel only (SQuAD and "
            "tagging window texts of any length): `export_format`=savedmodel")
    if settings.export_precision != "fp32":
        raise UsageError("`export_precision` applies to SavedModel exports; a LiteRT export "
                         "sets its arithmetic with `litert_quantization`")
    if hub.tokenizer_kind(settings.encoder_handle) == "sentencepiece":
        raise UsageError(
            f"`export_format`=litert tokenizes with TF Text's WordPiece kernels, and "
            f"{settings.encoder_handle} has a SentencePiece vocabulary: `export_format`=savedmodel")


def export(task, core, what_next=True):
    """Writes the export of `core` to --export_dir (at --export_precision, or as a LiteRT file
    at --litert_quantization); returns its path. `what_next`: say how to use it (a training
    run's summary says it instead)."""
    out, began = group_of(task.settings, "export"), time.time()
    if out.export_format == "litert":
        outputs, label_names = task.litert_outputs()
        representative = (task.calibration_texts(out.litert_calibration_rows)
                          if out.litert_quantization == "int8" else None)
        path = litert.export_text_model(
            out.export_dir, core, task.run.packer, outputs, label_names,
            group_of(task.settings, "model").pair, out.litert_quantization, representative)
    else:
        path = savedmodel.save(out.export_dir, task.signatures(
            frozen_core.serving_core(core, out.export_precision, out.export_small_requests),
            core))
    task.run.report.exported(path, time.time() - began, out.export_format == "litert",
                             what_next)
    return path


def build_core(task):
    """The task's core model on a trainable encoder, under the run's strategy (seeded)."""
    run_ = task.run
    seeds.set_seed(task.settings.seed)
    with run_.strategy.scope():
        encoder = hub.encoder_layer(
            run_.handles[0], trainable=True, on_tpu=run_.on_tpu,
            frozen_word_embeddings=task.settings.freeze_word_embeddings)
        limit, longest = hub.position_limit(encoder), task.longest_sequence()
        if limit is not None and longest > limit:
            raise UsageError(f"`max_seq_length`={longest} is more than the {limit} positions "
                             f"of the encoder {run_.handles[0]}")
        return task.build_core(encoder)


def restored(task):
    """(core model, step) of the model dir's newest checkpoint (with `--keep_best`, its best
    one), after checking that the model dir was trained as this run's model
    (`run_record.check_restore`)."""
    task.prepare_restore()
    s = task.settings
    run_record.check_restore(s.model_dir, run_record.describe(task.NAME, s, task.outputs()))
    core = build_core(task)
    if s.keep_best:
        step = best.restore(core, s.model_dir)
        print(f"the best checkpoint by {s.keep_best}: step {step}")
        return core, step
    checkpoint = checkpoints.restore_model(core, s.model_dir)
    return core, int(checkpoint.rsplit("-", 1)[1])


def evaluate(task, core, step=None, epoch=None, epochs=None, announce=True, summaries=True):
    """The task's evaluation, saved as eval_results.json (chief), with TensorBoard scalars in
    MODEL_DIR/eval at training `step` (`summaries`), and its line printed (`announce`; after
    `epoch` of `epochs`)."""
    began = time.time()
    results = task.evaluate(core)
    for key, value in (("epoch", epoch), ("step", step)):
        if value is not None:
            results[key] = value
    task.evaluated(results)
    scalars = {k: v for k, v in results.items() if isinstance(v, float)}
    if task.run.chief:  # every worker evaluates (the same results); the chief writes them
        save_json(fs.join(task.settings.model_dir, "eval_results.json"), results)
        if step is not None and summaries:
            loop.write_eval_summaries(task.settings.model_dir, step, scalars)
    if announce:
        task.run.report.evaluation(scalars, epoch, epochs, time.time() - began)
    else:
        task.run.report.record("eval", scalars)
    return results


def _word_embeddings_decided(task):
    """The task's settings with an unset `freeze_word_embeddings` decided by its encoder's
    vocabulary (`hub.large_vocabulary`), so that run.json records what trained."""
    s = task.settings
    if s.freeze_word_embeddings is not None:
        return s
    frozen = hub.large_vocabulary(task.run.handles[0])
    if frozen and task.run.chief:
        print(f"note: the encoder's {hub.word_embedding_rows(task.run.handles[0]):,} word-piece "
              "embeddings stay as pretrained (freeze_word_embeddings, unset: on for a vocabulary "
              f"over {hub.LARGE_VOCABULARY:,} pieces; set it off to train them)")
    return dataclasses.replace(s, freeze_word_embeddings=frozen)


def _train(task, evaluate_each_epoch):
    task.settings = _word_embeddings_decided(task)
    s, run_ = task.settings, task.run
    data = task.prepare_training(evaluate_each_epoch)
    record = dict(run_record.describe(task.NAME, s, task.outputs(), data.fingerprint),
                  git=run_record.git_commit(), **task.record_details(), **run_.recorded)
    resuming = bool(checkpoints.newest_first(s.model_dir))
    saved = run_record.load(s.model_dir) or {}
    if resuming and "init_from" in saved:  # a warm-started run resumed: its own checkpoints
        record["init_from"] = saved["init_from"]
    run_record.start_training(s.model_dir, record, s.allow_changed_settings, run_.chief)
    core = build_core(task)
    if not resuming:
        with run_.strategy.scope():
            started_from = task.warm_start(core, run_.warm_source)
        if started_from is not None and run_.chief:
            record["init_from"] = started_from
            run_record.save(s.model_dir, record)
    if s.reinit_layers:  # (a resumed run's restore then overwrites them)
        with run_.strategy.scope():
            changed = encoder_layers.reinitialize_top(encoder_variables(core), s.reinit_layers,
                                                      s.seed)
        print(f"--reinit_layers={s.reinit_layers}: {len(changed)} weights drawn anew")
    trainer = group_of(s, "trainer")
    plan = loop.plan_epochs(data.count, trainer, data.unit)
    if plan.note(data.unit) and run_.chief:
        print(f"note: {plan.note(data.unit)}")
    with run_.strategy.scope():
        optimizer = zoo_optimizer.optimizer_for(trainer, plan.total_steps,
                                                run_.compute.xla_fusion,
                                                head_variables(core), encoder_variables(core))
        metrics = task.train_metrics()

    keeper = best.Best(core, s.model_dir, trainer, run_.strategy) if s.keep_best else None
    stopping, evaluated = [], []

    def on_epoch_end(epoch, record):
        if not evaluate_each_epoch:
            return {}
        results = evaluate(task, core, step=record["step"], epoch=epoch + 1, epochs=plan.epochs)
        evaluated.append(results)
        if keeper is not None and keeper.update(results, record["step"], epoch + 1):
            stopping.append(epoch + 1)
        return results

    if keeper is not None and keeper.stopped:
        print(f"training stopped early at epoch {keeper.record['stopped_early']['epoch']} "
              f"({s.early_stopping_patience} evaluations without a better {s.keep_best}); "
              "nothing to train")
        epochs = 0
    else:
        epochs = plan.epochs
    began = time.time()
    config = loop.FitConfig(
        plan.steps_per_epoch, epochs, s.train_batch_size, s.model_dir, plan.total_steps,
        s.gradient_accumulation_steps, s.steps_per_execution, s.checkpoint_every,
        compute=run_.compute)
    timing = loop.fit(core, optimizer, task.loss_function(), task.train_dataset, config,
                      metrics=metrics, strategy=run_.strategy, on_epoch_end=on_epoch_end,
                      stop=lambda: bool(stopping))
    if keeper is not None:
        keeper.close()
        timing["best"] = keeper.record
    timing.update(wall_seconds=time.time() - began, batch_size=s.train_batch_size,
                  max_seq_length=s.max_seq_length, strategy=type(run_.strategy).__name__,
                  replicas=run_.strategy.num_replicas_in_sync, **data.report)
    timing[f"train_{data.unit}"] = data.count
    if data.unit != "examples":
        timing[f"{data.unit}_per_second"] = timing["examples_per_second"]
    with precision.scope(run_.compute.eval_precision):
        results = _calibrate(task, core, keeper, evaluated, timing)
    if run_.chief:
        _finish_training(task, core, timing, results)
    else:
        run_.report.record("train", timing)
    return timing


def _calibrate(task, core, keeper, evaluated, timing):
    """Once training ends, on every worker: the best checkpoint restored (--keep_best), the
    task's calibration fitted (`Task.calibrate`, recorded in `timing`), and the last evaluation
    redone with it (of the outputs it had); returns the evaluation the summary shows."""
    s = task.settings
    last = evaluated[-1] if evaluated else None
    step = last and last.get("step")
    if keeper is not None:
        step = best.restore(core, s.model_dir)
        if task.run.chief:
            print(f"the best checkpoint by {s.keep_best}: step {step}")
    record = task.calibrate(core, reuse=last is not None and keeper is None)
    if record is None:
        return last
    timing["calibration"] = record
    if last is None:
        return None
    return evaluate(task, core, step=step, announce=False, summaries=False)


def _finish_training(task, core, timing, results):
    """What the chief does once training ends: train_results.json, the history plot, the
    export (of the best checkpoint with --keep_best), and the summary for a person."""
    s, run_ = task.settings, task.run
    save_json(fs.join(s.model_dir, "train_results.json"), timing)
    history = loop.load_history(s.model_dir)
    if history:
        plots.plot_history(history, fs.join(s.model_dir, "training_curves.png"))
    if s.export_dir:
        with stages.stage("export"), precision.scope(run_.compute.eval_precision):
            export(task, core, what_next=False)
    run_.report.trained(timing, s.model_dir, task.metric_names(s), results,
                        s.export_dir, timing["wall_seconds"])
