r"""Prediction throughput with length-sorted batches vs. batches in file order (same process).

  python bench/predict_sorting.py --model_dir=runs/sst2 --predict_file=../shared/data/sst2/dev.tsv \
      --text_column=sentence

Prints one JSON line: examples/s of each policy (best of --repeats) and the ratio sorted/unsorted.
Both policies trim every batch to its longest row; sorting makes batches of similar length, so
less padding is computed.
"""
import json
import time

from absl import app, flags

flags.DEFINE_string("model_dir", None, "A trained classification model dir.")
flags.DEFINE_string("predict_file", None, "Texts to predict (CSV/TSV/JSONL).")
flags.DEFINE_string("text_column", "text", "Text column.")
flags.DEFINE_string("text_b_column", None, "Second text column, for pairs.")
flags.DEFINE_string("encoder_handle", "minilm_l6_h384_uncased", "Encoder handle of the model.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the model.")
flags.DEFINE_integer("batch_size", 64, "Prediction batch size.")
flags.DEFINE_integer("repeats", 3, "Timed runs per policy (after one warm-up run each).")
flags.mark_flags_as_required(["model_dir", "predict_file"])
FLAGS = flags.FLAGS


def main(argv):
    del argv
    from zoo.data.text_files import read_examples
    from zoo.evaluation import predict
    from zoo.kinds import classification
    from zoo.run import runner

    examples = read_examples(FLAGS.predict_file, FLAGS.text_column, FLAGS.text_b_column,
                             require_label=False)
    settings = classification.Settings(model_dir=FLAGS.model_dir,
                                       encoder_handle=FLAGS.encoder_handle,
                                       max_seq_length=FLAGS.max_seq_length)
    task = runner.start("predict", classification.Classification, settings)
    core, _ = runner.restored(task)
    packer = task.run.packer
    results = {}
    for name, sort in (("unsorted", False), ("sorted", True)):
        predict.predict_probabilities(core, packer, examples, FLAGS.batch_size, sort)
        times = []
        for _ in range(FLAGS.repeats):
            began = time.perf_counter()
            predict.predict_probabilities(core, packer, examples, FLAGS.batch_size, sort)
            times.append(time.perf_counter() - began)
        results[f"{name}_examples_per_second"] = len(examples) / min(times)
    results.update(examples=len(examples), batch_size=FLAGS.batch_size,
                   ratio_sorted_over_unsorted=results["sorted_examples_per_second"]
                   / results["unsorted_examples_per_second"])
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
