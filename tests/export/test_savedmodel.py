"""Export: raw-text serving signatures that load with only tensorflow and tensorflow_text."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from zoo.compute import precision
from zoo.export import frozen_core, savedmodel
from zoo.model import cores

SERVE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops, as TF Serving builds do)
model = tf.saved_model.load(sys.argv[1])
fn = model.signatures["serving_default"]
inputs = {k: tf.constant(v) for k, v in json.loads(sys.argv[2]).items()}
out = fn(**inputs)
extra = sorted(m for m in sys.modules if m.split(".")[0] in ("zoo", "tf_keras", "tensorflow_hub"))
print(json.dumps(dict(label=[x.decode() for x in out["label"].numpy()],
                      label_id=out["label_id"].numpy().tolist(),
                      probabilities=out["probabilities"].numpy().tolist(), extra=extra)))
"""


def _serve(export_dir, inputs):
    # A serving process knows nothing of zoo: not even the Keras 2 switch that `import zoo` sets.
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    result = subprocess.run([sys.executable, "-c", SERVE, export_dir, json.dumps(inputs)],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("pair", [False, True])
def test_export_serves_raw_text_in_a_fresh_process(tiny_hub, tmp_path, pair):
    core = cores.classifier_core(tiny_hub + "/encoder", num_classes=3)
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)
    export_dir = savedmodel.export_classifier(str(tmp_path / "export" / "1"), core, packer,
                                          ["neg", "neu", "pos"], pair=pair)
    texts = ["a fine film", "a dull, long film"]
    inputs = {"text_a": texts, "text_b": ["yes", "no"]} if pair else {"text": texts}
    served = _serve(export_dir, inputs)
    assert served["extra"] == []  # nothing of zoo, tf_keras or tensorflow_hub was imported
    columns = [tf.constant(v) for v in inputs.values()]
    expected = tf.nn.softmax(core(packer(*columns), training=False)).numpy()
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5)
    assert served["label_id"] == expected.argmax(-1).tolist()
    assert served["label"] == [["neg", "neu", "pos"][i] for i in served["label_id"]]


@pytest.mark.skipif(not precision.cpu_flags() & precision.REWRITE_CPU_FLAGS,
                    reason="TensorFlow's oneDNN bf16 rewrite does not run on this CPU")
def test_a_bf16_export_serves_raw_text_in_a_fresh_process(tiny_hub, tmp_path):
    core = cores.classifier_core(tiny_hub + "/encoder", num_classes=3)
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)
    export_dir = savedmodel.export_classifier(str(tmp_path / "export" / "1"),
                                          frozen_core.serving_core(core, "bf16"), packer,
                                          ["neg", "neu", "pos"])
    texts = ["a fine film", "a dull, long film", "yes"]
    served = _serve(export_dir, {"text": texts})
    assert served["extra"] == []
    expected = tf.nn.softmax(core(packer(tf.constant(texts)), training=False)).numpy()
    np.testing.assert_allclose(served["probabilities"], expected, atol=0.02)
    assert served["label"] == [["neg", "neu", "pos"][i] for i in served["label_id"]]


def test_saved_model_cli_lists_the_signature(tiny_hub, tmp_path):
    core = cores.classifier_core(tiny_hub + "/encoder", num_classes=2)
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=16)
    export_dir = savedmodel.export_classifier(str(tmp_path / "e"), core, packer, ["a", "b"])
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    result = subprocess.run([cli, "show", "--dir", export_dir, "--all"], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "signature_def['serving_default']" in result.stdout
    for name in ("inputs['text']", "outputs['label']", "outputs['label_id']",
                 "outputs['probabilities']"):
        assert name in result.stdout


class _LengthCore(tf.Module):
    """A stand-in classifier whose logits tell the sequence length it was given."""

    def __call__(self, inputs, training=False):
        length = tf.cast(tf.shape(inputs["input_word_ids"])[1], tf.float32)
        rows = tf.shape(inputs["input_word_ids"])[0]
        return tf.stack([tf.fill([rows], length / 10.0), tf.zeros([rows])], axis=1)


@pytest.mark.parametrize("trim_padding", [True, False])
def test_export_trims_each_request_to_its_longest_row(tiny_hub, tmp_path, trim_padding):
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)
    export_dir = savedmodel.export_classifier(str(tmp_path / "e"), _LengthCore(), packer, ["a", "b"],
                                          trim_padding=trim_padding)
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    texts = tf.constant(["a fine film", "a dull film that goes on and on"])
    longest = int(tf.reduce_max(tf.reduce_sum(packer(texts)["input_mask"], axis=1)))
    probabilities = serve(text=texts)["probabilities"].numpy()
    seen = np.log(probabilities[:, 0] / probabilities[:, 1]) * 10
    np.testing.assert_allclose(seen, longest if trim_padding else 32, atol=1e-3)
    assert longest < 32


def test_a_span_export_without_room_for_the_context_is_refused(tmp_path):
    # Before, the graph divided by zero windows for every request; now the export says why.
    from zoo.base.errors import UsageError
    with pytest.raises(UsageError, match="max_seq_length 64 leaves no room .* max_query_length 64"):
        savedmodel.export_span_model(str(tmp_path / "e"), None, None, seq_length=64,
                                 max_query_length=64)
    assert not os.path.exists(tmp_path / "e")
