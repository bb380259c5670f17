"""zoo.training.steps: how a multi-task epoch mixes its tasks."""
import pytest

from zoo.training.steps import sample_schedule, sampling_probabilities


def test_proportional_uniform_and_temperature_sampling():
    counts = {"big": 900, "small": 100}
    assert sampling_probabilities(counts) == pytest.approx({"big": 0.9, "small": 0.1})
    assert sampling_probabilities(counts, "uniform") == {"big": 0.5, "small": 0.5}
    # p ~ n^(1/T): T=2 gives 30:10
    assert sampling_probabilities(counts, "temperature", 2.0) == pytest.approx(
        {"big": 0.75, "small": 0.25})
    assert sampling_probabilities(counts, "temperature", 1.0) == pytest.approx(
        sampling_probabilities(counts))


def test_a_schedule_depends_on_its_seed_alone_and_follows_the_mix():
    probabilities = {"a": 0.75, "b": 0.25}
    schedule = sample_schedule(probabilities, 4000, seed=[0, 3])
    assert schedule == sample_schedule(probabilities, 4000, seed=[0, 3])
    assert schedule != sample_schedule(probabilities, 4000, seed=[0, 4])
    assert schedule.count("a") / 4000 == pytest.approx(0.75, abs=0.03)
