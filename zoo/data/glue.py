"""GLUE tasks as folders (`train.tsv`, `dev.tsv`, `test.tsv`): which columns, labels and test ids
each has, read through `zoo.data.specs.GlueFolder` by the mrpc, sst2 and stsb kinds.
"""
import dataclasses
from typing import Optional

from zoo.base import fs
from zoo.data.text_files import Columns

FILES = dict(train="train.tsv", eval="dev.tsv", predict="test.tsv")


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """A GLUE folder's layout: its columns, the id column of its test file, the names of its
    raw labels, and its name in TensorFlow Datasets."""

    text: str
    text_b: Optional[str]
    label: str
    test_id: Optional[str]
    label_map: str = ""
    tfds: Optional[str] = None  # the TensorFlow Datasets name, where it is there

    @property
    def pair(self):
        return self.text_b is not None

    def columns(self, split):
        """The `Columns` of a split's file (the test file has ids and no labels)."""
        return Columns(self.text, self.text_b, self.label,
                       self.test_id if split == "predict" else None, "\t")


TASKS = {
    "mrpc": GlueTask("#1 String", "#2 String", "Quality", None, "0:not_paraphrase,1:paraphrase",
                     "glue/mrpc"),
    "sst2": GlueTask("sentence", None, "label", "index", "0:negative,1:positive", "glue/sst2"),
    "stsb": GlueTask("sentence1", "sentence2", "score", "index"),
}


def split_file(data_dir, split):
    """The file of a split in a GLUE folder."""
    return fs.join(data_dir, FILES[split])
