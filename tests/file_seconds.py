"""Seconds each test file took, summed from pytest's `--durations=0` report
(`--durations-min=0`: also the files whose tests all take under 5 ms): the order in
which `tests/conftest.py` hands files to the two workers (the longest first).

  .venv/bin/python -m pytest -q -n 2 --dist loadfile --durations=0 --durations-min=0 \
      > /tmp/durations.txt
  .venv/bin/python tests/file_seconds.py /tmp/durations.txt > tests/file_seconds.json
"""
import collections
import json
import os
import re
import sys

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "file_seconds.json")

# "88.51s setup    tests/tasks/test_squad2.py::test_the_official_v2_evaluation..."
LINE = re.compile(r"^(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+([^:\s]+)::")


def file_seconds(lines):
    """{test file: seconds of its setups, calls and teardowns}, rounded to 0.1 s."""
    seconds = collections.Counter()
    for line in lines:
        match = LINE.match(line)
        if match:
            seconds[match.group(2)] += float(match.group(1))
    return {path: round(s, 1) for path, s in seconds.most_common()}


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    with open(argv[1], encoding="utf-8") as f:
        seconds = file_seconds(f)
    if not seconds:
        raise SystemExit(f"{argv[1]}: no `--durations=0` lines (\"12.3s call  tests/...::test\")")
    print(json.dumps(seconds, indent=1))


if __name__ == "__main__":
    main(sys.argv)
