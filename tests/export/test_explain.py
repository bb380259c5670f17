"""Attributions per word (zoo.export.explain): on a classifier whose label one keyword decides,
the keyword is the top word; integrated gradients add up; offsets slice the text; the
occlusion fallback on an encoder zoo did not build; the explain signature of every pooled kind."""
import csv
import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from zoo import serving
from zoo.export import explain, savedmodel
from zoo.export.flat_serving import FlatServing
from zoo.kinds import table
from zoo.model import cores, hub

FILLER = ("the a of and to in it is was for on with as at by this that from they we you he she "
          "there their one all would about which when make like time just know take people into "
          "year your good some could them see other than then now look only come its over think "
          "also back after use two how our work first well way even new want because any these "
          "give day most us").split()
KEYWORDS = {"positive": ["wonderful", "excellent"], "negative": ["terrible", "awful"]}


def keyword_rows(count, seed):
    """Rows of 5-12 filler words and one keyword that decides the label."""
    generator, rows = random.Random(seed), []
    for i in range(count):
        label = generator.choice(sorted(KEYWORDS))
        words = generator.sample(FILLER, generator.randint(5, 12))
        keyword = generator.choice(KEYWORDS[label])
        words.insert(generator.randint(0, len(words)), keyword)
        rows.append(dict(id=f"r{i}", text=" ".join(words), label=label, keyword=keyword))
    return rows


def _write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, ["id", "text", "label"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


@pytest.fixture(scope="module")
def keyword_model(tiny_hub, tmp_path_factory):
    root = tmp_path_factory.mktemp("keywords")
    held_out = keyword_rows(60, seed=3)
    files = dict(train_file=_write(root / "train.csv", keyword_rows(400, seed=1)),
                 eval_file=_write(root / "dev.csv", keyword_rows(60, seed=2)),
                 predict_file=_write(root / "held_out.csv", held_out))
    model_dir = str(root / "model")
    settings = dict(encoder_handle="tiny", text_column="text", label_column="label",
                    id_column="id", max_seq_length=32)
    table.run("classify", "train_and_eval", model_dir=model_dir, train_batch_size=16,
              num_train_epochs=3, learning_rate=2e-3, export_dir=model_dir + "/export/1",
              export_explain=True,
              train_file=files["train_file"], eval_file=files["eval_file"], **settings)
    return dict(model_dir=model_dir, export=model_dir + "/export/1", held_out=held_out,
                settings=settings, **files)


def _top_word(explanation):
    return max(explanation["words"], key=lambda w: w["attribution"])["text"]


def _hits(explanations, rows):
    return sum(_top_word(e) == r["keyword"] for e, r in zip(explanations, rows)) / len(rows)


def test_the_exported_explain_signature_points_at_the_keyword(keyword_model):
    model = serving.load(keyword_model["export"])
    rows = keyword_model["held_out"]
    explanations = model.explain([r["text"] for r in rows])
    assert _hits(explanations, rows) >= 0.9
    predicted = model.predict([r["text"] for r in rows])
    for explanation, prediction in zip(explanations, predicted):
        assert explanation["method"] == "integrated_gradients"
        assert explanation["target"] == prediction["label"]
        assert explanation["probability"] == pytest.approx(prediction["score"], abs=1e-5)
        # completeness: the attributions add up to score - baseline score, within 5%
        change = explanation["score"] - explanation["baseline_score"]
        total = sum(w["attribution"] for w in explanation["words"])
        assert abs(total - change) <= 0.05 * abs(change)
        assert explanation["completeness_gap"] == pytest.approx(total - change, abs=1e-4)
    # a class named in the request: the other class, whose keyword pushes it down
    other = model.explain([rows[0]["text"]], target=[
        next(n for n in KEYWORDS if n != predicted[0]["label"])])[0]
    assert other["target"] != predicted[0]["label"]
    assert min(other["words"], key=lambda w: w["attribution"])["text"] == rows[0]["keyword"]
    with pytest.raises(ValueError, match="'neutral' is not a class of this model"):
        model.explain(["a text"], target="neutral")


def test_mode_explain_writes_json_lines_and_a_page(keyword_model, tmp_path):
    output = str(tmp_path / "out" / "explanations.jsonl")
    count = table.run("classify", "explain", model_dir=keyword_model["model_dir"],
                      predict_file=keyword_model["predict_file"], output_file=output,
                      **keyword_model["settings"])
    rows = keyword_model["held_out"]
    lines = [json.loads(line) for line in open(output, encoding="utf-8")]
    assert count == len(lines) == len(rows)
    assert [line["id"] for line in lines] == [r["id"] for r in rows]
    assert _hits(lines, rows) >= 0.9
    exported = serving.load(keyword_model["export"]).explain([r["text"] for r in rows[:5]])
    for line, served in zip(lines, exported):
        assert [w["text"] for w in line["words"]] == [w["text"] for w in served["words"]]
        np.testing.assert_allclose([w["attribution"] for w in line["words"]],
                                   [w["attribution"] for w in served["words"]], atol=1e-4)
    page = open(str(tmp_path / "out" / "explanations.html"), encoding="utf-8").read()
    assert page.startswith("<!DOCTYPE html>") and page.count('class="text"') == len(rows)
    assert "<script" not in page and "http" not in page  # self-contained
    assert f'>{rows[0]["keyword"]}</span>' in page


def test_an_untrained_head_does_not_point_at_the_keyword(tiny_hub):
    keras.utils.set_random_seed(0)
    core = cores.classifier_core(tiny_hub + "/encoder", 2)
    explainer = explain.Explainer(core, cores.TextPacker(tiny_hub + "/preprocessor", 32),
                                  explain.CLASS)
    rows = keyword_rows(40, seed=3)
    result = explainer([tf.constant([r["text"] for r in rows])])
    attribution, words = result["attribution"].to_list(), result["word"].to_list()
    top = [w[int(np.argmax(a))].decode() for w, a in zip(words, attribution)]
    assert sum(t == r["keyword"] for t, r in zip(top, rows)) / len(rows) < 0.5


TEXTS = ["Très bien, café crème!", "so good 😀😀 really", "東京は大きい city",
         " ".join(f"word{i}" for i in range(40))]


def test_word_offsets_slice_the_text_and_cut_words_are_reported(tiny_hub):
    core = cores.classifier_core(tiny_hub + "/encoder", 2)
    packer = cores.TextPacker(tiny_hub + "/preprocessor", 16)
    result = explain.Explainer(core, packer, explain.CLASS, steps=8)([tf.constant(TEXTS)])
    for i, text in enumerate(TEXTS):
        words = [w.decode() for w in result["word"][i].numpy()]
        starts, ends = result["word_start"][i].numpy(), result["word_end"][i].numpy()
        assert [text[s:e] for s, e in zip(starts, ends)] == words
        pieces = packer.preprocessor.tokenize(tf.constant([text]))
        assert len(words) == int(pieces.row_lengths(axis=1)[0])  # every word, none dropped
    assert "café" in [w.decode() for w in result["word"][0].numpy()]
    assert "😀😀" in [w.decode() for w in result["word"][1].numpy()]  # one [UNK] word
    truncated = result["truncated"].to_list()
    assert not any(truncated[0]) and not any(truncated[2])
    # 16 tokens: [CLS], 14 pieces, [SEP]; "word0" is 2 pieces ("word", "##0")
    cut = truncated[3]
    assert cut[0] is False and cut[-1] is True and sum(cut) >= 30
    attributions = result["attribution"].to_list()[3]
    assert all(a == 0 for a, c in zip(attributions, cut) if c and a == 0)


def _plain_encoder(tiny_hub, path):
    """The tiny encoder saved through plain tf.saved_model.save: a Hub encoder zoo did not
    build (no `embed`, no `call_embedded`)."""
    source = tf.saved_model.load(tiny_hub + "/encoder")
    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in hub.ENCODER_INPUTS}

    class Plain(tf.__internal__.tracking.AutoTrackable):
        def __init__(self):
            self.variables = list(source.variables)
            self.trainable_variables = list(source.trainable_variables)
            self.regularization_losses = []

        @tf.function
        def __call__(self, inputs, training=False):
            return source(inputs, training, False)

    plain = Plain()
    for training in (False, True):
        plain.__call__.get_concrete_function(spec, training)
    tf.saved_model.save(plain, path)
    return path


def test_occlusion_on_an_encoder_zoo_did_not_build(tiny_hub, tmp_path):
    encoder = _plain_encoder(tiny_hub, str(tmp_path / "plain"))
    keras.utils.set_random_seed(1)
    core = cores.classifier_core(encoder, 3)
    packer = cores.TextPacker(tiny_hub + "/preprocessor", 32)
    module = explain.ExplainServing(core, packer, explain.CLASS, ["a", "b", "c"])
    result = module.serve(text=tf.constant(["a fine film indeed", "dull"]),
                          target=tf.constant(["b", ""]))
    assert [m.decode() for m in result["method"].numpy()] == ["occlusion"] * 2
    assert np.isnan(result["baseline_score"].numpy()).all()
    assert result["target"].numpy()[0] == b"b"
    # a word's attribution: log p(b | text) - log p(b | the text without the word)
    without = cores.text_model(core, packer)(tf.constant(["a film indeed"]))
    expected = result["score"].numpy()[0] - float(tf.nn.log_softmax(without)[0, 1])
    assert result["word"].numpy()[0, 1] == b"fine"
    assert result["attribution"].numpy()[0, 1] == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("objective,head", [(explain.LABEL_SET, "classifier"),
                                            (explain.SCORE, "regressor")])
def test_the_flat_explain_signature_of_multi_label_and_regression(tiny_hub, objective, head):
    keras.utils.set_random_seed(2)
    encoder = tiny_hub + "/encoder"
    core = (cores.classifier_core(encoder, 3, pooling="mean") if head == "classifier"
            else cores.regression_core(encoder))
    packer = cores.TextPacker(tiny_hub + "/preprocessor", 32)
    names = ["x", "y", "z"] if objective is explain.LABEL_SET else None
    flat = FlatServing(explain.ExplainServing(core, packer, objective, names, pair=True))
    inputs = dict(text_a=tf.constant(["a fine film", "ok"]),
                  text_b=tf.constant(["yes it was", "no"]))
    if names:
        inputs["target"] = tf.constant(["z", ""])
    result = flat.serve(*inputs.values())  # (the flat function takes them in order)
    assert result["segment"].numpy()[0].tolist() == [0, 0, 0, 1, 1, 1]
    gap = np.abs(result["completeness_gap"].numpy())
    change = np.abs(result["score"].numpy() - result["baseline_score"].numpy())
    assert (gap <= 0.05 * change + 1e-6).all()
    if names:
        assert result["target"].numpy()[0] == b"z"
        assert 0 < result["probability"].numpy()[0] < 1
    else:
        assert result["objective"].numpy()[0] == b"score"
        scores = core(cores.TextPacker(tiny_hub + "/preprocessor", 32)(
            inputs["text_a"], inputs["text_b"]), training=False)
        np.testing.assert_allclose(result["score"].numpy(), scores.numpy(), atol=1e-5)


def test_top_k_is_the_sorted_probabilities(tiny_hub):
    keras.utils.set_random_seed(3)
    core = cores.classifier_core(tiny_hub + "/encoder", 5)
    packer = cores.TextPacker(tiny_hub + "/preprocessor", 32)
    names = ["a", "b", "c", "d", "e"]
    module = savedmodel.TextServing(core, packer, savedmodel.top_k_outputs(2), label_names=names,
                                    extra=[tf.TensorSpec([None], tf.int32, name="top_k")])
    result = module.serve(text=tf.constant(["one", "two words", "three more words", "x"]),
                          top_k=tf.constant([1, 3, 0, 9]))
    probabilities = result["probabilities"].numpy()
    labels = result["top_k_labels"].numpy()
    for row, k in enumerate([1, 3, 2, 5]):  # 0: the default, 2; 9: every class there is
        order = np.argsort(-probabilities[row], kind="stable")[:k]
        assert [x.decode() for x in labels[row][:k]] == [names[i] for i in order]
        assert result["top_k_probabilities"].numpy()[row][:k].tolist() == pytest.approx(
            probabilities[row][order].tolist())
        assert not any(labels[row][k:])


def test_the_export_has_top_k_and_predict_writes_it(keyword_model, tmp_path):
    model = serving.load(keyword_model["export"])
    rows = model.predict(["a wonderful day", "an awful day"], top_k=2)
    for row in rows:
        assert [t["label"] for t in row["top_k"]] == sorted(
            row["probabilities"], key=row["probabilities"].get, reverse=True)
        assert row["top_k"][0]["label"] == row["label"]
    with pytest.raises(ValueError, match="top_k must be a whole number"):
        model.predict(["x"], top_k=0)
    with pytest.raises(ValueError, match="has no threshold signature"):
        model.predict(["x"], threshold=0.3)
    output = str(tmp_path / "predictions.csv")
    table.run("classify", "predict", model_dir=keyword_model["model_dir"],
              predict_file=keyword_model["predict_file"], output_file=output, top_k=2,
              **keyword_model["settings"])
    written = list(csv.DictReader(open(output, encoding="utf-8")))
    assert list(written[0]) == ["id", "label", "score", "label_1", "score_1", "label_2",
                                "score_2"]
    assert all(r["label_1"] == r["label"] and float(r["score_1"]) >= float(r["score_2"])
               for r in written)


def test_evaluation_lists_its_errors(keyword_model):
    results = json.load(open(os.path.join(keyword_model["model_dir"], "eval_results.json")))
    confusion = np.array(results["confusion_matrix"])
    with open(os.path.join(keyword_model["model_dir"], "errors.csv"), encoding="utf-8") as f:
        errors = list(csv.DictReader(f))
    assert len(errors) == confusion.sum() - np.trace(confusion)
    dev = {r["id"]: r for r in csv.DictReader(open(keyword_model["eval_file"], encoding="utf-8"))}
    for row in errors:
        assert dev[row["id"]]["label"] == row["gold"] != row["predicted"]
        assert float(row["score"]) >= 0.5 >= float(row["gold_score"])
    assert [float(r["score"]) for r in errors] == sorted(
        (float(r["score"]) for r in errors), reverse=True)
    per_class = results["per_class"]
    assert set(per_class) == set(results["label_names"])
    assert sum(c["support"] for c in per_class.values()) == confusion.sum()
