r"""Training speed of encoders on the same batches: zoo's training step (`bench/zoo_train.py`)
on MiniLM and on multilingual-e5-small, taken in turn.

  .venv/bin/python bench/encoder_speed.py >> bench/results/multilingual.jsonl
  .venv/bin/python bench/encoder_speed.py --encoders=minilm_l6_h384_uncased,\
      multilingual_e5_small,multilingual_e5_small:frozen_word_embeddings

All take the same MRPC rows (`common.batch_plan`, fixed padding: every batch is
--max_seq_length long, so they do the same work per token whatever their tokenizers make of
the texts) at zoo's precision for this CPU (`zoo.compute.precision.resolve("auto")`), after the
same untimed warm-up steps; each round runs every encoder once, in a fresh process, the order
alternating between rounds, and the median of the rounds is reported with the ratio of each
other encoder's examples/s to the first's (`ratios_over_base`; `ratio_this_over_base`: the
second's). An encoder named with `:frozen_word_embeddings` trains as
`--freeze_word_embeddings` does.
"""
import json
import os
import statistics
import tempfile

from absl import app, flags

from common import BENCH, batch_plan, machine, mrpc_pairs, run_script, last_json

FROZEN = ":frozen_word_embeddings"  # after an encoder's name: trained with that setting
flags.DEFINE_list("encoders", ["minilm_l6_h384_uncased", "multilingual_e5_small"],
                  f"zoo-models names (or Hub folders): the baseline, then the ones measured "
                  f"against it; a name ending in {FROZEN} trains without its word embeddings.")
flags.DEFINE_string("data_dir", os.path.join(BENCH, "..", "..", "shared", "data", "mrpc"),
                    "GLUE MRPC folder (train.tsv is used).")
flags.DEFINE_integer("batch_size", 32, "Training batch size.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per row (fixed padding).")
flags.DEFINE_integer("steps", 20, "Timed steps per run.")
flags.DEFINE_integer("warmup_steps", 3, "Untimed steps before them.")
flags.DEFINE_integer("repeats", 3, "Rounds (each runs every encoder once).")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    import zoo  # noqa: F401
    from zoo.compute import precision
    chosen = precision.resolve("auto")
    rows = len(mrpc_pairs(os.path.join(FLAGS.data_dir, "train.tsv")))
    plan = {"fixed": batch_plan([0] * rows, FLAGS.batch_size, "fixed",
                                FLAGS.warmup_steps + FLAGS.steps)}
    seconds = {name: [] for name in FLAGS.encoders}
    with tempfile.TemporaryDirectory() as work:
        plan_file = os.path.join(work, "plan.json")
        with open(plan_file, "w", encoding="utf-8") as f:
            json.dump(plan, f)
        for round_ in range(FLAGS.repeats):
            order = FLAGS.encoders if round_ % 2 == 0 else FLAGS.encoders[::-1]
            for name in order:
                out = last_json(run_script([
                    os.path.join(BENCH, "zoo_train.py"), f"--plan_file={plan_file}",
                    f"--data_dir={FLAGS.data_dir}",
                    f"--encoder_handle={name.removesuffix(FROZEN)}",
                    f"--freeze_word_embeddings={name.endswith(FROZEN)}",
                    f"--max_seq_length={FLAGS.max_seq_length}", f"--precision={chosen}",
                    f"--warmup_steps={FLAGS.warmup_steps}"], cwd=BENCH))
                seconds[name].append(out["seconds"]["fixed"])
    per_second = {name: round(FLAGS.steps * FLAGS.batch_size / statistics.median(s), 2)
                  for name, s in seconds.items()}
    base, this = FLAGS.encoders[:2]
    print(json.dumps(dict(
        run="encoder_speed", examples_per_second=per_second,
        ratio_this_over_base=round(per_second[this] / per_second[base], 3),
        ratios_over_base={name: round(per_second[name] / per_second[base], 3)
                          for name in FLAGS.encoders[1:]},
        seconds={k: [round(x, 3) for x in v] for k, v in seconds.items()},
        precision=chosen, batch_size=FLAGS.batch_size, max_seq_length=FLAGS.max_seq_length,
        padding="fixed", steps=FLAGS.steps, warmup_steps=FLAGS.warmup_steps,
        repeats=FLAGS.repeats, machine=machine())))


if __name__ == "__main__":
    app.run(main)
