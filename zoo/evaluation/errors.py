"""The mistakes of an evaluation, for people to read: `errors.csv` in the model dir.

Each eval row whose predicted class is not its gold class, most confident mistakes first (the
ones a threshold would not catch): `id` (when the data has ids), the text(s), `gold`,
`predicted`, `score` (the predicted class's probability) and `gold_score`. Beside it,
`eval_results.json` has each class's precision, recall and F1 and the most confused pairs
(`zoo.evaluation.metrics.per_class`, `confused_pairs`).
"""
import csv

import numpy as np

from zoo.base.files import PartialFile, written

ERRORS_FILE = "errors.csv"


def write_errors(path, examples, probabilities, targets, names):
    """Writes the misclassified rows of `examples` (in the order of `probabilities`'s rows and
    `targets`) to `path`; returns how many. A row count that differs from the outputs' is a
    bug, not bad data (a ValueError)."""
    predicted = np.argmax(probabilities, axis=-1)
    wrong = []
    count = 0
    for index, example in enumerate(examples):
        count += 1
        if index < len(targets) and predicted[index] != targets[index]:
            wrong.append((index, example))
    if count != len(targets):
        raise ValueError(f"{count} eval rows but {len(targets)} outputs")
    wrong.sort(key=lambda item: -probabilities[item[0], predicted[item[0]]])
    pair = any(example.text_b is not None for _, example in wrong)
    has_id = any(example.id is not None for _, example in wrong)
    fields = (["id"] if has_id else []) + (["text_a", "text_b"] if pair else ["text"]) + [
        "gold", "predicted", "score", "gold_score"]
    writer = PartialFile(path, newline="")
    with written(writer):
        rows = csv.DictWriter(writer.file, fieldnames=fields)
        rows.writeheader()
        for index, example in wrong:
            row = {"id": example.id} if has_id else {}
            row.update({"text_a": example.text_a, "text_b": example.text_b or ""} if pair
                       else {"text": example.text_a})
            row.update(gold=names[targets[index]], predicted=names[predicted[index]],
                       score=float(probabilities[index, predicted[index]]),
                       gold_score=float(probabilities[index, targets[index]]))
            rows.writerow(row)
            writer.count += 1
    return writer.count
