"""PNG plots written to the model dir: training curves, the confusion matrix, the reliability
diagram and the coverage curve of calibrated scores.

Each is written whole (`zoo.base.files.save_bytes`), so a model dir in a bucket gets them too."""
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from zoo.base.files import save_bytes  # noqa: E402


def _save(fig, path):
    """Writes `fig` as a PNG to `path` (any file system) and closes it."""
    data = io.BytesIO()
    fig.savefig(data, format="png", dpi=100)
    plt.close(fig)
    save_bytes(path, data.getvalue())


def plot_history(history, path):
    """Loss and eval metrics per epoch (train vs eval where both exist)."""
    epochs = [h["epoch"] for h in history]
    metrics = sorted({k[len("eval_"):] for h in history for k in h
                      if k.startswith("eval_") and k not in ("eval_loss", "eval_num_examples")})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    loss_ax, metric_ax = axes
    for key, label in (("train_loss", "train"), ("eval_loss", "eval")):
        points = [(h["epoch"], h[key]) for h in history if key in h]
        if points:
            loss_ax.plot(*zip(*points), marker="o", label=label)
    loss_ax.set(title="loss", xlabel="epoch", xticks=epochs)
    loss_ax.legend()
    for metric in metrics:
        for split, style in (("train", "--"), ("eval", "-")):
            points = [(h["epoch"], h[f"{split}_{metric}"]) for h in history
                      if f"{split}_{metric}" in h]
            if points:
                metric_ax.plot(*zip(*points), style, marker="o", label=f"{split} {metric}")
    metric_ax.set(title="metrics", xlabel="epoch", xticks=epochs)
    if metrics:
        metric_ax.legend()
    fig.tight_layout()
    _save(fig, path)


def plot_confusion(matrix, names, path):
    """Confusion matrix with label names; cell counts shown when there are few classes."""
    matrix = np.asarray(matrix)
    n = len(names)
    size = max(5.0, min(0.28 * n + 2, 26.0))
    fig, ax = plt.subplots(figsize=(size, size))
    image = ax.imshow(matrix, cmap="Blues")
    fontsize = 10 if n <= 10 else 8 if n <= 40 else 7  # ~0.28 inch per class leaves room for 7 pt
    ax.set_xticks(range(n), names, rotation=90, fontsize=fontsize)
    ax.set_yticks(range(n), names, fontsize=fontsize)
    ax.set(xlabel="predicted", ylabel="true", title="confusion matrix")
    if n <= 20:
        threshold = matrix.max() / 2 if matrix.size else 0
        for i in range(n):
            for j in range(n):
                ax.text(j, i, int(matrix[i, j]), ha="center", va="center", fontsize=fontsize,
                        color="white" if matrix[i, j] > threshold else "black")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    _save(fig, path)


def plot_scatter(gold, predicted, path, title="predicted vs gold"):
    """Predicted against gold scores, with the diagonal of perfect predictions."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    ax.scatter(gold, predicted, s=6, alpha=0.4)
    if gold.size:
        low, high = min(gold.min(), predicted.min()), max(gold.max(), predicted.max())
        ax.plot([low, high], [low, high], color="gray", linewidth=1)
    ax.set(xlabel="gold", ylabel="predicted", title=title)
    fig.tight_layout()
    _save(fig, path)


def plot_reliability(report, path):
    """The reliability diagram of a calibration report (`zoo.evaluation.calibration`): each
    equal-mass bin's accuracy against its mean score, as the model gives them and, if a
    temperature was fitted, before it; the diagonal is perfect calibration."""
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    ax.plot([0, 1], [0, 1], color="gray", linewidth=1)
    curves = [("uncalibrated", report["uncalibrated"])] if "uncalibrated" in report else []
    name = f"T = {report['temperature']:.3g}" if curves else "as given"
    for label, measures in curves + [(name, report)]:
        table = measures["reliability"]
        ax.plot([b["score"] for b in table], [b["accuracy"] for b in table], marker="o",
                label=f"{label} (ECE {measures['ece']:.3f})")
    ax.set(xlabel="mean score of the bin", ylabel="accuracy of the bin", xlim=(0, 1),
           ylim=(0, 1), title=f"reliability ({report['binning']})")
    ax.legend(loc="upper left")
    fig.tight_layout()
    _save(fig, path)


def plot_coverage(scores, correct, path):
    """Accuracy of the rows kept against the fraction kept, keeping the surest first."""
    scores, correct = np.asarray(scores, np.float64), np.asarray(correct, np.float64)
    kept = correct[np.argsort(-scores, kind="stable")]
    fractions = np.arange(1, len(kept) + 1) / max(len(kept), 1)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.plot(fractions, np.cumsum(kept) / np.arange(1, len(kept) + 1))
    ax.set(xlabel="coverage (fraction of rows kept, surest first)",
           ylabel="accuracy of the rows kept", xlim=(0, 1), title="coverage and accuracy")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
