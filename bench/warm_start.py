r"""Collects what bench/warm_start.sh left in runs/warm: one JSON line per comparison.

  .venv/bin/python bench/warm_start.py [--runs=runs/warm] >> bench/results/warm_start.jsonl

- `squad2`: SQuAD 2.0 on the held-out half of the v2.0 dev articles, from the encoder and from
  a SQuAD v1.1 model (those that ran): the null threshold each chose on its threshold articles,
  the official metrics at that threshold (and the best threshold on the held-out half, for
  reference only), their training and schedule, the always-"no answer" floor, and the v1.1
  source's training and its own SQuAD v1.1 dev score.
- `xquad`: XQuAD's English paragraphs split by article, the held-out half: exact match and F1
  from the encoder, from the SQuAD v1.1 model, and of that model as it is.
- `tweets`: the English tweets of XLM-T, from the encoder and from an SST-2 model, per seed:
  val and test macro F1 and accuracy; the SST-2 source's own dev accuracy.
- `recipes`: the same tweets from the encoder with `--layer_decay=0.8` and `--reinit_layers=1`,
  per seed, beside the plain run of that seed.
Comparisons whose runs are not there are left out.
"""
import json
import os
import statistics

from absl import app, flags

from common import machine, result_json

flags.DEFINE_string("runs", os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "runs", "warm"), "The folder bench/warm_start.sh wrote to.")
FLAGS = flags.FLAGS
TIMING = ("wall_seconds", "steps", "examples_per_second", "precision", "xla_fusion",
          "max_seq_length", "batch_size", "train_questions", "train_windows")
SQUAD = ("exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "total", "HasAns_total",
         "NoAns_total", "null_score_diff_threshold", "best_f1", "best_f1_thresh")


def _json(*parts):
    return result_json(os.path.join(FLAGS.runs, *parts))


def _training(name):
    timing = _json(name, "train_results.json") or {}
    return {k: timing[k] for k in TIMING if k in timing}


def _schedule(name):
    """A SQuAD 2.0 run's learning rate and epochs (its run.json) and the epoch kept."""
    record = _json(name, "run.json") or {}
    schedule = {k: record[k] for k in ("learning_rate", "num_train_epochs") if k in record}
    best = (_json(name, "train_results.json") or {}).get("best") or {}
    if best:
        schedule.update(keep_best=best.get("metric"), kept_step=best.get("step"),
                        kept_epoch=best.get("epoch"))
    return schedule


def _squad2():
    runs = {}
    for start in ("encoder", "squad_v11"):  # those that ran (SQUAD2_STARTS)
        held_out = _json(f"squad2_from_{start}", "held_out_eval.json")
        if held_out is None:
            continue
        threshold = _json(f"squad2_from_{start}", "threshold_eval.json")
        runs[f"from_{start}"] = dict(
            held_out={k: held_out[k] for k in SQUAD if k in held_out},
            threshold_articles={k: threshold[k] for k in SQUAD if k in threshold},
            training=_training(f"squad2_from_{start}"),
            schedule=_schedule(f"squad2_from_{start}"),
            init_from=(_json(f"squad2_from_{start}", "run.json") or {}).get("init_from"))
    if not runs:
        return None
    line = dict(run="squad2", split=_json("split.json"), threshold_split=_json("split_train.json"),
                **runs, always_no_answer=_json("squad2_floor.json"))
    if "from_squad_v11" in runs:  # the v1.1 source of (b)
        line["source"] = dict(training=_training("squad_v11"),
                              v11_dev=_json("squad_v11", "eval_results.json"))
    if len(runs) == 2:
        line["f1_gain"] = round(runs["from_squad_v11"]["held_out"]["f1"]
                                - runs["from_encoder"]["held_out"]["f1"], 2)
    return line


def _xquad():
    held_out = {start: _json(f"xquad_from_{start}", "held_out_eval.json")
                for start in ("encoder", "squad_v11")}
    if None in held_out.values():
        return None
    metrics = lambda r: {k: r[k] for k in ("exact_match", "f1", "total") if k in r}  # noqa: E731
    runs = {f"from_{start}": dict(held_out=metrics(r), training=_training(f"xquad_from_{start}"))
            for start, r in held_out.items()}
    as_is = _json("xquad_v11_as_is.json")
    return dict(run="xquad", split=_json("xquad_split.json"),
                source=dict(training=_training("squad_v11")), **runs,
                v11_model_as_is=metrics(as_is) if as_is else None,
                f1_gain=round(held_out["squad_v11"]["f1"] - held_out["encoder"]["f1"], 2))


def _tweets():
    seeds = sorted(int(name.rsplit("_", 1)[1]) for name in os.listdir(FLAGS.runs)
                   if name.startswith("tweets_from_sst2_") and os.path.isdir(
                       os.path.join(FLAGS.runs, name)))
    per_seed = {}
    for seed in seeds:
        row = {}
        for start in ("encoder", "sst2"):
            name = f"tweets_from_{start}_{seed}"
            val, test = _json(name, "val_eval.json"), _json(name, "test_eval.json")
            if val is None or test is None:
                break
            row[start] = dict(val_f1_macro=val["f1_macro"], val_accuracy=val["accuracy"],
                              test_f1_macro=test["f1_macro"], test_accuracy=test["accuracy"],
                              training=_training(name))
        if len(row) == 2:
            per_seed[seed] = row
    if not per_seed:
        return None
    means = {start: {metric: round(statistics.mean(r[start][metric] for r in per_seed.values()), 4)
                     for metric in ("val_f1_macro", "test_f1_macro")}
             for start in ("encoder", "sst2")}
    source = _json("sst2", "eval_results.json") or {}
    return dict(run="tweets", per_seed=per_seed, mean=means,
                source=dict(dev_accuracy=source.get("accuracy"), training=_training("sst2")),
                test_f1_macro_gain=round(means["sst2"]["test_f1_macro"]
                                         - means["encoder"]["test_f1_macro"], 4))


def _recipes():
    lines = {}
    for recipe in ("layer_decay", "reinit_layers"):
        for seed in range(10):
            val = _json(f"tweets_{recipe}_{seed}", "val_eval.json")
            test = _json(f"tweets_{recipe}_{seed}", "test_eval.json")
            base = _json(f"tweets_from_encoder_{seed}", "test_eval.json")
            if val and test and base:
                lines.setdefault(recipe, {})[seed] = dict(
                    val_f1_macro=val["f1_macro"], test_f1_macro=test["f1_macro"],
                    baseline_test_f1_macro=base["f1_macro"],
                    baseline_val_f1_macro=_json(f"tweets_from_encoder_{seed}",
                                                "val_eval.json")["f1_macro"])
    if not lines:
        return None
    means = {recipe: {k: round(statistics.mean(r[k] for r in seeds.values()), 4)
                      for k in next(iter(seeds.values()))} for recipe, seeds in lines.items()}
    return dict(run="recipes", per_seed=lines, mean=means,
                settings=dict(layer_decay=0.8, reinit_layers=1))


def main(argv):
    del argv
    where = machine()
    for line in (_squad2(), _xquad(), _tweets(), _recipes()):
        if line is not None:
            print(json.dumps(dict(line, machine=where)))


if __name__ == "__main__":
    app.run(main)
