"""tf.data pipelines: packed batches with labels, seeded shuffles."""
import numpy as np

from zoo.data.labels import LabelVocab
from zoo.data.pipeline import classification_dataset
from zoo.data.sources import ListSource
from zoo.data.text_files import Example
from zoo.model import cores


def test_batches_pack_pairs_and_carry_label_ids(tiny_hub):
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=16)
    examples = [Example(f"question {i}", f"answer {i}", label=str(i % 2)) for i in range(10)]
    labels = LabelVocab(["0", "1"])
    batches = list(classification_dataset(ListSource(examples), packer, 4, labels, drop_remainder=True))
    assert len(batches) == 2
    inputs, label_ids = batches[0]
    assert inputs["input_word_ids"].shape == (4, 16)
    assert label_ids.numpy().tolist() == [0, 1, 0, 1]
    assert inputs["input_type_ids"].numpy()[0].max() == 1  # the second segment


def test_a_seed_fixes_the_order_and_different_seeds_differ(tiny_hub):
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=8)
    examples = [Example(f"text {i}", label="0") for i in range(50)]
    labels = LabelVocab(["0", "1"])

    def order(seed):
        return np.concatenate([b[0]["input_word_ids"].numpy()[:, 2] for b in
                               classification_dataset(ListSource(examples), packer, 10, labels, seed)])

    np.testing.assert_array_equal(order(3), order(3))
    assert not np.array_equal(order(3), order(4))
    unshuffled = np.concatenate([b["input_word_ids"].numpy()[:, 2] for b in
                                 classification_dataset(ListSource(examples), packer, 10)])
    assert sorted(order(3)) == sorted(unshuffled)


def test_length_grouped_batches_keep_every_row_and_cut_padding(tiny_hub):
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=64)
    # Row i has i % 40 + 1 words: lengths all mixed up in file order.
    examples = [Example(" ".join(["film"] * (i % 40 + 1)) + f" {i}", label=str(i % 2))
                for i in range(203)]
    labels = LabelVocab(["0", "1"])

    def batches(seed, grouped):
        return [(b["input_mask"].numpy(), y.numpy()) for b, y in classification_dataset(
            ListSource(examples), packer, 8, labels, seed, dynamic_padding=True,
            group_by_lengths=grouped, drop_remainder=False)]

    grouped, plain = batches(5, True), batches(5, False)
    lengths = lambda bs: sorted(int(n) for m, _ in bs for n in m.sum(1))  # noqa: E731
    assert lengths(grouped) == lengths(plain)  # the same rows, each once
    assert sum(len(y) for _, y in grouped) == 203
    padded = lambda bs: sum(m.size for m, _ in bs)  # noqa: E731  (tokens computed, padding too)
    assert padded(grouped) < 0.75 * padded(plain)
    # Batch lengths are not in sorted order (batches are shuffled within their window) ...
    longest = [int(m.sum(1).max()) for m, _ in grouped]
    assert longest != sorted(longest)
    # ... and the order is fixed by the seed.
    again = batches(5, True)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(grouped, again))
    other = batches(6, True)
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(grouped, other))
