"""Batched prediction: texts of similar length batched together, input order restored on output.

Sorting by length lets each batch be trimmed to its own longest row instead of `max_seq_length`,
so short texts cost little. The output file has exactly one row per input row, in input order.
"""
import csv
import json
import os

import numpy as np
import tensorflow as tf
from tqdm import tqdm

from zoo import distribute
from zoo.data.pipeline import trim_to_longest


def length_order(examples):
    """Indices of `examples` sorted by text length (stable, so ties keep input order)."""
    lengths = [len(e.text_a) + len(e.text_b or "") for e in examples]
    return np.argsort(lengths, kind="stable")


def predict_probabilities(core, packer, examples, batch_size, sort_by_length=True,
                          strategy=None):
    """Class probabilities `[len(examples), classes]` in the order of `examples`."""
    strategy = strategy or tf.distribute.get_strategy()
    order = length_order(examples) if sort_by_length else np.arange(len(examples))
    ordered = [examples[i] for i in order]
    columns = [[e.text_a for e in ordered]]
    if ordered and ordered[0].text_b is not None:
        columns.append([e.text_b for e in ordered])
    ds = tf.data.Dataset.from_tensor_slices(tuple(columns)).batch(batch_size)
    trim = not distribute.is_tpu(strategy)  # TPUs want one shape: keep max_seq_length
    ds = ds.map(lambda *texts: trim_to_longest(packer(*texts)) if trim else packer(*texts),
                num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    results = []
    with tqdm(total=len(examples), unit="ex", desc="predict", dynamic_ncols=True,
              mininterval=2) as bar:
        for probabilities in distribute.map_batches(
                strategy, lambda inputs: tf.nn.softmax(core(inputs, training=False), axis=-1),
                ds, batch_size):
            results.append(probabilities)
            bar.update(len(probabilities))
    probabilities = np.concatenate(results) if results else np.zeros((0, 0), np.float32)
    restored = np.empty_like(probabilities)
    restored[order] = probabilities
    return restored


def write_predictions(path, examples, probabilities, label_names):
    """Writes `.csv` or `.jsonl` (by extension): id (when the input has one), label, score."""
    if len(examples) != len(probabilities):
        raise ValueError(f"{len(examples)} inputs but {len(probabilities)} predictions")
    has_id = any(e.id is not None for e in examples)
    rows = []
    for example, probs in zip(examples, probabilities):
        best = int(np.argmax(probs))
        row = {"id": example.id} if has_id else {}
        row.update(label=label_names[best], score=float(probs[best]))
        rows.append((row, probs))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if path.lower().endswith(".jsonl"):
        with open(path, "w", encoding="utf-8") as f:
            for row, probs in rows:
                row = dict(row, probabilities={n: float(p) for n, p in zip(label_names, probs)})
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    elif path.lower().endswith(".csv"):
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0][0]) if rows else ["label", "score"])
            writer.writeheader()
            writer.writerows(row for row, _ in rows)
    else:
        raise ValueError(f"{path}: output file must end in .csv or .jsonl")
    return len(rows)
