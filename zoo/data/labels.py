"""What a row's label column means: one class, several classes, or a score.

Raw labels are the strings found in the label column (`-1`, `card_arrival`, `0,15`, `3.8`, ...).
Every kind of label answers the same questions, so the data check, the tf.data pipeline and the
model dir treat them alike:
- `problem(raw)`: why a row's label is unusable (None if it is fine): the row becomes a bad row;
- `keys(raw)`: what the data check counts (the class, each class of a list, nothing for scores);
- `encode(raw)`: the training target (`spec` says its dtype and shape).

`LabelVocab` (one class per row) and `MultiLabelVocab` (a `separator`-separated list of classes
per row) are learned from the training data and renamed by a label map
(`-1:negative,0:neutral,1:positive`); `ScoreLabels` is a number per row, within an optional
range. Before the vocabulary is known, `OpenLabels` checks the training rows. The kind of label
and its vocabulary are saved as `labels.json` in the model dir, so evaluation, prediction and
export use the same ids and names.
"""
import json
import math

import numpy as np
import tensorflow as tf

from zoo.base import fs
from zoo.base.errors import UsageError
from zoo.base.files import load_json, save_json
from zoo.data.text_files import DataError

LABELS_FILE = "labels.json"


def parse_label_map(text):
    """`'-1:negative,0:neutral,1:positive'` -> {'-1': 'negative', ...}; '' -> {}."""
    mapping = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        raw, sep, name = item.rpartition(":")
        if not sep or not raw.strip() or not name.strip():
            raise UsageError(f"label map item {item!r} is not RAW:NAME")
        mapping[raw.strip()] = name.strip()
    if len(set(mapping.values())) != len(mapping):
        raise UsageError(f"label map {text!r} gives two labels the same name")
    return mapping


def label_names_file(path):
    """A file of label names, one per line: line i names raw label "i" (GoEmotions'
    `emotions.txt`) -> a label map {"0": name, ...}."""
    try:
        with fs.open(path, encoding="utf-8") as f:
            names = [line.strip() for line in f if line.strip()]
    except OSError as e:
        raise UsageError(f"{path}: cannot read the label names ({e.strerror})") from None
    if len(set(names)) != len(names):
        raise UsageError(f"{path}: two lines give the same label name")
    return {str(i): name for i, name in enumerate(names)}


def _sort_key(label):
    try:
        return (0, float(label), label)
    except ValueError:
        return (1, 0.0, label)


def _split(raw, separator):
    return [part.strip() for part in raw.split(separator)] if separator else [raw]


def _list_problem(raw, items, known):
    """Why the classes `items` of a row's label `raw` are unusable: an empty one, or one not in
    `known` (None: any class)."""
    if any(not item for item in items):
        return f"empty label in the list {raw!r}"
    unknown = [item for item in items if known is not None and item not in known]
    if unknown:
        return (f"unknown label {', '.join(map(repr, unknown))} "
                f"(known: {sorted(known, key=_sort_key)})")
    return None


def save_kind(model_dir, kind, config):
    """Writes `labels.json`: the kind of label (`kind`) and what it needs (`config`).
    Atomic: under multi-worker training other workers may read it while the chief writes."""
    fs.makedirs(model_dir)
    save_json(fs.join(model_dir, LABELS_FILE), dict(kind=kind, **config))


def load_kind(model_dir):
    """(kind, config) saved in `model_dir`'s labels.json (`save_kind`)."""
    path = fs.join(model_dir, LABELS_FILE)
    saved = load_json(path)
    if saved is None:
        raise FileNotFoundError(f"{path}: no labels; train a model in this dir first")
    return saved.pop("kind", LabelVocab.KIND), saved


class OpenLabels:
    """The training rows' labels before there is a vocabulary: any class (or only the label
    map's, if one is given); with a `separator`, each row holds a list of them."""

    def __init__(self, known=None, separator=None):
        self.known_labels = set(known) if known else None
        self.separator = separator

    def keys(self, raw):
        return _split(raw, self.separator)

    def problem(self, raw):
        return _list_problem(raw, self.keys(raw), self.known_labels)


def _one_number(labels):
    """Groups of labels that are the same number written differently ("1", "1.0")."""
    by_value = {}
    for label in labels:
        try:
            by_value.setdefault(float(label), []).append(label)
        except ValueError:
            pass
    return [group for group in by_value.values() if len(group) > 1]


def _scores(labels):
    """Up to three of `labels` that are not whole numbers, if every label is a number (a
    score written as a label: "0.00" ... "3.90"); [] otherwise."""
    try:
        values = [float(label) for label in labels]
    except ValueError:
        return []
    fractions = [label for label, value in zip(labels, values) if not value.is_integer()]
    return fractions[:3] if fractions else []


class LabelVocab:
    """One class per row: raw labels <-> ids <-> names.

    Args:
        raw_labels: the raw label strings, in id order.
        label_map: optional {raw: name}; labels it does not mention keep their raw text as name.
    """

    KIND = "classification"

    def __init__(self, raw_labels, label_map=None):
        self.raw_labels = list(raw_labels)
        self.label_map = dict(label_map or {})
        self.names = [self.label_map.get(raw, raw) for raw in self.raw_labels]
        # A label may also be written by its mapped name, but a raw label always means its raw
        # value: with `1:0,2:1`, "1" is raw 1 (named "0"), never the name "1" (raw 2).
        self._ids = {name: i for i, name in enumerate(self.names)}
        self._ids.update({raw: i for i, raw in enumerate(self.raw_labels)})
        self.spec = tf.TensorSpec([], tf.int32)

    @classmethod
    def from_examples(cls, examples, label_map=None):
        """The sorted distinct labels of `examples` (numbers in numeric order), or the map's."""
        label_map = dict(label_map or {})
        found = {e.label for e in examples}
        unmapped = sorted(found - label_map.keys() - set(label_map.values()), key=_sort_key)
        if label_map and unmapped:
            example = next(e for e in examples if e.label in unmapped)
            raise DataError(f"{example.source}: label {example.label!r} is not in the label map "
                            f"({sorted(label_map)})")
        return cls.from_labels(found, label_map)

    @classmethod
    def from_labels(cls, found, label_map=None, **kwargs):
        """The vocabulary of the labels `found` in the training data (after a data check has
        rejected labels outside the map): the map's labels, else `found` sorted."""
        label_map = dict(label_map or {})
        raw = sorted(label_map, key=_sort_key) if label_map else sorted(found, key=_sort_key)
        for labels in _one_number(raw):
            raise DataError(f"the training data's labels {' and '.join(map(repr, labels))} are "
                            "one number written in different ways, so they would be different "
                            "classes; write each class one way (or name each with `label_map`)")
        if len(raw) < 2:
            raise DataError(f"training data has {len(raw)} distinct label(s) {raw}; need at least 2")
        if not label_map and (scores := _scores(raw)):
            raise DataError(
                f"the training data's labels look like scores ({len(raw)} distinct numbers, "
                f"such as {', '.join(scores)}): as classes each value would be a class "
                "of its own. For a number per text use --task_type=regression; to keep them as "
                "classes, name each with --label_map")
        return cls(raw, label_map, **kwargs)

    def known(self):
        """Every string a row may use for a label: raw labels and mapped names."""
        return set(self._ids)

    def __len__(self):
        return len(self.raw_labels)

    def keys(self, raw):
        return [raw]

    def problem(self, raw):
        if raw in self._ids:
            return None
        return f"unknown label {raw!r} (known: {sorted(self.known(), key=_sort_key)})"

    def encode(self, raw):
        return self._ids[raw]

    def id(self, example):
        """The id of an example's label; a DataError naming its row if the label is unknown."""
        try:
            return self._ids[example.label]
        except KeyError:
            raise DataError(f"{example.source}: unknown label {example.label!r} "
                            f"(known: {self.raw_labels})") from None

    def outputs(self):
        """What the head predicts, for MODEL_DIR/run.json."""
        return self.raw_labels

    def config(self):
        return dict(raw_labels=self.raw_labels, label_map=self.label_map, names=self.names)

    def save(self, model_dir):
        save_kind(model_dir, self.KIND, self.config())

    @classmethod
    def load(cls, model_dir):
        """The labels saved in `model_dir`, of whichever kind they are."""
        kind, saved = load_kind(model_dir)
        if kind not in KINDS:
            raise UsageError(f"{fs.join(model_dir, LABELS_FILE)}: labels of a {kind} "
                             "model; use the model dir of a run of this task")
        saved.pop("names", None)
        return KINDS[kind](**saved)


def class_weights(spec, vocab, counts):
    """Loss weights per class id of `vocab`, or None for "none".

    `spec`: "none"; "balanced": class c weighs n / (classes x n_c), n_c its rows in the
    training data (`counts`: the data check's {raw label: rows}), so every class counts as much
    in the loss as if the classes were even; or a JSON file {label: weight} (raw labels or
    names; a class it leaves out weighs 1).
    """
    if spec in (None, "", "none"):
        return None
    by_id = [0] * len(vocab)
    for raw, n in counts.items():
        by_id[vocab.encode(raw)] += n
    if spec == "balanced":
        total = sum(by_id)
        return [total / (len(by_id) * n) if n else 1.0 for n in by_id]
    try:
        with fs.open(spec, encoding="utf-8") as f:
            given = json.load(f)
    except OSError as e:
        raise UsageError(f"{spec}: cannot read the class weights ({e.strerror}); "
                         "`class_weights` is none, balanced or a JSON file") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{spec}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(given, dict):
        raise UsageError(f"{spec}: expected a JSON object {{label: weight}}")
    weights = [1.0] * len(vocab)
    for label, weight in given.items():
        if vocab.problem(str(label)):
            raise UsageError(f"{spec}: {vocab.problem(str(label))}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
            raise UsageError(f"{spec}: the weight of {label!r} is not a number >= 0: {weight!r}")
        weights[vocab.encode(str(label))] = float(weight)
    return weights


class MultiLabelVocab(LabelVocab):
    """Several classes per row, as a `separator`-separated list (`0,15`); targets are multi-hot
    vectors over the vocabulary."""

    KIND = "multi_label"

    def __init__(self, raw_labels, label_map=None, separator=","):
        super().__init__(raw_labels, label_map)
        self.separator = separator
        self.spec = tf.TensorSpec([len(self.raw_labels)], tf.float32)

    def keys(self, raw):
        return _split(raw, self.separator)

    def problem(self, raw):
        return _list_problem(raw, self.keys(raw), self.known())

    def encode(self, raw):
        hot = np.zeros(len(self.raw_labels), np.float32)
        hot[[self._ids[item] for item in self.keys(raw)]] = 1.0
        return hot

    def config(self):
        return dict(super().config(), separator=self.separator)


class ScoreLabels:
    """A number per row (regression), within [`low`, `high`] when those are given."""

    KIND = "regression"

    def __init__(self, low=None, high=None):
        self.low, self.high = low, high
        self.names = ["score"]
        self.spec = tf.TensorSpec([], tf.float32)

    @classmethod
    def from_range(cls, text):
        """`"0,5"` -> ScoreLabels(0.0, 5.0); "" -> no range."""
        if not text:
            return cls()
        try:
            low, high = (float(part) for part in text.split(","))
        except ValueError:
            raise UsageError(f"score range {text!r} is not LOW,HIGH (e.g. 0,5)") from None
        if not low < high:
            raise UsageError(f"score range {text!r}: LOW must be below HIGH")
        return cls(low, high)

    def __len__(self):
        return 1

    def keys(self, raw):
        del raw
        return []

    def problem(self, raw):
        try:
            score = float(raw)
        except ValueError:
            return f"score {raw!r} is not a number"
        if not math.isfinite(score):
            return f"score {raw!r} is not a finite number"
        if self.low is not None and not self.low <= score <= self.high:
            return f"score {score:g} is outside the range [{self.low:g}, {self.high:g}]"
        return None

    def encode(self, raw):
        return float(raw)

    def outputs(self):
        return dict(kind=self.KIND, range=[self.low, self.high])

    def config(self):
        return dict(low=self.low, high=self.high)

    def save(self, model_dir):
        save_kind(model_dir, self.KIND, self.config())


KINDS = {kind.KIND: kind for kind in (LabelVocab, MultiLabelVocab, ScoreLabels)}
