"""The paths of a run, checked before any work: the model dir (made, found, writable as the
mode needs) and where predictions go (never over the input).

Training, evaluation and data checks write into the model dir (and hold its lock:
`zoo.run.lock`); predict and export only read it, so a model dir on a read-only mount serves. A
training run refused before its first checkpoint takes back what it wrote into the model dir
(`entries` before the run, `take_back` after the refusal).
"""
from zoo.base import fs
from zoo.base.errors import UsageError

WRITING_MODES = ("train", "train_and_eval", "eval", "check_data")  # predict, export: read


def prepare_model_dir(model_dir, mode):
    """Makes the model dir of a mode that starts one (training, data checks); a `UsageError`
    if it is a file, is missing for a mode that needs a trained one, or is not writable for a
    mode that writes into it (predict and export only read it: a read-only mount serves)."""
    fs.check(model_dir, "`model_dir`")
    if fs.exists(model_dir) and not fs.isdir(model_dir):
        raise UsageError(f"`model_dir`={model_dir} is a file, not a directory")
    if mode in ("train", "train_and_eval", "check_data"):
        try:
            fs.makedirs(model_dir)
        except OSError as e:
            raise UsageError(f"`model_dir`={model_dir}: cannot create it ({e.strerror})") from None
    elif not fs.isdir(model_dir):
        raise UsageError(f"`model_dir`={model_dir} does not exist: `mode`={mode} needs the "
                         "model dir of a trained model")
    if mode in WRITING_MODES and not fs.writable_folder(model_dir):
        raise UsageError(f"`model_dir`={model_dir} is not writable: `mode`={mode} writes into "
                         "it (predict and export only read it)")


def check_output_file(path, source):
    """A `UsageError` for a predictions file that could not be written, or that is one of the
    input files of `source` (the predictions would overwrite the data), before any work."""
    fs.check(path, "`output_file`")
    if fs.isdir(path):
        raise UsageError(f"`output_file`={path} is a directory; give a file name")
    inputs = getattr(source, "shards", None) or [getattr(source, "path", None)]
    for name in filter(None, inputs):
        if fs.samefile(path, name):
            raise UsageError(f"`output_file`={path} is the input file {name}: the predictions "
                             "would overwrite the data; give another file")
    if not fs.is_local(path):
        return
    parent = fs.dirname(path)
    while not fs.exists(parent):
        parent = fs.dirname(parent)
    if not fs.writable_folder(parent):
        raise UsageError(f"`output_file`={path}: {parent} is not a writable directory")


UNTRACKED = "untracked"  # `entries` of a model dir path no file system serves


def entries(model_dir):
    """The names in `model_dir`, None if there is no such folder (`UNTRACKED`: no usable
    path)."""
    if not model_dir or fs.problem(model_dir):
        return UNTRACKED
    return set(fs.listdir(model_dir)) if fs.isdir(model_dir) else None


def take_back(model_dir, before):
    """Removes what a refused run added to `model_dir` (all of it, if it was not there)."""
    if not fs.isdir(model_dir):
        return
    if before is None:
        fs.rmtree(model_dir)
        return
    for name in set(fs.listdir(model_dir)) - before:
        path = fs.join(model_dir, name)
        if fs.isdir(path):
            fs.rmtree(path)
        else:
            fs.remove(path)
