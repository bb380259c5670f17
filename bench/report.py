r"""Render BENCHMARKS.md from the raw lines of bench/results/ and the section intros of
bench/BENCHMARKS.template.md.

  .venv/bin/python bench/report.py            # write BENCHMARKS.md
  .venv/bin/python bench/report.py --check    # exit 1 if BENCHMARKS.md is not what it renders

The template is Markdown; a line `{{name}}` is replaced by the table `name` of `bench/tables/`,
which reads the lines it needs: the newest line per CPU kind, or the lines its section names.
Figures live in the raw lines only; the template says what each benchmark does.
"""
import os
import sys

from absl import app, flags

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
from tables import render  # noqa: E402

flags.DEFINE_bool("check", False, "Only compare: exit 1 if the output file differs.")
flags.DEFINE_string("output", os.path.join(os.path.dirname(BENCH), "BENCHMARKS.md"),
                    "Where to write.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    text = render()
    if FLAGS.check:
        with open(FLAGS.output, encoding="utf-8") as f:
            if f.read() != text:
                sys.exit(f"{FLAGS.output} is not what bench/report.py renders: run it")
        print(f"{FLAGS.output} is what bench/report.py renders")
        return
    with open(FLAGS.output, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{FLAGS.output}: {len(text.splitlines())} lines")


if __name__ == "__main__":
    app.run(main)
