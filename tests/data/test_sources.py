"""Sources: shards by glob, TFRecord files, and bad rows reported in place instead of raised."""
import pytest
import tensorflow as tf

from zoo.data.sources import FileSource, ListSource, MissingSplit, expand_shards, iterate
from zoo.data.text_files import BadRow, Columns, DataError, Example, iter_file

COLUMNS = Columns(text="text", label="label")


def _write(path, content):
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def test_a_glob_gives_sorted_shards_and_rows_in_shard_order(tmp_path):
    for i in (2, 0, 1):
        _write(tmp_path / f"part-{i}.csv", f"text,label\nshard {i} row a,0\nshard {i} row b,1\n")
    source = FileSource(str(tmp_path / "part-*.csv"), COLUMNS)
    assert [s.rsplit("/", 1)[1] for s in source.shards] == ["part-0.csv", "part-1.csv",
                                                          "part-2.csv"]
    assert [e.text_a for e in iterate(source)] == [f"shard {i} row {r}" for i in range(3)
                                                   for r in "ab"]
    both = FileSource(f"{tmp_path}/part-2.csv, {tmp_path}/part-0.csv", COLUMNS)
    assert [s.rsplit("/", 1)[1] for s in both.shards] == ["part-2.csv", "part-0.csv"]


def test_no_matching_file_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="no file matches"):
        expand_shards(str(tmp_path / "none-*.csv"))
    with pytest.raises(DataError, match="no such file"):
        FileSource(str(tmp_path / "none.csv"), COLUMNS)
    assert issubclass(MissingSplit, ValueError)


def test_tfrecord_shards_of_tf_train_examples(tmp_path):
    path = str(tmp_path / "d.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for text, label in (("good film", b"1"), ("", b"0"), ("dull", b"0")):
            feature = {"text": tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[text.encode()])),
                       "label": tf.train.Feature(bytes_list=tf.train.BytesList(value=[label]))}
            writer.write(tf.train.Example(features=tf.train.Features(
                feature=feature)).SerializeToString())
    items = list(FileSource(path, COLUMNS).read(0))
    assert [(i.text_a, i.label) for i in items if isinstance(i, Example)] == [
        ("good film", "1"), ("dull", "0")]
    assert isinstance(items[1], BadRow) and items[1].source == f"{path}:record 2"
    assert "empty text" in items[1].reason


@pytest.mark.parametrize("name,content,where,reason", [
    ("d.csv", "text,label\na,1\nb,1,extra\nc,0\n", ":3", "3 columns, the header has 2"),
    ("d.csv", "text,label\na,1\n  ,0\nc,0\n", ":3", "empty text in column 'text'"),
    ("d.csv", "text,label\na,1\nb,\nc,0\n", ":3", "empty label"),
    ("d.csv", b"text,label\na,1\nbad \xff,0\nc,0\n", ":3", "invalid UTF-8"),
    ("d.jsonl", '{"text": "a", "label": 1}\n{"text": \n{"text": "c", "label": 0}\n', ":2",
     "not valid JSON"),
    ("d.jsonl", '{"text": "a", "label": 1}\n{"words": "b", "label": 1}\n'
     '{"text": "c", "label": 0}\n', ":2", "no text column 'text'"),
])
def test_a_bad_row_is_reported_in_place_and_reading_goes_on(tmp_path, name, content, where,
                                                            reason):
    path = _write(tmp_path / name, content)
    items = list(iter_file(path, COLUMNS))
    assert len(items) == 3
    assert isinstance(items[1], BadRow) and items[1].source == path + where
    assert reason in items[1].reason
    assert [i.text_a for i in (items[0], items[2])] == ["a", "c"]
    with pytest.raises(DataError, match=f"{name}{where}: .*{reason[:12]}"):
        raise items[1].error()  # what the default policy (--bad_rows=error) raises


def test_an_unbalanced_quote_is_its_line_alone(tmp_path):
    path = _write(tmp_path / "d.csv", 'text,label\na,1\n"never closed,0\nc,1\nd,0\n')
    items = list(iter_file(path, COLUMNS))
    assert [i.text_a if isinstance(i, Example) else "bad" for i in items] == ["a", "bad", "c", "d"]
    (bad,) = [i for i in items if isinstance(i, BadRow)]
    assert bad.source == f"{path}:3" and "unbalanced quotes" in bad.reason
    assert bad.raw == '"never closed,0'


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    path = _write(tmp_path / "d.csv", "\ufefftext,label\nfine,1\n".encode("utf-8"))
    (item,) = iter_file(path, COLUMNS)
    assert item.text_a == "fine"


def test_list_source_is_one_shard():
    source = ListSource([Example("a", id="1"), Example("b")], name="mem")
    assert source.shards == ["mem"] and source.has_id and not source.pair
    assert [e.text_a for e in iterate(source)] == ["a", "b"]
