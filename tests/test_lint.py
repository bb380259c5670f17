"""The code passes the linter (ruff, its rules in pyproject.toml): unused imports and names,
undefined names, a late-bound loop variable in a closure and the like fail the suite."""
import subprocess
import sys

from tests.helpers import ROOT


def test_the_code_passes_the_linter():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "zoo", "tests", "tasks", "bench"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
