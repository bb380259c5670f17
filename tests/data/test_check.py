"""The data check: counts, per-shard labels, duplicates, token lengths and both bad-row policies."""
import json

import pytest

from zoo.data.check import check_split, summary_lines
from zoo.data.labels import LabelVocab, OpenLabels
from zoo.data.pipeline import classification_dataset
from zoo.data.sources import FileSource
from zoo.data.text_files import Columns, DataError
from zoo.model import cores

COLUMNS = Columns(text="text", label="label")


@pytest.fixture(scope="module")
def packer(tiny_hub):
    return cores.TextPacker(tiny_hub + "/preprocessor", seq_length=8)


def _shards(tmp_path, *shards):
    for i, rows in enumerate(shards):
        with open(tmp_path / f"part-{i}.csv", "w", encoding="utf-8") as f:
            f.write("text,label\n" + "".join(f"{t},{y}\n" for t, y in rows))
    return FileSource(str(tmp_path / "part-*.csv"), COLUMNS)


def test_counts_labels_per_shard_and_flags_a_single_label_shard(tmp_path, packer):
    source = _shards(tmp_path, [("good", "1"), ("bad", "0")], [("fine", "1"), ("great", "1")])
    result = check_split("train", source, packer, max_seq_length=8)
    report = result.report
    assert (report["rows"], report["good_rows"], report["bad_rows"]) == (4, 4, 0)
    assert report["labels"] == {"0": 1, "1": 3}
    assert [s["labels"] for s in report["shards"]] == [{"0": 1, "1": 1}, {"1": 2}]
    assert [s["single_label"] for s in report["shards"]] == [False, True]
    assert report["single_label_shards"] == [source.shards[1]]
    assert any("every row has label '1'" in w for w in report["warnings"])
    json.dumps(report)  # it is saved as JSON


def test_token_lengths_against_max_seq_length(tmp_path, packer):
    # [CLS] + words + [SEP]: 3, 4, 6 and 12 tokens (tiny's vocab has these words whole).
    source = _shards(tmp_path, [("good", "1"), ("good film", "0"), ("a good film yes", "1"),
                                ("the film is good and the film is long yes", "0")])
    lengths = check_split("train", source, packer, max_seq_length=8).report["token_lengths"]
    assert (lengths["p50"], lengths["max"]) == (4, 12)
    assert (lengths["truncated_rows"], lengths["truncated_fraction"]) == (1, 0.25)
    assert any("over 8" in line for line in summary_lines(
        check_split("train", source, packer, max_seq_length=8).report))


def test_duplicates_are_counted_and_dedupe_drops_all_but_the_first(tmp_path, packer):
    source = _shards(tmp_path, [("same", "1"), ("other", "0"), ("same", "1")],
                     [("same", "0"), ("new", "1")])
    counted = check_split("train", source, packer)
    assert counted.report["duplicate_texts"] == 2 and counted.kept == 5 and not counted.drop
    deduped = check_split("train", source, packer, dedupe=True)
    assert deduped.kept == 3 and deduped.drop == {0: {2}, 1: {0}}
    labels = LabelVocab(["0", "1"])
    rows = [b[1].numpy().tolist() for b in classification_dataset(
        source, packer, 10, labels, drop=deduped.drop)]
    assert rows == [[1, 0, 1]]  # "same", "other", "new"


BAD = [("fine", "1"), ("", "0"), ("ok", ""), ("nice", "maybe"), ("good", "0")]


def test_error_policy_stops_at_the_first_bad_row_with_file_and_line(tmp_path, packer):
    source = _shards(tmp_path, BAD)
    with pytest.raises(DataError, match=r"part-0.csv:3: empty text in column 'text'"):
        check_split("train", source, packer)


def test_skip_policy_writes_every_rejected_row_with_its_reason(tmp_path, packer):
    source = _shards(tmp_path, BAD)
    rejected = tmp_path / "rejected.jsonl"
    result = check_split("train", source, packer, labels=OpenLabels({"0", "1"}), bad_rows="skip",
                         rejected_path=str(rejected))
    report = result.report
    assert (report["rows"], report["bad_rows"], result.kept) == (5, 3, 2)
    assert (report["empty_texts"], report["unknown_labels"]) == (1, 1)
    lines = [json.loads(line) for line in rejected.read_text().splitlines()]
    assert [(r["source"].rsplit("/", 1)[1], r["reason"][:13]) for r in lines] == [
        ("part-0.csv:3", "empty text in"), ("part-0.csv:4", "empty label i"),
        ("part-0.csv:5", "unknown label")]
    assert any("3 bad row(s) skipped" in w for w in report["warnings"])
    labels = LabelVocab(["0", "1"])
    batches = list(classification_dataset(source, packer, 10, labels))
    assert batches[0][1].numpy().tolist() == [1, 0]  # only the good rows reach training


def test_unknown_label_is_an_error_by_default(tmp_path, packer):
    source = _shards(tmp_path, [("fine", "1"), ("nice", "maybe")])
    with pytest.raises(DataError, match=r"part-0.csv:3: unknown label 'maybe'"):
        check_split("eval", source, packer, labels=OpenLabels({"0", "1"}))
