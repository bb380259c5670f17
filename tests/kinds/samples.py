"""A few rows of data for any kind of `zoo.kinds.table.KINDS`, written as its data spec reads
them (`zoo.data.specs`): what the harness (`test_every_kind.py`) trains, evaluates and predicts
on. `write(kind, root, rows)` returns the kind's data keys that say where the data is, those
that say how to read it (which a model dir records for the modes after training) and the
inputs of its predict split as `zoo.serving` takes them, in file order."""
import csv
import json
import os

from zoo.data import glue, specs
from zoo.kinds import multilabel, regression

WORDS = ["great", "dull", "fine", "film", "plot", "cast", "music", "story"]
PLACES = ["Paris", "Berlin", "Oslo"]
PEOPLE = ["Mary", "John", "Olga"]


def _text(i):
    """A short text that varies with `i`; "great" in about half of them."""
    words = [WORDS[(i * 3 + j) % len(WORDS)] for j in range(2 + i % 4)]
    return " ".join((["great"] if i % 2 else ["dull"]) + words)


def _label(kind, i):
    """Row `i`'s raw label for `kind`'s task: a class, a score or a list of classes."""
    if kind.task is regression.Regression:
        return f"{(i % 2) * 3 + (i % 3) * 0.5:.1f}"
    if kind.task is multilabel.MultiLabel:
        return ",".join(name for k, name in enumerate(("a", "b", "c")) if (i >> k) & 1) or "a"
    return str(i % 2) if kind.data is specs.GlueFolder else ("bad", "good")[i % 2]


def _tsv(path, header, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def glue_folder(kind, root, rows):
    """A GLUE folder of the kind's layout: train.tsv, dev.tsv and an unlabelled test.tsv."""
    layout = glue.TASKS[kind.data_values["layout"]]
    texts = [c for c in (layout.text, layout.text_b) if c]
    for name, n in (("train.tsv", rows), ("dev.tsv", rows // 2)):
        _tsv(root / name, texts + [layout.label],
             [[_text(i), _text(i + 1)][:len(texts)] + [_label(kind, i)] for i in range(n)])
    ids = [layout.test_id] if layout.test_id else []
    test = [[str(i)][:len(ids)] + [_text(i + 5), _text(i + 2)][:len(texts)]
            for i in range(rows // 2)]
    _tsv(root / "test.tsv", ids + texts, test)
    inputs = [tuple(row[len(ids):]) if len(texts) > 1 else row[len(ids)] for row in test]
    return dict(data_dir=str(root)), {}, inputs


def text_columns(kind, root, rows):
    """train, eval and predict CSV files of a text and a label column, not named as zoo's
    defaults name them."""
    keys = {}
    for split, n in (("train", rows), ("eval", rows // 2), ("predict", rows // 2)):
        keys[f"{split}_file"] = str(root / f"{split}.csv")
        with open(keys[f"{split}_file"], "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["review", "rating"])
            writer.writerows([_text(i + 3 * (split == "predict")), _label(kind, i)]
                             for i in range(n))
    return keys, dict(text_column="review", label_column="rating"), [
        _text(i + 3) for i in range(rows // 2)]


def squad_files(kind, root, rows):
    """SQuAD v1.1 files: a question on a short context, the answer a name in it."""
    del kind
    keys, inputs = {}, []
    for split, n in (("train", rows), ("eval", rows // 2), ("predict", rows // 2)):
        paragraphs = []
        for i in range(n):
            person, place = PEOPLE[i % 3], PLACES[(i + split.count("e")) % 3]
            context = f"{person} went to {place} to see the {_text(i)} show."
            question = f"Where did {person} go?"
            paragraphs.append(dict(context=context, qas=[dict(
                id=f"{split}{i}", question=question,
                answers=[dict(text=place, answer_start=context.index(place))])]))
            if split == "predict":
                inputs.append(dict(question=question, context=context))
        keys[f"{split}_file"] = str(root / f"{split}.json")
        with open(keys[f"{split}_file"], "w", encoding="utf-8") as f:
            json.dump(dict(version="1.1", data=[dict(title="t", paragraphs=paragraphs)]), f)
    return keys, {}, inputs


def _sentence(i):
    tokens = [PEOPLE[i % 3], "went", "to", PLACES[(i // 3) % 3]] + _text(i).split()[:2]
    return tokens, ["B-PER", "O", "O", "B-LOC", "O", "O"]


def conll_files(kind, root, rows):
    """CoNLL files of a token and its tag per line; the predict file has tokens only."""
    del kind
    keys = {}
    for split, n in (("train", rows), ("eval", rows // 2), ("predict", rows // 2)):
        keys[f"{split}_file"] = str(root / f"{split}.txt")
        with open(keys[f"{split}_file"], "w", encoding="utf-8") as f:
            for tokens, tags in (_sentence(i + 2 * (split == "predict")) for i in range(n)):
                f.writelines(f"{t}\n" if split == "predict" else f"{t} {tag}\n"
                             for t, tag in zip(tokens, tags))
                f.write("\n")
    return keys, {}, [" ".join(_sentence(i + 2)[0]) for i in range(rows // 2)]


WRITERS = {specs.GlueFolder: glue_folder, specs.TextColumns: text_columns,
           specs.SquadFiles: squad_files, specs.ConllFiles: conll_files}


def write(kind, root, rows=16):
    """({data key: where}, {data key: how to read}, predict inputs) of `rows` training rows
    (half as many to evaluate and to predict) for `kind`, written under `root`."""
    if kind.data not in WRITERS:
        raise AssertionError(f"{kind.name}: tests/kinds/samples.py has no writer for its data "
                             f"spec {kind.data.__name__}: add one to WRITERS")
    os.makedirs(root, exist_ok=True)
    return WRITERS[kind.data](kind, root, rows)
