"""--mode=explain's files (zoo.evaluation.explain_files): one JSON line per input row in order, a
bad row as its error, the HTML page beside them, nothing left behind on a stop."""
import json
import os

import pytest

from zoo.data.sources import FileSource
from zoo.data.text_files import Columns, DataError
from zoo.evaluation import explain_files


def _explain(texts):
    """A stand-in for the model: each word's attribution is its length."""
    rows = []
    for text in texts[0]:
        words, at = [], 0
        for word in text.split(" "):
            start = text.index(word, at)
            at = start + len(word)
            words.append(dict(text=word, start=start, end=at, attribution=float(len(word)),
                              truncated=False))
        rows.append(dict(target="pos", probability=0.9, objective="log_probability",
                         score=-0.1, baseline_score=-2.0, completeness_gap=0.0,
                         method="integrated_gradients", words=words))
    return rows


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text('id,text\na,good <b>film</b>\nb,\nc,"fine, really"\nd,x\ne,last one\n')
    return FileSource(str(path), Columns(text="text", id="id"), require_label=False)


def test_every_row_is_a_line_in_order_and_a_block_of_the_page(source, tmp_path, capsys):
    path = str(tmp_path / "out" / "explained.jsonl")
    assert explain_files.explain_to_file(_explain, source, path, bad_rows="skip",
                                         batch_size=2) == 5
    lines = [json.loads(line) for line in open(path, encoding="utf-8")]
    assert [line["id"] for line in lines] == ["a", "b", "c", "d", "e"]
    assert "empty" in lines[1]["error"] and "rows.csv:3" in lines[1]["error"]
    assert [w["text"] for w in lines[2]["words"]] == ["fine,", "really"]
    page = open(str(tmp_path / "out" / "explained.html"), encoding="utf-8").read()
    assert page.count('class="text"') == 5 and page.rstrip().endswith("</html>")
    assert "&lt;b&gt;film&lt;/b&gt;" in page and "<b>film</b>" not in page  # escaped
    assert "explain: 5 input rows = 4 explained + 1 rejected" in capsys.readouterr().out


def test_a_bad_row_stops_the_run_and_leaves_no_file(source, tmp_path):
    path = str(tmp_path / "explained.jsonl")
    with pytest.raises(DataError, match="rows.csv:3"):
        explain_files.explain_to_file(_explain, source, path)
    assert os.listdir(tmp_path) == ["rows.csv"]


def test_the_output_must_be_json_lines(source, tmp_path):
    with pytest.raises(Exception, match="ending in .jsonl"):
        explain_files.explain_to_file(_explain, source, str(tmp_path / "x.csv"))
