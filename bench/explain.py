r"""Explanations of a real classifier: what one costs next to a prediction, and whether it points
at the word that decides.

  .venv/bin/python bench/explain.py              # about 10 minutes on a 2-core Xeon

The model: MiniLM (`minilm_l6_h384_uncased`) fine-tuned on the first --train_rows sentences of
SST-2's training set for one epoch (max_seq_length 64), evaluated on SST-2 dev and exported in
fp32 with its `explain` signature; everything below runs that export through `zoo.serving`, in
this process, after a warm-up call of each kind.

- **Cost.** On the first --texts dev sentences: `predict` in batches of 32 (its default) and one
  text per call, and `explain` (--steps integration points, 4 texts per call: `zoo.serving`'s
  default); the median of --repeats runs of each, in ms per text, and the ratios of an
  explanation to a prediction.
- **Does it point at the deciding word?** Dev sentences with exactly one word of a small
  sentiment lexicon get that word replaced by a word of the other polarity (seeded): the
  sentence's sentiment now hangs on a word the model did not see there. The hit rate is the
  share of them whose top-attributed word (towards the predicted class) is the inserted one,
  beside chance (the mean of 1 / words) and the share whose prediction follows the inserted
  word; also among the latter alone.
- **Load time.** The seconds `zoo.serving.load` takes in a fresh process (the median of
  --repeats, alternating) and the size of three exports of the model: with `--export_explain`,
  the default export (`serving_default` and `top_k`), and `serving_default` alone (the export
  before issue 44, written by `zoo.export.savedmodel.save` from the restored model).
- A sample of those explanations is rendered to --png (the HTML page's colours, drawn with
  matplotlib: no headless browser here) and, with --html, written there by `zoo explain`'s
  page code.

One JSON line with the machine and every figure.
"""
import csv
import json
import os
import random
import statistics
import sys
import tempfile
import time

from absl import app, flags

from common import machine, run_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "sst2"),
                    "GLUE SST-2 folder (train.tsv, dev.tsv).")
flags.DEFINE_integer("train_rows", 8000, "Training sentences (the first ones of train.tsv).")
flags.DEFINE_integer("texts", 200, "Dev sentences that the timing runs on.")
flags.DEFINE_integer("steps", 32, "Integration points of integrated gradients.")
flags.DEFINE_integer("repeats", 3, "Timed runs of each kind (the median is reported).")
flags.DEFINE_string("work", "", "Folder for the model dir and export (default: a temporary "
                    "one); an existing trained one is reused.")
flags.DEFINE_string("png", os.path.join(ROOT, "docs", "explanation.png"), "Rendered sample.")
flags.DEFINE_string("html", "", "Also write the sample's HTML page here.")
FLAGS = flags.FLAGS

POSITIVE = ("good great best wonderful beautiful brilliant funny charming delightful excellent "
            "enjoyable fresh smart entertaining touching lovely terrific superb").split()
NEGATIVE = ("bad worst dull boring awful terrible mess tedious stupid poor lame unfunny "
            "pointless predictable tiresome ugly flat bland").split()


def _read(name):
    with open(os.path.join(FLAGS.data_dir, name), encoding="utf-8") as f:
        return [(row["sentence"].strip(), row["label"]) for row in
                csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]


def _train(work):
    """The model dir and export (trained unless `work` already holds them); dev accuracy."""
    from zoo.kinds import table
    model_dir, export = os.path.join(work, "model"), os.path.join(work, "model", "export", "1")
    if not os.path.exists(os.path.join(export, "saved_model.pb")):
        train = os.path.join(work, "train.tsv")
        with open(train, "w", encoding="utf-8") as f:
            f.write("sentence\tlabel\n" + "".join(
                f"{s}\t{label}\n" for s, label in _read("train.tsv")[:FLAGS.train_rows]))
        table.run("classify", "train_and_eval", model_dir=model_dir, train_file=train,
                  eval_file=os.path.join(FLAGS.data_dir, "dev.tsv"), text_column="sentence",
                  label_column="label", max_seq_length=64,
                  num_train_epochs=1.0, export_dir=export, explain_steps=FLAGS.steps,
                  export_explain=True)
    with open(os.path.join(model_dir, "eval_results.json"), encoding="utf-8") as f:
        return model_dir, export, json.load(f)["accuracy"]


LOAD = """
import sys, time
from zoo import serving
began = time.perf_counter()
serving.load(sys.argv[1])
print(time.perf_counter() - began)
"""


def _size(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(folder)
               for f in files)


def _exports(model_dir, export):
    """{name: export folder}: with the explain signature, the default export, and
    serving_default alone (written here if missing)."""
    from zoo.export import savedmodel
    from zoo.kinds.table import KINDS
    from zoo.run import runner
    values = dict(model_dir=model_dir, text_column="sentence", label_column="label",
                  max_seq_length=64)
    folders = dict(with_explain=export,
                   default=os.path.join(model_dir, "export_default", "1"),
                   serving_default_only=os.path.join(model_dir, "export_serving_default", "1"))
    kind = KINDS["classify"]
    for name in ("default", "serving_default_only"):
        if os.path.exists(os.path.join(folders[name], "saved_model.pb")):
            continue
        data, settings = kind.parts(values)
        task = runner.start("export", kind.task, settings, kind.reader(data, settings))
        core, _ = runner.restored(task)
        signatures = task.signatures(core) if name == "default" else {
            "serving_default": task.serving(core)}
        savedmodel.save(folders[name], signatures)
    return folders


def _loading(model_dir, export):
    """Load seconds and size of each of `_exports`."""
    folders = _exports(model_dir, export)
    seconds = {name: [] for name in folders}
    for _ in range(FLAGS.repeats):
        for name, folder in folders.items():
            seconds[name].append(float(run_script(["-c", LOAD, folder], cwd=ROOT).split()[-1]))
    return {name: dict(load_seconds=statistics.median(values),
                       size_mb=_size(folders[name]) / 2 ** 20)
            for name, values in seconds.items()}


def _median_seconds(call, repeats):
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def _cost(model, texts):
    """ms per text of batched and one-text predictions and of explanations."""
    model.predict(texts[:32])
    model.explain(texts[:4])
    batched = _median_seconds(lambda: model.predict(texts), FLAGS.repeats) / len(texts)
    one = _median_seconds(lambda: [model.predict([t]) for t in texts[:50]], FLAGS.repeats) / 50
    explained = _median_seconds(lambda: model.explain(texts), FLAGS.repeats) / len(texts)
    return dict(predict_batched_ms=1e3 * batched, predict_one_ms=1e3 * one,
                explain_ms=1e3 * explained, explain_over_one_prediction=explained / one,
                explain_over_batched_prediction=explained / batched)


def _swapped(dev):
    """Dev sentences with exactly one lexicon word, that word replaced by one of the other
    polarity: (sentence, inserted word, its polarity "1"/"0")."""
    rng, rows = random.Random(0), []
    for sentence, _ in dev:
        words = sentence.split(" ")
        found = [i for i, w in enumerate(words) if w in POSITIVE or w in NEGATIVE]
        if len(found) != 1:
            continue
        i = found[0]
        inserted = rng.choice(NEGATIVE if words[i] in POSITIVE else POSITIVE)
        words[i] = inserted
        rows.append((" ".join(words), inserted, "1" if inserted in POSITIVE else "0"))
    return rows


def _pointing(model, rows):
    explanations = model.explain([s for s, _, _ in rows])
    hits, follows, hits_following, chance = 0, 0, 0, 0.0
    for (_, inserted, polarity), e in zip(rows, explanations):
        top = max(e["words"], key=lambda w: w["attribution"])["text"].lower()
        hit, follow = top == inserted, e["target"] == polarity
        hits += hit
        follows += follow
        hits_following += hit and follow
        chance += 1 / len(e["words"])
    n = len(rows)
    gaps = sorted(abs(e["completeness_gap"]) / max(abs(e["score"] - e["baseline_score"]), 1e-9)
                  for e in explanations)
    return dict(sentences=n, hit_rate=hits / n, chance=chance / n,
                prediction_follows_inserted_word=follows / n,
                hit_rate_where_it_follows=hits_following / max(follows, 1),
                relative_completeness_gap_median=statistics.median(gaps),
                relative_completeness_gap_max=gaps[-1],
                relative_completeness_gap_under_5_percent=sum(g < 0.05 for g in gaps) / n), \
        explanations


def _render(rows, explanations, path):
    """A PNG of a few explanations in the HTML page's colours."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(10, 0.9 * len(rows) + 0.3))
    renderer = fig.canvas.get_renderer()
    for line, ((sentence, _, _), e) in enumerate(zip(rows, explanations)):
        y, x = 1 - (line + 0.6) / len(rows), 0.01
        strongest = max(abs(w["attribution"]) for w in e["words"]) or 1.0
        for word in e["words"]:
            a = word["attribution"]
            color = (0.86, 0.16, 0.16) if a > 0 else (0.16, 0.35, 0.86)
            text = fig.text(x, y, sentence[word["start"]:word["end"]], fontsize=12,
                            bbox=dict(facecolor=color + (min(1.0, abs(a) / strongest),),
                                      edgecolor="none", pad=1.5))
            x += text.get_window_extent(renderer).width / fig.bbox.width + 0.006
        fig.text(0.01, y - 0.32 / len(rows), f"target {e['target']}, probability "
                 f"{e['probability']:.3f}, {e['method'].replace('_', ' ')}",
                 fontsize=9, color="#555")
    fig.savefig(path, dpi=100)


def main(argv):
    del argv
    from zoo import serving
    from zoo.evaluation import explanations as pages
    dev = _read("dev.tsv")
    with tempfile.TemporaryDirectory(prefix="zoo-bench-explain-") as scratch:
        work = FLAGS.work or scratch
        os.makedirs(work, exist_ok=True)
        model_dir, export, accuracy = _train(work)
        loading = _loading(model_dir, export)
        print("loading", json.dumps(loading), file=sys.stderr)
        model = serving.load(export)
        cost = _cost(model, [s for s, _ in dev[:FLAGS.texts]])
        print("cost", json.dumps(cost), file=sys.stderr)
        rows = _swapped(dev)
        pointing, explained = _pointing(model, rows)
        print("pointing", json.dumps(pointing), file=sys.stderr)
    sample = [i for i, (s, w, p) in enumerate(rows)
              if explained[i]["target"] == p and len(s.split()) <= 12][:6]
    if FLAGS.png:
        _render([rows[i] for i in sample], [explained[i] for i in sample], FLAGS.png)
    if FLAGS.html:
        with open(FLAGS.html, "w", encoding="utf-8") as f:
            f.write(pages.PAGE_HEAD.format(title="SST-2 dev, one word swapped"))
            for i in sample:
                f.write(pages.text_block([rows[i][0]], explained[i]))
            f.write(pages.page_end())
    print(json.dumps(dict(benchmark="explain", date=time.strftime("%Y-%m-%d"),
                          machine=machine(), encoder="minilm_l6_h384_uncased",
                          train_rows=FLAGS.train_rows, dev_accuracy=accuracy,
                          steps=FLAGS.steps, texts=FLAGS.texts, repeats=FLAGS.repeats,
                          cost=cost, pointing=pointing, loading=loading,
                          sample=[dict(sentence=rows[i][0], target=explained[i]["target"],
                                       words=[(w["text"], round(w["attribution"], 3))
                                              for w in explained[i]["words"]])
                                  for i in sample[:3]])))


if __name__ == "__main__":
    app.run(main)
