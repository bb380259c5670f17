"""Where a task's data is, declared once: the data keys of each task kind and how they read.

A data spec is a dataclass whose fields are declared with `setting()` (`zoo.base.fields`): a
task's CLI turns them into its data flags (`--train_file`, `--text_column`, ...), and a multi-task
`tasks.json` entry is checked against the same fields. `spec.reader(settings)` returns the
`read_split(split)` of the run ('train', 'eval' or 'predict' -> a source of `zoo.data.sources`,
or `MissingSplit`): one function, whichever way the spec was given. `spec.check(settings)` stops
a spec that cannot work before any work is done, and `spec.settings()` gives the settings that
follow from the data (a second text column makes pairs; `--label_names_file` names the labels).

| spec | kinds | reads |
| --- | --- | --- |
| `GlueFolder` | mrpc, sst2, stsb | a GLUE folder (`data_dir`), split files, or TFDS when none is given |
| `TextColumns` | classify, regression, multi_label | CSV / TSV / JSONL / TFRecord columns, or TFDS |
| `SquadFiles` | squad | SQuAD JSON (v1.1, 2.0), optionally with unanswerable copies |
| `ConllFiles` | tagging | CoNLL-style token-per-line files |
"""
import dataclasses
from typing import Optional

from zoo.base.errors import UsageError
from zoo.base.fields import override, setting
from zoo.data import glue
from zoo.data.conll import ConllSource
from zoo.data.labels import label_names_file
from zoo.data.sources import FileSource, ListSource, MissingSplit
from zoo.data.squad import SquadFile, WithUnanswerable
from zoo.data.text_files import QUOTINGS, Columns

_FILES = "file, glob or comma-separated list"


def _one_character(delimiter):
    """What is wrong with a --delimiter (None if nothing): the csv module splits on one
    character."""
    if delimiter is None or delimiter in ("tab", "\\t") or len(delimiter) == 1:
        return None
    return "one character (or 'tab')"


@dataclasses.dataclass
class SplitFiles:
    """A file (or glob, or comma-separated list) per split."""

    train_file: Optional[str] = setting(None, f"Training data ({_FILES}).", path=True)
    eval_file: Optional[str] = setting(None, f"Evaluation data ({_FILES}).", path=True)
    predict_file: Optional[str] = setting(None, f"Data to predict on ({_FILES}).", path=True)

    def keys(self, split):
        """The data keys that would give `split`."""
        return [f"{split}_file"]

    def path(self, split):
        """The file of `split`, or `MissingSplit` naming the keys that would give it."""
        path = getattr(self, f"{split}_file")
        if path:
            return path
        raise MissingSplit.of(split, self.keys(split))

    def check(self, settings):
        """Raises a `UsageError` for a spec that cannot work with `settings`."""
        del settings

    def settings(self):
        """{setting: value} that follow from the data."""
        return {}

    def reader(self, settings):
        """`read_split(split)` -> the split's source."""
        raise NotImplementedError


@dataclasses.dataclass
class ConllFiles(SplitFiles):
    """CoNLL-style files: a token and its tag per line, a blank line between sentences."""

    _CONLL = "CoNLL file, glob or comma-separated list"
    train_file: Optional[str] = override(SplitFiles, "train_file", None,
                                         f"Training data ({_CONLL}).")
    eval_file: Optional[str] = override(SplitFiles, "eval_file", None,
                                        f"Evaluation data ({_CONLL}).")
    predict_file: Optional[str] = override(SplitFiles, "predict_file", None,
                                           f"Data to predict on ({_CONLL}).")

    def reader(self, settings):
        del settings
        return lambda split: ConllSource(self.path(split), require_tags=split != "predict")


@dataclasses.dataclass
class SquadFiles(SplitFiles):
    """SQuAD JSON files, read article by article."""

    train_file: Optional[str] = override(SplitFiles, "train_file", None,
                                         "Training data (SQuAD JSON).")
    eval_file: Optional[str] = override(SplitFiles, "eval_file", None,
                                        "Evaluation data (SQuAD JSON).")
    predict_file: Optional[str] = override(SplitFiles, "predict_file", None,
                                           "Questions to answer (SQuAD JSON).")
    max_train_questions: int = setting(
        0, "Train on the first N questions only (0: all), e.g. to fit a time budget.", low=0)
    unanswerable_fraction: float = setting(
        0.0, "SQuAD 2.0 from SQuAD 1.1 training data: copy this fraction of the training "
        "questions as unanswerable, each paired with another paragraph of its article that "
        "holds none of its answers (needs --version_2_with_negative).", low=0, high=1)

    def check(self, settings):
        if self.unanswerable_fraction and not settings.version_2_with_negative:
            raise UsageError("`unanswerable_fraction` needs `version_2_with_negative`")

    def reader(self, settings):
        def read_split(split):
            source = SquadFile(self.path(split), require_answers=split != "predict",
                               max_questions=self.max_train_questions if split == "train" else 0,
                               version_2=settings.version_2_with_negative)
            if split == "train" and self.unanswerable_fraction:
                source = WithUnanswerable(source, self.unanswerable_fraction, settings.seed)
            return source
        return read_split


TFDS_SPLITS = dict(train="train", eval="validation", predict="test")


@dataclasses.dataclass
class FolderFiles(SplitFiles):
    """Split files, or a folder that holds them as GLUE's do."""

    data_dir: Optional[str] = setting(
        None, "A GLUE-layout folder: train.tsv (train), dev.tsv (eval) and test.tsv (predict). "
        "--train_file etc. override single files.", path=True)

    def keys(self, split):
        return [f"{split}_file", "data_dir"]

    def given(self, split):
        """Whether `split` has a file or the folder."""
        return bool(getattr(self, f"{split}_file") or self.data_dir)

    def path(self, split):
        if not getattr(self, f"{split}_file") and self.data_dir:
            return glue.split_file(self.data_dir, split)
        return super().path(split)


@dataclasses.dataclass
class GlueFolder(FolderFiles):
    """A GLUE task's folder (`layout`: its columns and label names, `zoo.data.glue`); a split
    with neither its file nor the folder comes from TensorFlow Datasets where the task is there
    (mrpc, sst2)."""

    layout: str = setting("", "the GLUE task (zoo.data.glue.TASKS)", flag=False)

    def settings(self):
        task = glue.TASKS[self.layout]
        return dict(pair=task.pair, label_map=task.label_map)

    def reader(self, settings):
        del settings
        task = glue.TASKS[self.layout]

        def read_split(split):
            labelled = split != "predict"
            if self.given(split) or not task.tfds:
                return FileSource(self.path(split), task.columns(split), require_label=labelled)
            from zoo.data import tfds_source  # (TFDS)
            tfds_split = TFDS_SPLITS[split]
            print(f"no --data_dir: reading {task.tfds} [{tfds_split}] from TensorFlow Datasets "
                  "(downloaded on first use)")
            return ListSource(tfds_source.read_tfds(
                task.tfds, tfds_split, id_column="idx" if split == "predict" else None,
                require_label=labelled, label_ids=True,
                unavailable=f"; without the internet, pass a local GLUE folder: --data_dir=DIR "
                            f"holding train.tsv, dev.tsv and test.tsv (e.g. ../shared/data/"
                            f"{self.layout})"), name=f"tfds:{task.tfds}[{tfds_split}]")
        return read_split


@dataclasses.dataclass
class TextColumns(FolderFiles):
    """Columns of CSV / TSV / JSONL / TFRecord files (or of a TFDS dataset): a text, maybe a
    second one, a label and an id."""

    text_column: Optional[str] = setting(
        None, "Column (or JSON key) of the text (default: text; with --tfds_name, the "
        "dataset's own where it is known); a position (0, 1, ...) with --noheader.")
    text_b_column: Optional[str] = setting(None, "Column of the second text, for text pairs.")
    label_column: str = setting("label", "Column of the label.")
    id_column: Optional[str] = setting(None, "Column of an id to copy into the predictions.")
    delimiter: Optional[str] = setting(
        None, "Field delimiter (default: ',' for .csv, tab for .tsv; 'tab' or '\\t' for tab).",
        check=_one_character)
    header: bool = setting(True, "Delimited files start with a header line naming the columns; "
                           "with --noheader the column flags are positions (0 is the first "
                           "column).")
    quoting: str = setting(
        "auto", "Quotes in delimited files: csv (a field in \"...\", inner quotes doubled), none "
        "(quotes are text), auto (none for tab-separated, csv otherwise).", choices=QUOTINGS)
    label_map: str = setting("", "Names for raw labels, e.g. '-1:negative,0:neutral,1:positive'.")
    label_names_file: Optional[str] = setting(
        None, "A file whose line i names raw label i (e.g. GoEmotions' emotions.txt); instead "
        "of --label_map.", path=True)
    tfds_name: Optional[str] = setting(
        None, "Read a TensorFlow Datasets dataset instead of files, e.g. glue/mrpc (text "
        "columns of common GLUE configs are known).")
    tfds_data_dir: Optional[str] = setting(None, "TFDS data directory (default: TFDS's own).",
                                           path=True)
    tfds_train_split: str = setting("train", "TFDS split for training.")
    tfds_eval_split: str = setting("validation", "TFDS split for evaluation.")
    tfds_predict_split: str = setting("test", "TFDS split for prediction.")

    def check(self, settings):
        del settings
        if self.label_map and self.label_names_file:
            raise UsageError("pass `label_map` or `label_names_file`, not both")

    def settings(self):
        label_map = self.label_map
        if self.label_names_file:
            label_map = ",".join(f"{raw}:{name}" for raw, name in
                                 label_names_file(self.label_names_file).items())
        return dict(pair=self._pair(), label_map=label_map)

    def _pair(self):
        if self.text_b_column or not self.tfds_name:
            return bool(self.text_b_column)
        from zoo.data import tfds_source  # (TFDS)
        return tfds_source.TFDS_COLUMNS.get(self.tfds_name, (None, None))[1] is not None

    def columns(self):
        return Columns(self.text_column or "text", self.text_b_column, self.label_column, self.id_column,
                       self.delimiter, self.header, self.quoting)

    def reader(self, settings):
        del settings

        def read_split(split):
            labelled = split != "predict"
            if not self.tfds_name:
                return FileSource(self.path(split), self.columns(), require_label=labelled)
            from zoo.data import tfds_source  # (TFDS)
            tfds_split = getattr(self, f"tfds_{split}_split")
            return ListSource(tfds_source.read_tfds(
                self.tfds_name, tfds_split, self.text_column, self.text_b_column, self.label_column,
                self.id_column, self.tfds_data_dir, require_label=labelled),
                name=f"tfds:{self.tfds_name}[{tfds_split}]")
        return read_split

