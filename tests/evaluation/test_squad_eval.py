"""The official SQuAD v1.1 and v2.0 metrics on hand-computed cases."""
import pytest

from zoo.data.squad import SquadExample
from zoo.evaluation.squad_eval import (EvaluationV2, evaluate, exact_match, exact_v2, f1_score, f1_v2,
                            normalize_answer)


def test_normalisation_drops_case_punctuation_articles_and_spaces():
    assert normalize_answer("The  Eiffel-Tower, in   Paris!") == "eiffeltower in paris"
    assert normalize_answer("an apple a day") == "apple day"


def test_exact_match_and_f1_by_hand():
    assert exact_match("the Denver Broncos", "Denver Broncos") == 1.0
    # prediction tokens: denver broncos won; gold: broncos: precision 1/3, recall 1
    assert f1_score("Denver Broncos won", "Broncos") == pytest.approx(2 * (1 / 3) / (1 / 3 + 1))
    assert f1_score("Carolina", "Denver") == 0.0
    assert f1_score("", "Denver") == 0.0


def test_max_over_golds_and_missing_predictions_count_zero():
    examples = [SquadExample("1", "q", "c", [("Denver Broncos", 0), ("Broncos", 0)]),
                SquadExample("2", "q", "c", [("Santa Clara", 0)]),
                SquadExample("3", "q", "c", [("gold", 0)])]
    results = evaluate(examples, {"1": "Broncos", "2": "Santa Clara, California"})
    f1_second = 2 * (2 / 3) * 1 / (2 / 3 + 1)
    assert results["exact_match"] == pytest.approx(100 * 1 / 3)
    assert results["f1"] == pytest.approx(100 * (1 + f1_second + 0) / 3)
    assert results["missing_predictions"] == 1 and results["num_questions"] == 3


def _v2(qid, answers):
    return SquadExample(qid, "q", "c", [(a, 0) for a in answers], is_impossible=not answers)


def test_v2_exact_and_f1_score_an_empty_answer_only_against_no_answer():
    assert exact_v2("", "") == 1.0 and f1_v2("", "") == 1.0
    assert exact_v2("", "Denver") == 0.0 and f1_v2("", "Denver") == 0.0
    assert exact_v2("Denver", "") == 0.0 and f1_v2("Denver", "") == 0.0
    assert f1_v2("Denver Broncos won", "Broncos") == pytest.approx(f1_score("Denver Broncos won",
                                                                             "Broncos"))


def test_v2_evaluation_by_hand():
    evaluation = EvaluationV2()
    # (example, submitted answer, null score - best span score, best non-null answer)
    evaluation.add(_v2("a", ["Denver"]), "Denver", -3.0, "Denver")       # answered, right
    evaluation.add(_v2("b", ["Santa Clara"]), "", 1.0, "Santa Clara")    # abstained, wrongly
    evaluation.add(_v2("c", []), "", 2.0, "Paris")                       # abstained, right
    evaluation.add(_v2("d", []), "Rome", -1.0, "Rome")                   # answered, wrongly
    results = evaluation.results()
    assert results["total"] == 4 and results["HasAns_total"] == 2 and results["NoAns_total"] == 2
    assert results["exact"] == pytest.approx(50.0) and results["f1"] == pytest.approx(50.0)
    assert results["HasAns_exact"] == pytest.approx(50.0)
    assert results["NoAns_exact"] == pytest.approx(50.0)
    # Threshold -3.0 answers only a (abstains on d, b, c): a, c and d right, 3 of 4. Raising it
    # to 1.0 answers d (wrong) and b (right): 3 of 4 again, so the first, -3.0, stays.
    assert results["best_exact"] == pytest.approx(75.0) and results["best_exact_thresh"] == -3.0
    assert results["best_f1"] == pytest.approx(75.0) and results["best_f1_thresh"] == -3.0


def test_v2_gold_answers_that_normalise_to_nothing_count_as_no_answer():
    evaluation = EvaluationV2()
    evaluation.add(SquadExample("x", "q", "c", [("the", 0)]), "", 0.5, "Paris")
    results = evaluation.results()
    assert results["NoAns_total"] == 1 and results["exact"] == 100.0
