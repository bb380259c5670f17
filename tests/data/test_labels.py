"""Label vocabularies: learned from data, renamed by a label map, saved with the model."""
import pytest

from zoo.data.labels import LabelVocab, parse_label_map
from zoo.data.text_files import DataError, Example


def _examples(*labels):
    return [Example(text_a="t", label=label, source=f"f.csv:{i + 2}")
            for i, label in enumerate(labels)]


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


def test_multi_label_lists_keys_problems_and_multi_hot_targets(tmp_path):
    from zoo.data.labels import MultiLabelVocab, OpenLabels
    opened = OpenLabels(separator=",")
    assert opened.keys("0,15") == ["0", "15"] and opened.problem("0,15") is None
    assert "empty label" in opened.problem("0,,2")
    vocab = MultiLabelVocab.from_labels({"0", "15", "2"}, {"0": "joy", "2": "anger", "15": "fear"})
    assert vocab.raw_labels == ["0", "2", "15"] and vocab.names == ["joy", "anger", "fear"]
    assert vocab.encode("15,0").tolist() == [1.0, 0.0, 1.0]
    assert vocab.encode("anger").tolist() == [0.0, 1.0, 0.0]  # a name works where unambiguous
    assert vocab.problem("0,7") == ("unknown label '7' (known: ['0', '2', '15', 'anger', "
                                    "'fear', 'joy'])")
    vocab.save(str(tmp_path))
    again = LabelVocab.load(str(tmp_path))
    assert isinstance(again, MultiLabelVocab) and again.separator == ","
    assert again.outputs() == vocab.outputs() and again.names == vocab.names


def test_scores_in_a_range(tmp_path):
    from zoo.data.labels import ScoreLabels
    scores = ScoreLabels.from_range("0,5")
    assert scores.problem("3.8") is None and scores.encode("1.53333") == pytest.approx(1.53333)
    assert scores.problem("5.5") == "score 5.5 is outside the range [0, 5]"
    assert scores.problem("high") == "score 'high' is not a number"
    assert scores.problem("nan") == "score 'nan' is not a finite number"
    assert ScoreLabels.from_range("").problem("-40") is None and scores.keys("2") == []
    with pytest.raises(ValueError, match="LOW must be below HIGH"):
        ScoreLabels.from_range("5,0")
    scores.save(str(tmp_path))
    again = LabelVocab.load(str(tmp_path))
    assert (again.low, again.high) == (0.0, 5.0) and again.outputs() == scores.outputs()


def test_labels_json_without_a_kind_is_a_single_label_vocabulary(tmp_path):
    (tmp_path / "labels.json").write_text('{"raw_labels": ["0", "1"], "label_map": {}, '
                                          '"names": ["0", "1"]}')
    vocab = LabelVocab.load(str(tmp_path))
    assert type(vocab) is LabelVocab and vocab.raw_labels == ["0", "1"]


def test_label_names_file(tmp_path):
    from zoo.data.labels import label_names_file
    (tmp_path / "emotions.txt").write_text("admiration\namusement\nanger")  # no final newline
    assert label_names_file(str(tmp_path / "emotions.txt")) == {
        "0": "admiration", "1": "amusement", "2": "anger"}
    with pytest.raises(ValueError, match="cannot read the label names"):
        label_names_file(str(tmp_path / "missing.txt"))


def test_scores_given_as_class_labels_point_to_regression():
    with pytest.raises(DataError, match=r"look like scores \(4 distinct numbers, such as 0\.25, "
                                        r"3\.9\).*--task_type=regression.*--label_map"):
        LabelVocab.from_labels({"0", "0.25", "3.9", "5"})
    assert LabelVocab.from_labels({"-1", "0", "1.0"}).raw_labels == ["-1", "0", "1.0"]
    assert LabelVocab.from_labels({"0.5", "1.5"}, {"0.5": "low", "1.5": "high"}).names == \
        ["low", "high"]
