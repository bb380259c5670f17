"""SQuAD reading and windowing: offsets back to the original text, answers across window borders."""
import json

import numpy as np
import pytest

from zoo import hub
from zoo.data import squad
from zoo.data.text_files import DataError


@pytest.fixture(scope="module")
def pre(tiny_hub):
    return hub.load_preprocessor(tiny_hub + "/preprocessor")


@pytest.fixture(scope="module")
def special(pre):
    return {k: int(v) for k, v in pre.tokenize.get_special_tokens_dict().items()}


def _squad_file(tmp_path, paragraphs):
    data = {"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_read_squad(tmp_path):
    path = _squad_file(tmp_path, [{"context": "Paris is in France.", "qas": [
        {"id": "q1", "question": "Where is Paris?",
         "answers": [{"text": "France", "answer_start": 12}, {"text": "France.", "answer_start": 12}]}]}])
    (example,) = squad.read_squad(path)
    assert (example.id, example.answers) == ("q1", [("France", 12), ("France.", 12)])


@pytest.mark.parametrize("paragraph,message", [
    ({"context": "abc", "qas": [{"id": "x", "question": "q?",
                                 "answers": [{"text": "zz", "answer_start": 0}]}]},
     r"qas\[0\] \(id x\): answer 'zz' is not at character 0"),
    ({"context": " ", "qas": []}, r"paragraphs\[0\]: empty or missing context"),
    ({"context": "abc", "qas": [{"id": "x", "question": "q?", "answers": []}]}, "no answers"),
])
def test_bad_squad_names_the_place(tmp_path, paragraph, message):
    with pytest.raises(DataError, match=message):
        squad.read_squad(_squad_file(tmp_path, [paragraph]))


def test_invalid_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"data": [\n  {"title": }]}')
    with pytest.raises(DataError, match=r"bad.json:2: not valid JSON"):
        squad.read_squad(str(path))


def test_window_starts_step_by_doc_stride_and_cover_the_end():
    assert squad.window_starts(10, 4, 3) == [0, 3, 6]
    assert squad.window_starts(4, 4, 3) == [0]
    assert squad.window_starts(12, 4, 9) == [0, 4, 8]  # a step never skips tokens


def test_token_offsets_point_into_unicode_and_whitespace_contexts(pre, special):
    context = "Café  au\tlait — Ünïcödé\n東京 costs $3.50 ,ok."
    example = squad.SquadExample("u", "What?", context, [])
    (window,) = squad.make_windows(pre, [example], special, max_seq_length=64)
    inside = window.char_starts >= 0
    pieces = [context[s:e] for s, e in zip(window.char_starts[inside], window.char_ends[inside])]
    assert "".join(pieces) == "".join(context.split())  # every character but whitespace, in order
    # Wordpieces, so "lait" may come as "lai" + "t"; accents and CJK keep their original text.
    assert pieces[:2] == ["Café", "au"] and "東" in pieces and "Ünïcödé" in "".join(pieces)


def test_an_answer_across_a_window_border_trains_only_where_it_fits(pre, special):
    words = [f"w{i}" for i in range(60)]
    context = " ".join(words)
    answer = "w18 w19 w20"
    start = context.index(answer)
    example = squad.SquadExample("a", "which?", context, [(answer, start)])
    windows = squad.make_windows(pre, [example], special, max_seq_length=40, doc_stride=16,
                                 training=True)
    assert len(windows) > 2
    hits = 0
    for window in windows:
        if window.start_position == 0:
            continue
        hits += 1
        s, e = window.start_position, window.end_position
        assert context[window.char_starts[s]:window.char_ends[e]] == answer
        assert window.input_type_ids[s] == 1 and window.input_mask[e] == 1
    assert hits >= 1
    # The window cut inside the answer gets the "no answer here" target.
    cut = [w for w in windows if w.char_starts[w.input_mask.astype(bool)].max() > -1
           and start < w.char_ends.max() < start + len(answer)]
    assert all(w.start_position == w.end_position == 0 for w in cut)


def test_every_token_has_max_context_in_exactly_one_window(pre, special):
    context = " ".join(f"tok{i}" for i in range(200))
    windows = squad.make_windows(pre, [squad.SquadExample("m", "q?", context, [])], special,
                                 max_seq_length=48, doc_stride=20)
    owners = {}
    for w, window in enumerate(windows):
        for start in window.char_starts[window.max_context]:
            assert start not in owners
            owners[start] = w
    covered = {s for window in windows for s in window.char_starts if s >= 0}
    assert set(owners) == covered


def test_a_context_of_tens_of_thousands_of_characters(pre, special):
    context = ("The quick brown fox jumps over the lazy dog near the river bank. " * 500)[:32000]
    example = squad.SquadExample("long", "What jumps?", context, [("fox", 16)])
    windows = squad.make_windows(pre, [example], special, training=True)
    assert len(context) == 32000 and len(windows) > 40
    last = windows[-1]
    assert last.char_ends.max() == len(context.rstrip())  # the end of the context is covered
    assert windows[0].start_position > 0  # the answer is in the first window
    assert np.all([w.input_word_ids.shape == (384,) for w in windows])
