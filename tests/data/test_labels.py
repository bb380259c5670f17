"""Label vocabularies: learned from data, renamed by a label map, saved with the model."""
import pytest

from zoo.data.labels import LabelVocab, parse_label_map
from zoo.data.text_files import DataError, Example


def _examples(*labels):
    return [Example(text_a="t", label=l, source=f"f.csv:{i + 2}") for i, l in enumerate(labels)]


def test_parse_label_map():
    assert parse_label_map("-1:negative, 0:neutral,1:positive") == {
        "-1": "negative", "0": "neutral", "1": "positive"}
    assert parse_label_map("") == {}
    with pytest.raises(ValueError, match="not RAW:NAME"):
        parse_label_map("-1:negative,0")
    with pytest.raises(ValueError, match="same name"):
        parse_label_map("0:x,1:x")


def test_numeric_labels_sort_numerically_and_take_mapped_names():
    vocab = LabelVocab.from_examples(_examples("1", "-1", "0", "10"))
    assert vocab.raw_labels == ["-1", "0", "1", "10"]
    mapped = LabelVocab.from_examples(_examples("1", "-1", "0"),
                                      parse_label_map("-1:negative,0:neutral,1:positive"))
    assert mapped.names == ["negative", "neutral", "positive"]
    assert mapped.id(Example("t", label="positive")) == mapped.id(Example("t", label="1")) == 2


def test_unknown_labels_name_their_row():
    vocab = LabelVocab.from_examples(_examples("a", "b"))
    with pytest.raises(DataError, match=r"f.csv:9: unknown label 'c'"):
        vocab.id(Example("t", label="c", source="f.csv:9"))
    with pytest.raises(DataError, match=r"f.csv:4: label '2' is not in the label map"):
        LabelVocab.from_examples(_examples("0", "1", "2"), {"0": "no", "1": "yes"})
    with pytest.raises(DataError, match="need at least 2"):
        LabelVocab.from_examples(_examples("a", "a"))


def test_save_and_load(tmp_path):
    vocab = LabelVocab.from_examples(_examples("0", "1"), {"0": "neg", "1": "pos"})
    vocab.save(str(tmp_path))
    loaded = LabelVocab.load(str(tmp_path))
    assert (loaded.raw_labels, loaded.names) == (["0", "1"], ["neg", "pos"])
    with pytest.raises(FileNotFoundError, match="train a model"):
        LabelVocab.load(str(tmp_path / "empty"))


def test_a_raw_label_always_means_its_raw_value():
    """Names that spell other raw labels: raw values win, names are read only where no raw
    label has that spelling."""
    shifted = LabelVocab.from_examples(_examples("1", "2"), parse_label_map("1:0,2:1"))
    assert shifted.raw_labels == ["1", "2"] and shifted.names == ["0", "1"]
    ids = {label: shifted.id(Example("t", label=label)) for label in ("0", "1", "2")}
    assert ids == {"0": 0, "1": 0, "2": 1}  # "1" is raw 1 (name "0"), not the name "1"
    swapped = LabelVocab.from_examples(_examples("0", "1"), parse_label_map("0:1,1:0"))
    assert swapped.names == ["1", "0"]
    assert [swapped.id(Example("t", label=label)) for label in ("0", "1")] == [0, 1]
