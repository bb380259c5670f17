"""The built preprocessor against the published bert_en_uncased_preprocess/3 (reference records)."""
import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras as keras

from tests.helpers import reference_file
from zoo.model import hub as zoo_hub


@pytest.fixture(scope="module")
def pre(tiny_hub):
    return zoo_hub.load_preprocessor(tiny_hub + "/preprocessor")


def _records(name):
    with open(reference_file(name), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_tokenize_matches_every_reference_record(pre):
    records = _records("tokenize_bert_en_uncased.jsonl")
    assert len(records) == 680
    tokens = pre.tokenize(tf.constant([r["text"] for r in records]))
    assert tokens.dtype == tf.int32 and tokens.shape.rank == 3
    got = tokens.to_list()
    mismatched = [r["text"][:60] for r, g in zip(records, got) if g != r["wordpieces"]]
    assert not mismatched


def test_bert_pack_inputs_matches_every_reference_record(pre):
    records = _records("preprocess_bert_en_uncased.jsonl")
    assert len(records) == 1094
    mismatched = []
    for r in records:
        segments = [pre.tokenize(tf.constant([s])) for s in r["segments"]]
        out = {k: v.numpy()[0] for k, v in
               pre.bert_pack_inputs(segments, seq_length=r["seq_length"]).items()}
        n, length = r["num_tokens"], r["seq_length"]
        ok = (all(len(v) == length for v in out.values())
              and out["input_word_ids"][:n].tolist() == r["input_word_ids"]
              and out["input_type_ids"][:n].tolist() == r["input_type_ids"]
              and out["input_mask"].tolist() == [1] * n + [0] * (length - n)
              and not out["input_word_ids"][n:].any() and not out["input_type_ids"][n:].any())
        if not ok:
            mismatched.append((r["segments"], length))
    assert not mismatched


def test_special_tokens_dict_matches_reference(pre):
    with open(reference_file("special_tokens_bert_en_uncased.json"), encoding="utf-8") as f:
        expected = json.load(f)
    got = {k: int(v) for k, v in pre.tokenize.get_special_tokens_dict().items()}
    assert got == expected


def test_calling_the_preprocessor_packs_one_segment_at_128(pre):
    out = pre(tf.constant(["Hello, World!", ""]))
    assert set(out) == {"input_word_ids", "input_mask", "input_type_ids"}
    for v in out.values():
        assert v.dtype == tf.int32 and v.shape == (2, 128)
    assert out["input_word_ids"][0, :6].numpy().tolist() == [101, 7592, 1010, 2088, 999, 102]
    assert out["input_mask"].numpy().sum(axis=1).tolist() == [6, 2]


def test_two_segments_are_trimmed_round_robin(pre):
    a = pre.tokenize(tf.constant(["one two three four five six seven eight"]))
    b = pre.tokenize(tf.constant(["alpha beta"]))
    out = pre.bert_pack_inputs([a, b], seq_length=9)
    # 9 - 3 special tokens = 6 left: round robin gives b both its tokens and a the other 4.
    types = out["input_type_ids"].numpy()[0].tolist()
    assert types == [0, 0, 0, 0, 0, 0, 1, 1, 1]
    assert out["input_mask"].numpy()[0].tolist() == [1] * 9


def test_tokenize_with_offsets_points_into_the_original_text(pre):
    text = "Naïve  Café, RÉSUMÉ!"
    ids, starts, limits = pre.tokenize_with_offsets(tf.constant([text]))
    raw = text.encode("utf-8")
    pieces = [raw[s:e].decode("utf-8") for s, e in
              zip(starts.flat_values.numpy(), limits.flat_values.numpy())]
    assert pieces == ["Naïve", "Café", ",", "RÉSUMÉ", "!"]
    assert ids.to_list() == pre.tokenize(tf.constant([text])).to_list()


def test_offsets_cover_whole_characters_on_every_reference_text(pre):
    texts = [r["text"] for r in _records("tokenize_bert_en_uncased.jsonl")]
    ids, starts, limits = pre.tokenize_with_offsets(tf.constant(texts))
    assert ids.to_list() == pre.tokenize(tf.constant(texts)).to_list()
    for text, row_starts, row_limits in zip(texts, starts.to_list(), limits.to_list()):
        raw = text.encode("utf-8")
        spans = [(s, e) for word_s, word_e in zip(row_starts, row_limits)
                 for s, e in zip(word_s, word_e)]
        for s, e in spans:
            assert 0 <= s < e <= len(raw), (text, s, e)
            raw[s:e].decode("utf-8")  # a span never cuts a character in half
        assert spans == sorted(spans)


def test_usable_as_keras_layers_the_tf_hub_way(tiny_hub):
    """The documented TF Hub pattern: tokenize and bert_pack_inputs as hub.KerasLayer's."""
    pre = zoo_hub.load_preprocessor(tiny_hub + "/preprocessor")
    text_a = keras.layers.Input(shape=(), dtype=tf.string)
    text_b = keras.layers.Input(shape=(), dtype=tf.string)
    tokenize = hub.KerasLayer(pre.tokenize)
    pack = hub.KerasLayer(pre.bert_pack_inputs, arguments=dict(seq_length=24))
    model = keras.Model([text_a, text_b], pack([tokenize(text_a), tokenize(text_b)]))
    out = model([tf.constant(["a question?"]), tf.constant(["an answer."])])
    assert out["input_word_ids"].shape == (1, 24)
    # [CLS] a question ? [SEP] | an answer . [SEP] | padding
    assert out["input_type_ids"].numpy()[0, :10].tolist() == [0] * 5 + [1] * 4 + [0]
    whole = keras.Model(text_a, hub.KerasLayer(tiny_hub + "/preprocessor")(text_a))
    np.testing.assert_array_equal(
        whole(tf.constant(["Hello, World!"]))["input_word_ids"].numpy()[0, :6],
        [101, 7592, 1010, 2088, 999, 102])


MULTILINGUAL_TEXTS = [
    "Café Zürich, naïve façade!",            # accents: kept when cased, stripped when uncased
    "北京是中国的首都。",                      # CJK ideographs: one word each
    "日本語のテキストです",                    # kana are not ideographs: one word between them
    "Ahmed said: 3ayez a5od el kitab bokra",  # Arabizi, as seed workflows fine-tune on
    "مرحبا بالعالم، كيف الحال؟",              # Arabic, with Arabic punctuation
    "RUNNING runners run\tfast\nÉCOLE",       # case, tabs and new lines, a capital accent
    "Wörter, die niemand kennt: xylofonist",  # words that are not in the vocabulary: [UNK]
]


def _multilingual_vocab(path, lower_case):
    """A multilingual-style vocabulary built for the test from the reference tokenizer's words:
    whole words, some only as pieces (run + ##ning, ##ners), single CJK characters, and none of
    the words of the last text (they become [UNK]). (Uncased, the kana word loses its dakuten,
    "です" -> "てす", as accent stripping does in Google's uncased tokenizer.)"""
    from tests.hub_build import reference_tokenizer
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "run", "##ning", "##ners", "##s",
              "RUN", "##NING"]
    for text in MULTILINGUAL_TEXTS[:-1]:
        for word in reference_tokenizer.words(text, lower_case):
            if word.lower() not in ("running", "runners") and word not in tokens:
                tokens.append(word)
    tokens += [":", ","]
    path.write_text("\n".join(dict.fromkeys(tokens)) + "\n", encoding="utf-8")
    return {token: i for i, token in enumerate(dict.fromkeys(tokens))}


@pytest.mark.parametrize("lower_case", [False, True])
def test_a_multilingual_vocabulary_tokenizes_as_the_reference_does(tmp_path, lower_case):
    from tests.hub_build import reference_tokenizer
    from zoo.hub_build import build
    vocab_file = tmp_path / "vocab.txt"
    vocab = _multilingual_vocab(vocab_file, lower_case)
    build.save_preprocessor(str(tmp_path / "preprocessor"), str(vocab_file), lower_case)
    pre = zoo_hub.load_preprocessor(str(tmp_path / "preprocessor"))
    got = pre.tokenize(tf.constant(MULTILINGUAL_TEXTS)).to_list()
    expected = [reference_tokenizer.tokenize(t, vocab, lower_case) for t in MULTILINGUAL_TEXTS]
    for text, ours, theirs in zip(MULTILINGUAL_TEXTS, got, expected):
        assert ours == theirs, text
    names = {i: t for t, i in vocab.items()}
    first = [names[i] for word in got[0] for i in word]
    assert first == (["cafe", "zurich", ",", "naive", "facade", "!"] if lower_case
                     else ["Café", "Zürich", ",", "naïve", "façade", "!"])
    assert [names[i] for word in got[1] for i in word][:3] == ["北", "京", "是"]
    assert len(got[2]) == 4  # 日, 本, 語, then the kana as one word
    assert got[-1][-1] == [vocab["[UNK]"]]
