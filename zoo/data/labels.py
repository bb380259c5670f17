"""Label vocabularies: names learned from the training data, optionally renamed by a label map.

Raw labels are the strings found in the label column (`-1`, `0`, `1`, `card_arrival`, ...). A
label map renames them (`-1:negative,0:neutral,1:positive`). The vocabulary is saved as
`labels.json` in the model dir, so evaluation, prediction and export use the same ids and names.
"""
import json
import os

from zoo.data.text_files import DataError
from zoo.errors import UsageError
from zoo.files import save_json

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


def _sort_key(label):
    try:
        return (0, float(label), label)
    except ValueError:
        return (1, 0.0, label)


class LabelVocab:
    """Raw labels <-> ids <-> names.

    Args:
        raw_labels: the raw label strings, in id order.
        label_map: optional {raw: name}; labels it does not mention keep their raw text as name.
    """

    def __init__(self, raw_labels, label_map=None):
        self.raw_labels = list(raw_labels)
        self.label_map = dict(label_map or {})
        self.names = [self.label_map.get(raw, raw) for raw in self.raw_labels]
        # A label may also be written by its mapped name, but a raw label always means its raw
        # value: with `1:0,2:1`, "1" is raw 1 (named "0"), never the name "1" (raw 2).
        self._ids = {name: i for i, name in enumerate(self.names)}
        self._ids.update({raw: i for i, raw in enumerate(self.raw_labels)})

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
    def from_labels(cls, found, label_map=None):
        """The vocabulary of the labels `found` in the training data (after a data check has
        rejected labels outside the map): the map's labels, else `found` sorted."""
        label_map = dict(label_map or {})
        raw = sorted(label_map, key=_sort_key) if label_map else sorted(found, key=_sort_key)
        if len(raw) < 2:
            raise DataError(f"training data has {len(raw)} distinct label(s) {raw}; need at least 2")
        return cls(raw, label_map)

    def known(self):
        """Every string a row may use for a label: raw labels and mapped names."""
        return set(self._ids)

    def __len__(self):
        return len(self.raw_labels)

    def id(self, example):
        """The id of an example's label; a DataError naming its row if the label is unknown."""
        try:
            return self._ids[example.label]
        except KeyError:
            raise DataError(f"{example.source}: unknown label {example.label!r} "
                            f"(known: {self.raw_labels})") from None

    def save(self, model_dir):
        # Atomic: under multi-worker training other workers may read it while the chief writes.
        os.makedirs(model_dir, exist_ok=True)
        save_json(os.path.join(model_dir, LABELS_FILE), dict(
            raw_labels=self.raw_labels, label_map=self.label_map, names=self.names))

    @classmethod
    def load(cls, model_dir):
        path = os.path.join(model_dir, LABELS_FILE)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no label vocabulary; train a model in this dir first")
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
        return cls(saved["raw_labels"], saved["label_map"])
