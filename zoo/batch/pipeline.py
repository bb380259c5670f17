"""Batch prediction as an Apache Beam pipeline: files of rows in, a prediction per row out.

    shards -> read each with zoo's readers (bad rows to the rejected output) -> spread
           -> RunInference(ExportHandler) -> JSON (or CSV) lines -> OUT_PREFIX-*.jsonl (.csv)
                                              rejected rows     -> OUT_PREFIX-rejected-*.jsonl

Paths may be local or in a bucket (`gs://`, and `s3://` with Beam's extra for it): files are
read and written through Beam's file systems (`zoo.batch.files`). Files are read with the
readers `--mode=predict` uses (`zoo.data.sources.read_file`: CSV, TSV,
JSONL, TFRecord; the same column names and bad-row rules), so a bad row is named by its
`FILE:LINE`. Each output line carries the row's `source` ("file:line") and its `id` when the
input has an id column, so the input order can be restored. Beam's file sinks write to temporary
files and give them their names only when the pipeline succeeds: a killed run leaves no output
that looks complete. Every row is counted (Beam counters): input rows = predictions + rejected,
checked at the end and written to OUT_PREFIX-summary.json. On Beam's local runner, the rows read
and predicted show on a bar with the time left (`zoo.batch.progress`).
"""
import csv
import dataclasses
import io
import json
import re
import tempfile
import time
from typing import Optional

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.ml.inference.base import RunInference
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from zoo.base import fs
from zoo.base.files import save_json
from zoo.batch import files, progress
from zoo.batch.handler import Row
from zoo.data.sources import expand_shards, read_file
from zoo.data.text_files import BadRow, Columns

NAMESPACE = "zoo"
QA_INPUTS = ["question", "context"]


@dataclasses.dataclass(frozen=True)
class Inputs:
    """Which files, and which columns of them, give the model's inputs."""

    pattern: str
    text_column: str = "text"
    text_b_column: Optional[str] = None  # a pair model's second text, or a SQuAD context
    id_column: Optional[str] = None
    delimiter: Optional[str] = None
    header: bool = True
    quoting: str = "auto"

    def columns(self):
        return Columns(self.text_column, self.text_b_column, None, self.id_column,
                       self.delimiter, self.header, self.quoting)


def model_input(example, input_names):
    """What `zoo.serving.Model.predict` takes for one row, by the signature's input names."""
    if input_names == QA_INPUTS:
        return dict(question=example.text_a, context=example.text_b)
    if len(input_names) == 2:
        return (example.text_a, example.text_b)
    return example.text_a


def reason_kind(reason):
    """A rejected row's reason without its particulars (numbers, quoted values), to count by."""
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'...'", reason))[:80]


class ReadShard(beam.DoFn):
    """A file's rows: a `Row` for each good one, a dict on the `rejected` output for a bad
    one."""

    def __init__(self, inputs: Inputs, input_names, progress_folder=None):
        super().__init__()
        self.inputs = inputs
        self.input_names = list(input_names)
        self.progress_folder = progress_folder  # (`zoo.batch.progress`; None: not kept)
        self.rows = Metrics.counter(NAMESPACE, "input_rows")

    def setup(self):
        files.use()

    def process(self, path):
        tally = progress.tally(self.progress_folder)
        for item in read_file(path, self.inputs.columns(), require_label=False):
            self.rows.inc()
            if isinstance(item, BadRow):
                Metrics.counter(NAMESPACE, f"rejected: {reason_kind(item.reason)}").inc()
                yield beam.pvalue.TaggedOutput("rejected", json.dumps(dict(
                    source=item.source, id=item.id, reason=item.reason, raw=item.raw),
                    ensure_ascii=False))
            else:
                if tally is not None:
                    tally.add("read")
                yield Row(item.source, model_input(item, self.input_names), item.id)
        if tally is not None:
            tally.flush()


def output_line(result, fields=None):
    """The line of a prediction: the row's id (if any) and source, then the prediction; a JSON
    object, or with `fields` (the CSV header's columns) a CSV line whose lists and dicts are
    JSON."""
    row = result.example
    Metrics.counter(NAMESPACE, "predictions").inc()
    head = {"id": row.id} if row.id is not None else {}
    values = dict(head, source=row.source, **result.inference)
    if fields is None:
        return json.dumps(values, ensure_ascii=False)
    line = io.StringIO()
    csv.writer(line, lineterminator="").writerow(
        [json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else
         ("" if v is None else v) for v in (values.get(f) for f in fields)])
    return line.getvalue()


def csv_fields(example_prediction, has_id):
    """The CSV columns of the outputs: id (if the input has one), source, then the prediction's
    keys (from a prediction of the same export)."""
    return (["id"] if has_id else []) + ["source"] + list(example_prediction)


def build(pipeline, inputs: Inputs, input_names, handler, output_prefix, fields=None):
    """The pipeline's transforms on `pipeline`; `fields`: CSV output with these columns (JSON
    lines without). The rows read are counted in `handler.progress` (a folder, or None)."""
    shards = expand_shards(inputs.pattern)
    read = (pipeline | "Shards" >> beam.Create(shards)
            | "Read" >> beam.ParDo(ReadShard(inputs, input_names, handler.progress)).with_outputs(
                "rejected", main="rows"))
    (read.rows
     | "Spread" >> beam.Reshuffle()
     | "Predict" >> RunInference(handler)
     | "Format" >> beam.Map(output_line, fields)
     | "Write" >> beam.io.WriteToText(
         output_prefix, file_name_suffix=".csv" if fields else ".jsonl",
         header=",".join(fields) if fields else None))
    (read.rejected
     | "WriteRejected" >> beam.io.WriteToText(f"{output_prefix}-rejected",
                                               file_name_suffix=".jsonl"))


def counters(result):
    """{counter name: value} of the pipeline's `zoo` counters."""
    found = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]
    values = {}
    for counter in found:
        value = counter.committed if counter.committed is not None else counter.attempted
        values[counter.key.metric.name] = values.get(counter.key.metric.name, 0) + value
    return values


def run(inputs: Inputs, input_names, handler, output_prefix, beam_args=(), fields=None):
    """Runs the pipeline to the end; returns the summary (also in OUT_PREFIX-summary.json).
    Raises a RuntimeError if the rows do not add up."""
    with files.used():
        return _run(inputs, input_names, handler, output_prefix, beam_args, fields)


def _run(inputs, input_names, handler, output_prefix, beam_args, fields):
    fs.makedirs(fs.dirname(output_prefix))
    options = PipelineOptions(list(beam_args))
    local = options.view_as(StandardOptions).runner in (None, "DirectRunner")
    handler.progress = tempfile.mkdtemp(prefix="zoo_progress_") if local else None
    began = time.time()
    watch = progress.Watch(handler.progress) if local else None
    values = {}
    try:
        pipeline = beam.Pipeline(options=options)
        build(pipeline, inputs, input_names, handler, output_prefix, fields)
        result = pipeline.run()
        result.wait_until_finish()
        values = counters(result)
    finally:
        if watch is not None:
            watch.close(values.get("predictions"))
            fs.rmtree(handler.progress)
    seconds = time.time() - began
    rejected = {k[len("rejected: "):]: v for k, v in values.items() if k.startswith("rejected: ")}
    summary = dict(input_rows=values.get("input_rows", 0), predictions=values.get("predictions", 0),
                   rejected=sum(rejected.values()), rejected_by_reason=rejected,
                   seconds=round(seconds, 3), export_dir=handler.export_dir,
                   signature=handler.signature, options=options.get_all_options(drop_default=True))
    summary["rows_per_second"] = round(summary["input_rows"] / seconds, 2) if seconds else 0.0
    save_json(f"{output_prefix}-summary.json", summary)
    if summary["input_rows"] != summary["predictions"] + summary["rejected"]:
        raise RuntimeError(f"{summary['input_rows']} input rows but {summary['predictions']} "
                           f"predictions and {summary['rejected']} rejected")
    return summary
