"""Tagging in the graph: tags, words of tokens, windows of long sentences, entities from tags."""
import numpy as np
import pytest
import tensorflow as tf

from zoo.data import tagging
from zoo.model.cores import TextPacker

TAGS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


@pytest.fixture(scope="module")
def packer(tiny_hub):
    return TextPacker(tiny_hub + "/preprocessor", 16)


def test_tag_vocabulary_has_both_halves_of_every_type(tmp_path):
    vocab = tagging.TagVocab({"O", "B-PER", "I-LOC"})  # no B-LOC, no I-PER in the data
    assert vocab.tags == TAGS and vocab.types == ["LOC", "PER"]
    assert [vocab.tags[i] for i in vocab.continuation] == ["O", "I-LOC", "I-LOC", "I-PER",
                                                           "I-PER"]
    assert vocab.problem(("O", "B-ORG")) == ("tag 'B-ORG' is not in the training data's tags "
                                             f"{TAGS}")
    vocab.save(str(tmp_path))
    assert tagging.TagVocab.load(str(tmp_path)).tags == TAGS


def _windows(packer, sentences, tags=None, seq_length=16, stride=8):
    vocab = tagging.TagVocab(TAGS)
    windower = tagging.TagWindower(packer, seq_length, stride)
    tokens = tf.ragged.constant([s for s in sentences])
    args = [tokens]
    if tags is not None:
        args += [tf.ragged.constant([vocab.encode(t) for t in tags], tf.int32),
                 tf.constant(vocab.continuation, tf.int32)]
    return {k: v.numpy() for k, v in windower.from_tokens(*args).items()}, vocab


def test_a_token_of_several_words_continues_its_tag_and_an_empty_token_is_kept(packer):
    sentence = ["In", "U.S.", "\u200b", "today"]  # "U.S." is 4 words; a zero-width space none
    out, vocab = _windows(packer, [sentence], [["O", "B-LOC", "O", "O"]])
    labels = out["labels"][0][out["labels"][0] >= 0]
    assert [vocab.tags[i] for i in labels] == ["O", "B-LOC", "I-LOC", "I-LOC", "I-LOC", "O",
                                               "O"]
    tokens = out["token"][0][out["token"][0] >= 0]
    assert tokens.tolist() == [0, 1, 2, 3]  # every token has its first word's first piece
    mask_id = packer.special_tokens["mask_id"]
    assert mask_id in out["input_word_ids"][0]


def test_inference_gives_an_empty_token_no_word_as_the_export_splits_raw_text(packer):
    sentence = ["In", "U.S.", "\u00b4", "\u200b", "today"]  # the last two give no word
    windower = tagging.TagWindower(packer, 16, 8)
    out = {k: v.numpy() for k, v in windower.inference(tf.ragged.constant([sentence])).items()}
    tokens = out["token"][0][out["token"][0] >= 0]
    assert tokens.tolist() == [0, 1, 4]
    assert packer.special_tokens["mask_id"] not in out["input_word_ids"][0]
    raw = windower.windows(packer.preprocessor.tokenize(tf.constant([" ".join(sentence)])))
    np.testing.assert_array_equal(raw["input_word_ids"].numpy(), out["input_word_ids"])


def test_a_long_sentence_is_windowed_and_every_word_predicted_once(packer):
    sentence = [f"w{i}" for i in range(40)]  # "w", "##<n>": two pieces a word
    out, _ = _windows(packer, [sentence, ["short", "one"]], seq_length=16, stride=6)
    long_windows = out["example"] == 0
    assert long_windows.sum() > 3 and out["windows"][long_windows][0] == long_windows.sum()
    owned = out["token"][long_windows][out["max_context"][long_windows]]
    assert sorted(owned.tolist()) == list(range(40))  # each token in exactly one window
    present = out["token"][long_windows]
    assert set(present[present >= 0].tolist()) == set(range(40))


@pytest.mark.parametrize("tags,expected", [
    (["B-PER", "I-PER", "O", "B-LOC"], [(0, 1, "PER"), (3, 3, "LOC")]),
    (["I-PER", "I-PER", "I-LOC", "B-LOC", "I-LOC"], [(0, 1, "PER"), (2, 2, "LOC"),
                                                      (3, 4, "LOC")]),
    (["O", "I-LOC", "B-PER", "B-PER"], [(1, 1, "LOC"), (2, 2, "PER"), (3, 3, "PER")]),
    (["O", "O"], []),
])
def test_entities_as_the_conll_scorer_reads_tags(tags, expected):
    vocab = tagging.TagVocab(TAGS)
    ids = tf.ragged.constant([vocab.encode(tags), vocab.encode(["B-PER"])], tf.int32)
    found = tagging.decode_entities(ids, tf.constant(vocab.tag_type, tf.int64),
                                    tf.constant(vocab.tag_begins))
    found = {k: v.numpy().tolist() for k, v in found.items()}
    entities = [(s, e, vocab.types[t]) for r, s, e, t in
                zip(found["row"], found["start"], found["end"], found["type"]) if r == 0]
    assert entities == expected
    assert (found["row"][-1], found["start"][-1], found["end"][-1]) == (1, 0, 0)
