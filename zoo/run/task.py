"""The task contract: what a task kind must define, and what it may declare it can do.

Every kind defines the hooks of `Task` marked abstract (its data, core, loss, evaluation,
predictions and export signatures; a kind of one head, `SingleTask`, gives its loss and serving
module instead of the last two); Python refuses to make a task that misses one. What a kind can do
beyond training, evaluating, predicting and exporting a SavedModel is declared once, in its
`CAN` (`Capabilities`), and each capability comes with the hooks it needs (`HOOKS`): the runner,
the CLIs and the tests read `CAN`, never `hasattr`. `zoo.run.runner` drives a task through this
contract; BUILD.md's "Add a task" walks through a new one.
"""
import abc
import dataclasses
from typing import Any

from zoo.run.paths import check_output_file
from zoo.run.settings import MODES

BASE_MODES = tuple(m for m in MODES if m not in ("check_data", "explain"))

# {capability: the Task hooks a kind that has it defines}
HOOKS = {
    "check_data": ("check_data",),
    "explain": ("explain", "explain_serving"),
    "litert": ("litert_outputs", "calibration_texts"),
    "requests": ("request_serving",),
}


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What a task kind can do besides train, eval, predict and a SavedModel export.

    Args:
        check_data: `--mode=check_data` reports every split's rows, labels and bad rows.
        explain: `--mode=explain` and the export's `explain` signature (word attributions).
        litert: `--export_format=litert` (one text or pair of a fixed length a call).
        requests: the export has signatures whose requests set a value per row (`top_k`,
            `min_score`, `threshold`).

    Example:
    ```python
    class Tagging(LabelledRows):
        CAN = Capabilities(check_data=True)
    ```
    """

    check_data: bool = False
    explain: bool = False
    litert: bool = False
    requests: bool = False

    @property
    def modes(self):
        """The `--mode`s of a kind that can do this."""
        return BASE_MODES + tuple(m for m in ("check_data", "explain") if getattr(self, m))

    def names(self):
        """The names of the capabilities it has."""
        return [name for name in HOOKS if getattr(self, name)]


@dataclasses.dataclass
class TrainingData:
    """What a task's `prepare_training` found: the training set's size (in `unit`s, one per
    training example: "examples", "windows"), its fingerprint for run.json, and what the task
    adds to train_results.json (which also gets `train_<unit>` and, unless the unit is
    examples, `<unit>_per_second`)."""

    count: int
    unit: str
    fingerprint: Any
    report: dict


class Task(abc.ABC):
    """A task: what the runner cannot know. Subclasses set `NAME` (run.json's `task`), `CAN`
    (what it can do besides the base modes), `OUTPUT_FILES` (what `--output_file` may be),
    `PREDICTIONS` (its predictions' file name in a multi-task run), `METRICS` (the numbers of its
    evaluation), define the abstract methods and may override the others; `run` is the
    `zoo.run.runner.Run`, `read_split(split)` gives the data of 'train', 'eval' or 'predict' (or
    raises `zoo.data.sources.MissingSplit`)."""

    NAME = ""
    CAN = Capabilities()
    OUTPUT_FILES = ""
    PREDICTIONS = "predictions.txt"
    METRICS = ("loss",)  # what `metric_names` returns unless a task overrides it

    def __init__(self, run, read_split):
        self.run = run
        self.settings = run.settings
        self.read_split = read_split

    # What every kind defines.

    @abc.abstractmethod
    def prepare_training(self, evaluate_each_epoch) -> TrainingData:
        """Reads (and checks) the training data, and the eval data if it is evaluated."""

    @abc.abstractmethod
    def outputs(self):
        """What the head predicts (run.json's `outputs`: e.g. the label list)."""

    @abc.abstractmethod
    def build_core(self, encoder):
        """The core model on `encoder` (a trainable Hub encoder layer); see `zoo.model.cores`."""

    @abc.abstractmethod
    def train_dataset(self, epoch):
        """Batches of (inputs, targets) of one epoch, of exactly the global batch size, in an
        order that depends on the seed and epoch alone."""

    @abc.abstractmethod
    def loss_function(self):
        """What training minimises: per-example losses of (targets, outputs) (a multi-task
        run: {task: its loss})."""

    @abc.abstractmethod
    def evaluate(self, core):
        """The eval split's metrics: a JSON-ready dict (its float values become summaries)."""

    @abc.abstractmethod
    def predict(self, core, path):
        """Predicts the predict split into `path`; returns how many predictions it wrote."""

    @abc.abstractmethod
    def signatures(self, core, trained=None):
        """{signature name: serving module} of the export of `core` (what the export runs:
        `zoo.export.frozen_core.serving_core`); the first is also `serving_default`. `trained`
        is the trained Keras core itself, for signatures that need its layers."""

    # What a kind may change; each has a default.

    @staticmethod
    def check_settings(settings):
        """Raises a `UsageError` for settings that cannot work, before any work is done."""
        del settings

    @classmethod
    def metric_names(cls, settings):
        """The numbers its evaluation reports that `--keep_best` may rank by."""
        del settings
        return cls.METRICS

    @classmethod
    def resolve_settings(cls, settings, record_dir=None, name=None):
        """`settings` with what the run decides at its start made concrete (a classifier's
        `pooling="auto"`); `record_dir` holds the run.json of a trained model dir (default:
        the settings' own), `name` is the task's name in a multi-task record."""
        del record_dir, name
        return settings

    @staticmethod
    def training_padding(settings):
        """"fixed" if every training batch has one shape (then XLA fusion may apply)."""
        del settings
        return "fixed"

    def longest_sequence(self):
        """The most tokens the encoder will be given at once."""
        return self.settings.max_seq_length

    def prepare_restore(self):
        """What a restore needs from the model dir besides the checkpoint (e.g. labels)."""
        return None

    def train_metrics(self):
        """{name: tf_keras metric} updated with (targets, outputs) in training."""
        return {}

    def head_names(self):
        """The names of what the head predicts as an export stores them (label or tag names),
        or None."""
        return None

    def record_details(self):
        """What run.json records besides `run_record.describe`'s keys (a multi-task run: the
        kind of each head, which a warm start from it reads)."""
        return {}

    def warm_start(self, core, source):
        """Loads `source`'s weights (`zoo.training.warm_start.Source`, None: the run has no
        --init_from) into `core` before the first step: the encoder's, and the head's when it
        is the same head; returns run.json's `init_from` record (None: nothing loaded)."""
        if source is None:
            return None
        reuse, why_not = source.head_decision(self.NAME, self.outputs(), self.head_names())
        source.restore(core.get_layer("encoder"), core.layers[-1] if reuse else None)
        print(f"--init_from: the encoder{' and the head' if reuse else ''} of "
              f"{source.label()}" + ("" if reuse else f"; the head starts fresh: {why_not}"))
        return source.describe(reuse, why_not)

    def calibrate(self, core, reuse=False):
        """After training, on every worker: fits what makes the model's probabilities mean what
        they say (a class model's temperature, `zoo.evaluation.calibration`) and keeps it in the
        model dir; returns its record, or None for a task that has none. `reuse`: the last
        evaluation was of these weights (its outputs may be used again)."""
        del core, reuse
        return None

    def evaluated(self, results):
        """Called with each evaluation's results (with its `step` when it follows training)."""
        del results

    def default_output_file(self):
        """Where `predict` writes without `--output_file` (None: the flag is required)."""
        return None

    def check_output(self, path):
        """A `UsageError` for a predictions file `path` that cannot be written (before any
        work)."""
        check_output_file(path, self.read_split("predict"))

    # The hooks of a capability (`HOOKS`): a kind whose `CAN` has it defines them.

    def check_data(self):
        """`--mode=check_data` (`CAN.check_data`)."""
        raise NotImplementedError(f"{self.NAME} cannot check data")

    def explain(self, core, path):
        """`--mode=explain` (`CAN.explain`): explains the predict split into `path`; returns
        how many rows it wrote."""
        raise NotImplementedError(f"{self.NAME} cannot explain")

    def explain_serving(self, core):
        """The explain signature's module (`zoo.export.explain.ExplainServing`) of the trained
        Keras `core` (`CAN.explain`)."""
        raise NotImplementedError(f"{self.NAME} cannot explain")

    def litert_outputs(self):
        """(outputs, label names or None) of the LiteRT export (`CAN.litert`,
        `zoo.export.litert`): the SavedModel's `serving_default` outputs where LiteRT has
        their ops."""
        raise NotImplementedError(f"{self.NAME} has no LiteRT export")

    def calibration_texts(self, count):
        """The first `count` good training rows as LiteRT int8 calibration inputs:
        [{input name: [text]}] (`CAN.litert`)."""
        raise NotImplementedError(f"{self.NAME} has no LiteRT export")

    def request_serving(self, core):
        """{signature name: serving module} of the signatures whose requests set a value per
        row (`CAN.requests`)."""
        raise NotImplementedError(f"{self.NAME} has no per-request signatures")



class SingleTask(Task):
    """A task of one head (every kind but the multi-task runner, which composes them): it
    defines its `loss` and its `serving` module, which give the contract's `loss_function` and
    `signatures`."""

    @abc.abstractmethod
    def loss(self, targets, outputs):
        """Per-example losses."""

    @abc.abstractmethod
    def serving(self, core):
        """The serving module of the export (`zoo.export.savedmodel`)."""

    def loss_function(self):
        return self.loss

    def signatures(self, core, trained=None):
        del trained
        return {"serving_default": self.serving(core)}
