r"""zoo's side of `bench/inference.py`: one exported SavedModel, called as TF Serving would.

  python bench/zoo_infer.py --export_dir=/tmp/export/1 [--fixed_export_dir=...]

A process that imports only tensorflow and tensorflow_text (no zoo, no graph rewrite of its
own: what the export does, it does by itself) loads the export and calls its `serving_default`
signature on raw strings (tokenization inside the graph, inside the timing). For each batch size
and policy (`common.inference_groups`: `dynamic` and `sorted` on the export, which trims each
request to its longest row; `fixed` on --fixed_export_dir, which pads to its full length), the
best of --repeats passes after one untimed pass; then batch-1 latency; then the matmul peak in
the export's --precision (`common.tf_matmul_peak_gflops`). With --first_prediction
it only loads and answers one text the way a zoo user does in Python (`zoo.serving`, which
imports tensorflow and tensorflow_text itself; the peer uses transformers' classes), and prints
when it had imported, loaded and answered (`common.first_prediction`). Prints one JSON line.
"""
import argparse
import json
import os
import time

import numpy as np

from common import (best_rate, first_prediction, inference_groups, latency_ms, sst2_sentences,
                    tf_matmul_peak_gflops)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def classifier(export_dir):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    return lambda group: serve(text=tf.constant(group))["probabilities"].numpy()


def first_answer(export_dir):
    """A first prediction through zoo's Python API, from its import on."""
    from zoo.serving import load
    imported_at = time.time()
    model = load(export_dir)
    return first_prediction(lambda group: np.array(
        [list(row["probabilities"].values()) for row in model.predict(group)]), imported_at)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--export_dir", required=True)
    parser.add_argument("--fixed_export_dir")
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "..", "shared", "data", "sst2"))
    parser.add_argument("--batch_sizes", default="32,64")
    parser.add_argument("--policies", default="dynamic,sorted")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--latency_requests", type=int, default=200)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                        help="The export's: the matmul peak is measured in it.")
    parser.add_argument("--first_prediction", action="store_true")
    args = parser.parse_args()
    if args.first_prediction:
        print(json.dumps(first_answer(args.export_dir)))
        return
    classify = classifier(args.export_dir)
    texts = sst2_sentences(os.path.join(args.data_dir, "dev.tsv"))
    policies = args.policies.split(",")
    fixed = classifier(args.fixed_export_dir) if "fixed" in policies else None
    import tensorflow as tf
    results = dict(framework=f"tensorflow {tf.__version__}",
                   threads=[tf.config.threading.get_intra_op_parallelism_threads(),
                            tf.config.threading.get_inter_op_parallelism_threads()])
    for batch_size in [int(b) for b in args.batch_sizes.split(",")]:
        for policy in policies:
            results[f"batch_{batch_size}_{policy}"] = best_rate(
                fixed if policy == "fixed" else classify,
                inference_groups(texts, batch_size, policy), args.repeats)
    results["batch_1_latency"] = latency_ms(classify, texts[:args.latency_requests])
    results["matmul_peak_gflops"] = round(tf_matmul_peak_gflops(
        "bfloat16" if args.precision == "bf16" else "float32"), 1)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
