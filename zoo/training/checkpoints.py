"""A model dir's checkpoints: saved during training (`Saver`), restored only whole and only if
they fit the model (`restore_newest`, `restore_model`).

TensorFlow's `Checkpoint.restore(...).expect_partial()` alone accepts a checkpoint that holds
none, or only some, of the model's variables: an eval, predict or export against a model dir
trained with another encoder, head size or task would run on weights never restored. Here every
variable of the model must be matched, or the run stops naming the model dir and what differs.

A checkpoint whose files are corrupt or truncated (a disk that filled, a copy cut short) is
skipped with a warning, and the one before it is restored; a checkpoint that a killed process
was still writing is never the newest, since TensorFlow records a checkpoint only once it is
complete.
"""
import tensorflow as tf
from absl import logging

from zoo.base import fs, stages
from zoo.base.errors import UsageError
from zoo.training import run_record


LATEST = "checkpoints"  # the training checkpoints of a model dir
BEST = "best"  # the best evaluated one (`zoo.run.best`)


def directory(model_dir, kind=LATEST):
    return fs.join(model_dir, kind)


def newest_first(model_dir, kind=LATEST):
    """The recorded checkpoints of `model_dir` (in its folder `kind`), newest first."""
    folder = directory(model_dir, kind)
    state = tf.train.get_checkpoint_state(folder)
    if not state or not state.model_checkpoint_path:
        return []
    # (TensorFlow has already put the folder in front of the relative paths the file holds.)
    return [state.model_checkpoint_path] + [
        p for p in reversed(state.all_model_checkpoint_paths) if p != state.model_checkpoint_path]


def _mismatch(model_dir, path, detail):
    saved = run_record.load(model_dir)
    trained = (f" It was trained as: {run_record.summary(saved)}." if saved
               else f" See {model_dir}/flags.txt for the flags it was trained with.")
    return UsageError(f"{path}: this checkpoint does not fit the model this run builds "
                      f"({detail}); was {model_dir} trained with another encoder, task or "
                      f"number of labels?{trained}")


def restore_newest(checkpoint, model_dir, kind=LATEST):
    """Restores the newest readable checkpoint of `model_dir` (of its folder `kind`: the
    training checkpoints, or the best one) into `checkpoint` (a `tf.train.Checkpoint` whose
    `model` must be matched in full); returns its path, or None when there is none."""
    paths = newest_first(model_dir, kind)
    for path in paths:
        try:
            status = checkpoint.restore(path)
        # Corrupt, truncated or missing files (TensorFlow's reader raises IndexError for a
        # data file cut short).
        except (tf.errors.OpError, IndexError) as e:
            logging.warning("%s: unreadable checkpoint (%s)", path, stages.first_line(e))
            print(f"warning: {path}: unreadable checkpoint ({stages.first_line(e)}); "
                  "trying the one before it")
            continue
        except ValueError as e:  # a variable of another shape
            raise _mismatch(model_dir, path, stages.first_line(e)) from None
        status.expect_partial()
        try:
            status.assert_existing_objects_matched()
        except AssertionError as e:
            raise _mismatch(model_dir, path, stages.first_line(e)) from None
        logging.info("Restored %s", path)
        return path
    if paths:
        raise UsageError(f"{directory(model_dir, kind)}: no readable checkpoint (tried "
                         f"{', '.join(fs.basename(p) for p in paths)}); train again in a "
                         "new `model_dir`")
    return None


class Saver:
    """The model + optimizer checkpoint of a model dir; `restore()` returns the step reached.

    Every worker restores from `model_dir`; a non-chief worker saves into its own `write_dir`
    (all workers must take part in saving under multi-worker training).
    """

    def __init__(self, model, optimizer, model_dir, write_dir=None, max_to_keep=3):
        self.optimizer = optimizer
        self.model_dir = model_dir
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, directory(write_dir or model_dir),
            max_to_keep=max_to_keep)
        self.saved_step = None

    def restore(self):
        """Restores the newest readable checkpoint, if any (`restore_newest`)."""
        restore_newest(self.checkpoint, self.model_dir)
        self.saved_step = int(self.optimizer.iterations.numpy())
        return self.saved_step

    def save(self):
        """Saves unless the current step is already saved (step and epoch ends may coincide)."""
        step = int(self.optimizer.iterations.numpy())
        if step != self.saved_step:
            self.manager.save(checkpoint_number=step)
            self.saved_step = step


def restore_model(model, model_dir):
    """Loads the newest readable checkpoint's model weights (for eval / predict / export); every
    variable of `model` must be in it. Returns the checkpoint's path."""
    restored = restore_newest(tf.train.Checkpoint(model=model), model_dir)
    if not restored:
        raise FileNotFoundError(f"{directory(model_dir)}: no checkpoint; train first "
                                "(--mode=train)")
    return restored
