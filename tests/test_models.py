"""zoo.models.export_classifier: a core of the user's own, exported with raw-text signatures
that zoo.serving reads back."""
import numpy as np
import pytest
import tensorflow as tf

from zoo import models, serving
from zoo.base.errors import UsageError
from zoo.compute import precision

TEXTS = ["a fine film", "a dull, long and rather tiring film about nothing at all", "ok"]
LABELS = ["neg", "neu", "pos"]


@pytest.fixture(scope="module")
def classifier(tiny_hub):
    encoder, preprocessor = models.resolve_handles(tiny_hub + "/encoder")
    tf.keras.utils.set_random_seed(3)
    return models.classifier_core(encoder, num_classes=3), models.TextPacker(preprocessor, 16)


def _served(export_dir, inputs):
    return np.array([list(row["probabilities"].values())
                     for row in serving.load(export_dir).predict(inputs)])


def _expected(classifier):
    core, packer = classifier
    return tf.nn.softmax(core(packer(tf.constant(TEXTS)), training=False)).numpy()


def test_a_users_core_serves_what_it_computes(classifier, tmp_path):
    fp32 = models.export_classifier(str(tmp_path / "fp32" / "1"), *classifier, LABELS)
    rows = serving.load(fp32).predict(TEXTS)
    assert [list(row["probabilities"]) for row in rows] == [LABELS] * 3
    np.testing.assert_allclose(_served(fp32, TEXTS), _expected(classifier), atol=1e-5)


def test_an_fp32_export_with_the_small_request_copy_serves_what_the_core_computes(
        classifier, tmp_path):
    path = models.export_classifier(str(tmp_path / "small" / "1"), *classifier, LABELS,
                                    small_requests=True)
    # the core frozen in fp32: a single text takes the small-request copy, the three the other
    # (oneDNN, which `import zoo` turns on, fuses the frozen graph's ops in its own order)
    np.testing.assert_allclose(_served(path, TEXTS), _expected(classifier), atol=1e-4)
    core, packer = classifier
    alone = tf.nn.softmax(core(packer(tf.constant(TEXTS[2:])), training=False)).numpy()
    np.testing.assert_allclose(_served(path, TEXTS[2:]), alone, atol=1e-4)
    graph = tf.saved_model.load(path).signatures["serving_default"].graph.as_graph_def()
    functions = [node.name for f in graph.library.function for node in f.node_def]
    assert any(name.endswith("is_small_request") for name in functions)


@pytest.mark.skipif(not precision.cpu_flags() & precision.REWRITE_CPU_FLAGS,
                    reason="TensorFlow's oneDNN bf16 rewrite does not run on this CPU")
def test_a_bf16_export_serves_near_the_core(classifier, tmp_path):
    expected = _expected(classifier)
    bf16 = models.export_classifier(str(tmp_path / "bf16" / "1"), *classifier, LABELS,
                                    precision="bf16")
    served = _served(bf16, TEXTS)  # the bf16 core: near fp32, not equal to it
    np.testing.assert_allclose(served, expected, atol=0.05)
    assert not np.allclose(served, expected, atol=1e-6)


def test_a_pair_export_padded_to_the_packers_length(classifier, tmp_path):
    core, packer = classifier
    pairs = [{"text_a": a, "text_b": "yes"} for a in TEXTS]
    padded = packer(tf.constant(TEXTS), tf.constant(["yes"] * 3))
    expected = tf.nn.softmax(core(padded, training=False)).numpy()
    path = models.export_classifier(str(tmp_path / "pair"), core, packer, LABELS, pair=True,
                                    trim_padding=False)
    assert serving.load(path).input_names == ["text_a", "text_b"]
    np.testing.assert_allclose(_served(path, pairs), expected, atol=1e-5)


def test_a_bad_precision_or_label_count_is_refused(classifier, tmp_path, monkeypatch):
    core, packer = classifier
    with pytest.raises(UsageError, match="precision must be one of fp32, bf16, not 'fp16'"):
        models.export_classifier(str(tmp_path / "e"), core, packer, LABELS, precision="fp16")
    with pytest.raises(UsageError, match="2 label names for a core of 3 classes"):
        models.export_classifier(str(tmp_path / "e"), core, packer, LABELS[:2])
    monkeypatch.setattr(precision, "cpu_flags", lambda: {"avx2", "fma"})
    with pytest.raises(UsageError, match="bf16 needs a CPU that TensorFlow's oneDNN bf16"):
        models.export_classifier(str(tmp_path / "e"), core, packer, LABELS, precision="bf16")
    assert not (tmp_path / "e").exists()
