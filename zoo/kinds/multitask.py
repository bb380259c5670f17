"""Multi-task training: one encoder, a head per task, one export with a signature per task.

A multi-task run is a task of the one runner (`zoo.run.runner`) made of other tasks' definitions:
`settings.tasks` is {task name: spec}, each spec a `kind` (`zoo.kinds.table.KINDS`), the data
keys of that kind's data spec (`zoo.data.specs`: `data_dir` for a GLUE folder, `train_file` /
`eval_file` / `predict_file`, the column keys of `classify`, ...), and any of that kind's
settings (`max_seq_length`, `pooling`, `doc_stride`, ...). The run's own settings (learning rate,
epochs, batch size, strategy, precision, ...) are every task's. Each task keeps its files (labels,
data checks, plots) in MODEL_DIR/tasks/<name>/.

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
import re
from functools import partial
from typing import Optional

from zoo.base import fs
from zoo.base.errors import UsageError
from zoo.base.fields import check_fields, group_of, override, setting
from zoo.base.files import load_json, save_json
from zoo.data.sources import MissingSplit
from zoo.kinds.table import KINDS
from zoo.run import runner
from zoo.run.settings import RunSettings
from zoo.run.task import Task, TrainingData
from zoo.training import warm_start
from zoo.training.steps import Mixture, sample_schedule, sampling_probabilities

SAMPLINGS = ("proportional", "uniform", "temperature")
# The run's settings that are its own, not its tasks'.
RUN_ONLY = {"model_dir", "export_dir", "output_file", "keep_best", "early_stopping_patience",
            "tasks", "tasks_file", "task_sampling", "temperature"}
BEST_FILE = "best_per_task.json"


@dataclasses.dataclass
class Settings(RunSettings):
    """A multi-task run: the common settings (every task's), the tasks and their sampling."""

    tasks: Optional[dict] = setting(None, "{task name: spec} (see zoo.kinds.multitask)", flag=False,
                                    group="model")
    tasks_file: str = setting("", "where the task specs came from (for messages)", flag=False,
                              group="model")
    task_sampling: str = setting(
        "proportional", "Which task each training step takes its batch from: proportional "
        "(to the tasks' training examples), uniform, or temperature (p ~ n^(1/T), "
        "--temperature).", choices=SAMPLINGS, group="trainer")
    temperature: float = setting(2.0, "T of --task_sampling=temperature (1: proportional; "
                                 "larger: closer to uniform).", low=0, low_open=True,
                                 group="trainer")
    output_file: Optional[str] = override(
        RunSettings, "output_file", None, "--mode=predict: a directory; each task whose spec "
        "gives predict data (predict_file, or a GLUE data_dir) writes TASK/predictions.* in it.")
    pooling: Optional[dict] = setting(None, "{task name: its pooling} of the tasks that pool, "
                                      "as resolved at the start of the run", flag=False,
                                      group="model")


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
        unknown = KINDS[spec["kind"]].unknown_keys(
            {k: v for k, v in spec.items() if k != "kind"}, RUN_ONLY)
        if unknown:
            raise UsageError(f"{_place(settings, name)}: unknown keys {unknown}")


def task_parts(settings, name):
    """(kind, data spec, settings) of task `name`: the run's common settings, then its spec's
    keys, go through its kind (`zoo.kinds.kind.Kind.parts`)."""
    spec = settings.tasks[name]
    kind = KINDS[spec["kind"]]
    fields = {f.name for f in dataclasses.fields(kind.settings)} - RUN_ONLY
    values = {f.name: getattr(settings, f.name) for f in dataclasses.fields(RunSettings)
              if f.name in fields}
    values.update({k: v for k, v in spec.items() if k != "kind"})
    values["model_dir"] = fs.join(settings.model_dir, "tasks", name)
    return (kind, *kind.parts(values))


def _reader(kind, data, settings, place):
    """The task's `read_split`, its missing splits named as keys of its spec."""
    read_split = kind.reader(data, settings)

    def read(split):
        try:
            return read_split(split)
        except MissingSplit as e:
            raise MissingSplit(f"{place}: no {split} data: give the task "
                               + " or ".join(e.keys)) from None
    return read


class MultiTask(Task):
    """Several tasks on one encoder; see the module docstring."""

    NAME = "multitask"
    OUTPUT_FILES = "a directory: each task that has predict data writes TASK/predictions.* in it"

    @staticmethod
    def check_settings(settings):
        check_specs(settings)
        if settings.gradient_accumulation_steps != 1:
            raise UsageError("multi-task training takes `gradient_accumulation_steps`=1")
        for name in settings.tasks:
            kind, data, task_settings = task_parts(settings, name)
            check_fields(task_settings, f"{_place(settings, name)}: ")
            check_fields(data, f"{_place(settings, name)}: ")
            kind.task.check_settings(task_settings)
            data.check(task_settings)

    @classmethod
    def metric_names(cls, settings):
        names = []
        for name in settings.tasks:
            kind, _, task_settings = task_parts(settings, name)
            names += [f"{name}/{metric}" for metric in kind.task.metric_names(task_settings)]
        return tuple(names)

    @staticmethod
    def training_padding(settings):
        paddings = {kind.task.training_padding(task_settings)
                    for kind, _, task_settings in map(partial(task_parts, settings),
                                                      settings.tasks)}
        return "fixed" if paddings == {"fixed"} else "dynamic"

    def __init__(self, run, read_split):
        super().__init__(run, read_split)
        self.tasks = {}
        self.kinds = {}
        for name in self.settings.tasks:
            kind, data, sub = task_parts(self.settings, name)
            sub = kind.task.resolve_settings(sub, self.settings.model_dir, name)
            fs.makedirs(sub.model_dir)
            self.kinds[name] = kind
            self.tasks[name] = kind.task(runner.Run(run.mode, sub, run.strategy, run.compute),
                                         _reader(kind, data, sub, _place(self.settings, name)))
        poolings = {name: group_of(task.settings, "model").as_dict().get("pooling")
                    for name, task in self.tasks.items()}  # (the kinds that pool have one)
        self.settings = dataclasses.replace(self.settings, pooling={  # recorded in run.json
            name: pooling for name, pooling in poolings.items() if pooling is not None})
        self.probabilities = self.steps_per_epoch = None
        self._last = {}  # task name -> its last evaluation's results
        self._unchanged = set()  # tasks whose last results the next evaluation reuses

    def longest_sequence(self):
        return max(task.longest_sequence() for task in self.tasks.values())

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
            save_json(fs.join(self.settings.model_dir, "mixture.json"), mixture)
        return TrainingData(
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

    def record_details(self):
        return {"heads": {name: task.NAME for name, task in self.tasks.items()}}

    def warm_start(self, core, source):
        """The encoder from the run's --init_from (if any); each task's head from its own
        `init_from` (the run's unless its spec sets one) when it is the same head: from a
        multi-task source, its task of the spec's `init_from_task`, else of the same name."""
        encoder = next(iter(core.values())).get_layer("encoder")
        if source is not None:
            source.restore(encoder)
            print(f"--init_from: the encoder of {source.label()}")
        heads = {}
        for name, task in self.tasks.items():
            sub = task.settings
            if not sub.init_from:
                continue
            head_source = warm_start.open_source(sub.init_from, sub.init_from_task)
            if head_source.multitask and not sub.init_from_task and name in (
                    head_source.record.get("outputs") or {}):
                head_source = warm_start.Source(sub.init_from, name)
            head_source.encoder = self.settings.encoder_handle
            reuse, why_not = head_source.head_decision(task.NAME, task.outputs(),
                                                       task.head_names())
            if reuse:
                head_source.restore(head=core[name].layers[-1])
            print(f"--init_from: {name}: " + (f"the head of {head_source.label()}" if reuse
                                              else f"a new head: {why_not}"))
            heads[name] = head_source.describe(reuse, why_not)
        if source is None:
            return dict(heads=heads) if heads else None
        return dict(source.describe(False, "see heads"), heads=heads)

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
        """Every task's evaluation, as `<task>/<metric>`; right after `calibrate` (of the same
        weights), a task it left unchanged keeps its last results instead of evaluating again."""
        results = {}
        for name, task in self.tasks.items():
            if name not in self._unchanged or name not in self._last:
                self._last[name] = task.evaluate(core[name])
            for key, value in self._last[name].items():
                results[f"{name}/{key}"] = value
        self._unchanged = set()
        return results

    def calibrate(self, core, reuse=False):
        """Each task's calibration (a temperature per class head, in its MODEL_DIR/tasks/NAME/):
        {task: its record}, or None when no task has one."""
        records = {name: task.calibrate(core[name], reuse) for name, task in self.tasks.items()}
        # the next evaluation takes the last one's results of the tasks it does not change
        self._unchanged = {name for name, r in records.items() if r is None} if reuse else set()
        records = {name: record for name, record in records.items() if record is not None}
        return records or None

    def evaluated(self, results):
        """MODEL_DIR/best_per_task.json: each task's best evaluation by its main metric."""
        step = results.get("step")
        path = fs.join(self.settings.model_dir, BEST_FILE)
        best = load_json(path, missing={})
        for name, kind in self.kinds.items():
            found = kind.main_metric(results, prefix=f"{name}/")
            if found is None:
                continue
            metric, value = found
            if name not in best or value > best[name]["value"]:
                best[name] = dict(metric=metric, value=value, step=step)
        if self.run.chief:
            save_json(path, best)

    def _predicting(self):
        """The tasks whose specs give predict data, by name."""
        found = {}
        for name, task in self.tasks.items():
            try:
                task.read_split("predict")
            except MissingSplit:
                continue
            found[name] = task
        if not found:
            raise UsageError(f"{_place(self.settings)}: no task gives predict data (predict_file, "
                             "or a GLUE data_dir with a test file)")
        return found

    def check_output(self, path):
        if fs.exists(path) and not fs.isdir(path):
            raise UsageError(f"`output_file`={path} is a file; a multi-task run predicts into a "
                             "directory (TASK/predictions.* for each task)")
        for name, task in self._predicting().items():
            task.check_output(fs.join(path, name, task.PREDICTIONS))

    def predict(self, core, path):
        """Each task that has predict data predicts into PATH/TASK/ (its `PREDICTIONS` file);
        returns the rows written in all."""
        count = 0
        for name, task in self._predicting().items():
            out = fs.join(path, name, task.PREDICTIONS)
            fs.makedirs(fs.dirname(out))
            written = task.predict(core[name], out)
            print(f"{name}: wrote {written} rows to {out}")
            count += written
        return count

    def signatures(self, core, trained=None):
        del trained  # (no explain signature for a multi-task export)
        return {name: task.serving(core[name]) for name, task in self.tasks.items()}
