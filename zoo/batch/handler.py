"""A Beam `RunInference` model handler for zoo exports.

`ExportHandler` loads an export once per worker through `zoo.serving` (only TensorFlow and
TensorFlow Text: any export `zoo.serving` reads), with the worker's TensorFlow thread pools sized
to the cores it is given, and predicts batches of elements: each element is a `Row` (its key and
its input: a text, a pair of texts or a dict by input name), each result the `Row` with its
prediction dict.
"""
import dataclasses
from typing import Any, Optional

from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from zoo.batch import progress


@dataclasses.dataclass(frozen=True)
class Row:
    """One input row: where it came from (`source`, "file:line"), its id if the input has one,
    and what the model takes (`zoo.serving.Model.values`)."""

    source: str
    inputs: Any
    id: Optional[str] = None

    def length(self):
        values = self.inputs.values() if isinstance(self.inputs, dict) else (
            self.inputs if isinstance(self.inputs, (tuple, list)) else [self.inputs])
        return sum(len(v) for v in values)


class ExportHandler(ModelHandler):
    """Predicts `Row`s with a zoo export.

    Args:
        export_dir: the export (a SavedModel directory `zoo.serving.load` reads).
        signature: which signature (each task of a multi-task export has one).
        threads: TensorFlow's intra- and inter-op threads in each worker (its share of the cores,
            so that workers on one machine do not oversubscribe it); 0 keeps TensorFlow's.
        batch_size: texts per call of the signature (sorted by length within a Beam batch).
        min_batch_size, max_batch_size: what `beam.BatchElements` may give `run_inference`.
        min_score: class exports: a row scored below it abstains (`zoo.serving.Model.predict`).
        progress: a folder where each worker process counts the rows it predicted
            (`zoo.batch.progress`; None: no count is kept).

    Example:
    ```python
    with beam.Pipeline() as p:
        (p | beam.Create([Row("a:1", "great film")])
           | RunInference(ExportHandler("runs/sst2/export/1")) | beam.Map(print))
    ```
    """

    def __init__(self, export_dir, signature="serving_default", threads=0, batch_size=32,
                 min_batch_size=32, max_batch_size=512, min_score=None, progress=None):
        super().__init__()
        self.min_score = min_score
        self.progress = progress
        self.export_dir = export_dir
        self.signature = signature
        self.threads = threads
        self.batch_size = batch_size
        self.min_batch_size = min_batch_size
        self.max_batch_size = max_batch_size

    def load_model(self):
        import tensorflow as tf
        from zoo import serving
        from zoo.batch import files

        files.use()
        if self.threads:
            try:  # only before TensorFlow's runtime starts in this worker
                tf.config.threading.set_intra_op_parallelism_threads(self.threads)
                tf.config.threading.set_inter_op_parallelism_threads(self.threads)
            except RuntimeError:
                pass
        return serving.load(self.export_dir, self.batch_size, self.signature)

    def run_inference(self, batch, model, inference_args=None):
        del inference_args
        predictions = model.predict([row.inputs for row in batch], min_score=self.min_score)
        tally = progress.tally(self.progress)
        if tally is not None:
            tally.add("predicted", len(predictions))
        return [PredictionResult(row, prediction) for row, prediction in zip(batch, predictions)]

    def get_num_bytes(self, batch):
        return sum(row.length() for row in batch)

    def batch_elements_kwargs(self):
        return dict(min_batch_size=self.min_batch_size, max_batch_size=self.max_batch_size)

    def get_metrics_namespace(self):
        return "zoo"
