"""Small labelled tweet files whose words give their labels away (tests of the classify kind)."""
import csv
import random

WORDS = {"-1": ["awful", "boring", "hated", "terrible"], "0": ["released", "monday", "actors"],
         "1": ["great", "loved", "wonderful", "brilliant"]}
LABEL_MAP = "-1:negative,0:neutral,1:positive"


def write_csv(path, n, seed, with_label=True, noise=0.0, longest=12):
    """`n` rows (id, tweet[, sentiment]) of three classes, of 1 to `longest` words; a `noise`
    share of the labels is drawn at random instead of from the words."""
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "tweet"] + (["sentiment"] if with_label else []))
        for i in range(n):
            label = rng.choice(sorted(WORDS))
            text = " ".join(rng.choice(WORDS[label]) for _ in range(rng.randint(1, longest)))
            if noise and rng.random() < noise:
                label = rng.choice(sorted(WORDS))
            writer.writerow([f"{seed}-{i}", text] + ([label] if with_label else []))
    return str(path)


def classify(mode, model_dir, **values):
    """A mode of the classify kind on these files, in-process (`zoo.kinds.table.run`), with
    the tiny encoder and small batches unless `values` say otherwise."""
    from zoo.kinds import table

    values = dict(dict(encoder_handle="tiny", text_column="tweet", label_column="sentiment",
                       id_column="id", label_map=LABEL_MAP, train_batch_size=8,
                       eval_batch_size=16, max_seq_length=32), **values)
    return table.run("classify", mode, model_dir=str(model_dir), **values)


def write_two_class_csv(path, n, seed, raw=("-1", "1")):
    """Rows alternating between raw[0] (negative words) and raw[1] (positive words)."""
    rng = random.Random(seed)
    words = {raw[0]: WORDS["-1"], raw[1]: WORDS["1"]}
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "tweet", "sentiment"])
        for i in range(n):
            label = raw[i % 2]
            writer.writerow([i, " ".join(rng.choice(words[label]) for _ in range(4)), label])
    return str(path)


def tweet_files(root):
    """train (96 rows), dev (30) and predict (23, no labels) files in `root`."""
    return dict(train=write_csv(root / "train.csv", 96, 1), dev=write_csv(root / "dev.csv", 30, 2),
                predict=write_csv(root / "predict.csv", 23, 3, with_label=False), root=root)
