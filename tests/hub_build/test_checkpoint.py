"""Converting Hugging Face BERT folders: weight mapping against a NumPy oracle, and clear errors."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
from safetensors.numpy import save_file

from tests.hub_build import numpy_bert
from zoo.hub_build import build
from zoo.hub_build.checkpoint import CheckpointError, read_checkpoint, sentence_pooling
from zoo.model import hub as hub_lib

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "##s",
         ".", ",", "a", "dog"]
CONFIG = dict(model_type="bert", vocab_size=len(VOCAB), hidden_size=8, num_hidden_layers=2,
              num_attention_heads=2, intermediate_size=16, hidden_act="gelu",
              max_position_embeddings=16, type_vocab_size=2, layer_norm_eps=1e-12)


def _hf_tensors(config, rng, prefix="bert.", old_layer_norm_names=True):
    h, i = config["hidden_size"], config["intermediate_size"]
    shapes = {"embeddings.word_embeddings.weight": (config["vocab_size"], h),
              "embeddings.position_embeddings.weight": (config["max_position_embeddings"], h),
              "embeddings.token_type_embeddings.weight": (config["type_vocab_size"], h),
              "pooler.dense.weight": (h, h), "pooler.dense.bias": (h,)}
    norms = ["embeddings.LayerNorm"]
    for n in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{n}."
        for name in ("query", "key", "value"):
            shapes[p + f"attention.self.{name}.weight"] = (h, h)
            shapes[p + f"attention.self.{name}.bias"] = (h,)
        shapes.update({p + "attention.output.dense.weight": (h, h),
                       p + "attention.output.dense.bias": (h,),
                       p + "intermediate.dense.weight": (i, h), p + "intermediate.dense.bias": (i,),
                       p + "output.dense.weight": (h, i), p + "output.dense.bias": (h,)})
        norms += [p + "attention.output.LayerNorm", p + "output.LayerNorm"]
    tensors = {k: rng.normal(0, 0.5, s).astype(np.float32) for k, s in shapes.items()}
    scale, shift = ("gamma", "beta") if old_layer_norm_names else ("weight", "bias")
    for norm in norms:
        tensors[f"{norm}.{scale}"] = rng.normal(1, 0.1, (h,)).astype(np.float32)
        tensors[f"{norm}.{shift}"] = rng.normal(0, 0.1, (h,)).astype(np.float32)
    return {prefix + k: v for k, v in tensors.items()}


def _write_folder(path, config=CONFIG, tensors=None, vocab=VOCAB, lower=True):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(path, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": lower}, f)
    if tensors is not None:
        save_file(tensors, os.path.join(path, "model.safetensors"))
    return str(path)


@pytest.fixture(scope="module")
def plain_build(tmp_path_factory):
    """A plain BERT folder of random weights, and its build (built once for the module)."""
    root = tmp_path_factory.mktemp("plain")
    tensors = _hf_tensors(CONFIG, np.random.default_rng(0))
    folder = _write_folder(root / "hf", tensors=tensors)
    return tensors, folder, build.build(folder, str(root / "hub"))


def test_converted_checkpoint_matches_a_numpy_forward_pass(plain_build):
    tensors, _, out_dir = plain_build
    word_ids = np.array([[2, 5, 6, 7, 8, 5, 9, 10, 11, 3], [2, 13, 14, 12, 5, 6, 3, 5, 9, 3]])
    type_ids = np.array([[0] * 10, [0] * 7 + [1] * 3])
    expected_seq, expected_pooled = numpy_bert.forward(tensors, CONFIG, word_ids, type_ids)
    out = hub.KerasLayer(out_dir + "/encoder")(dict(
        input_word_ids=tf.constant(word_ids, tf.int32), input_type_ids=tf.constant(type_ids, tf.int32),
        input_mask=tf.ones(word_ids.shape, tf.int32)))
    np.testing.assert_allclose(out["sequence_output"].numpy(), expected_seq, atol=1e-4)
    np.testing.assert_allclose(out["pooled_output"].numpy(), expected_pooled, atol=1e-4)
    pre = hub.load(out_dir + "/preprocessor")
    ids = pre(tf.constant(["The cats sat on a MAT."]))["input_word_ids"].numpy()[0, :10]
    assert ids.tolist() == [2, 5, 6, 10, 7, 8, 13, 9, 11, 3]
    info = json.load(open(os.path.join(out_dir, build.BUILD_INFO)))
    assert info["random_init"] is False and info["config"]["hidden_size"] == 8
    assert info["pooling"] == "cls"  # a plain BERT folder: its pooler
    assert hub_lib.default_pooling(out_dir) == hub_lib.default_pooling(out_dir + "/encoder") == "cls"


def test_the_pooling_a_sentence_transformers_folder_was_trained_for(tmp_path):
    folder = tmp_path / "st"
    (folder / "1_Pooling").mkdir(parents=True)
    config = folder / "1_Pooling" / "config.json"
    assert sentence_pooling(str(tmp_path)) == "cls"  # no 1_Pooling: a plain BERT
    for modes, expected in (({"pooling_mode_mean_tokens": True}, "mean"),
                            ({"pooling_mode_cls_token": True}, "cls")):
        config.write_text(json.dumps(dict(word_embedding_dimension=8, **modes)))
        assert sentence_pooling(str(folder)) == expected
    config.write_text(json.dumps({"pooling_mode_max_tokens": True}))
    with pytest.raises(CheckpointError, match=r"1_Pooling/config.json: pooling "
                       r"pooling_mode_max_tokens is not one zoo has"):
        sentence_pooling(str(folder))
    hf = _write_folder(tmp_path / "hf", tensors=_hf_tensors(CONFIG, np.random.default_rng(3)))
    os.makedirs(os.path.join(hf, "1_Pooling"))
    with open(os.path.join(hf, "1_Pooling", "config.json"), "w", encoding="utf-8") as f:
        json.dump({"pooling_mode_mean_tokens": True}, f)
    out_dir = build.build(hf, str(tmp_path / "hub"))
    assert json.load(open(os.path.join(out_dir, build.BUILD_INFO)))["pooling"] == "mean"
    assert hub_lib.default_pooling(out_dir + "/encoder") == "mean"


def test_an_existing_build_is_not_overwritten_by_accident(plain_build):
    _, folder, out_dir = plain_build
    before = {name: os.path.getmtime(os.path.join(out_dir, name)) for name in os.listdir(out_dir)}
    with pytest.raises(FileExistsError, match="already holds a built model"):
        build.build(folder, out_dir)
    assert {name: os.path.getmtime(os.path.join(out_dir, name))
            for name in os.listdir(out_dir)} == before


def _error(tmp_path, match, **changes):
    tensors = changes.pop("tensors", _hf_tensors(CONFIG, np.random.default_rng(2)))
    folder = _write_folder(tmp_path / "hf", tensors=tensors, **changes)
    with pytest.raises(CheckpointError, match=match):
        build.build(folder, str(tmp_path / "hub"))
    assert not os.path.exists(tmp_path / "hub")


def test_not_a_directory(tmp_path):
    with pytest.raises(CheckpointError, match="not a directory"):
        read_checkpoint(str(tmp_path / "nowhere"))


def test_folder_without_config(tmp_path):
    with pytest.raises(CheckpointError, match="no config.json"):
        read_checkpoint(str(tmp_path))


def test_folder_without_weights(tmp_path):
    _error(tmp_path, "no model.safetensors", tensors=None)


def test_folder_without_vocab(tmp_path):
    folder = _write_folder(tmp_path / "hf", tensors=_hf_tensors(CONFIG, np.random.default_rng(3)))
    os.remove(os.path.join(folder, "vocab.txt"))
    with pytest.raises(CheckpointError, match="no vocab.txt"):
        read_checkpoint(folder)


def test_config_of_another_model_type(tmp_path):
    _error(tmp_path, "model_type is 'roberta'", config=dict(CONFIG, model_type="roberta"))


def test_relative_position_embeddings(tmp_path):
    _error(tmp_path, "relative_key",
           config=dict(CONFIG, position_embedding_type="relative_key"))


def test_vocab_size_disagreeing_with_config(tmp_path):
    _error(tmp_path, "15 tokens, but config.json says vocab_size 20",
           config=dict(CONFIG, vocab_size=20))


def test_missing_weights_are_named(tmp_path):
    tensors = _hf_tensors(CONFIG, np.random.default_rng(4))
    del tensors["bert.encoder.layer.1.intermediate.dense.weight"]
    _error(tmp_path, "missing 1 BERT weights.*layer.1.intermediate.dense.weight", tensors=tensors)


def test_weight_shapes_disagreeing_with_config(tmp_path):
    _error(tmp_path, "has shape .* expected", config=dict(CONFIG, intermediate_size=12))


def test_invalid_json_names_file_and_line(tmp_path):
    folder = _write_folder(tmp_path / "hf", tensors=_hf_tensors(CONFIG, np.random.default_rng(5)))
    with open(os.path.join(folder, "config.json"), "w") as f:
        f.write('{"model_type": "bert",\n "hidden_size": }')
    with pytest.raises(CheckpointError, match=r"config.json: not valid JSON \(line 2"):
        read_checkpoint(folder)


def test_unknown_lower_casing_must_be_said(tmp_path):
    folder = _write_folder(tmp_path / "hf", tensors=_hf_tensors(CONFIG, np.random.default_rng(6)))
    os.remove(os.path.join(folder, "tokenizer_config.json"))
    with pytest.raises(CheckpointError, match="do_lower_case"):
        read_checkpoint(folder)
    assert read_checkpoint(folder, do_lower_case=False).do_lower_case is False


def _google_checkpoint(folder, hf_tensors, config, vocab):
    """Writes Google's original layout: bert_config.json, vocab.txt and a TF1 checkpoint
    `bert_model.ckpt` whose variables carry Google's names (kernels [in, out])."""
    os.makedirs(folder, exist_ok=True)
    google_config = {k: v for k, v in config.items() if k not in ("model_type", "layer_norm_eps")}
    with open(os.path.join(folder, "bert_config.json"), "w") as f:
        json.dump(dict(google_config, hidden_act="gelu"), f)
    with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    values = {}
    for name, value in hf_tensors.items():
        name = name.removeprefix("bert.").replace(".gamma", ".weight").replace(".beta", ".bias")
        if name.endswith("LayerNorm.weight") or name.endswith("LayerNorm.bias"):
            google = name.replace(".weight", "/gamma").replace(".bias", "/beta")
        elif "embeddings" in name and name.endswith(".weight"):
            google = name[:-len(".weight")]
        else:
            google = name.replace(".weight", "/kernel").replace(".bias", "/bias")
            value = value.T if google.endswith("/kernel") else value
        google = "bert/" + google.replace("encoder.layer.", "encoder/layer_").replace(".", "/")
        values[google] = value
    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(v, name=k) for k, v in values.items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, os.path.join(folder, "bert_model.ckpt"), write_meta_graph=False)
    return str(folder)


def test_googles_original_layout_converts_to_the_same_model(tmp_path):
    tensors = _hf_tensors(CONFIG, np.random.default_rng(5), prefix="", old_layer_norm_names=False)
    folder = _google_checkpoint(tmp_path / "uncased_L-2_H-8_A-2", tensors, CONFIG, VOCAB)
    checkpoint = read_checkpoint(folder)
    assert checkpoint.layout == "google" and checkpoint.do_lower_case  # "uncased" in its name
    assert checkpoint.config.hidden_act == "gelu_new"  # Google's gelu: the tanh approximation
    out_dir = build.build(folder, str(tmp_path / "hub"))
    word_ids = np.array([[2, 5, 6, 7, 8, 5, 9, 10, 11, 3]])
    type_ids = np.zeros_like(word_ids)
    expected_seq, expected_pooled = numpy_bert.forward(
        tensors, dict(CONFIG, hidden_act="gelu_new"), word_ids, type_ids)
    out = hub.KerasLayer(out_dir + "/encoder")(dict(
        input_word_ids=tf.constant(word_ids, tf.int32), input_type_ids=tf.constant(type_ids, tf.int32),
        input_mask=tf.ones(word_ids.shape, tf.int32)))
    np.testing.assert_allclose(out["sequence_output"].numpy(), expected_seq, atol=1e-4)
    np.testing.assert_allclose(out["pooled_output"].numpy(), expected_pooled, atol=1e-4)


def test_a_google_folder_says_what_is_missing(tmp_path):
    folder = tmp_path / "bert_cased"
    os.makedirs(folder)
    (folder / "bert_config.json").write_text(json.dumps(
        {k: v for k, v in CONFIG.items() if k != "model_type"}))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    with pytest.raises(CheckpointError, match="bert_config.json but no TF checkpoint"):
        read_checkpoint(str(folder))
    tensors = _hf_tensors(CONFIG, np.random.default_rng(6), prefix="", old_layer_norm_names=False)
    plain = _google_checkpoint(tmp_path / "bert", tensors, CONFIG, VOCAB)  # "cased"? not said
    with pytest.raises(CheckpointError, match="cannot tell whether the vocabulary is lower-cased"):
        read_checkpoint(plain)
    assert read_checkpoint(plain, do_lower_case=False).do_lower_case is False
