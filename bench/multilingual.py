r"""Collects what bench/multilingual.sh left in runs/multilingual: one JSON line per comparison.

  .venv/bin/python bench/multilingual.py [--runs=runs/multilingual] >> bench/results/multilingual.jsonl

- `tweets`: per XLM-T language, multilingual-e5-small's val and test macro F1 trained on that
  language, and the English model's on it (zero-shot; English: the same run).
- `xquad`: exact match and F1 per XQuAD language of multilingual-e5-small trained on SQuAD v1.1.
- `speed`: the one-text latency of the English tweet models' exports (multilingual-e5-small and
  MiniLM) called in turn, with each tweet run's training figures beside it (separate runs: the
  like-for-like training speed is `bench/encoder_speed.py`'s line, which this copies when
  present).
- `frozen_word_embeddings`: per XLM-T language, val and test macro F1 of `tweets`' run with the
  word-piece embeddings trained and frozen (`bench/multilingual.sh frozen`), with each run's
  training figures, and the mean over the languages that have both.
Comparisons whose runs are not there are left out; `--lines` picks some.
"""
import glob
import json
import os

from absl import app, flags

from common import machine, result_json

flags.DEFINE_string("runs", os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "runs", "multilingual"), "The folder bench/multilingual.sh "
    "wrote to.")
flags.DEFINE_list("lines", ["tweets", "xquad", "speed", "encoder_speed", "frozen_word_embeddings"],
                  "The comparisons to collect, by their `run`.")
FLAGS = flags.FLAGS
TIMING = ("wall_seconds", "steps", "examples_per_second", "steady_examples_per_second",
          "precision", "max_seq_length", "batch_size", "train_examples", "train_questions",
          "train_windows")


def _json(*parts):
    return result_json(os.path.join(FLAGS.runs, *parts))


def _training(name):
    timing = _json(name, "train_results.json") or {}
    return {k: timing[k] for k in TIMING if k in timing}


def _f1(result):
    return None if result is None else round(result["f1_macro"], 4)


def _scores(name):
    return dict(val_f1_macro=_f1(_json(name, "val_eval.json")),
                test_f1_macro=_f1(_json(name, "test_eval.json")), training=_training(name))


def _frozen():
    languages = sorted(os.path.basename(p)[len("frozen_tweets_"):] for p in
                       glob.glob(os.path.join(FLAGS.runs, "frozen_tweets_*"))
                       if os.path.isdir(p) and _json(os.path.basename(p), "test_eval.json"))
    rows = {lang: dict(trained=_scores(f"trained_tweets_{lang}"),
                       frozen=_scores(f"frozen_tweets_{lang}"))
            for lang in languages if _json(f"trained_tweets_{lang}", "test_eval.json")}
    if not rows:
        return None
    mean = {arm: {split: round(sum(r[arm][split] for r in rows.values()) / len(rows), 4)
                  for split in ("val_f1_macro", "test_f1_macro")} for arm in ("trained", "frozen")}
    return dict(run="frozen_word_embeddings", encoder="multilingual_e5_small", languages=rows,
                mean=mean, frozen_minus_trained={
                    split: round(mean["frozen"][split] - mean["trained"][split], 4)
                    for split in ("val_f1_macro", "test_f1_macro")})


def _tweets():
    languages = sorted(os.path.basename(p)[len("tweets_"):] for p in
                       glob.glob(os.path.join(FLAGS.runs, "tweets_*"))
                       if os.path.isdir(p) and _json(os.path.basename(p), "test_eval.json"))
    if not languages:
        return None
    rows = {}
    for lang in languages:
        rows[lang] = _scores(f"tweets_{lang}")
        if lang != "english":
            rows[lang].update(zero_shot_val_f1_macro=_f1(_json(f"zero_shot_{lang}.val.json")),
                              zero_shot_test_f1_macro=_f1(_json(f"zero_shot_{lang}.test.json")))
    return dict(run="tweets", encoder="multilingual_e5_small", languages=rows)


def _xquad():
    results = {}
    for path in sorted(glob.glob(os.path.join(FLAGS.runs, "xquad_*.json"))):
        lang = os.path.basename(path)[len("xquad_"):-len(".json")]
        result = result_json(path)
        results[lang] = {k: round(result[k], 2) for k in ("exact_match", "f1")}
    if not results:
        return None
    return dict(run="xquad", encoder="multilingual_e5_small", languages=results,
                source=dict(training=_training("squad_v11")))


def _speed():
    latency = _json("latency.json")
    e5, minilm = _training("tweets_english"), _training("minilm_tweets_english")
    if not (latency and e5 and minilm):
        return None
    exports = latency["exports"]
    return dict(run="speed", tweet_runs=dict(multilingual_e5_small=e5, minilm=minilm),
                latency=dict(minilm=exports["base"], multilingual_e5_small=exports["this"],
                             p50_ratio_e5_over_minilm=latency["p50_ratio_this_over_base"],
                             calls=latency["calls"]))


def main(argv):
    del argv
    where = machine()
    collect = dict(tweets=_tweets, xquad=_xquad, speed=_speed,
                   encoder_speed=lambda: _json("encoder_speed.json"),
                   frozen_word_embeddings=_frozen)
    unknown = set(FLAGS.lines) - set(collect)
    if unknown:
        raise app.UsageError(f"--lines: no comparison {sorted(unknown)}; there are {list(collect)}")
    for line in (collect[name]() for name in FLAGS.lines):
        if line is not None:
            print(json.dumps({"machine": where, **line}))  # a script's own line keeps its own


if __name__ == "__main__":
    app.run(main)
