r"""Where zoo's training step spends its time: TensorFlow's profiler over the timed steps of
`bench/zoo_train.py`, summed by op type and by op (the layer index folded, forward and gradient
apart), per step.

  .venv/bin/python bench/step_profile.py --padding=bucketed --precision=bf16 \
      >> bench/results/step_profile.jsonl

The batches are those of `bench/train_throughput.py` (`common.batch_plan` over the peer
tokenizer's lengths of MRPC train), one policy. By default TensorFlow runs one op at a time
(`--inter_op_threads=1`), so that the op times add up to the step's; each op still uses every
core. The trace slows the steps: compare the op times of two runs, not their wall times with
those of `bench/train_throughput.py`. `--code_dir` profiles the zoo of another checkout (a git
worktree of another commit) with this script, for an A/B of op times; the line records its git.
Prints one JSON line.
"""
import json
import os
import tempfile

from absl import app, flags

from common import BENCH, batch_plan, last_json, machine, op_times, run_script

ROOT = os.path.dirname(BENCH)
flags.DEFINE_enum("padding", "bucketed", ["fixed", "dynamic", "bucketed"], "Batch policy.")
flags.DEFINE_enum("precision", "bf16", ["fp32", "bf16"], "zoo.compute.precision of the steps.")
flags.DEFINE_integer("steps", 8, "Profiled steps.")
flags.DEFINE_integer("warmup_steps", 6, "Steps before the profile.")
flags.DEFINE_integer("inter_op_threads", 1, "TensorFlow's inter-op threads (0: its default).")
flags.DEFINE_integer("top", 40, "Op types and ops listed.")
flags.DEFINE_string("code_dir", ROOT, "Checkout whose zoo package is profiled.")
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "mrpc"),
                    "GLUE MRPC folder.")
flags.DEFINE_string("encoder_handle", "minilm_l6_h384_uncased", "Encoder (a zoo-models name or "
                    "Hub folder); with another tokenizer than MiniLM's, use --padding=fixed.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    with tempfile.TemporaryDirectory(prefix="zoo-step-profile-") as work:
        lengths_file = os.path.join(work, "lengths.json")
        run_script(["peer_train.py", f"--data_dir={FLAGS.data_dir}",
                    f"--write_lengths={lengths_file}", "--max_seq_length=128"], cwd=BENCH)
        with open(lengths_file, encoding="utf-8") as f:
            lengths = json.load(f)
        plan_file = os.path.join(work, "plan.json")
        steps = FLAGS.warmup_steps + FLAGS.steps
        with open(plan_file, "w", encoding="utf-8") as f:
            json.dump({FLAGS.padding: batch_plan(lengths, 32, FLAGS.padding, steps)}, f)
        logdir = os.path.join(work, "trace")
        env = {**os.environ, "PYTHONPATH": os.path.abspath(FLAGS.code_dir)}
        run = last_json(run_script(
            [os.path.join(BENCH, "zoo_train.py"), f"--plan_file={plan_file}",
             f"--data_dir={FLAGS.data_dir}", f"--precision={FLAGS.precision}",
             f"--warmup_steps={FLAGS.warmup_steps}", f"--profile_dir={logdir}",
             f"--inter_op_threads={FLAGS.inter_op_threads}",
             f"--encoder_handle={FLAGS.encoder_handle}"], cwd=BENCH, env=env))
        by_type, by_op = op_times(os.path.join(logdir, FLAGS.padding), FLAGS.steps)
    rounded = lambda counter: {k: round(v, 2) for k, v in counter.most_common(FLAGS.top)}  # noqa: E731
    print(json.dumps(dict(
        summary="step_profile", machine=machine(FLAGS.code_dir), padding=FLAGS.padding,
        encoder_handle=FLAGS.encoder_handle,
        precision=FLAGS.precision, steps=FLAGS.steps, warmup_steps=FLAGS.warmup_steps,
        inter_op_threads=FLAGS.inter_op_threads,
        traced_ms_per_step=round(run["seconds"][FLAGS.padding] / FLAGS.steps * 1e3, 1),
        op_ms_per_step=round(sum(by_type.values()), 1), by_type=rounded(by_type),
        by_op=rounded(by_op))))


if __name__ == "__main__":
    app.run(main)
