r"""Python inference on an exported model, without zoo's training stack.

    from zoo.serving import load
    model = load("runs/mrpc/export/1")
    model.predict([("The cat sat.", "A cat was sitting."), ...])   # text pairs
    model.predict(["great film", ...])                             # one text per input
    model.predict([{"question": "...", "context": "..."}, ...])    # SQuAD
    model.predict(["great film"], top_k=3)        # the 3 most probable classes (class models)
    model.predict(["great film"], min_score=0.8)  # label None below this score (class models)
    model.predict(["great film"], threshold=0.3)  # another threshold (multi-label models)
    model.explain(["great film"])                 # an attribution per word (see `explain`)

`predict` returns one dict per input, in input order: what the export's `serving_default`
returns for that input (`label`, `score`, `probabilities` by label name / `score` / `labels` /
`entities` with their character offsets / `answer`, `start`, `end`, `score`), with strings
decoded and padding removed. Inputs are sorted by length and sent in batches (`batch_size`), so
texts of similar length share a batch and the export trims each batch to its longest text.

From the shell, one JSON line out per line in (`zoo.cli.serve_predict`):

    zoo serve-predict runs/mrpc/export/1 < texts.txt > predictions.jsonl

This module needs only tensorflow and tensorflow_text, as TF Serving needs nothing else: none
of zoo's training modules, no tensorflow_hub, no Keras. What a process spends before its first
answer is mostly importing TensorFlow and loading the export, and both are kept short:
- TensorFlow imports the optimizers of a Keras when it starts, to register them for loading
  SavedModels that hold an optimizer, which an export does not. Where this module is the first
  to import TensorFlow, that import is skipped (`keras_left_out`); `tf.keras` is imported
  when it is first used, as it would be anyway.
- tensorflow_text's Python modules import a Keras too: `load` registers only the TF Text op
  libraries the export's graph runs (`zoo.export.text_ops`).
- TensorFlow's loader turns every function of the SavedModel back into a Python graph, those
  that only TF Serving runs (its saver's save and restore) too: `load` reads the export's proto
  once, for the TF Text ops and for `zoo.export.python_load`, which leaves those out.
- Both make a great many Python objects that stay alive, and Python's cyclic garbage
  collector would walk them again and again; it is paused while they are made
  (`paused_collector`) and resumed after, as it was.
- TensorFlow runs its graph optimizer (Grappler) over the export's function at the first call.
  With TensorFlow's oneDNN rewrites on (as `import zoo` turns them on), a prediction of one
  input (`predict([text])`, or `zoo serve-predict` given one line) by an fp32 export runs the
  function as instantiated without it (`zoo.compute.call_options`): there its passes cost
  more at the first call than they save on later ones, and a one-text call is about as fast
  without them. Predictions of several inputs keep them: their fused ops make batches faster.
  So does every call of a bf16 export, whose one-text calls they make faster, and every call
  with the oneDNN rewrites off (TF_ENABLE_ONEDNN_OPTS=0), where a one-text call is slower
  without them.
"""
import contextlib
import gc
import os
import sys


@contextlib.contextmanager
def paused_collector():
    """Python's cyclic garbage collector paused for a block that makes many long-lived objects
    (importing TensorFlow, loading an export), and resumed after it if it was running."""
    running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()


# what TensorFlow imports of each Keras when it starts (tensorflow/__init__.py)
KERAS_OPTIMIZERS = ("tf_keras.src.optimizers", "keras.src.optimizers")


@contextlib.contextmanager
def keras_left_out():
    """TensorFlow imported, in the block, without the Keras optimizers it imports when it
    starts: their modules read as absent (TensorFlow passes over an ImportError there), and are
    importable again after the block. Nothing changes where TensorFlow is imported already."""
    absent = [] if "tensorflow" in sys.modules else [
        name for name in KERAS_OPTIMIZERS if name not in sys.modules]
    for name in absent:
        sys.modules[name] = None
    try:
        yield
    finally:
        for name in absent:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


def _startup():
    """`python -m zoo.serving` starts as quietly as `zoo serve-predict` (`zoo.cli.quiet`);
    an import of the module leaves TensorFlow's start-up to its process."""
    if __name__ != "__main__":
        return contextlib.nullcontext()
    from zoo.cli import quiet
    return quiet.startup()


with _startup(), paused_collector(), keras_left_out():
    import numpy as np
    import tensorflow as tf
    from google.protobuf import message

from zoo.base import files, fs  # noqa: E402  (after TensorFlow, imported with the collector off)
from zoo.compute import call_options, onednn  # noqa: E402
from zoo.evaluation import explanations  # noqa: E402
from zoo.export import python_load, text_ops  # noqa: E402

DEFAULT_BATCH_SIZE = 32
EXPLAIN_BATCH_SIZE = 4  # texts per explain call: each runs the model steps + 2 times
ENTITY_KEYS = ("entity_text", "entity_type", "entity_start", "entity_end", "entity_score")
WORD_KEYS = ("tags", "word_start", "word_end")
# whether a prediction of one input by an fp32 export runs without Grappler's passes (the
# module docstring)
ONE_INPUT_WITHOUT_GRAPPLER = os.environ.get(onednn.VARIABLE) == "1"


def _plain(value):
    """A NumPy value of one row as JSON-ready Python (bytes decoded)."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value] if value.dtype.kind in "SO" else value.tolist()
    return value.item() if isinstance(value, np.generic) else value


def _text(name, value):
    """`value` as a str that TensorFlow can encode; a ValueError naming `name` otherwise."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{name} is not valid UTF-8 (byte {e.start})") from None
    if not isinstance(value, str):
        raise ValueError(f"{name} is not a string: {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{name} is not valid Unicode (a lone surrogate at character "
                         f"{e.start})") from None
    return value


def _load(export_dir):
    """The SavedModel in `export_dir`, loaded, and whether it computes in bfloat16 (a bf16
    export); a FileNotFoundError or ValueError that says what is there instead (nothing, a
    model dir, something unreadable)."""
    export_dir = fs.check(os.fspath(export_dir), "export_dir")
    if not fs.isdir(export_dir):
        raise FileNotFoundError(f"{export_dir}: no such directory (give the export, the "
                                "directory that --export_dir wrote)")
    if not fs.exists(fs.join(export_dir, "saved_model.pb")):
        inside = files.export_inside(export_dir)
        hint = (f"; the export is {inside}" if inside else
                "; train with --export_dir, or run --mode=export")
        raise FileNotFoundError(f"{export_dir}: not an export (no saved_model.pb){hint}")
    incomplete = files.check_complete(export_dir)
    if incomplete:
        raise ValueError(f"{export_dir}: not a whole export ({incomplete})")
    try:
        with paused_collector():
            saved_model = python_load.read(export_dir)
            text_ops.register_for(export_dir, saved_model)
            loaded = python_load.load(export_dir, saved_model)  # (`saved_model` made lean)
            return loaded, python_load.runs_bfloat16(saved_model)
    except (OSError, ValueError, tf.errors.OpError, message.DecodeError) as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{export_dir}: not a readable SavedModel ({reason})") from None


def min_score_of(value, name="min_score"):
    """`value` (a number, or the text of one) as the score below which a row abstains; a
    `ValueError` naming `name` unless it is a number in [0, 1]."""
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 <= number <= 1:
        raise ValueError(f"{name} must be a number in [0, 1], not {value!r}")
    return float(number)


def _listed(inputs, method):
    """`inputs` as a list; a TypeError for one text or dict, which would read as many."""
    if isinstance(inputs, (str, bytes, dict)):
        raise TypeError(f"{method} takes a list of inputs, not one {type(inputs).__name__}: "
                        f"for a single text, {method}([text])")
    return list(inputs)


class Model:
    """An exported zoo model (`load`); `predict(inputs)` gives one dict per input.

    Args:
        export_dir: the SavedModel directory (what `--export_dir` wrote).
        batch_size: inputs per call of the serving signature.
        signature: which of the export's signatures (a multi-task export has one per task).
    """

    def __init__(self, export_dir, batch_size=DEFAULT_BATCH_SIZE, signature="serving_default"):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a whole number, at least 1, not {batch_size!r}")
        self.export_dir = export_dir
        self.batch_size = batch_size
        self._loaded, in_bf16 = _load(export_dir)
        self._one_input_without_grappler = not in_bf16  # a bf16 export keeps Grappler's passes
        if signature not in self._loaded.signatures:
            raise ValueError(f"{export_dir} has no signature {signature!r} (it has "
                             f"{', '.join(sorted(self._loaded.signatures))})")
        self._serve = self._loaded.signatures[signature]
        self.one_label = "label_id" in self._serve.structured_outputs  # a class model's
        self.input_names = sorted(self._serve.structured_input_signature[1])
        if self.input_names == ["context", "question"]:
            self.input_names = ["question", "context"]
        modules = getattr(self._loaded, "signature_modules", None)
        module = modules[signature] if modules is not None else self._loaded.tasks[0]
        names = getattr(module, "label_names", None)
        self.label_names = None if names is None else [_plain(n) for n in names.numpy()]

    def values(self, item):
        """The input strings of one input (a text, a tuple of texts or a dict by input name;
        bytes are read as UTF-8), in `input_names` order; a ValueError says what is wrong with
        it."""
        if isinstance(item, dict):
            missing = [n for n in self.input_names if n not in item]
            if missing:
                raise ValueError(f"no {', '.join(missing)} (the model takes "
                                 f"{', '.join(self.input_names)})")
            values = [item[n] for n in self.input_names]
        elif isinstance(item, (str, bytes)):
            values = [item]
        elif isinstance(item, (list, tuple)):
            values = list(item)
        else:
            raise ValueError(f"expected a text, a tuple of texts or a dict, not {item!r}")
        if len(values) != len(self.input_names):
            raise ValueError(f"{len(values)} text(s), but the model takes "
                             f"{', '.join(self.input_names)}")
        return [_text(name, value) for name, value in zip(self.input_names, values)]

    def _columns(self, inputs):
        """{input name: list of strings} of `inputs`."""
        columns = {name: [] for name in self.input_names}
        for i, item in enumerate(inputs):
            try:
                values = self.values(item)
            except ValueError as e:
                raise ValueError(f"input {i}: {e}") from None
            for name, value in zip(self.input_names, values):
                columns[name].append(value)
        return columns

    def _rows(self, outputs, count):
        """One dict per row of a batch's outputs (NumPy arrays)."""
        rows = []
        for i in range(count):
            row = {k: v[i] for k, v in outputs.items()}
            if "num_entities" in row:  # tagging: entities and words without their padding
                n = int(row.pop("num_entities"))
                row["entities"] = [
                    dict(text=_plain(row["entity_text"][j]), type=_plain(row["entity_type"][j]),
                         start=int(row["entity_start"][j]), end=int(row["entity_end"][j]),
                         score=float(row["entity_score"][j])) for j in range(n)]
                words = row["word_start"] >= 0
                for key in WORD_KEYS:
                    row[key] = row[key][words]
                for key in ENTITY_KEYS:
                    del row[key]
            row.pop("logits", None)  # (the export's raw outputs; rows give probabilities)
            if "probabilities" in row and self.label_names and "label_mask" not in row \
                    and "label" in row:
                row["probabilities"] = dict(zip(self.label_names, row["probabilities"].tolist()))
                row["score"] = max(row["probabilities"].values())
            if "label_mask" in row:  # multi-label: the list of labels over the threshold
                mask = row.pop("label_mask")
                row["labels"] = [n for n, m in zip(self.label_names, mask) if m]
                row["probabilities"] = dict(zip(self.label_names, row["probabilities"].tolist()))
            if "top_k_labels" in row:  # the k most probable classes, without the padding
                row["top_k"] = [dict(label=_plain(n), score=float(p)) for n, p in zip(
                    row.pop("top_k_labels"), row.pop("top_k_probabilities")) if n]
            rows.append({k: _plain(v) for k, v in row.items()})
        return rows

    def _signature(self, name, what):
        """The export's signature `name`; a ValueError saying which exports have it."""
        if name not in self._loaded.signatures:
            raise ValueError(f"{self.export_dir} has no {name} signature, which {what} needs "
                             f"(it has {', '.join(sorted(self._loaded.signatures))})")
        return self._loaded.signatures[name]

    def _run(self, inputs, serve, convert, batch_size, extra=None):
        """`convert(outputs, count)` of `serve` on every input, batched by length, in input
        order; `extra`: {input name: one value per input} fed besides the texts."""
        columns = self._columns(inputs)
        lengths = [sum(len(columns[n][i]) for n in self.input_names) for i in range(len(inputs))]
        order = np.argsort(lengths, kind="stable")
        results = [None] * len(inputs)
        for begin in range(0, len(order), batch_size):
            chosen = order[begin:begin + batch_size]
            batch = {n: tf.constant([columns[n][i] for i in chosen]) for n in self.input_names}
            batch.update({n: tf.constant([values[i] for i in chosen])
                          for n, values in (extra or {}).items()})
            outputs = {k: np.asarray(v) for k, v in serve(**batch).items()}
            for i, row in zip(chosen, convert(outputs, len(chosen))):
                results[i] = row
        if any(row is None for row in results):  # every input has its row, or this is a bug
            raise RuntimeError(f"{results.count(None)} of {len(inputs)} inputs got no result")
        return results

    def predict(self, inputs, top_k=None, threshold=None, min_score=None):
        """One dict per input, in input order (see the module docstring). `inputs` is a list
        (or any iterable) of inputs, never a single text: `predict(["great film"])`.

        `top_k` (class models): each row also gets `top_k`, its k most probable classes as
        [{label, score}], most probable first (the export's `top_k` signature). `threshold`
        (multi-label models): the labels at or over this probability instead of the trained
        threshold (the export's `threshold` signature). `min_score` (class models): a row
        whose score is below it abstains: its `label` is None, its scores are kept (as the
        export's `min_score` signature does)."""
        inputs, serve, extra = _listed(inputs, "predict"), self._serve, {}
        if min_score is not None:
            min_score = min_score_of(min_score)
            if not self.one_label:
                raise ValueError("min_score is for class models (one label per row)")
        if top_k is not None:
            if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
                raise ValueError(f"top_k must be a whole number, at least 1, not {top_k!r}")
            serve = self._signature("top_k", "top_k")
            extra["top_k"] = [np.int32(top_k)] * len(inputs)
        if threshold is not None:
            if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
                    or not 0 < threshold <= 1:
                raise ValueError(f"threshold must be a number in (0, 1], not {threshold!r}")
            serve = self._signature("threshold", "threshold")
            extra["threshold"] = [np.float32(threshold)] * len(inputs)
        alone = (len(inputs) == 1 and ONE_INPUT_WITHOUT_GRAPPLER
                 and self._one_input_without_grappler)
        with call_options.without_grappler() if alone else contextlib.nullcontext():
            rows = self._run(inputs, serve, self._rows, self.batch_size, extra)
        for row in rows if min_score else ():
            if row["score"] < min_score:
                row["label"] = None
        return rows

    def explain(self, inputs, target=None):
        """Why each input got its prediction: one dict per input, in input order, with an
        attribution per word (`zoo.evaluation.explanations`: `words` with `text`, `start`,
        `end`, `attribution`, `truncated`; `target`, `score`, `method`, ...), from the
        export's `explain` signature (class, multi-label and regression models).

        `target`: the class to explain, by name: None (each input's predicted class), one
        name for every input, or a list of names (or None) per input."""
        inputs, serve = _listed(inputs, "explain"), self._signature("explain", "explain")
        extra = {}
        if "target" in serve.structured_input_signature[1]:
            targets = target if isinstance(target, (list, tuple)) else [target] * len(inputs)
            if len(targets) != len(inputs):
                raise ValueError(f"{len(targets)} targets for {len(inputs)} inputs")
            for i, name in enumerate(targets):
                if name is not None and name not in (self.label_names or []):
                    raise ValueError(f"target {i}: {name!r} is not a class of this model (its "
                                     f"classes: {', '.join(self.label_names or [])})")
            extra["target"] = ["" if name is None else name for name in targets]
        elif target is not None:
            raise ValueError("this model predicts a score: it has no class to name as target")
        pair = len(self.input_names) > 1
        return self._run(inputs, serve, lambda outputs, count: explanations.rows(
            outputs, count, pair),
            min(self.batch_size, EXPLAIN_BATCH_SIZE), extra)


def load(export_dir, batch_size=DEFAULT_BATCH_SIZE, signature="serving_default"):
    """The exported model in `export_dir` (its `signature`), ready for `predict`."""
    return Model(export_dir, batch_size, signature)


if __name__ == "__main__":  # `python -m zoo.serving`: as `zoo serve-predict`
    from zoo.cli import serve_predict
    serve_predict.main()
