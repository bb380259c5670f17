"""A task kind, described once: what the CLIs, the multi-task runner and the API all read.

A `Kind` names a task class (`zoo.run.task.Task`: its core model, loss, evaluation,
predictions and serving signature), its settings class, its data spec (`zoo.data.specs`: the
data flags and tasks.json keys, and how they read), the metrics that rank its evaluations and the
defaults it sets. `zoo.kinds.table.KINDS` lists them; a task's CLI (`zoo/cli/<task>.py`)
and a multi-task `tasks.json` entry both go through `make_data`, `make_settings` and `run`.
"""
import dataclasses
from typing import Mapping, Tuple

from zoo.base.fields import as_declared, check_fields, flag_fields
from zoo.run import runner
from zoo.training import run_record

# What a trained model dir's record (run.json's `values`) gives the modes that use the model
# (eval, predict, export, explain) where they leave it out: what the model is (its encoder and
# preprocessor, sequence length, pooling, labels, score range, threshold, windows, and which
# checkpoint: the best one with --keep_best) and how its rows are read (columns, delimiter,
# header, quoting). Paths, the training schedule, the runtime and the export's own settings are
# each run's own.
RECORDED = ("encoder_handle", "preprocessor_handle", "max_seq_length", "keep_best",
            "pooling", "label_map",
            "score_range", "label_separator", "threshold", "doc_stride", "max_query_length",
            "n_best_size", "max_answer_length", "version_2_with_negative",
            "null_score_diff_threshold", "text_column", "text_b_column", "label_column",
            "id_column", "delimiter", "header", "quoting")
USING_MODES = ("eval", "predict", "export", "explain")  # modes that use a trained model
ALTERNATIVES = {"label_map": ("label_names_file",)}  # a recorded key and what replaces it


@dataclasses.dataclass(frozen=True)
class Kind:
    """One task kind.

    Args:
        name: its name in `tasks.json` ("kind") and in `zoo.kinds.table.KINDS`.
        task: the `zoo.run.task.Task` subclass that runs it; what the kind can do besides the
            base modes is its `CAN` (`zoo.run.task.Capabilities`).
        settings: its settings class (a `zoo.run.settings.RunSettings` subclass).
        data: its data spec class (`zoo.data.specs`).
        main_metrics: the metrics that rank its evaluations, the first one found counting
            (`best_per_task.json` of a multi-task run).
        defaults: settings this kind starts from (STS-B's score range); flags and tasks.json
            keys may change them.
        data_values: data spec values the kind fixes (a GLUE task's layout).
    """

    name: str
    task: type
    settings: type
    data: type
    main_metrics: Tuple[str, ...]
    defaults: Mapping = dataclasses.field(default_factory=dict)
    data_values: Mapping = dataclasses.field(default_factory=dict)

    def data_keys(self):
        """The data keys a user may give (the data spec's flag fields)."""
        return {f.name for f in flag_fields(self.data)}

    def make_data(self, values):
        """The data spec from {data key: value}."""
        return self.data(**{**self.data_values, **values})

    def make_settings(self, values, data):
        """The settings from the kind's defaults, what follows from the data, then `values`."""
        return self.settings(**as_declared(self.settings,
                                           {**self.defaults, **data.settings(), **values}))

    def unknown_keys(self, values, not_settings=()):
        """The keys of `values` that are neither data keys nor settings (less `not_settings`)."""
        fields = {f.name for f in dataclasses.fields(self.settings)} - set(not_settings)
        return sorted(set(values) - self.data_keys() - fields)

    def recorded(self, settings, data):
        """{key: value} of `RECORDED` that this kind has, from its settings (as the data made
        them: a label map read from --label_names_file) or else its data spec: what its training
        run records for later modes (run.json's `values`)."""
        found = {}
        for key in RECORDED:
            for source in (settings, data):
                if any(f.name == key for f in dataclasses.fields(source)):
                    found[key] = getattr(source, key)
                    break
        return found

    def with_record(self, mode, values, given):
        """`values` with the model dir's recorded values (run.json's `values`) in place of the
        keys not in `given` (what the user gave; nor a key whose alternative was given: a label
        map for --label_names_file), for a mode that uses a model trained as this kind. A mode
        that trains, a model dir without a record, or one of another kind (which the restore
        refuses, naming the kind) takes `values` as they are."""
        record = run_record.load(values["model_dir"]) if mode in USING_MODES and \
            values.get("model_dir") else None
        if not record or record.get("kind") != self.name:
            return values
        known = self.data_keys() | {f.name for f in dataclasses.fields(self.settings)}
        taken = set(given) | {key for key, instead in ALTERNATIVES.items()
                              if any(other in given for other in instead)}
        return dict(values, **{k: v for k, v in (record.get("values") or {}).items()
                               if k in known and k not in taken})

    def parts(self, values):
        """(data spec, settings) from {key: value} as a tasks.json entry gives them: the data
        keys make the data spec, the others are settings."""
        data_keys = self.data_keys()
        data = self.make_data({k: v for k, v in values.items() if k in data_keys})
        return data, self.make_settings(
            {k: v for k, v in values.items() if k not in data_keys}, data)

    def reader(self, data, settings):
        """The run's `read_split`, after the data spec's checks (its fields' ranges, then its own
        check of `settings`)."""
        check_fields(data)
        data.check(settings)
        return data.reader(settings)

    def run(self, mode, settings, data, started=None):
        """Runs one mode of this kind (`zoo.run.runner.run`, which calls `started()` once the
        run has started) on `data` (a data spec). A training run records the kind's name and
        `recorded` values in run.json."""
        return runner.run(mode, self.task, settings, self.reader(data, settings), started,
                          recorded=dict(kind=self.name, values=self.recorded(settings, data)))

    def main_metric(self, results, prefix=""):
        """(metric, value) of the first main metric in `results` (keys `prefix + metric`), or
        None."""
        for metric in self.main_metrics:
            if isinstance(results.get(prefix + metric), float):
                return metric, results[prefix + metric]
        return None
