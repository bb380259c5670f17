"""Handles: names, URLs and directories; the embedded default built once into the cache."""
import os
import types
import shutil

import pytest
import tensorflow as tf

from zoo.hub_build import build
from zoo.hub_build.encoder import BertConfig, build_encoder_model
from zoo.model import hub


def test_default_model_is_built_into_the_cache_once_and_reused(minilm_hub, zoo_cache):
    assert minilm_hub == os.path.join(zoo_cache, "hub", "minilm_l6_h384_uncased")
    stamp = os.path.getmtime(os.path.join(minilm_hub, build.BUILD_INFO))
    encoder, preprocessor = hub.resolve_handles()
    assert encoder == os.path.join(minilm_hub, "encoder")
    assert preprocessor == os.path.join(minilm_hub, "preprocessor")
    assert os.path.getmtime(os.path.join(minilm_hub, build.BUILD_INFO)) == stamp


def test_each_encoder_says_which_pooling_it_was_trained_for(minilm_hub, tiny_hub):
    # all-MiniLM-L6-v2 is a sentence-transformers model (mean pooling); tiny and tfhub.dev
    # BERTs have a pooler trained on [CLS]
    assert hub.default_pooling("minilm_l6_h384_uncased") == "mean"
    assert hub.default_pooling(minilm_hub) == hub.default_pooling(minilm_hub + "/encoder") == "mean"
    assert hub.default_pooling("tiny") == hub.default_pooling(tiny_hub) == "cls"
    assert hub.default_pooling("bert_en_uncased_L-12_H-768_A-12") == "cls"


def test_a_cached_build_of_an_older_format_is_rebuilt(monkeypatch, tmp_path, tiny_hub):
    import json
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    folder = os.path.join(tmp_path, "hub", "tiny")
    shutil.copytree(tiny_hub, folder)  # a cached build, in this test's own cache
    info_path = os.path.join(folder, build.BUILD_INFO)
    info = json.load(open(info_path))
    assert info["format"] == build.BUILD_FORMAT
    del info["format"]  # as builds made before formats were numbered
    json.dump(info, open(info_path, "w"))
    assert build.build_format(folder) == 1
    assert hub.ensure_built("tiny") == folder
    assert build.build_format(folder) == build.BUILD_FORMAT


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    assert hub.cache_dir() == str(tmp_path)


def test_published_names_resolve_to_their_matching_preprocessor():
    encoder, preprocessor = hub.resolve_handles("bert_multi_cased_L-12_H-768_A-12")
    assert encoder.endswith("/bert_multi_cased_L-12_H-768_A-12/4")
    assert preprocessor.endswith("/bert_multi_cased_preprocess/3")
    encoder, preprocessor = hub.resolve_handles("small_bert/bert_en_uncased_L-4_H-256_A-4")
    assert encoder == "https://tfhub.dev/tensorflow/small_bert/bert_en_uncased_L-4_H-256_A-4/2"
    assert preprocessor == hub.UNCASED_PRE


def test_urls_pass_through_and_need_a_preprocessor():
    url = "https://www.kaggle.com/models/tensorflow/bert/TensorFlow2/en-uncased-l-12-h-768-a-12/4"
    assert hub.resolve_handles(url, hub.UNCASED_PRE) == (url, hub.UNCASED_PRE)
    with pytest.raises(hub.HandleError, match="pass preprocessor_handle"):
        hub.resolve_handles(url)


def test_a_build_output_folder_or_its_encoder_folder_finds_the_preprocessor(tiny_hub):
    expected = (os.path.join(tiny_hub, "encoder"), os.path.join(tiny_hub, "preprocessor"))
    assert hub.resolve_handles(tiny_hub) == expected
    assert hub.resolve_handles(os.path.join(tiny_hub, "encoder")) == expected


def test_bad_handles_get_clear_errors(tmp_path):
    with pytest.raises(hub.HandleError, match="not a known model name, a URL or an existing dir"):
        hub.resolve_handles("bert_base_typo")
    with pytest.raises(hub.HandleError, match="holds no SavedModel"):
        hub.resolve_handles(str(tmp_path))


def test_offline_availability():
    assert hub.is_available_offline(hub.MODELS["minilm_l6_h384_uncased"].encoder)
    assert hub.is_available_offline(hub.MODELS["tiny"].encoder)
    assert not hub.is_available_offline(hub.MODELS["bert_en_uncased_L-12_H-768_A-12"].encoder)


def test_tpu_load_options_read_through_the_host():
    assert hub.load_options(on_tpu=False) is None
    options = hub.load_options(on_tpu=True)
    assert isinstance(options, tf.saved_model.LoadOptions)
    assert options.experimental_io_device == "/job:localhost"


def test_encoder_layer_loads_a_local_handle(tiny_hub):
    layer = hub.encoder_layer(os.path.join(tiny_hub, "encoder"), trainable=True)
    out = layer(dict(input_word_ids=tf.constant([[101, 102]]), input_mask=tf.constant([[1, 1]]),
                     input_type_ids=tf.constant([[0, 0]])))
    assert out["pooled_output"].shape == (1, 32) and layer.trainable_weights


def test_frozen_word_embeddings_are_a_non_trainable_weight_of_the_layer_and_its_view(tiny_hub):
    layer = hub.encoder_layer(os.path.join(tiny_hub, "encoder"), frozen_word_embeddings=True)
    whole = hub.encoder_layer(os.path.join(tiny_hub, "encoder"))
    assert [v.name for v in layer.trainable_weights] == [
        v.name for v in whole.trainable_weights if "word_embeddings" not in v.name]
    assert len(layer.trainable_weights) == len(whole.trainable_weights) - 1
    assert [v.shape for v in layer.non_trainable_weights if "word_embeddings" in v.name] == [
        (30522, 32)]
    view = hub.pooled_view(layer)
    assert [id(v) for v in view.trainable_variables] == [id(v) for v in layer.trainable_variables]
    no_table = types.SimpleNamespace(trainable_variables=[tf.Variable(1.0, name="bias")])
    with pytest.raises(hub.HandleError, match="enc: freeze_word_embeddings needs an encoder "
                       "with one trainable variable named word_embeddings; this one has 0"):
        hub.without_word_embeddings(no_table, "enc")


def test_a_multilingual_vocabulary_is_large_and_its_table_frozen_unless_told(
        tiny_hub, tiny_multilingual_hub, tmp_path):
    english, multilingual = (os.path.join(h, "encoder") for h in (tiny_hub, tiny_multilingual_hub))
    assert hub.word_embedding_rows(english) == 30522 and not hub.large_vocabulary(english)
    assert hub.word_embedding_rows(multilingual) == 250037 and hub.large_vocabulary(multilingual)
    for handle, frozen in ((english, False), (multilingual, True)):
        unset = hub.encoder_layer(handle, frozen_word_embeddings=None)
        assert any("word_embeddings" in v.name for v in unset.non_trainable_weights) == frozen
    trained = hub.encoder_layer(multilingual, frozen_word_embeddings=False)
    assert any("word_embeddings" in v.name for v in trained.trainable_weights)
    no_table = tf.Module()  # a SavedModel without a word-piece table: nothing to freeze
    no_table.scale = tf.Variable(2.0, name="scale")
    tf.saved_model.save(no_table, str(tmp_path / "no_table"))
    assert hub.word_embedding_rows(str(tmp_path / "no_table")) is None
    assert not hub.large_vocabulary(str(tmp_path / "no_table"))


def test_a_handle_that_is_not_a_bert_model_or_is_broken_gets_a_clear_error(tmp_path, tiny_hub):
    # A SavedModel that is no BERT encoder: one float input, one output.
    other = tf.Module()
    other.__call__ = tf.function(lambda x: x * 2.0,
                                 input_signature=[tf.TensorSpec([None], tf.float32)])
    tf.saved_model.save(other, str(tmp_path / "doubler"))
    with pytest.raises(hub.HandleError, match=r"doubler: not a BERT encoder.*input_word_ids"):
        hub.encoder_layer(str(tmp_path / "doubler"))
    with pytest.raises(hub.HandleError, match=r"doubler: not a BERT preprocessor .*no tokenize"):
        hub.load_preprocessor(str(tmp_path / "doubler"))
    # A broken directory: saved_model.pb cut short, variables gone.
    broken = tmp_path / "broken"
    shutil.copytree(os.path.join(tiny_hub, "encoder"), broken)
    data = (broken / "saved_model.pb").read_bytes()
    (broken / "saved_model.pb").write_bytes(data[:len(data) // 3])
    shutil.rmtree(broken / "variables")
    for frozen in (False, None):  # None: the table's size is read first
        with pytest.raises(hub.HandleError, match=r"broken: cannot be loaded as a TF Hub encoder"):
            hub.encoder_layer(str(broken), frozen_word_embeddings=frozen)
    with pytest.raises(hub.HandleError, match=r"broken: cannot be loaded as a TF Hub preproc"):
        hub.load_preprocessor(str(broken))


def test_pooled_view_asks_a_zoo_encoder_for_its_pooled_output_alone(tmp_path, tiny_hub):
    """The view shares the layer's loaded model, name and variables; an encoder whose
    SavedModel takes no `pooled_only` (here tf_keras's SavedModel of the same encoder, as
    Model Garden writes Hub encoders) is returned as it is."""
    layer = hub.encoder_layer(os.path.join(tiny_hub, "encoder"), trainable=True)
    view = hub.pooled_view(layer)
    inputs = dict(input_word_ids=tf.constant([[101, 7592, 102]]),
                  input_mask=tf.constant([[1, 1, 1]]), input_type_ids=tf.constant([[0, 0, 0]]))
    assert set(view(inputs)) == {"pooled_output", "default"}
    assert view.name == layer.name == "encoder"
    assert [id(v) for v in view.trainable_variables] == [id(v) for v in layer.trainable_variables]
    config = BertConfig(**build.build_info(tiny_hub)["config"])
    build_encoder_model(config).save(str(tmp_path / "keras_encoder"), save_format="tf")
    other = hub.encoder_layer(str(tmp_path / "keras_encoder"))
    assert hub.pooled_view(other) is other


def test_a_process_loads_a_preprocessor_once_and_again_when_it_changes(tmp_path, tiny_hub):
    folder = tmp_path / "preprocessor"
    shutil.copytree(os.path.join(tiny_hub, "preprocessor"), folder)
    first = hub.load_preprocessor(str(folder))
    assert hub.load_preprocessor(str(folder)) is first
    stat = os.stat(folder / "saved_model.pb")  # rebuilt in place: loaded anew
    os.utime(folder / "saved_model.pb", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10 ** 9))
    again = hub.load_preprocessor(str(folder))
    assert again is not first and again.tokenize(tf.constant(["hello"])).shape[0] == 1
    with tf.distribute.OneDeviceStrategy("/cpu:0").scope():  # a strategy's own variables
        assert hub.load_preprocessor(str(folder)) is not again
    assert hub.load_preprocessor(str(folder)) is again
