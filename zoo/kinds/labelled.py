"""The base of the tasks whose rows carry labels that a data check reads first: classification
(and regression, multi-label) and token tagging.

Training and evaluation start with a data check of their splits (`zoo.data.check`): rows,
labels, bad rows, duplicates, token lengths. The vocabulary is learned from the training data
and saved as `labels.json` in the model dir; a resumed run whose training data has other labels
stops. `--mode=check_data` checks every split given and reports every bad row.
"""

from zoo.base import fs
from zoo.base.errors import UsageError
from zoo.data import check
from zoo.data.fingerprint import data_fingerprint
from zoo.data.labels import LABELS_FILE
from zoo.data.sources import ListSource
from zoo.run.task import Capabilities, SingleTask


class LabelledRows(SingleTask):
    """A task on labelled rows. Subclasses give `open_labels`, `vocabulary` and `load_labels`,
    and set `DEDUPE` if `--dedupe` applies to them; `self.labels` is the vocabulary."""

    CAN = Capabilities(check_data=True)
    DEDUPE = False

    def __init__(self, run, read_split):
        super().__init__(run, read_split)
        self.labels = None
        self.sources, self.checks = {}, {}

    def open_labels(self):
        """What a training row's label may be before the vocabulary is known."""
        raise NotImplementedError

    def vocabulary(self, counts):
        """The vocabulary learned from the training data's label `counts`."""
        raise NotImplementedError

    def load_labels(self):
        """The vocabulary saved in the model dir."""
        raise NotImplementedError

    def check_splits(self, sources, labels=None, bad_rows=None):
        """`zoo.data.check.check_splits` with this task's labels and settings."""
        s = self.settings
        return check.check_splits(sources, self.run.packer, s.model_dir, s.max_seq_length,
                                  self.open_labels(), self.vocabulary, labels,
                                  bad_rows or s.bad_rows, self.DEDUPE and s.dedupe,
                                  self.run.chief)

    def read_training(self, evaluate_each_epoch):
        """Reads and checks the training split (and the eval split if it is evaluated), learns
        the vocabulary and keeps it in the model dir."""
        self.sources = {"train": self.read_split("train")}
        if evaluate_each_epoch:
            self.sources["eval"] = self.read_split("eval")
        self.checks, self.labels = self.check_splits(self.sources)
        saved = fs.join(self.settings.model_dir, LABELS_FILE)
        if fs.exists(saved):
            previous = self.load_labels().outputs()
            if previous != self.labels.outputs():
                raise UsageError(f"{saved}: labels {previous} differ from the training data's "
                                 f"{self.labels.outputs()}; use a new `model_dir`")
        if self.run.chief:
            self.labels.save(self.settings.model_dir)

    def fingerprint(self):
        """The training data's fingerprint for run.json."""
        source = self.sources["train"]
        if isinstance(source, ListSource):
            return data_fingerprint(examples=source.examples)
        return data_fingerprint(files=source.shards)

    def eval_data(self):
        """(source, data check) of the eval split, read and checked when first needed."""
        source = self.sources.get("eval") or self.read_split("eval")
        data_check = self.checks.get("eval") or self.check_splits(
            {"eval": source}, self.labels)[0]["eval"]
        return source, data_check

    def prepare_restore(self):
        self.labels = self.load_labels()

    def outputs(self):
        return self.labels.outputs()

    def head_names(self):
        names = getattr(self.labels, "names", None)
        return None if names is None else list(names)

    def check_data(self):
        """Checks every split that was given, reporting every bad row (as `--bad_rows=skip`
        does) instead of stopping at the first. Returns {split: report}."""
        sources = check.given_splits(self.read_split)
        labels = None
        if "train" not in sources and fs.exists(
                fs.join(self.settings.model_dir, LABELS_FILE)):
            labels = self.load_labels()
        checks, _ = self.check_splits(sources, labels, bad_rows="skip")
        return {split: result.report for split, result in checks.items()}
