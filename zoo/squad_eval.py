"""The official SQuAD v1.1 evaluation: answer normalisation, exact match and F1, max over golds.

Behaves as the official `evaluate-v1.1.py`: lower-case, drop punctuation and the articles
a/an/the, collapse whitespace; F1 over the bag of normalised tokens; each question scores its
best gold answer; EM and F1 are percentages over all questions of the data set (a question
without a prediction counts 0).
"""
import collections
import re
import string

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text):
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction, gold):
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction, gold):
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = collections.Counter(predicted) & collections.Counter(expected)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def evaluate(examples, predictions):
    """`examples`: SquadExamples with gold answers; `predictions`: {id: answer text}."""
    em = f1 = 0.0
    missing = 0
    for example in examples:
        if example.id not in predictions:
            missing += 1
            continue
        golds = [text for text, _ in example.answers]
        prediction = predictions[example.id]
        em += max(exact_match(prediction, g) for g in golds)
        f1 += max(f1_score(prediction, g) for g in golds)
    total = len(examples)
    return dict(exact_match=100.0 * em / total if total else 0.0,
                f1=100.0 * f1 / total if total else 0.0, num_questions=total,
                missing_predictions=missing)
