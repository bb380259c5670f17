"""CSV / TSV / JSONL and GLUE readers: columns, BOMs, and errors that name file and line."""
import json

import pytest

from zoo.data.text_files import BadRow, Columns, DataError, iter_file, read_examples, read_glue


def _write(path, text, mode="w"):
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def test_csv_with_quotes_ids_and_pairs(tmp_path):
    path = _write(tmp_path / "d.csv", 'id,q,a,y\n1,"Hi, there","yes ""really""",1\n2,b,c,0\n')
    examples = read_examples(path, "q", "a", "y", "id")
    assert [(e.id, e.text_a, e.text_b, e.label) for e in examples] == [
        ("1", "Hi, there", 'yes "really"', "1"), ("2", "b", "c", "0")]
    assert examples[1].source == f"{path}:3"


def test_tsv_keeps_quotes_literally_and_strips_a_bom(tmp_path):
    path = _write(tmp_path / "d.tsv", '\ufefftext\tlabel\nhe said "hi\t1\n')
    (example,) = read_examples(path, "text", label_column="label")
    assert example.text_a == 'he said "hi' and example.label == "1"


def test_jsonl(tmp_path):
    path = _write(tmp_path / "d.jsonl", json.dumps({"text": "ok", "label": -1}) + "\n\n")
    (example,) = read_examples(path, "text", label_column="label")
    assert example.label == "-1"


def test_glue_layouts(tmp_path):
    mrpc = _write(tmp_path / "mrpc.tsv", "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                  '1\t1\t2\tHe said "x".\tHe said x.\n')
    (pair,) = read_glue("mrpc", mrpc)
    assert (pair.text_a, pair.text_b, pair.label) == ('He said "x".', "He said x.", "1")
    sst2 = _write(tmp_path / "sst2.tsv", "sentence\tlabel\nit 's fine . \t1\n")
    assert read_glue("sst2", sst2)[0].text_a == "it 's fine . "
    mnli = _write(tmp_path / "mnli.tsv", "pairID\tsentence1\tsentence2\tgold_label\n"
                  "7\tA man.\tA person.\tentailment\n")
    (example,) = read_glue("mnli", mnli)
    assert (example.id, example.label) == ("7", "entailment")


def test_unlabelled_rows_for_prediction(tmp_path):
    path = _write(tmp_path / "t.tsv", "index\tsentence\n0\tgood\n1\tbad\n")
    examples = read_examples(path, "sentence", label_column="label", id_column="index",
                             require_label=False)
    assert [(e.id, e.label) for e in examples] == [("0", None), ("1", None)]


@pytest.mark.parametrize("name,content,message", [
    ("d.csv", "text,label\na,1\nb,1,extra\n", r"d.csv:3: 3 columns, the header has 2"),
    ("d.csv", "words,label\na,1\n", r"d.csv:2: no text column 'text'"),
    ("d.csv", "text,label\na,1\n  ,0\n", r"d.csv:3: empty text in column 'text'"),
    ("d.csv", "text,label\na,\n", r"d.csv:2: empty label"),
    ("d.csv", 'text,label\n"unclosed,1\n', r"d.csv:\d+: .*unbalanced quotes"),
    ("d.jsonl", '{"text": "a", "label": 1}\n{"text": \n', r"d.jsonl:2: not valid JSON"),
    ("d.jsonl", '["a", 1]\n', r"d.jsonl:1: expected a JSON object"),
    ("d.csv", "", r"d.csv: empty file"),
    ("d.xlsx", "text,label\n", r"d.xlsx: unknown file type"),
])
def test_bad_input_names_file_and_line(tmp_path, name, content, message):
    path = _write(tmp_path / name, content)
    with pytest.raises(DataError, match=message):
        read_examples(path, "text", label_column="label")


def test_invalid_utf8_names_the_line(tmp_path):
    path = _write(tmp_path / "d.csv", b"text,label\nok,1\nbad \xff byte,0\n", mode="wb")
    with pytest.raises(DataError, match=r"d.csv:3: invalid UTF-8"):
        read_examples(path, "text", label_column="label")


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_examples(str(tmp_path / "none.csv"), "text")


def test_a_headerless_tsv_with_csv_quoting_takes_column_positions(tmp_path):
    """GoEmotions' layout: no header; text, comma-separated label ids, id; a text with quotes
    is written CSV-style inside the TSV."""
    from zoo.data.text_files import Columns, iter_file
    path = tmp_path / "train.tsv"
    path.write_text('My favourite food.\t27\teebbqej\n'
                    '"Three words. ""Dude. Stop."" "\t2,3\teczjljm\n'
                    'Only two\tcolumns\n')
    items = list(iter_file(str(path), Columns(text="0", label="1", id="2", header=False,
                                              quoting="csv")))
    assert [(e.text_a, e.label, e.id) for e in items[:2]] == [
        ("My favourite food.", "27", "eebbqej"), ('Three words. "Dude. Stop." ', "2,3", "eczjljm")]
    assert items[0].source.endswith("train.tsv:1")  # no header: data starts on line 1
    assert (items[2].source.endswith("train.tsv:3")
            and items[2].reason == "2 columns, the first row has 3")
    literal = list(iter_file(str(path), Columns(text="0", label="1", id="2", header=False)))
    assert literal[1].text_a.startswith('"Three words. ""Dude.')  # TSV default: quotes are text


@pytest.mark.parametrize("broken", ['"row 4 never closed,0', '"row 4,0'])
def test_an_unbalanced_quote_swallows_no_valid_row(tmp_path, broken):
    lines = ["text,label"] + [f"row {i},{i % 2}" for i in range(20)]
    lines[5] = broken  # line 6 of the file: its quote runs on to the end, or to line 10's
    if broken == '"row 4,0':
        lines[10] = 'row 9 "quoted",1'
    path = _write(tmp_path / "d.csv", "\n".join(lines) + "\n")
    items = list(iter_file(path, Columns("text", None, "label")))
    assert len(items) == 20  # an item per data line: the bad one and 19 rows
    bad = [i for i in items if isinstance(i, BadRow)]
    assert [b.source for b in bad] == [f"{path}:6"] and "unbalanced quote" in bad[0].reason
    assert [i.text_a for i in items if not isinstance(i, BadRow)] == [
        lines[i + 1].rsplit(",", 1)[0] for i in range(20) if i != 4]


def test_a_quoted_field_over_128_kib_and_the_text_nan_are_read(tmp_path):
    long_text = "word " * 40_000  # 200 KB, past the csv module's default field limit
    path = _write(tmp_path / "d.csv", f'text,label\n"{long_text}",1\nnan,0\n'
                  '"two\nlines",1\n')
    examples = read_examples(path, "text", label_column="label")
    assert [e.text_a for e in examples] == [long_text, "nan", "two\nlines"]
