"""From start/end logits of every window to each question's best answer span and n-best list."""
import collections

import numpy as np


def _candidates(window, start_logits, end_logits, n_best_size, max_answer_length):
    """(score, start logit, end logit, char start, char end) of a window's valid spans."""
    starts = np.argsort(start_logits)[::-1][:n_best_size]
    ends = np.argsort(end_logits)[::-1][:n_best_size]
    for s in starts:
        if window.char_starts[s] < 0 or not window.max_context[s]:
            continue
        for e in ends:
            if window.char_starts[e] < 0 or e < s or e - s + 1 > max_answer_length:
                continue
            yield (float(start_logits[s] + end_logits[e]), float(start_logits[s]),
                   float(end_logits[e]), int(window.char_starts[s]), int(window.char_ends[e]))


def best_answers(examples, windows, start_logits, end_logits, n_best_size=20,
                 max_answer_length=30):
    """Returns ({id: answer text}, {id: n-best list}), one entry for every example.

    Each n-best entry holds `text`, `probability` (softmax over the n-best scores), the
    logits and the answer's character `start` and `end` in the context. An example with no
    valid span (a context too short, say) gets the empty answer.
    """
    by_example = collections.defaultdict(list)
    for window, starts, ends in zip(windows, start_logits, end_logits):
        by_example[window.example_index].extend(
            _candidates(window, starts, ends, n_best_size, max_answer_length))
    predictions, nbest = {}, {}
    for index, example in enumerate(examples):
        candidates = sorted(set(by_example[index]), reverse=True)[:n_best_size]
        if not candidates:
            predictions[example.id] = ""
            nbest[example.id] = [dict(text="", probability=1.0, start=0, end=0)]
            continue
        scores = np.array([c[0] for c in candidates])
        probabilities = np.exp(scores - scores.max())
        probabilities /= probabilities.sum()
        entries = [dict(text=example.context[c[3]:c[4]], probability=float(p), start_logit=c[1],
                        end_logit=c[2], start=c[3], end=c[4])
                   for c, p in zip(candidates, probabilities)]
        predictions[example.id] = entries[0]["text"]
        nbest[example.id] = entries
    return predictions, nbest
