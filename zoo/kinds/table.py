"""The table of task kinds: {name: `Kind`}, the one place that lists them.

A multi-task `tasks.json` entry names its kind here ("kind": "squad"), each task's CLI runs the
kind of its name, and `run` runs one from Python. Adding a kind is its module (a `Kind` at its
end) and a line here.
"""
from zoo.base.errors import UsageError
from zoo.kinds import classification, multilabel, regression, squad, tagging

KINDS = {kind.name: kind for kind in (
    classification.MRPC, classification.SST2, regression.STSB, classification.KIND,
    regression.KIND, multilabel.KIND, squad.KIND, tagging.KIND)}


def run(kind, mode, **values):
    """Runs `mode` of the task kind named `kind` with its data keys and settings as keyword
    arguments, as a tasks.json entry gives them; returns what the mode produced (training
    timing, eval results, prediction count, export dir, data check reports). A mode that uses
    a trained model (eval, predict, export, explain) takes what the model dir recorded (its
    encoder, sequence length, labels, columns...: `zoo.kinds.kind.RECORDED`) for the keys it
    is not given.

    Example:
    ```python
    run("mrpc", "train_and_eval", data_dir="glue/mrpc", model_dir="runs/mrpc",
        num_train_epochs=1, export_dir="runs/mrpc/export/1")
    run("mrpc", "predict", model_dir="runs/mrpc", predict_file="pairs.tsv",
        output_file="runs/mrpc/pairs.csv")
    ```
    """
    if kind not in KINDS:
        raise UsageError(f"kind must be one of {sorted(KINDS)}, not {kind!r}")
    unknown = KINDS[kind].unknown_keys(values)
    if unknown:
        raise UsageError(f"{kind}: unknown keys {unknown}")
    data, settings = KINDS[kind].parts(KINDS[kind].with_record(mode, values, set(values)))
    return KINDS[kind].run(mode, settings, data)
