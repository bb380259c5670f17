r"""The floor of SQuAD 2.0: the official v2.0 evaluation of a model that always says "no answer".

  .venv/bin/python bench/squad2_floor.py --eval_file=../shared/data/squad_v2/dev-v2.0-rebuilt.json

Every question gets "" with a no-answer score of 1 and no other answer, scored by zoo's official
v2.0 evaluation (`zoo.evaluation.squad_eval.EvaluationV2`, the one `tasks.squad.train
--version_2_with_negative` reports). Prints one JSON line: exact, F1, HasAns and NoAns.
"""
import json
import os
import sys

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

flags.DEFINE_string("eval_file", None, "A SQuAD 2.0 JSON file with answers.")
flags.mark_flag_as_required("eval_file")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    from zoo.data.squad import SquadFile
    from zoo.evaluation.squad_eval import EvaluationV2

    evaluation = EvaluationV2()
    for example in SquadFile(FLAGS.eval_file, version_2=True).questions():
        evaluation.add(example, "", 1.0, "")
    results = evaluation.results()
    print(json.dumps(dict(eval_file=FLAGS.eval_file, model="always no answer",
                          **{k: results[k] for k in (
                              "exact", "f1", "total", "HasAns_exact", "HasAns_f1",
                              "HasAns_total", "NoAns_exact", "NoAns_f1", "NoAns_total")})))


if __name__ == "__main__":
    app.run(main)
