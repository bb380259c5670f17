"""The best evaluated checkpoint (`--keep_best=METRIC`) and early stopping
(`--early_stopping_patience=N`).

After each evaluation of a `train_and_eval` run, `Best.update` compares the evaluation's METRIC
(a key of `eval_results.json`; `eval_loss` is its `loss`) with the best so far: a better one is
saved as the model dir's best checkpoint (`MODEL_DIR/best/`, beside the latest ones in
`checkpoints/`) and recorded in `MODEL_DIR/best.json` (metric, value, step, epoch). Losses and
errors (`loss`, `mse`, `rmse`, `mae`) are better lower, every other metric higher. With a
patience of N, training stops after N evaluations in a row without a better value; a rerun of a
run that stopped early does not train again. The export, and eval / predict / export runs with
`--keep_best`, use the best checkpoint.
"""

import tensorflow as tf

from zoo.base import fs
from zoo.base.progress import number
from zoo.base.errors import UsageError
from zoo.base.files import load_json, save_json
from zoo.training import checkpoints, distribute

BEST_FILE = "best.json"
LOWER_IS_BETTER = ("loss", "mse", "rmse", "mae")


def metric_key(metric):
    """The key of `eval_results.json` that `--keep_best=metric` reads."""
    return metric[len("eval_"):] if metric.startswith("eval_") else metric


def load(model_dir):
    """The saved record of the best evaluation, or None."""
    return load_json(fs.join(model_dir, BEST_FILE))


def check_settings(trainer, mode, metrics):
    """The keep-best settings a mode can use (a UsageError otherwise); `trainer`: the run's
    trainer settings (`zoo.base.fields.group_of`); `metrics`: what the task's evaluation
    reports."""
    if trainer.keep_best and metric_key(trainer.keep_best) not in metrics:
        raise UsageError(f"`keep_best`={trainer.keep_best} is not a metric of this task; it "
                         f"reports {', '.join(metrics)} (eval_loss is loss)")
    if trainer.early_stopping_patience and not trainer.keep_best:
        raise UsageError("`early_stopping_patience` needs `keep_best`=METRIC (what does not "
                         "improve)")
    if trainer.keep_best and mode == "train":
        raise UsageError("`keep_best` needs evaluations: use `mode`=train_and_eval")


class Best:
    """Keeps the best checkpoint of a training run; see the module docstring.

    Args:
        model: the core model (its weights are what the best checkpoint holds).
        model_dir: the run's model dir.
        trainer: the run's trainer settings (`keep_best`, `early_stopping_patience`;
            `zoo.base.fields.group_of`).
        strategy: the run's strategy (every worker saves; only the chief's copy is kept).
    """

    def __init__(self, model, model_dir, trainer, strategy):
        self.model_dir = model_dir
        self.metric = trainer.keep_best
        self.key = metric_key(self.metric)
        self.lower_is_better = self.key in LOWER_IS_BETTER or self.key.endswith("_loss")
        self.patience = trainer.early_stopping_patience
        self.strategy = strategy
        self.write_dir = distribute.write_dir(self.model_dir, strategy)
        self.manager = tf.train.CheckpointManager(
            tf.train.Checkpoint(model=model),
            checkpoints.directory(self.write_dir, checkpoints.BEST), max_to_keep=1)
        saved = load(self.model_dir)
        self.record = saved if saved and saved.get("metric") == self.metric else None

    @property
    def stopped(self):
        """Whether the run has stopped early (now or in an earlier process)."""
        return bool(self.record and self.record.get("stopped_early"))

    def update(self, results, step, epoch):
        """Takes the evaluation `results` at training `step`; saves the model if it is the best
        so far. Returns whether training should stop (patience run out)."""
        value = results.get(self.key)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            numbers = sorted(k for k, v in results.items()
                             if isinstance(v, (int, float)) and not isinstance(v, bool))
            raise UsageError(f"`keep_best`={self.metric}: the evaluation has no number "
                             f"{self.key!r} (it has {', '.join(numbers)})")
        best = None if self.record is None else self.record["value"]
        if best is None or (value < best if self.lower_is_better else value > best):
            self.manager.save(checkpoint_number=step)
            self.record = dict(metric=self.metric, value=value, step=step, epoch=epoch,
                               evaluations_since_best=0)
        else:
            self.record["evaluations_since_best"] += 1
        stop = bool(self.patience) and self.record["evaluations_since_best"] >= self.patience
        if stop:
            self.record["stopped_early"] = dict(step=step, epoch=epoch)
        if distribute.is_chief(self.strategy):
            save_json(fs.join(self.model_dir, BEST_FILE), self.record)
        print(f"best {self.metric}: {number(self.record['value'])} at step {self.record['step']}"
              + (f"; stopping: {self.patience} evaluations without a better one" if stop
                 else ""))
        return stop

    def close(self):
        distribute.cleanup_write_dir(self.write_dir, self.strategy)


def restore(model, model_dir):
    """Loads the best checkpoint of `model_dir` into `model`; returns its step."""
    path = checkpoints.restore_newest(tf.train.Checkpoint(model=model), model_dir,
                                      checkpoints.BEST)
    if not path:
        raise FileNotFoundError(f"{checkpoints.directory(model_dir, checkpoints.BEST)}: no best "
                                "checkpoint; train with --mode=train_and_eval --keep_best=METRIC")
    return int(path.rsplit("-", 1)[1])
