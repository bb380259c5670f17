"""The one SQuAD windowing: layout, offsets back to the original text, targets, max context,
and the streamed datasets (exact resume, flat memory)."""
import numpy as np
import pytest
import tensorflow as tf

from zoo.base.errors import UsageError
from zoo.data import squad_windows
from zoo.data.squad import SquadExample, SquadList
from zoo.model.cores import TextPacker


@pytest.fixture(scope="module")
def packer(tiny_hub):
    return TextPacker(tiny_hub + "/preprocessor", 128)


def _windows(packer, examples, seq, stride=128, max_query=16, training=False):
    windower = squad_windows.Windower(packer, seq, stride, max_query)
    args = [tf.constant([e.question for e in examples]), tf.constant([e.context for e in examples])]
    if training:
        starts = [e.answers[0][1] if e.answers else -1 for e in examples]
        ends = [s + len(e.answers[0][0]) if e.answers else -1 for s, e in zip(starts, examples)]
        args += [tf.constant(starts, tf.int64), tf.constant(ends, tf.int64)]
    return {k: v.numpy() for k, v in windower(*args).items()}


def test_window_starts_step_by_doc_stride_and_cover_the_end(packer):
    context = "a b c d e f g h i j"  # ten one-token words, two characters apart
    # question "q" (1 token) + [CLS] [SEP] [SEP] + 4 context tokens per window
    windows = _windows(packer, [SquadExample("s", "q", context, [])], seq=8, stride=3, max_query=1)
    firsts = [row[row >= 0][0] for row in windows["char_start"]]
    assert firsts == [0, 6, 12]  # tokens 0, 3, 6: the step is doc_stride
    assert windows["windows"].tolist() == [3, 3, 3] and windows["window"].tolist() == [0, 1, 2]
    windows = _windows(packer, [SquadExample("s", "q", "a b c d", [])], seq=8, stride=3, max_query=1)
    assert len(windows["example"]) == 1
    windows = _windows(packer, [SquadExample("s", "q", " ".join("abcdefghijkl"), [])], seq=8, max_query=1,
                       stride=9)
    assert [row[row >= 0][0] for row in windows["char_start"]] == [0, 8, 16]  # never skips


def test_token_offsets_point_into_unicode_and_whitespace_contexts(packer):
    context = "Café  au\tlait — Ünïcödé\n東京 costs $3.50 ,ok."
    windows = _windows(packer, [SquadExample("u", "What?", context, [])], seq=64)
    starts, ends = windows["char_start"][0], windows["char_end"][0]
    inside = starts >= 0
    pieces = [context[s:e] for s, e in zip(starts[inside], ends[inside])]
    assert "".join(pieces) == "".join(context.split())  # every character but whitespace, in order
    # Wordpieces, so "lait" may come as "lai" + "t"; accents and CJK keep their original text.
    assert pieces[:2] == ["Café", "au"] and "東" in pieces and "Ünïcödé" in "".join(pieces)
    assert windows["input_type_ids"][0][inside].all() and windows["max_context"][0][inside].all()


def test_an_answer_across_a_window_border_trains_only_where_it_fits(packer):
    words = [f"w{i}" for i in range(60)]
    context = " ".join(words)
    answer = "w16 w17 w18"  # window 0 ends inside it
    start = context.index(answer)
    example = SquadExample("a", "which?", context, [(answer, start)])
    windows = _windows(packer, [example], seq=40, stride=16, training=True)
    assert len(windows["example"]) > 2
    hits = 0
    for w, (s, e) in enumerate(zip(windows["start_position"], windows["end_position"])):
        if s == 0:
            continue
        hits += 1
        assert context[windows["char_start"][w][s]:windows["char_end"][w][e]] == answer
        assert windows["input_type_ids"][w][s] == 1 and windows["input_mask"][w][e] == 1
    assert hits >= 1
    # The window cut inside the answer gets the "no answer here" target.
    cut = [w for w in range(len(windows["example"]))
           if start < windows["char_end"][w].max() < start + len(answer)]
    assert cut and all(windows["start_position"][w] == windows["end_position"][w] == 0
                       for w in cut)


def test_every_token_has_max_context_in_exactly_one_window_the_first_of_a_tie(packer):
    context = " ".join(f"tok{i}" for i in range(200))
    windows = _windows(packer, [SquadExample("m", "q?", context, [])], seq=48, stride=20)
    owners = {}
    for w, (starts, flags) in enumerate(zip(windows["char_start"], windows["max_context"])):
        for start in starts[flags]:
            assert start not in owners
            owners[start] = w
    covered = {s for row in windows["char_start"] for s in row if s >= 0}
    assert set(owners) == covered
    # Google BERT's rule: min(left, right context) + 0.01 x window length, the first window wins
    # a tie. Recompute it from the windows themselves and find real ties.
    scores = {}
    for w, starts in enumerate(windows["char_start"]):
        inside = np.flatnonzero(starts >= 0)
        for rel, position in enumerate(inside):
            score = min(rel, len(inside) - 1 - rel) + 0.01 * len(inside)
            scores.setdefault(starts[position], []).append((score, w))
    ties = 0
    for start, candidates in scores.items():
        best = max(s for s, _ in candidates)
        winners = [w for s, w in candidates if s == best]
        ties += len(winners) > 1
        assert owners[start] == winners[0]  # the first window of a tie
    assert ties > 0


def test_a_context_of_tens_of_thousands_of_characters(packer):
    context = ("The quick brown fox jumps over the lazy dog near the river bank. " * 500)[:32000]
    example = SquadExample("long", "What jumps?", context, [("fox", 16)])
    windows = _windows(packer, [example], seq=384, training=True)
    assert len(context) == 32000 and len(windows["example"]) > 40
    assert windows["char_end"][-1].max() == len(context.rstrip())  # the end is covered
    assert windows["start_position"][0] > 0  # the answer is in the first window
    assert windows["input_word_ids"].shape[1] == 384


def test_no_room_for_the_context(packer):
    with pytest.raises(UsageError, match="max_seq_length 64 leaves no room"):
        squad_windows.Windower(packer, 64, 16, 64)


def _questions(n):
    cities = ["Paris", "Rome", "Lisbon", "Vienna"]
    examples = []
    for i in range(n):
        context = " ".join(f"word{j}" for j in range(i % 5 * 30)) + f" The capital is {cities[i % 4]}."
        examples.append(SquadExample(f"q{i}", f"Capital {i}?", context,
                                     [(cities[i % 4], context.index(cities[i % 4]))]))
    return SquadList(examples)


def test_training_windows_depend_on_the_seed_alone(packer):
    windower = squad_windows.Windower(packer, 48, 16, 12)
    source = _questions(20)
    questions, count = squad_windows.count_windows(windower, source)

    def epoch(seed, batch_size=4):
        batches = squad_windows.training_windows(windower, source, batch_size, seed, 8)
        return np.concatenate([b[0]["input_word_ids"].numpy() for b in batches])

    first, again, other = epoch(3), epoch(3), epoch(4)
    assert questions == 20 and len(first) == count // 4 * 4  # whole batches only
    np.testing.assert_array_equal(first, again)  # a resumed epoch sees the same batches
    assert not np.array_equal(first, other)
    every = epoch(4, 1)  # every window, in another order
    assert len(every) == count and {tuple(r) for r in first} <= {tuple(r) for r in every}


def test_inference_windows_keep_question_order_and_counts(packer):
    windower = squad_windows.Windower(packer, 48, 16, 12)
    source = _questions(9)

    def rows():
        for index, example in enumerate(source.questions()):
            yield index, example.question, example.context

    metas = [meta for _, meta in squad_windows.inference_windows(windower, rows, 5)]
    index = np.concatenate([m["index"].numpy() for m in metas])
    windows = np.concatenate([m["windows"].numpy() for m in metas])
    assert index.tolist() == sorted(index.tolist()) and set(index.tolist()) == set(range(9))
    for i in range(9):
        assert (index == i).sum() == windows[index == i][0]
    assert len(index) == squad_windows.count_windows(windower, source)[1]
