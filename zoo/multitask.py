"""Multi-task training: one encoder, a head per task, one export with a signature per task.

A multi-task run is a task of the one runner (`zoo.runner`) made of other tasks' definitions:
`settings.tasks` is {task name: spec}, each spec a `kind` (`KINDS`), where its data is
(`data_dir` for a GLUE folder, `train_file` / `eval_file` / `predict_file`, and for `classify`
the column keys of `tasks.classify`), and any of that kind's settings (`max_seq_length`,
`label_map`, `pooling`, `doc_stride`, ...). The run's own settings (learning rate, epochs,
batch size, strategy, precision, ...) are every task's. Each task keeps its files (labels, data
checks, plots) in MODEL_DIR/tasks/<name>/.

Training: each step is one task's batch, the task drawn from `task_sampling` (proportional to
the tasks' training examples, uniform, or temperature: p ~ n^(1/T)) with a seeded schedule per
epoch; an epoch has as many steps as all tasks' batches together. The steps per task and the
mix are logged and saved in train_results.json. Evaluation after each epoch runs every task's
own evaluation; its results are in eval_results.json under `<task>/<metric>` (TensorBoard
too), and MODEL_DIR/best_per_task.json notes each task's best evaluation (its main metric and
step). The export holds a signature per task (the first is also `serving_default`); they share
the encoder's variables, which are stored once.
"""
import dataclasses
import os
import re
from typing import Optional

from zoo import classification, multilabel, regression, runner, squad, tagging
from zoo.data import glue
from zoo.data.conll import ConllSource
from zoo.data.sources import FileSource, MissingSplit
from zoo.data.squad import SquadFile, WithUnanswerable
from zoo.data.text_files import Columns
from zoo.errors import UsageError
from zoo.files import load_json, save_json
from zoo.settings import RunSettings, setting
from zoo.steps import Mixture, sample_schedule, sampling_probabilities

SAMPLINGS = ("proportional", "uniform", "temperature")
# kind -> (task class, settings class)
KINDS = {
    "mrpc": (classification.Classification, classification.Settings),
    "sst2": (classification.Classification, classification.Settings),
    "stsb": (regression.Regression, regression.Settings),
    "classify": (classification.Classification, classification.Settings),
    "regression": (regression.Regression, regression.Settings),
    "multi_label": (multilabel.MultiLabel, multilabel.Settings),
    "squad": (squad.Squad, squad.Settings),
    "tagging": (tagging.Tagging, tagging.Settings),
}
DATA_KEYS = {"kind", "data_dir", "train_file", "eval_file", "predict_file", "text_column",
             "text_b_column", "label_column", "id_column", "delimiter", "header", "quoting",
             "max_train_questions", "unanswerable_fraction"}
# The run's settings that are its own, not its tasks'.
RUN_ONLY = {"model_dir", "export_dir", "output_file", "keep_best", "early_stopping_patience",
            "tasks", "tasks_file", "task_sampling", "temperature"}
MAIN_METRICS = ("f1", "exact_match", "pearson", "f1_micro", "accuracy")
BEST_FILE = "best_per_task.json"


@dataclasses.dataclass
class Settings(RunSettings):
    """A multi-task run: the common settings (every task's), the tasks and their sampling."""

    tasks: Optional[dict] = setting(None, "{task name: spec} (see zoo.multitask)", flag=False)
    tasks_file: str = setting("", "where the task specs came from (for messages)", flag=False)
    task_sampling: str = setting(
        "proportional", "Which task each training step takes its batch from: proportional "
        "(to the tasks' training examples), uniform, or temperature (p ~ n^(1/T), "
        "--temperature).", choices=SAMPLINGS)
    temperature: float = setting(2.0, "T of --task_sampling=temperature (1: proportional; "
                                 "larger: closer to uniform).")
    pooling: Optional[dict] = setting(None, "{task name: its pooling} of the tasks that pool, "
                                      "as resolved at the start of the run", flag=False)


def _place(settings, name=None):
    where = settings.tasks_file or "the tasks"
    return f"{where}: task {name!r}" if name else where


def check_specs(settings):
    """UsageErrors for task specs that cannot work, before any work is done."""
    if not settings.tasks:
        raise UsageError(f"{_place(settings)}: no tasks")
    for name, spec in settings.tasks.items():
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
            raise UsageError(f"{_place(settings, name)}: a task name is letters, digits and _ "
                             "(it names the task's signature in the export)")
        if not isinstance(spec, dict) or spec.get("kind") not in KINDS:
            raise UsageError(f"{_place(settings, name)}: 'kind' must be one of {sorted(KINDS)}")
        fields = {f.name for f in dataclasses.fields(KINDS[spec["kind"]][1])}
        unknown = sorted(set(spec) - DATA_KEYS - (fields - RUN_ONLY))
        if unknown:
            raise UsageError(f"{_place(settings, name)}: unknown keys {unknown}")
    if settings.task_sampling == "temperature" and settings.temperature <= 0:
        raise UsageError("--temperature must be more than 0")


def task_settings(settings, name, spec):
    """The settings of task `name`: the run's common ones, then its spec's."""
    settings_class = KINDS[spec["kind"]][1]
    fields = {f.name for f in dataclasses.fields(settings_class)}
    values = {f.name: getattr(settings, f.name) for f in dataclasses.fields(RunSettings)
              if f.name not in RUN_ONLY and f.name in fields}
    if spec["kind"] in glue.TASKS:
        layout = glue.TASKS[spec["kind"]]
        values.update(pair=layout.pair, label_map=layout.label_map)
        if spec["kind"] == "stsb":
            values["score_range"] = "0,5"
    elif spec["kind"] in ("classify", "regression", "multi_label"):
        values["pair"] = bool(spec.get("text_b_column"))
    values.update({k: v for k, v in spec.items() if k in fields and k not in RUN_ONLY})
    values["model_dir"] = os.path.join(settings.model_dir, "tasks", name)
    return settings_class(**values)


def read_split_of(spec, task_settings_):
    """`read_split(split)` of a task spec: its sources (`zoo.data`)."""
    kind = spec["kind"]

    def path(split):
        if spec.get(f"{split}_file"):
            return spec[f"{split}_file"]
        if spec.get("data_dir"):
            return glue.split_file(spec["data_dir"], split)
        raise MissingSplit(f"no {split} data: give the task a {split}_file or data_dir")

    def read_split(split):
        labelled = split != "predict"
        if kind in glue.TASKS:
            return FileSource(path(split), glue.TASKS[kind].columns(split), require_label=labelled)
        if kind == "squad":
            source = SquadFile(path(split), require_answers=labelled,
                               max_questions=spec.get("max_train_questions", 0)
                               if split == "train" else 0,
                               version_2=task_settings_.version_2_with_negative)
            if split == "train" and spec.get("unanswerable_fraction"):
                source = WithUnanswerable(source, spec["unanswerable_fraction"],
                                          task_settings_.seed)
            return source
        if kind == "tagging":
            return ConllSource(path(split), require_tags=labelled)
        return FileSource(path(split), Columns(
            spec.get("text_column", "text"), spec.get("text_b_column"),
            spec.get("label_column", "label"), spec.get("id_column"), spec.get("delimiter"),
            spec.get("header", True), spec.get("quoting", "auto")), require_label=labelled)

    return read_split


class MultiTask(runner.Task):
    """Several tasks on one encoder; see the module docstring."""

    NAME = "multitask"
    MODES = ("train", "eval", "train_and_eval", "export")

    @staticmethod
    def check_settings(settings):
        check_specs(settings)
        if settings.gradient_accumulation_steps != 1:
            raise UsageError("multi-task training takes --gradient_accumulation_steps=1")
        for name, spec in settings.tasks.items():
            KINDS[spec["kind"]][0].check_settings(task_settings(settings, name, spec))

    @staticmethod
    def training_padding(settings):
        paddings = {KINDS[spec["kind"]][0].training_padding(task_settings(settings, name, spec))
                    for name, spec in settings.tasks.items()}
        return "fixed" if paddings == {"fixed"} else "dynamic"

    def __init__(self, run, read_split):
        super().__init__(run, read_split)
        self.tasks = {}
        for name, spec in self.settings.tasks.items():
            sub = runner.resolved_pooling(task_settings(self.settings, name, spec),
                                          runner.trained_pooling(self.settings.model_dir,
                                                                 self.settings.encoder_handle, name))
            os.makedirs(sub.model_dir, exist_ok=True)
            self.tasks[name] = KINDS[spec["kind"]][0](
                runner.Run(run.mode, sub, run.strategy, run.compute), read_split_of(spec, sub))
        self.settings = dataclasses.replace(self.settings, pooling={
            name: task.settings.pooling for name, task in self.tasks.items()
            if hasattr(task.settings, "pooling")})  # recorded in run.json
        self.probabilities = self.steps_per_epoch = None

    def prepare_training(self, evaluate_each_epoch):
        data = {name: task.prepare_training(evaluate_each_epoch)
                for name, task in self.tasks.items()}
        batch = self.settings.train_batch_size
        counts = {name: d.count for name, d in data.items()}
        short = [f"{name} ({n} {data[name].unit})" for name, n in counts.items() if n < batch]
        if short:
            raise UsageError(f"less than one batch of {batch}: {', '.join(short)}")
        self.probabilities = sampling_probabilities(counts, self.settings.task_sampling,
                                                    self.settings.temperature)
        self.steps_per_epoch = sum(n // batch for n in counts.values())
        expected = {name: round(p * self.steps_per_epoch)
                    for name, p in self.probabilities.items()}
        mixture = dict(task_sampling=self.settings.task_sampling,
                       temperature=self.settings.temperature, steps_per_epoch=self.steps_per_epoch,
                       tasks={name: dict(training=counts[name], unit=data[name].unit,
                                         probability=round(self.probabilities[name], 4),
                                         steps_per_epoch=expected[name])
                              for name in self.tasks})
        print("task mix:", ", ".join(f"{n} {m['probability']:.3f} (~{m['steps_per_epoch']} steps"
                                     " an epoch)" for n, m in mixture["tasks"].items()))
        if self.run.chief:
            save_json(os.path.join(self.settings.model_dir, "mixture.json"), mixture)
        return runner.TrainingData(
            self.steps_per_epoch * batch, "examples",
            {name: d.fingerprint for name, d in data.items()},
            dict(mixture=mixture, **{f"{name}/{k}": v for name, d in data.items()
                                     for k, v in d.report.items()}))

    def prepare_restore(self):
        for task in self.tasks.values():
            task.prepare_restore()

    def outputs(self):
        return {name: task.outputs() for name, task in self.tasks.items()}

    def build_core(self, encoder):
        return {name: task.build_core(encoder) for name, task in self.tasks.items()}

    def train_dataset(self, epoch):
        schedule = sample_schedule(self.probabilities, self.steps_per_epoch,
                                   seed=[self.settings.seed, epoch])
        return Mixture({name: task.train_dataset(epoch).repeat()
                        for name, task in self.tasks.items() if name in schedule}, schedule)

    def loss_function(self):
        return {name: task.loss for name, task in self.tasks.items()}

    def train_metrics(self):
        return {f"{name}/{k}": metric for name, task in self.tasks.items()
                for k, metric in task.train_metrics().items()}

    def evaluate(self, core):
        """Every task's evaluation, as `<task>/<metric>`."""
        results = {}
        for name, task in self.tasks.items():
            for key, value in task.evaluate(core[name]).items():
                results[f"{name}/{key}"] = value
        return results

    def evaluated(self, results):
        """MODEL_DIR/best_per_task.json: each task's best evaluation by its main metric."""
        step = results.get("step")
        path = os.path.join(self.settings.model_dir, BEST_FILE)
        best = load_json(path, missing={})
        for name in self.tasks:
            metric = next((m for m in MAIN_METRICS if isinstance(
                results.get(f"{name}/{m}"), float)), None)
            if metric is None:
                continue
            value = results[f"{name}/{metric}"]
            if name not in best or value > best[name]["value"]:
                best[name] = dict(metric=metric, value=value, step=step)
        if self.run.chief:
            save_json(path, best)

    def signatures(self, core):
        return {name: task.serving(core[name]) for name, task in self.tasks.items()}


def run(mode, settings: Settings):
    """Runs one mode of multi-task training (`zoo.runner.run`)."""
    return runner.run(mode, MultiTask, settings, None)
