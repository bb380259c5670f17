"""Warm starts (`--init_from=MODEL_DIR`): a new run that starts from another run's weights.

A fine-tuned model is often the better start for the next task: a SQuAD v1.1 model for SQuAD 2.0
or for questions about one's own documents, a sentiment model for a new product line. A warm
start is a new run, not a resume: its own model dir, schedule, optimizer and step counter; only
the weights come from the source, before the first step. Once the new run has a checkpoint of its
own, a rerun resumes that checkpoint and never reads the source again.

- The encoder's weights always transfer; the encoder must be the source's (the same variables of
  the same shapes, and the same vocabulary when both encoders carry one), else the run is
  refused naming both.
- The head's weights transfer when the head is the same: the same kind of task (its `NAME` in
  run.json) and the same outputs (label names, tag names, the span head); otherwise the head
  starts fresh and the run says why (a class head with other labels, or another task).
- The source's encoder and preprocessor handles are the run's unless it sets its own; a
  classifier's `--pooling=auto` becomes the source's pooling (`Source.record_dir`).
- From a multi-task model dir, `--init_from_task` names the task whose head to take; without it
  the encoder alone transfers.
- The source's checkpoint is its best one (`--keep_best`) if it has one, else its newest.

`MODEL_DIR/run.json` records the source under `init_from` (`Source.describe`).
"""
import dataclasses
import hashlib

import tensorflow as tf

from zoo.base import fs, stages
from zoo.base.errors import UsageError
from zoo.base.fields import group_of
from zoo.model import hub
from zoo.training import checkpoints, run_record

# How a Keras functional model names its layers that hold weights, in a checkpoint: every core
# of `zoo.model.cores` has the encoder first and its head last (its pooling holds none).
ENCODER_EDGE, HEAD_EDGE = "layer_with_weights-0", "layer_with_weights-1"
MULTITASK = "multitask"  # a multi-task run's `task` in run.json


class Source:
    """The model dir a run starts from, read and checked before any work.

    Args:
        path: the source model dir (it has run.json and a checkpoint).
        task: in a multi-task source, the task whose head to take ("" for the encoder alone).
    """

    def __init__(self, path, task=""):
        self.path = fs.absolute(path)
        self.task = task
        self.encoder = None  # this run's encoder handle (`check_encoder`)
        self.record = run_record.load(self.path)
        if self.record is None:
            found = "a checkpoint but no run.json" if checkpoints.newest_first(path) else \
                "no run.json"
            raise UsageError(f"`init_from`={path}: {found}; `init_from` takes a model dir that "
                             "zoo trained (it reads the encoder, task and outputs from its "
                             "run.json)")
        best = checkpoints.newest_first(path, checkpoints.BEST)
        found = best or checkpoints.newest_first(path)
        if not found:
            raise UsageError(f"`init_from`={path}: no checkpoint in "
                             f"{checkpoints.directory(path)}; train it first")
        self.checkpoint, self.which = found[0], "best" if best else "newest"
        self.multitask = self.record.get("task") == MULTITASK
        self._check_task()

    def _check_task(self):
        if not self.multitask:
            if self.task:
                raise UsageError(f"`init_from_task`={self.task}: {self.path} is a "
                                 f"{self.record.get('task')} model dir, not a multi-task one")
            return
        names = sorted(self.record.get("outputs") or {})
        if self.task and self.task not in names:
            raise UsageError(f"`init_from_task`={self.task}: {self.path} has the tasks "
                             f"{', '.join(names)}")

    @property
    def head_task(self):
        """The task `NAME` of the head on offer (None: the encoder alone)."""
        if not self.multitask:
            return self.record.get("task")
        if not self.task:
            return None
        return (self.record.get("heads") or {}).get(self.task)

    @property
    def outputs(self):
        """What the head on offer predicts (run.json's `outputs`)."""
        outputs = self.record.get("outputs")
        return outputs.get(self.task) if self.multitask else outputs

    def label(self):
        return f"{self.path} ({self.record.get('task')}" + (
            f", task {self.task})" if self.task else ")")

    def check_encoder(self, model):
        """A `UsageError` naming both encoders when the run's encoder (of its `model` settings
        group) is not the source's: another vocabulary (when both carry one). Shapes are
        checked by `restore`."""
        self.encoder = model.encoder_handle
        ours = hub.resolve_handles(model.encoder_handle, model.preprocessor_handle)[0]
        theirs_handle = self.record.get("encoder_handle")
        try:
            theirs = hub.resolve_handles(theirs_handle, self.record.get("preprocessor_handle"))[0]
        except hub.HandleError:
            return  # (not reachable from here: the restore still checks every shape)
        if ours == theirs:
            return
        a, b = vocabulary_digest(ours), vocabulary_digest(theirs)
        if a and b and a != b:
            raise UsageError(
                f"`init_from`={self.path}: its encoder {theirs_handle} has another vocabulary "
                f"than this run's encoder {model.encoder_handle} ({ours}); the weights "
                "would read other tokens. Train from the same encoder (leave `encoder_handle` "
                "unset to take the source's)")

    def head_decision(self, task_name, outputs, names=None):
        """(reuse the head?, why not) for a run of task `task_name` predicting `outputs`
        (`names`: their names, which an export source compares instead)."""
        del names
        if self.multitask and not self.task:
            return False, (f"a multi-task source gives its encoder alone without "
                           f"--init_from_task (one of {', '.join(sorted(self.record['outputs']))})")
        if self.head_task is None:
            return False, "the source's run.json does not name its task's kind"
        if self.head_task != task_name:
            return False, (f"the source's head is a {self.head_task} head, this run's a "
                           f"{task_name} one")
        if self.outputs != outputs:
            return False, (f"the source predicts {_short(self.outputs)}, this run "
                           f"{_short(outputs)}")
        return True, ""

    def restore(self, encoder=None, head=None):
        """Loads the source checkpoint's encoder and head weights into `encoder` and `head`
        (layers of the new core; None: not that one); every one of their variables must be
        found, of the same shape, or the run stops naming both models."""
        layers = {"encoder": encoder, "head": head}
        mirror = {edge: layers[part] for edge, part in ((ENCODER_EDGE, "encoder"),
                                                        (HEAD_EDGE, "head"))
                  if layers[part] is not None}
        if self.multitask:
            mirror = {self.task or next(iter(sorted(self.record["outputs"]))): mirror}
        try:
            status = tf.train.Checkpoint(model=mirror).restore(self.checkpoint)
            status.expect_partial()
            status.assert_existing_objects_matched()
        except (ValueError, AssertionError) as e:
            raise UsageError(
                f"`init_from`={self.path}: {self.checkpoint} does not fit this run's "
                f"{' and '.join(part for part, layer in layers.items() if layer is not None)} "
                f"({stages.first_line(e)}); the source was trained with encoder "
                f"{self.record.get('encoder_handle')}, this run has {self.encoder}: train "
                "from the same encoder") from None

    def describe(self, head_reused, why_not=""):
        """The record of the warm start, for run.json's `init_from`."""
        return dict(path=self.path, checkpoint=self.checkpoint[len(self.path):].lstrip("/"),
                    checkpoint_kind=self.which, task=self.record.get("task"),
                    init_from_task=self.task or None, git=self.record.get("git"),
                    encoder_handle=self.record.get("encoder_handle"),
                    head="reused" if head_reused else f"new: {why_not}")


def _short(value, limit=6):
    if isinstance(value, list) and len(value) > limit:
        return str(value[:limit])[:-1] + f", ... ({len(value)} in all)]"
    return repr(value)


def vocabulary_digest(saved_model, only=None):
    """A digest of the vocabulary files (the assets) of a local SavedModel (`only`: of that
    file alone), or None."""
    folder = fs.join(saved_model, "assets")
    if hub.is_url(saved_model) or not fs.isdir(folder):
        return None
    names = fs.listdir(folder) if only is None else [only]
    if not all(fs.exists(fs.join(folder, name)) for name in names):
        return None
    digest = hashlib.sha1()
    for name in names:
        with fs.open(fs.join(folder, name), "rb") as f:
            digest.update(name.encode() + b"\0" + f.read())
    return digest.hexdigest()


def adopt(settings, record, where):
    """`settings` with the encoder and preprocessor handles of `record` (a run.json, read from
    `where`) where the run left them at their defaults."""
    defaults = {f.name: f.default for f in dataclasses.fields(settings)}
    changes = {}
    for key in ("encoder_handle", "preprocessor_handle"):
        theirs = record.get(key, defaults[key])
        if getattr(settings, key) == defaults[key] and theirs != defaults[key]:
            changes[key] = theirs
    if changes:
        print("--init_from: " + ", ".join(f"{k}={v}" for k, v in changes.items())
              + f" (from {where})")
    return dataclasses.replace(settings, **changes)


def begin(settings, training):
    """(settings, `Source` or None) of a run with `--init_from`: the source is opened and
    checked when training starts afresh; a run that resumes its own checkpoint, or uses it
    (eval, predict, export), takes the handles its own run.json recorded and never reads the
    source."""
    if fs.absolute(settings.init_from).rstrip("/") == fs.absolute(settings.model_dir).rstrip("/"):
        raise UsageError(f"`init_from`={settings.init_from} is this run's `model_dir`; to "
                         "resume it, leave `init_from` out")
    own = run_record.load(settings.model_dir)
    if checkpoints.newest_first(settings.model_dir) or not training:
        if own is not None:
            return adopt(settings, own, settings.model_dir), None
        theirs = None if training else run_record.load(settings.init_from)
        if theirs is not None:
            return adopt(settings, theirs, settings.init_from), None
        return settings, None
    source = open_source(settings.init_from, settings.init_from_task)
    settings = adopt(settings, source.record, source.path)
    source.check_encoder(group_of(settings, "model"))
    return settings, source


# An export's head, known by its variables' layer name (and a label set's outputs).
EXPORT_HEADS = {"span": "squad", "tagger": "tagging", "regressor": "regression",
                "classifier": "classification"}


class ExportSource:
    """An fp32 SavedModel export a run starts from (`--init_from=EXPORT_DIR`): `Source`'s
    interface, read from the export's variables by name. The export names no encoder: the run's
    own must have the same variables and vocabulary. The head transfers when it is the same
    head with the same label (or tag) names. With `task`, the signature of that name (a
    multi-task export's task)."""

    def __init__(self, path, task=""):
        self.path = fs.absolute(path)
        self.task = task
        self.multitask = False
        self.encoder = None
        loaded = tf.saved_model.load(self.path)
        modules = getattr(loaded, "signature_modules", None)
        signature = task or "serving_default"
        if not modules or signature not in modules:
            raise UsageError(f"`init_from`={path}: not a zoo export with a signature "
                             f"{signature!r} (its signatures: {', '.join(loaded.signatures)})")
        module = modules[signature]
        self.values = {v.name: v for v in getattr(module, "resources", [])
                       if isinstance(v, tf.Variable) and v.dtype.is_floating}
        if not any(name.startswith("bert_encoder/transformer") for name in self.values):
            raise UsageError(f"`init_from`={path}: this export holds no encoder weights as "
                             "variables (a bf16 export keeps them as constants); start from its "
                             "model dir or an fp32 export")
        names = getattr(module, "label_names", getattr(module, "tag_names", None))
        self.names = None if names is None else [n.decode() for n in names.numpy()]
        heads = {name.split("/")[0] for name in self.values} & set(EXPORT_HEADS)
        self.head_task = EXPORT_HEADS[heads.pop()] if len(heads) == 1 else None
        if self.head_task == "classification" and "label_mask" in \
                loaded.signatures[signature].structured_outputs:
            self.head_task = "multi_label"
        self.which = "export"
        self.record = {"task": self.head_task}

    def label(self):
        return f"{self.path} (an export" + (f", signature {self.task})" if self.task else ")")

    def check_encoder(self, model):
        """A `UsageError` when the export's vocabulary is not the run's encoder's (of its
        `model` settings group)."""
        self.encoder = model.encoder_handle
        ours = hub.resolve_handles(model.encoder_handle, model.preprocessor_handle)[0]
        a, b = vocabulary_digest(ours, "vocab.txt"), vocabulary_digest(self.path, "vocab.txt")
        if a and b and a != b:
            raise UsageError(f"`init_from`={self.path}: the export's vocabulary is not the one "
                             f"of this run's encoder {model.encoder_handle} ({ours})")

    def head_decision(self, task_name, outputs, names=None):
        del outputs
        if self.head_task != task_name:
            return False, (f"the export's head is a {self.head_task} head, this run's a "
                           f"{task_name} one")
        if names is not None and self.names != list(names):
            return False, f"the export predicts {_short(self.names)}, this run {_short(names)}"
        return True, ""

    def restore(self, encoder=None, head=None):
        """Assigns the export's values to the variables of `encoder` and `head` of the same
        name; every one must be there with its shape, except the encoder's pooler (an export
        of a mean-pooling model does not read it: the encoder's own values stay)."""
        for layer in (encoder, head):
            if layer is None:
                continue
            for variable in layer.weights:
                if not variable.dtype.is_floating:
                    continue
                found = self.values.get(variable.name)
                if found is None and "/pooler/" in variable.name:
                    continue
                if found is None or found.shape != variable.shape:
                    what = "no such weight" if found is None else f"shape {found.shape}"
                    raise UsageError(
                        f"`init_from`={self.path}: {variable.name} {variable.shape} of this "
                        f"run's encoder {self.encoder}: {what} in the export; train from the "
                        "encoder the export was trained from")
                variable.assign(found)

    def describe(self, head_reused, why_not=""):
        return dict(path=self.path, checkpoint=None, checkpoint_kind="export",
                    task=self.head_task, init_from_task=self.task or None, git=None,
                    encoder_handle=None, head="reused" if head_reused else f"new: {why_not}")


def open_source(path, task=""):
    """The `Source` (a model dir) or `ExportSource` (a SavedModel export) at `path`."""
    if run_record.load(path) is None and fs.exists(fs.join(path, "saved_model.pb")):
        return ExportSource(path, task)
    return Source(path, task)
