"""Raw strings -> preprocessor -> encoder -> head as one Keras model, for a text or a pair."""
import numpy as np
import tensorflow as tf

from zoo.model import cores


def test_text_classifier_takes_raw_strings(tiny_hub):
    model = cores.build_text_classifier(tiny_hub, None, num_classes=3, seq_length=16)
    logits = model(tf.constant(["a fine film", "a dull film"]))
    assert logits.shape == (2, 3)
    assert any("classifier" in w.name for w in model.trainable_weights)
    encoder_weights = [w for w in model.trainable_weights if "classifier" not in w.name]
    assert encoder_weights  # the Hub encoder is trained too


def test_pair_classifier_takes_two_texts(tiny_hub):
    model = cores.build_text_classifier("tiny", None, num_classes=2, seq_length=16, pair=True)
    assert [i.name for i in model.inputs] == ["text_a", "text_b"]
    logits = model([tf.constant(["is it raining?"]), tf.constant(["yes it is."])])
    assert logits.shape == (1, 2)


def test_packer_matches_the_preprocessor_and_pads_to_seq_length(tiny_hub):
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=12)
    packed = packer(tf.constant(["Hello, World!"]), tf.constant(["again"]))
    ids = packed["input_word_ids"].numpy()[0]
    assert ids.shape == (12,) and ids[:6].tolist() == [101, 7592, 1010, 2088, 999, 102]
    np.testing.assert_array_equal(packed["input_type_ids"].numpy()[0, :8], [0] * 6 + [1, 1])


def test_a_shared_packer_and_what_is_derived_from_it_serve_later_runs(tiny_hub):
    handle = tiny_hub + "/preprocessor"
    packer = cores.TextPacker.shared(handle, seq_length=12)
    assert cores.TextPacker.shared(handle, seq_length=12) is packer
    assert packer.compiled(1) is cores.TextPacker.shared(handle, seq_length=12).compiled(1)
    assert cores.TextPacker.shared(handle, seq_length=16) is not packer
    made = []
    derived = packer.derived(("layout", 1), lambda: made.append(1) or object())
    assert packer.derived(("layout", 1), lambda: made.append(1) or object()) is derived
    assert packer.derived(("layout", 2), object) is not derived and made == [1]
    with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():  # its own preprocessor and packer
        assert cores.TextPacker.shared(handle, seq_length=12) is not packer


def test_a_multi_head_core_shares_one_encoder_between_its_heads(tiny_hub):
    from zoo.model.heads import ClassifierHead, SpanHead
    model = cores.multi_head_core(tiny_hub + "/encoder", {
        "sentiment": ClassifierHead(2), "intent": ("mean", ClassifierHead(5)),
        "tags": ("sequence_output", ClassifierHead(3)), "qa": SpanHead()})
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=16)
    out = model(packer(tf.constant(["a film", "a much longer text about a film"])))
    assert out["sentiment"].shape == (2, 2) and out["intent"].shape == (2, 5)
    assert out["tags"].shape == (2, 16, 3) and out["qa"]["start_logits"].shape == (2, 16)
    # one encoder: its word embeddings once among the trainable variables
    embeddings = [v for v in model.trainable_variables if "word_embeddings" in v.name]
    assert len(embeddings) == 1


def test_a_cls_pooled_core_asks_the_encoder_for_its_pooled_output_alone(tiny_hub):
    """"cls" pooling reads the encoder through `zoo.model.hub.pooled_view` (same variables, so a
    shared encoder stays shared); "mean" pooling reads the full outputs."""
    from zoo.model import hub
    encoder = hub.encoder_layer(tiny_hub + "/encoder")
    cls = cores.classifier_core(encoder, 2, pooling="cls")
    mean = cores.classifier_core(encoder, 2, pooling="mean")
    assert cls.get_layer("encoder") is not encoder and mean.get_layer("encoder") is encoder
    shared = {id(v) for v in encoder.trainable_variables}
    assert {id(v) for v in cls.get_layer("encoder").trainable_variables} == shared
    packed = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=8)(
        tf.constant(["a film", "another film"]))
    np.testing.assert_allclose(
        cls.get_layer("encoder")(packed)["pooled_output"], encoder(packed)["pooled_output"],
        atol=1e-6)
