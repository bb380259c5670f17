"""Best spans over windows: n-best candidates, max context, answer length, empty answers, ties."""
import numpy as np
import pytest
import tensorflow as tf

from zoo.evaluation import spans

CONTEXT = "alpha beta gamma delta"
TOKENS = {3: (0, 5), 4: (6, 10), 5: (11, 16), 6: (17, 22)}  # sequence position -> characters


def _window(char_spans=TOKENS, max_context=None, seq=8):
    starts, ends = np.full(seq, -1, np.int32), np.full(seq, -1, np.int32)
    for position, (s, e) in char_spans.items():
        starts[position], ends[position] = s, e
    context = np.zeros(seq, bool)
    context[list(char_spans if max_context is None else max_context)] = True
    return starts, ends, context


def _best(windows, start_logits, end_logits, example=None, n_best_size=20,
          max_answer_length=30, input_mask=None):
    """merge_candidates(window_candidates(...)) as the export and predict run them."""
    starts, ends, context = (np.stack(parts) for parts in zip(*windows))
    input_mask = np.ones(starts.shape, np.int32) if input_mask is None else np.array(input_mask)
    found, null = spans.window_candidates(
        tf.constant(np.array(start_logits, np.float32)), tf.constant(np.array(end_logits, np.float32)),
        input_mask, starts, ends, context, n_best_size, max_answer_length)
    example = np.zeros(len(windows), np.int64) if example is None else np.array(example)
    merged = spans.merge_candidates(found, null, example, int(example.max()) + 1, n_best_size)
    return {k: v.numpy() for k, v in merged.items()}


def test_best_span_across_windows_and_nbest():
    start_a, end_a = np.zeros(8), np.zeros(8)
    start_a[4], end_a[5] = 2.0, 2.0  # "beta gamma": 4.0
    start_b, end_b = np.zeros(8), np.zeros(8)
    start_b[6], end_b[6] = 3.0, 3.0  # "delta": 6.0, in the other window
    merged = _best([_window(), _window()], [start_a, start_b], [end_a, end_b], n_best_size=3)
    entries = spans.nbest_entries(CONTEXT, merged, 0)
    assert entries[0]["text"] == "delta" and (entries[0]["start"], entries[0]["end"]) == (17, 22)
    # Candidates come from each window's 3 best start and end logits, as in Google BERT: the
    # ties at 0 pick positions 0-1, outside the context, so each window gives one span.
    assert [e["text"] for e in entries] == ["delta", "beta gamma"]
    assert sum(e["probability"] for e in entries) == pytest.approx(1.0)
    assert [e["probability"] for e in entries] == sorted([e["probability"] for e in entries],
                                                         reverse=True)
    assert entries[0]["start_logit"] == 3.0 and entries[0]["end_logit"] == 3.0


def test_padding_gives_no_candidate_however_high_its_logits():
    """Padding positions (mask 0; the encoder computes nothing there in inference, so their
    logits are the head's bias alone) never fill the n-best start and end candidates."""
    start, end = np.zeros(10), np.zeros(10)
    start[4], end[5] = 1.0, 1.0  # "beta gamma"
    start[8:], end[8:] = 5.0, 5.0  # padding
    mask = [[1] * 8 + [0] * 2]
    merged = _best([_window(seq=10)], [start], [end], n_best_size=2, input_mask=mask)
    assert spans.nbest_entries(CONTEXT, merged, 0)[0]["text"] == "beta gamma"
    # the same logits with positions 8 and 9 real (but outside the context): no span is found
    # among the two best starts and ends
    unmasked = _best([_window(seq=10)], [start], [end], n_best_size=2)
    assert spans.nbest_entries(CONTEXT, unmasked, 0)[0]["text"] == ""


def test_length_limit_max_context_and_empty_answers():
    start, end = np.zeros(8), np.zeros(8)
    start[3], end[6] = 5.0, 5.0  # "alpha ... delta" is 4 tokens long
    short = _best([_window()], [start], [end], max_answer_length=3)
    assert spans.nbest_entries(CONTEXT, short, 0)[0]["text"] != CONTEXT
    full = _best([_window()], [start], [end], max_answer_length=4)
    assert spans.nbest_entries(CONTEXT, full, 0)[0]["text"] == CONTEXT
    not_here = _window(max_context=[])  # no start token has its best context here
    merged = _best([not_here], [start], [end])
    assert spans.nbest_entries(CONTEXT, merged, 0) == [dict(text="", probability=1.0, start=0,
                                                            end=0)]
    assert merged["score"][0][0] == -np.inf


def test_a_tie_goes_to_the_earlier_window_and_questions_stay_apart():
    start, end = np.zeros(8), np.zeros(8)
    start[4], end[4] = 1.0, 1.0  # "beta" scores 2.0 in both windows of question 0
    other = _window({3: (6, 10), 4: (0, 5)})  # the same scores point at other characters
    merged = _best([_window(), other, _window()], [start, start, start], [end, end, end],
                   example=[0, 0, 1])
    assert spans.nbest_entries(CONTEXT, merged, 0)[0]["text"] == "beta"  # window 0 first
    assert spans.nbest_entries(CONTEXT, merged, 1)[0]["text"] == "beta"
    merged = _best([other, _window()], [start, start], [end, end])
    assert spans.nbest_entries(CONTEXT, merged, 0)[0]["text"] == "alpha"  # now `other` first


def test_null_score_is_the_smallest_over_a_questions_windows():
    start, end = np.zeros(8), np.zeros(8)
    low, high = start.copy(), start.copy()
    low[0], high[0] = -2.0, 3.0
    merged = _best([_window(), _window(), _window()], [high, low, high], [end, end, end],
                   example=[0, 0, 1])
    assert merged["null_score"].tolist() == [-2.0, 3.0]
