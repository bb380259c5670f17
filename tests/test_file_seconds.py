"""tests/file_seconds.py: seconds per test file from pytest's `--durations=0` report."""
import json
import os

import pytest

from tests import file_seconds
from tests.helpers import ROOT

REPORT = """\
============================= slowest durations ==============================
88.51s setup    tests/tasks/test_squad2.py::test_the_official_v2_evaluation
2.00s call     tests/tasks/test_squad2.py::test_predictions[a::b]
0.50s teardown tests/tasks/test_squad2.py::test_predictions[a::b]
1.25s call     tests/data/test_labels.py::test_one
(12 durations < 0.005s hidden.  Use -vv to show these durations.)
"""


def test_setups_calls_and_teardowns_add_up_per_file_longest_first():
    seconds = file_seconds.file_seconds(REPORT.splitlines())
    assert seconds == {"tests/tasks/test_squad2.py": 91.0, "tests/data/test_labels.py": 1.2}
    assert list(seconds) == ["tests/tasks/test_squad2.py", "tests/data/test_labels.py"]


def test_a_report_without_durations_is_refused(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("494 passed in 1125.97s\n")
    with pytest.raises(SystemExit, match="no `--durations=0` lines"):
        file_seconds.main(["file_seconds.py", str(path)])


def test_every_measured_file_exists():
    with open(file_seconds.PATH, encoding="utf-8") as f:
        measured = json.load(f)
    missing = [path for path in measured if not os.path.exists(os.path.join(ROOT, path))]
    assert not missing, f"tests/file_seconds.json names files that are gone: {missing}"
