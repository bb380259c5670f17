"""Plain helpers for the tests (fixtures live in conftest.py)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
REFERENCE = os.path.join(SHARED, "reference")


def reference_file(name):
    path = os.path.join(REFERENCE, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not here (../shared/reference is needed)")
    return path


def run_module(module, *args, env=None, timeout=600):
    """Runs `python -m module args` from the project root; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})
