"""CoNLL files: sentences, -DOCSTART-, IOB1 read as IOB2, bad sentences named by file and line."""
import pytest

from zoo.data.conll import ConllSource, Sentence, iter_conll, to_iob2
from zoo.data.text_files import BadRow, DataError


def _file(tmp_path, text, name="train.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


def test_sentences_and_docstart_lines(tmp_path):
    path = _file(tmp_path, "-DOCSTART- -X- O O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
                           "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n\n")
    sentences = list(iter_conll(path))
    assert [s.tokens for s in sentences] == [["EU", "rejects"], ["Peter", "Blackburn"]]
    assert [s.tags for s in sentences] == [["B-ORG", "O"], ["B-PER", "I-PER"]]
    assert sentences[1].source == f"{path}:6" and sentences[0].text_a == "EU rejects"
    assert sentences[0].label == ("B-ORG", "O")


def test_iob1_is_read_as_iob2_the_conll_scorers_way():
    assert to_iob2(["I-ORG", "O", "I-MISC", "I-MISC", "B-MISC", "I-PER", "I-LOC"]) == [
        "B-ORG", "O", "B-MISC", "I-MISC", "B-MISC", "B-PER", "B-LOC"]
    assert to_iob2(["B-PER", "I-PER", "O"]) == ["B-PER", "I-PER", "O"]  # IOB2 stays


def test_wnut_style_tabs_and_files_without_tags_for_prediction(tmp_path):
    path = _file(tmp_path, "@paulwalk\tO\nLondon\tB-location\n\n")
    (sentence,) = iter_conll(path)
    assert sentence.tags == ["O", "B-location"]
    unlabelled = _file(tmp_path, "Hello\nworld\n\nBye\n", "test.txt")
    assert [s.tokens for s in ConllSource(unlabelled, require_tags=False).read(0)] == [
        ["Hello", "world"], ["Bye"]]


@pytest.mark.parametrize("text,line,reason", [
    ("EU B-ORG\nrejects\n\n", 2, "a token line needs a token and a tag, found 'rejects'"),
    ("EU B-ORG\nrejects E-ORG\n\n", 2, "tag 'E-ORG' is not O, B-TYPE or I-TYPE"),
    (b"EU B-ORG\nrej\xffects O\n\n", 2, "invalid UTF-8 at byte 3"),
])
def test_a_bad_sentence_names_its_file_and_line(tmp_path, text, line, reason):
    path = _file(tmp_path, text if isinstance(text, bytes) else text + "Fine O\n\n")
    items = list(iter_conll(path))
    assert isinstance(items[0], BadRow) and items[0].source == f"{path}:{line}"
    assert items[0].reason.startswith(reason)
    if not isinstance(text, bytes):
        assert isinstance(items[1], Sentence) and items[1].tokens == ["Fine"]


def test_missing_files(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        ConllSource(str(tmp_path / "nope.txt"))
