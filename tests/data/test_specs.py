"""zoo.data.specs: each kind's data keys, read the same way from flags and from tasks.json."""
import dataclasses

import pytest

from zoo.base.errors import UsageError
from zoo.base.fields import flag_fields
from zoo.data import specs
from zoo.data.sources import FileSource, MissingSplit, iterate
from zoo.data.squad import WithUnanswerable


@dataclasses.dataclass
class _Settings:
    version_2_with_negative: bool = False
    seed: int = 0


def _glue_folder(tmp_path):
    (tmp_path / "train.tsv").write_text("sentence\tlabel\ngood film\t1\nbad plot\t0\n")
    (tmp_path / "test.tsv").write_text("index\tsentence\n0\tfine\n")
    return str(tmp_path)


def test_a_glue_folder_reads_its_layout_and_names_its_labels(tmp_path):
    spec = specs.GlueFolder(data_dir=_glue_folder(tmp_path), layout="sst2")
    read_split = spec.reader(_Settings())
    train = read_split("train")
    assert isinstance(train, FileSource)
    assert [(e.text_a, e.label) for e in iterate(train)] == [("good film", "1"), ("bad plot", "0")]
    assert [e.id for e in iterate(read_split("predict"))] == ["0"]
    assert spec.settings() == dict(pair=False, label_map="0:negative,1:positive")


def test_a_missing_split_names_the_keys_that_would_give_it(tmp_path):
    read_split = specs.GlueFolder(train_file=str(tmp_path / "t.tsv"), layout="stsb").reader(None)
    with pytest.raises(MissingSplit, match=r"^no eval data: pass eval_file or data_dir$") as e:
        read_split("eval")  # STS-B is not in TFDS: no fallback
    assert e.value.split == "eval" and e.value.keys == ("eval_file", "data_dir")
    with pytest.raises(MissingSplit, match=r"^no predict data: pass predict_file$"):
        specs.ConllFiles().reader(None)("predict")


def test_text_columns_take_label_names_from_a_file_or_a_map_not_both(tmp_path):
    names = tmp_path / "names.txt"
    names.write_text("sad\nhappy\n")
    spec = specs.TextColumns(train_file="x.csv", label_names_file=str(names), text_b_column="b")
    assert spec.settings() == dict(pair=True, label_map="0:sad,1:happy")
    with pytest.raises(UsageError, match="label_map or label_names_file, not both"):
        specs.TextColumns(label_map="0:a", label_names_file=str(names)).check(_Settings())
    assert spec.columns().text == "text"  # the default column, unless one is named


def test_squad_copies_unanswerable_questions_only_for_squad_2():
    spec = specs.SquadFiles(train_file="t.json", unanswerable_fraction=0.5)
    with pytest.raises(UsageError, match="unanswerable_fraction needs version_2_with_negative"):
        spec.check(_Settings())
    spec.check(_Settings(version_2_with_negative=True))


def test_squad_training_data_with_unanswerable_copies(tmp_path):
    path = tmp_path / "train.json"
    path.write_text('{"version": "1.1", "data": [{"title": "t", "paragraphs": ['
                    '{"context": "Paris is in France.", "qas": [{"id": "q", "question": "Where?",'
                    ' "answers": [{"text": "France", "answer_start": 12}]}]}]}]}')
    spec = specs.SquadFiles(train_file=str(path), unanswerable_fraction=0.5)
    source = spec.reader(_Settings(version_2_with_negative=True))("train")
    assert isinstance(source, WithUnanswerable)


def test_every_data_key_is_declared_once_with_its_help():
    for spec in (specs.GlueFolder, specs.TextColumns, specs.SquadFiles, specs.ConllFiles):
        for field in flag_fields(spec):
            assert field.metadata["help"], (spec.__name__, field.name)
    assert "layout" not in {f.name for f in flag_fields(specs.GlueFolder)}  # set by the kind
