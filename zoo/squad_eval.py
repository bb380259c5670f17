"""The official SQuAD v1.1 evaluation: answer normalisation, exact match and F1, max over golds.

Behaves as the official `evaluate-v1.1.py`: lower-case, drop punctuation and the articles
a/an/the, collapse whitespace; F1 over the bag of normalised tokens; each question scores its
best gold answer; EM and F1 are percentages over all questions of the data set (a question
without a prediction counts 0). `Evaluation` adds questions one at a time, so predictions can
be scored as they stream.
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


class Evaluation:
    """Exact match and F1 summed over questions added one by one (`add`); `results()`."""

    def __init__(self):
        self.em = self.f1 = 0.0
        self.questions = self.missing = 0

    def add(self, example, prediction):
        """`example`: a SquadExample with gold answers; `prediction`: its answer text, or None
        (no prediction: counts 0)."""
        self.questions += 1
        if prediction is None:
            self.missing += 1
            return
        golds = [text for text, _ in example.answers]
        self.em += max(exact_match(prediction, g) for g in golds)
        self.f1 += max(f1_score(prediction, g) for g in golds)

    def results(self):
        total = self.questions
        return dict(exact_match=100.0 * self.em / total if total else 0.0,
                    f1=100.0 * self.f1 / total if total else 0.0, num_questions=total,
                    missing_predictions=self.missing)


def evaluate(examples, predictions):
    """`examples`: SquadExamples with gold answers; `predictions`: {id: answer text}."""
    evaluation = Evaluation()
    for example in examples:
        evaluation.add(example, predictions.get(example.id))
    return evaluation.results()
