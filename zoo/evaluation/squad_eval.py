"""The official SQuAD v1.1 evaluation: answer normalisation, exact match and F1, max over golds.

Behaves as the official `evaluate-v1.1.py`: lower-case, drop punctuation and the articles
a/an/the, collapse whitespace; F1 over the bag of normalised tokens; each question scores its
best gold answer; EM and F1 are percentages over all questions of the data set (a question
without a prediction counts 0). `Evaluation` adds questions one at a time, so predictions can
be scored as they stream.
"""
import collections
import math
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


def _tokens_v2(text):
    return normalize_answer(text).split() if text else []


def exact_v2(gold, prediction):
    """The official v2.0 exact match: normalised strings equal ("" only matches "")."""
    return float(normalize_answer(gold) == normalize_answer(prediction))


def f1_v2(gold, prediction):
    """The official v2.0 F1: as v1.1, except that an empty gold or prediction scores 1 only
    when both are empty."""
    gold_tokens, predicted = _tokens_v2(gold), _tokens_v2(prediction)
    if not gold_tokens or not predicted:
        return float(gold_tokens == predicted)
    return f1_score(prediction, gold)


def _best_threshold(scores, na_probs, has_answer, answered):
    """The official `find_best_thresh`: start from every question answered "no answer", then
    answer them in order of rising no-answer probability; the best total and its threshold."""
    current = best = float(sum(1 for h in has_answer if not h))
    threshold = 0.0
    for i in sorted(range(len(scores)), key=lambda i: na_probs[i]):
        if has_answer[i]:
            current += scores[i]
        elif answered[i]:
            current -= 1
        if current > best:
            best, threshold = current, na_probs[i]
    finite = threshold if math.isfinite(threshold) else None  # JSON has no infinity
    return 100.0 * best / len(scores) if scores else 0.0, finite


class EvaluationV2:
    """The official SQuAD v2.0 evaluation (`evaluate-v2.0.py`), question by question.

    `add(example, prediction, na_prob, best_answer)`: the submitted `prediction` ("" for no
    answer), the no-answer score difference `na_prob` (null score - best span score) and the
    best non-null answer. `results()`: exact and F1 overall, on answerable (HasAns) and on
    unanswerable (NoAns) questions, and `best_exact` / `best_f1` with their thresholds: the
    official threshold search over each question's best non-null answer (the threshold on
    `na_prob` that would have scored best on this set).
    """

    def __init__(self):
        self.has_answer, self.exact, self.f1 = [], [], []
        self.na_probs, self.best_exact, self.best_f1, self.answered = [], [], [], []

    def add(self, example, prediction, na_prob, best_answer):
        golds = [text for text, _ in example.answers if normalize_answer(text)] or [""]
        self.has_answer.append(golds != [""])
        self.exact.append(max(exact_v2(g, prediction) for g in golds))
        self.f1.append(max(f1_v2(g, prediction) for g in golds))
        self.na_probs.append(na_prob)
        self.best_exact.append(max(exact_v2(g, best_answer) for g in golds))
        self.best_f1.append(max(f1_v2(g, best_answer) for g in golds))
        self.answered.append(bool(best_answer))

    def results(self):
        def mean(values, keep=None):
            chosen = [v for i, v in enumerate(values) if keep is None or keep(i)]
            return 100.0 * sum(chosen) / len(chosen) if chosen else 0.0

        has = lambda i: self.has_answer[i]  # noqa: E731
        has_not = lambda i: not self.has_answer[i]  # noqa: E731
        total = len(self.exact)
        best_exact, exact_threshold = _best_threshold(self.best_exact, self.na_probs,
                                                      self.has_answer, self.answered)
        best_f1, f1_threshold = _best_threshold(self.best_f1, self.na_probs, self.has_answer,
                                                self.answered)
        return dict(exact=mean(self.exact), f1=mean(self.f1), total=total,
                    HasAns_exact=mean(self.exact, has), HasAns_f1=mean(self.f1, has),
                    HasAns_total=sum(self.has_answer),
                    NoAns_exact=mean(self.exact, has_not), NoAns_f1=mean(self.f1, has_not),
                    NoAns_total=total - sum(self.has_answer),
                    best_exact=best_exact, best_exact_thresh=exact_threshold,
                    best_f1=best_f1, best_f1_thresh=f1_threshold)
