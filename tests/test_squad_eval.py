"""The official SQuAD v1.1 metric on hand-computed cases."""
import pytest

from zoo.data.squad import SquadExample
from zoo.squad_eval import evaluate, exact_match, f1_score, normalize_answer


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
