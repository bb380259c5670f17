"""From start/end logits of windows to each question's best answer spans, in the graph.

One implementation for `--mode=predict`, evaluation and the exported model, so they agree by
construction. As in Google BERT's `write_predictions`:
- per window, the `n_best` highest start and end logits of its real tokens (padding, which a
  window of a padded batch has and where the encoder may compute nothing, never counts) give the
  candidate spans; a span counts
  if both ends are context tokens, its start is a max-context token of the window
  (`zoo.data.squad_windows`), it does not end before it starts and is at most
  `max_answer_length` tokens long; its score is start logit + end logit;
- per question, the `n_best` best spans over all its windows, ties going to the earlier window
  (then the higher-ranked start, then end), with softmax probabilities over them;
- the null score of a window is the score of the [CLS] span (`start_logits[0] + end_logits[0]`);
  a question's is the smallest over its windows (for unanswerable questions, SQuAD 2.0).
"""
import numpy as np
import tensorflow as tf

FIELDS = ("score", "start_logit", "end_logit", "char_start", "char_end")


def window_candidates(start_logits, end_logits, input_mask, char_start, char_end, max_context,
                      n_best, max_answer_length):
    """Per window `[windows, n_best]`: the `FIELDS` of its best valid spans (score -inf where
    there are fewer), and its `null_score` `[windows]`. `input_mask` is 0 at padding."""
    real = tf.cast(input_mask, tf.bool)
    start_logits = tf.where(real, start_logits, -np.inf)
    end_logits = tf.where(real, end_logits, -np.inf)
    k = tf.minimum(n_best, tf.shape(start_logits)[1])
    starts = tf.math.top_k(start_logits, k)
    ends = tf.math.top_k(end_logits, k)
    s, e = starts.indices[:, :, None], ends.indices[:, None, :]
    s_char_start = tf.gather(char_start, starts.indices, batch_dims=1)
    s_context = tf.gather(max_context, starts.indices, batch_dims=1)
    e_char_end = tf.gather(char_end, ends.indices, batch_dims=1)
    valid = ((s_char_start >= 0) & s_context)[:, :, None] & (e_char_end >= 0)[:, None, :] & (
        e >= s) & (e - s < max_answer_length)
    scores = tf.where(valid, starts.values[:, :, None] + ends.values[:, None, :], -np.inf)
    flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
    best = tf.math.top_k(flat, tf.minimum(n_best, tf.shape(flat)[1]))
    s_rank, e_rank = best.indices // k, best.indices % k
    pick = lambda values, rank: tf.gather(values, rank, batch_dims=1)  # noqa: E731
    candidates = dict(score=best.values, start_logit=pick(starts.values, s_rank),
                      end_logit=pick(ends.values, e_rank),
                      char_start=pick(s_char_start, s_rank), char_end=pick(e_char_end, e_rank))
    null_score = start_logits[:, 0] + end_logits[:, 0]
    return candidates, null_score


def merge_candidates(candidates, null_score, example, num_examples, n_best):
    """Per question `[num_examples, n_best]`: the best of its windows' candidates
    (`example[w]` is window w's question, windows in order), with `probability` (softmax over
    the valid ones, 0 elsewhere), and its `null_score` (the smallest of its windows')."""
    rows = lambda t: tf.RaggedTensor.from_value_rowids(  # noqa: E731
        tf.reshape(t, [-1]), tf.repeat(example, tf.shape(t)[1]), num_examples, validate=False)
    scores = rows(candidates["score"]).to_tensor(default_value=-np.inf)
    k = tf.minimum(n_best, tf.shape(scores)[1])
    best = tf.math.top_k(scores, k)
    merged = {name: tf.gather(rows(candidates[name]).to_tensor(), best.indices, batch_dims=1)
              for name in FIELDS if name != "score"}
    merged["score"] = best.values
    valid = best.values > -np.inf
    shifted = tf.where(valid, best.values - tf.reduce_max(best.values, axis=1, keepdims=True), 0.0)
    weights = tf.where(valid, tf.exp(shifted), 0.0)
    merged["probability"] = tf.math.divide_no_nan(weights,
                                                  tf.reduce_sum(weights, axis=1, keepdims=True))
    merged["null_score"] = tf.math.unsorted_segment_min(null_score, example, num_examples)
    return merged


def nbest_entries(context, merged, row):
    """The n-best list of question `row` of `merge_candidates`' (NumPy) output: dicts of
    `text`, `probability`, `start_logit`, `end_logit`, `start`, `end` (characters in
    `context`), best first. A question with no valid span gets one empty entry."""
    entries = []
    for i in range(len(merged["score"][row])):
        if merged["score"][row][i] == -np.inf:
            break
        start, end = int(merged["char_start"][row][i]), int(merged["char_end"][row][i])
        entries.append(dict(text=context[start:end],
                            probability=float(merged["probability"][row][i]),
                            start_logit=float(merged["start_logit"][row][i]),
                            end_logit=float(merged["end_logit"][row][i]), start=start, end=end))
    return entries or [dict(text="", probability=1.0, start=0, end=0)]
