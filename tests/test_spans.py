"""Best spans over windows: n-best candidates, max context, answer length, empty answers."""
import numpy as np
import pytest

from zoo import spans
from zoo.data.squad import SquadExample, Window


def _window(index, char_spans, max_context=None, seq=8):
    starts = np.full(seq, -1)
    ends = np.full(seq, -1)
    for position, (s, e) in char_spans.items():
        starts[position], ends[position] = s, e
    context = np.zeros(seq, bool)
    for position in (max_context if max_context is not None else char_spans):
        context[position] = True
    zeros = np.zeros(seq, np.int32)
    return Window(index, zeros, zeros, zeros, starts, ends, context)


CONTEXT = "alpha beta gamma delta"
TOKENS = {3: (0, 5), 4: (6, 10), 5: (11, 16), 6: (17, 22)}


def test_best_span_across_windows_and_nbest():
    example = SquadExample("q", "?", CONTEXT, [])
    first, second = _window(0, TOKENS), _window(0, TOKENS)
    start_a, end_a = np.zeros(8), np.zeros(8)
    start_a[4], end_a[5] = 2.0, 2.0  # "beta gamma": 4.0
    start_b, end_b = np.zeros(8), np.zeros(8)
    start_b[6], end_b[6] = 3.0, 3.0  # "delta": 6.0, in the other window
    predictions, nbest = spans.best_answers([example], [first, second], [start_a, start_b],
                                            [end_a, end_b], n_best_size=3)
    assert predictions == {"q": "delta"}
    entries = nbest["q"]
    assert entries[0]["text"] == "delta" and (entries[0]["start"], entries[0]["end"]) == (17, 22)
    assert sum(e["probability"] for e in entries) == pytest.approx(1.0)
    assert [e["probability"] for e in entries] == sorted([e["probability"] for e in entries],
                                                         reverse=True)


def test_length_limit_max_context_and_empty_answers():
    example = SquadExample("q", "?", CONTEXT, [])
    start, end = np.zeros(8), np.zeros(8)
    start[3], end[6] = 5.0, 5.0  # "alpha ... delta" is 4 tokens long
    window = _window(0, TOKENS)
    assert spans.best_answers([example], [window], [start], [end],
                              max_answer_length=3)[0]["q"] != CONTEXT
    assert spans.best_answers([example], [window], [start], [end],
                              max_answer_length=4)[0]["q"] == CONTEXT
    not_here = _window(0, TOKENS, max_context=[])  # no start token has its best context here
    predictions, nbest = spans.best_answers([example], [not_here], [start], [end])
    assert predictions == {"q": ""} and nbest["q"][0]["text"] == ""
