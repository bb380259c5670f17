"""The data check: one streaming pass over a split before training (or as `--mode=check_data`).

It counts rows, labels (overall and per shard; a shard holding a single label is flagged: the
data was probably split before it was shuffled), bad rows by reason, duplicate texts and token
lengths against `max_seq_length` (how many rows get truncated). With `bad_rows="skip"` every
rejected row is written, with its reason, to a JSON-lines file; with `"error"` the first bad row
stops the run with a `DataError` naming its file and line. With `dedupe`, every repeat of a text
already seen (in shard order) is marked to be dropped from training.

Memory: 8 bytes per row for the duplicate check, and nothing else that grows with the data.
"""
import array
import collections
import dataclasses
import hashlib
from typing import Dict, Set

import numpy as np
import tensorflow as tf

from zoo.base import fs
from zoo.base import progress as progress_bar
from zoo.base.errors import UsageError
from zoo.base.files import save_json
from zoo.data.sources import MissingSplit, RejectedRows, with_valid_labels
from zoo.data.text_files import BadRow, DataError

BAD_ROW_POLICIES = ("error", "skip")
PERCENTILES = (50, 90, 95, 99)
_MAX_COUNTED_LENGTH = 8192  # longer texts are counted as this long in the histogram


@dataclasses.dataclass
class SplitCheck:
    """What a check of one split found, and what training needs from it."""

    report: dict  # JSON-ready; see `check_split`
    kept: int  # rows a training epoch reads (good rows, less dropped duplicates)
    label_counts: collections.Counter
    drop: Dict[int, Set[int]]  # shard index -> ordinals (among its good rows) to drop


def _text_key(example):
    text = example.text_a if example.text_b is None else example.text_a + "\x1f" + example.text_b
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little",
                          signed=True)


def _percentiles(histogram):
    total = int(histogram.sum())
    if not total:
        return {f"p{p}": 0 for p in PERCENTILES}
    cumulative = np.cumsum(histogram)
    return {f"p{p}": int(np.searchsorted(cumulative, total * p / 100.0)) for p in PERCENTILES}


class _Lengths:
    """Token counts of good rows, batched through the preprocessor, kept as a histogram."""

    def __init__(self, packer, pair, batch_size):
        self.histogram = np.zeros(_MAX_COUNTED_LENGTH + 1, np.int64)
        self.batch_size = batch_size
        self.pending = []
        self.count = packer.compiled(2 if pair else 1, counts=True) if packer else None

    def add(self, example):
        if self.count is None:
            return
        self.pending.append(example)
        if len(self.pending) >= self.batch_size:
            self.flush()

    def flush(self):
        if not self.pending or self.count is None:
            return
        texts = [tf.constant([e.text_a for e in self.pending])]
        if self.pending[0].text_b is not None:
            texts.append(tf.constant([e.text_b for e in self.pending]))
        counts = np.minimum(self.count(*texts).numpy(), _MAX_COUNTED_LENGTH)
        self.histogram += np.bincount(counts, minlength=self.histogram.size)
        self.pending = []


class _Tally:
    """What one pass over a split counts: rows, bad rows by reason, labels (per shard too), a
    hash of each good row's text (for duplicates) and token lengths."""

    def __init__(self, packer, pair, batch_size):
        self.rows = 0
        self.reasons = collections.Counter()
        self.label_counts = collections.Counter()
        self.shards, self.shard_starts = [], []
        self.hashes = array.array("q")
        self.lengths = _Lengths(packer, pair, batch_size)

    def read_shard(self, source, index, labels, bad_rows, rejected):
        """Counts the rows of shard `index`; returns how many it has."""
        self.shard_starts.append(len(self.hashes))
        shard_labels = collections.Counter()
        shard_rows = shard_bad = 0
        items = source.read(index)
        if labels is not None:
            items = with_valid_labels(items, labels)
        for item in items:
            shard_rows += 1
            if isinstance(item, BadRow):
                if bad_rows == "error":
                    raise item.error()
                shard_bad += 1
                self.reasons[item.reason] += 1
                if rejected:
                    rejected.add(item)
                continue
            if item.label is not None:
                shard_labels.update(labels.keys(item.label) if labels is not None
                                    else [item.label])
            self.hashes.append(_text_key(item))
            self.lengths.add(item)
        self.rows += shard_rows
        self.label_counts.update(shard_labels)
        self.shards.append(dict(file=source.shards[index], rows=shard_rows, bad_rows=shard_bad,
                                labels=dict(sorted(shard_labels.items()))))
        return shard_rows

    def duplicates(self, dedupe):
        """(repeated texts, {shard: ordinals to drop} with `dedupe`)."""
        keys = np.frombuffer(self.hashes, dtype=np.int64) if self.hashes else np.zeros(0, np.int64)
        _, first = np.unique(keys, return_index=True)
        repeat = np.ones(len(keys), bool)
        repeat[first] = False
        drop = collections.defaultdict(set)
        if dedupe:
            starts = np.asarray(self.shard_starts + [len(keys)])
            for ordinal in np.flatnonzero(repeat):
                shard = int(np.searchsorted(starts, ordinal, side="right") - 1)
                drop[shard].add(int(ordinal - starts[shard]))
        return int(repeat.sum()), dict(drop)

    def report(self, split, duplicates, dedupe, rejected_path, max_seq_length):
        """The JSON-ready report (see `check_split`), with its warnings."""
        good, reasons = len(self.hashes), self.reasons
        for shard in self.shards:
            shard["single_label"] = len(self.label_counts) > 1 and len(shard["labels"]) == 1
        skipped = sum(reasons.values())
        report = dict(split=split, files=len(self.shards), rows=self.rows, good_rows=good,
                      bad_rows=skipped, bad_row_reasons=dict(reasons.most_common(20)),
                      rejected_rows_file=rejected_path,
                      empty_texts=sum(n for r, n in reasons.items()
                                      if r.startswith("empty text")),
                      unknown_labels=sum(n for r, n in reasons.items()
                                         if r.startswith("unknown label")),
                      duplicate_texts=duplicates, duplicates_dropped=duplicates if dedupe else 0,
                      rows_used=good - (duplicates if dedupe else 0),
                      labels=dict(sorted(self.label_counts.items())), shards=self.shards,
                      single_label_shards=[s["file"] for s in self.shards if s["single_label"]])
        if self.lengths.count is not None:
            histogram = self.lengths.histogram
            truncated = int(histogram[max_seq_length + 1:].sum())
            report["token_lengths"] = dict(
                max_seq_length=max_seq_length, **_percentiles(histogram),
                max=int(np.flatnonzero(histogram).max()) if histogram.any() else 0,
                truncated_rows=truncated, truncated_fraction=truncated / good if good else 0.0)
        report["warnings"] = _warnings(report, dedupe)
        return report


def _warnings(report, dedupe):
    """What a user should look at in a split's report."""
    warnings = [f"{shard['file']}: every row has label {next(iter(shard['labels']))!r} (was the "
                "data shuffled before it was split into shards?)"
                for shard in report["shards"] if shard["single_label"]]
    duplicates = report["duplicate_texts"]
    if duplicates:
        warnings.append(f"{duplicates} row(s) repeat an earlier text"
                        + (" (dropped: --dedupe)" if dedupe else " (--dedupe drops them)"))
    if report["bad_rows"]:
        warnings.append(f"{report['bad_rows']} bad row(s) skipped" +
                        (f", written to {report['rejected_rows_file']}"
                         if report["rejected_rows_file"] else ""))
    lengths = report.get("token_lengths")
    if lengths and lengths["truncated_rows"]:
        warnings.append(f"{lengths['truncated_rows']} row(s) "
                        f"({100.0 * lengths['truncated_fraction']:.1f}%) are longer than "
                        f"--max_seq_length={lengths['max_seq_length']} tokens and get truncated")
    return warnings


def check_split(split, source, packer=None, max_seq_length=128, labels=None,
                bad_rows="error", dedupe=False, rejected_path=None, batch_size=1024,
                progress=True):
    """Checks every row of `source`; returns a `SplitCheck`.

    Args:
        split: "train", "eval" or "predict" (named in the report).
        source: a `FileSource` or `ListSource`.
        packer: a `TextPacker`, for token lengths (None: no length statistics).
        labels: what a row's label may be (`zoo.data.labels`: `problem`, `keys`); rows it
            finds a problem with are bad rows. None: any label, counted as it is.
        bad_rows: "error" (the first bad row raises `DataError`) or "skip".
        dedupe: mark repeats of an earlier text to be dropped.
        rejected_path: where rejected rows go (JSON lines) when skipping.
    """
    if bad_rows not in BAD_ROW_POLICIES:
        raise UsageError(f"bad_rows must be one of {BAD_ROW_POLICIES}, not {bad_rows!r}")
    rejected = RejectedRows(rejected_path) if bad_rows == "skip" and rejected_path else None
    tally = _Tally(packer, source.pair, batch_size)
    bar = progress_bar.bar(f"check {split}", "row", enabled=progress)
    try:
        for index in range(len(source.shards)):
            bar.update(tally.read_shard(source, index, labels, bad_rows, rejected))
        tally.lengths.flush()
    finally:
        bar.close()
        if rejected:
            rejected.close()
    duplicates, drop = tally.duplicates(dedupe)
    report = tally.report(split, duplicates, dedupe, rejected_path if rejected else None,
                          max_seq_length)
    if not report["good_rows"]:
        raise DataError(f"{source!r}: no usable rows in the {split} data")
    return SplitCheck(report=report, kept=report["rows_used"], label_counts=tally.label_counts,
                      drop=drop)


def summary_lines(report):
    """A short human-readable account of one split's report."""
    lines = [f"data check, {report['split']}: {report['rows']} rows in {report['files']} file(s), "
             f"{report['rows_used']} used, {report['bad_rows']} bad, "
             f"{report['duplicate_texts']} duplicate texts"]
    if report["labels"]:
        total = sum(report["labels"].values())
        lines.append("  labels: " + ", ".join(f"{k} {v} ({100.0 * v / total:.1f}%)"
                                              for k, v in report["labels"].items()))
    lengths = report.get("token_lengths")
    if lengths:
        lines.append("  tokens: " + ", ".join(f"{p} {lengths[f'p{p}']}" for p in PERCENTILES)
                     + f", max {lengths['max']}; {lengths['truncated_rows']} row(s) over "
                     f"{lengths['max_seq_length']}")
    lines += [f"  warning: {w}" for w in report["warnings"]]
    return lines


def check_splits(sources, packer, model_dir, max_seq_length, open_labels, vocabulary,
                 labels=None, bad_rows="error", dedupe=False, chief=True):
    """Data checks of {split: source} (train first): reports printed and saved in the model
    dir as data_check_<split>.json, rejected rows in rejected_rows_<split>.jsonl.

    A split is checked against `labels` if given; the train split, when there are no labels
    yet, against `open_labels` (what a label may be before the vocabulary is known), and
    `vocabulary(label counts)` of it is what the later splits are checked against. Returns
    ({split: SplitCheck}, that vocabulary or `labels`).
    """
    results = {}
    for split, source in sources.items():
        rejected = fs.join(model_dir, f"rejected_rows_{split}.jsonl")
        result = check_split(split, source, packer, max_seq_length,
                             labels=labels if labels is not None else open_labels,
                             bad_rows=bad_rows, dedupe=dedupe and split == "train",
                             rejected_path=rejected if chief else None, progress=chief)
        results[split] = result
        if split == "train" and labels is None:
            labels = vocabulary(result.label_counts)
        if chief:
            save_json(fs.join(model_dir, f"data_check_{split}.json"), result.report)
            print("\n".join(summary_lines(result.report)))
    return results, labels


def given_splits(read_split):
    """{split: source} of the splits that were given (`--mode=check_data`)."""
    sources = {}
    for split in ("train", "eval", "predict"):
        try:
            sources[split] = read_split(split)
        except MissingSplit:
            continue
    if not sources:
        raise UsageError("`mode`=check_data needs data: `train_file`, `eval_file`, "
                         "`predict_file` or `data_dir`")
    return sources
