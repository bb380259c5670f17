"""LiteRT exports (`zoo.export.litert`) and their runner (`zoo.litert`): the tokenizer the file
runs against the Hub preprocessor's, a classifier trained on real SST-2 sentences, and what is
refused. Every kind's LiteRT export against its SavedModel is in tests/kinds/test_every_kind.py."""
import csv
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.helpers import SHARED, TOKENIZER_TEXTS
from zoo import litert as litert_runner
from zoo import serving
from zoo.base.errors import UsageError
from zoo.export import litert
from zoo.kinds import table
from zoo.model import hub
from zoo.model.cores import TextPacker

TEXTS = TOKENIZER_TEXTS + ["a great film", "a dull, boring film"]
SST2 = os.path.join(SHARED, "data", "sst2")


@pytest.fixture(scope="module")
def handles(tiny_hub):
    return hub.resolve_handles(tiny_hub + "/encoder", tiny_hub + "/preprocessor")


@pytest.mark.parametrize("seq_length", [16, 128])
def test_the_files_tokenizer_packs_what_the_hub_preprocessor_packs(handles, seq_length):
    encoder, preprocessor = handles
    vocab, lower = litert.encoder_vocabulary(hub.encoder_layer(encoder))
    assert lower and vocab[:1] == ["[PAD]"]
    packer = TextPacker(preprocessor, seq_length)
    fast = litert.FastPacker(vocab, lower, seq_length, packer.special_tokens)
    for texts in ([tf.constant(TEXTS)], [tf.constant(TEXTS), tf.constant(TEXTS[::-1])]):
        expected, packed = packer(*texts), fast(*texts)
        for key in ("input_word_ids", "input_mask", "input_type_ids"):
            np.testing.assert_array_equal(packed[key].numpy(), expected[key].numpy(), key)


def test_the_runner_reads_the_file_and_metadata_the_exporter_writes():
    # (every kind's LiteRT export against its SavedModel: tests/kinds/test_every_kind.py)
    assert (litert_runner.FILE_NAME, litert_runner.METADATA_NAME) == (litert.FILE_NAME,
                                                                       litert.METADATA_NAME)


def _sst2_subset(root, rows):
    """A GLUE-layout SST-2 folder: the first `rows` training sentences and the real dev set."""
    os.makedirs(root)
    with open(os.path.join(SST2, "train.tsv"), encoding="utf-8") as f, \
            open(os.path.join(root, "train.tsv"), "w", encoding="utf-8") as out:
        for i, line in enumerate(f):
            if i > rows:
                break
            out.write(line)
    os.symlink(os.path.join(SST2, "dev.tsv"), os.path.join(root, "dev.tsv"))
    return str(root)


@pytest.mark.slow  # real data: `pytest -m slow`
@pytest.mark.skipif(not os.path.exists(os.path.join(SST2, "dev.tsv")),
                    reason="needs ../shared/data/sst2")
def test_a_trained_sst2_model_labels_dev_sentences_as_its_savedmodel_does(tmp_path, tiny_hub):
    del tiny_hub
    model_dir = str(tmp_path / "model")
    common = dict(data_dir=_sst2_subset(tmp_path / "sst2", 4000), model_dir=model_dir,
                  encoder_handle="tiny", max_seq_length=64, eval_batch_size=64)
    table.run("sst2", "train", num_train_epochs=1, train_batch_size=32, learning_rate=3e-3,
              warmup_proportion=0.05,
              export_dir=f"{model_dir}/export/1", **common)
    with open(os.path.join(SST2, "dev.tsv"), encoding="utf-8") as f:
        sentences = [row["sentence"] for row in csv.DictReader(f, delimiter="\t",
                                                               quoting=csv.QUOTE_NONE)]
    expected = serving.load(f"{model_dir}/export/1").predict(sentences)
    assert len(set(r["label"] for r in expected)) == 2  # it learned something to agree on
    for quantization in ("none", "dynamic", "int8"):
        path = table.run("sst2", "export", export_dir=f"{model_dir}/lite_{quantization}",
                         export_format="litert", litert_quantization=quantization,
                         litert_calibration_rows=50, **common)
        got = litert_runner.load(path).predict(sentences)
        assert len(got) == len(sentences) == 872
        same = np.mean([a["label"] == b["label"] for a, b in zip(expected, got)])
        gap = max(abs(a["probabilities"][k] - b["probabilities"][k])
                  for a, b in zip(expected, got) for k in a["probabilities"])
        smaller = os.path.getsize(path) < 0.6 * os.path.getsize(
            f"{model_dir}/lite_none/model.tflite")
        if quantization == "none":
            assert same == 1 and gap < 1e-4
        elif quantization == "dynamic":  # int8 weights: the default
            assert same >= 0.99 and smaller, (same, gap)
        else:  # the dense layers' inputs in int8 too: coarser (seen: 0.970 to 1 of the labels
            # here; 0.72 with every op quantized), and BENCHMARKS.md measures it on MiniLM
            assert same >= 0.93 and smaller, (same, gap)


def test_what_a_litert_export_refuses(tmp_path, tiny_hub):
    with pytest.raises(UsageError, match="is for class, multi-label and regression models"):
        table.run("squad", "export", model_dir=str(tmp_path / "squad"), encoder_handle="tiny",
                  export_dir=str(tmp_path / "out"), export_format="litert")
    with pytest.raises(UsageError, match="litert_quantization"):
        table.run("classify", "export", model_dir=str(tmp_path / "c"), encoder_handle="tiny",
                  export_dir=str(tmp_path / "out"), export_format="litert",
                  export_precision="bf16")
    with pytest.raises(FileNotFoundError, match="no model.tflite"):
        litert_runner.load(tiny_hub)
    with pytest.raises(ValueError, match="not a LiteRT model"):
        litert_runner.read_metadata(os.path.join(tiny_hub, "encoder", "saved_model.pb"))
