r"""How much of each side's import time is Python's garbage collector: the imports of a first
prediction (`bench/inference.py`), with the collector running and paused.

  python bench/import_gc.py --rounds=5 >> bench/results/import_gc.jsonl   # needs ./install.sh bench

`zoo.serving` pauses the collector while it imports TensorFlow and loads an export; the peer's
libraries (torch, transformers) do not. This measures what that is worth on each side, so that
a reader can tell a faster library from a trick the other side could use too: in a fresh process
per run, zoo's imports (tensorflow and tensorflow_text with zoo's Keras 2 choice, as
`zoo.serving` imports them) and the peer's (torch and the transformers classes of
`bench/peer_infer.py`), each with the collector running and paused, the settings alternating in
each round. Prints one JSON line: per setting the median, min and max seconds over the rounds.
"""
import json
import os
import statistics

from absl import app, flags

from common import machine, run_script, serving_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_integer("rounds", 5, "Runs of each setting (alternating).")
FLAGS = flags.FLAGS

IMPORTS = {
    "zoo": "import tensorflow, tensorflow_text",
    "peer": "import torch\nfrom transformers import BertForSequenceClassification, BertTokenizerFast",
}
TIMED = """
import gc, sys, time
began = time.perf_counter()
if sys.argv[1] == "paused":
    gc.disable()
{imports}
gc.enable()
print(time.perf_counter() - began)
"""


def seconds(side, collector):
    env = serving_env()
    if side == "zoo":
        env["TF_USE_LEGACY_KERAS"] = "1"  # what `import zoo` sets before zoo.serving's imports
    output = run_script(["-c", TIMED.format(imports=IMPORTS[side]), collector], cwd=ROOT,
                        env=env, name=f"{side}'s imports")
    return float(output.strip().splitlines()[-1])


def main(argv):
    del argv
    settings = [(side, collector) for side in IMPORTS for collector in ("running", "paused")]
    times = {s: [] for s in settings}
    for round_ in range(FLAGS.rounds):
        for setting in (settings if round_ % 2 == 0 else settings[::-1]):
            times[setting].append(seconds(*setting))
    result = {f"{side}_{collector}": dict(median=round(statistics.median(t), 3),
                                          min=round(min(t), 3), max=round(max(t), 3))
              for (side, collector), t in times.items()}
    print(json.dumps(dict(benchmark="import_gc", rounds=FLAGS.rounds, machine=machine(ROOT),
                          seconds=result)))


if __name__ == "__main__":
    app.run(main)
