"""The paths of a run, checked before any work: the model dir (made, found, writable as the
mode needs) and where predictions go (never over the input).

Training, evaluation and data checks write into the model dir (and hold its lock:
`zoo.run.lock`); predict and export only read it, so a model dir on a read-only mount serves.
"""
import os

from zoo.base.errors import UsageError

WRITING_MODES = ("train", "train_and_eval", "eval", "check_data")  # predict, export: read


def prepare_model_dir(model_dir, mode):
    """Makes the model dir of a mode that starts one (training, data checks); a `UsageError`
    if it is a file, is missing for a mode that needs a trained one, or is not writable for a
    mode that writes into it (predict and export only read it: a read-only mount serves)."""
    if os.path.exists(model_dir) and not os.path.isdir(model_dir):
        raise UsageError(f"--model_dir={model_dir} is a file, not a directory")
    if mode in ("train", "train_and_eval", "check_data"):
        try:
            os.makedirs(model_dir, exist_ok=True)
        except OSError as e:
            raise UsageError(f"--model_dir={model_dir}: cannot create it ({e.strerror})") from None
    elif not os.path.isdir(model_dir):
        raise UsageError(f"--model_dir={model_dir} does not exist: --mode={mode} needs the "
                         "model dir of a trained model")
    if mode in WRITING_MODES and not os.access(model_dir, os.W_OK):
        raise UsageError(f"--model_dir={model_dir} is not writable: --mode={mode} writes into "
                         "it (predict and export only read it)")


def check_output_file(path, source):
    """A `UsageError` for a predictions file that could not be written, or that is one of the
    input files of `source` (the predictions would overwrite the data), before any work."""
    if os.path.isdir(path):
        raise UsageError(f"--output_file={path} is a directory; give a file name")
    inputs = getattr(source, "shards", None) or [getattr(source, "path", None)]
    for name in filter(None, inputs):
        if os.path.exists(path) and os.path.samefile(path, name):
            raise UsageError(f"--output_file={path} is the input file {name}: the predictions "
                             "would overwrite the data; give another file")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise UsageError(f"--output_file={path}: {parent} is not a writable directory")
