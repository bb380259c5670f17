"""zoo-batch-predict: predict millions of rows with an export, on Apache Beam.

  zoo-batch-predict --export_dir=runs/sst2/export/1 --input='data/part-*.csv' \\
      --output=out/sst2 --text_column=sentence --id_column=id

reads the files (CSV / TSV / JSONL / TFRecord, as --mode=predict reads them), predicts every row
with the export and writes out/sst2-NNNNN-of-NNNNN.jsonl (a JSON line per row: its id or
file:line, and the prediction), out/sst2-rejected-*.jsonl (each bad row, its FILE:LINE and
reason) and out/sst2-summary.json (input rows = predictions + rejected, seconds, rows/s).

Without --runner it runs on Beam's local runner, one worker process per core
(--direct_num_workers=N changes that). Every other argument is a Beam pipeline option, passed on
untouched: --runner=DataflowRunner --project=... --region=... --temp_location=gs://...
--setup_file=./setup.py, or a Flink / Spark runner's options. Input and output paths may be
local or in a bucket (gs://; s3:// with Beam's aws extra), read and written by Beam's file
systems.
"""
import argparse
import os
import sys

from zoo.cli import quiet


def _parser():
    parser = argparse.ArgumentParser(
        prog="zoo-batch-predict", description=__doc__.split("\n\n")[0],
        epilog="Any other --flag is a Beam pipeline option.")
    parser.add_argument("--export_dir", required=True, help="The export (a SavedModel dir).")
    parser.add_argument("--input", required=True, help="Files: a glob or comma-separated list.")
    parser.add_argument("--output", required=True, help="Prefix of the output files.")
    parser.add_argument("--signature", default="serving_default",
                        help="Signature of the export (a multi-task export: the task's name).")
    parser.add_argument("--text_column", default="text", help="Column of the text.")
    parser.add_argument("--text_b_column", help="Column of the second text (pair models).")
    parser.add_argument("--question_column", help="SQuAD exports: column of the question.")
    parser.add_argument("--context_column", help="SQuAD exports: column of the context.")
    parser.add_argument("--id_column", help="Column of an id to copy into each output line.")
    parser.add_argument("--delimiter", help="Field delimiter (default: by file extension).")
    parser.add_argument("--noheader", action="store_true",
                        help="Delimited files have no header; columns are positions 0, 1, ...")
    parser.add_argument("--batch_size", type=int, default=32,
                        help="Texts per call of the export.")
    parser.add_argument("--min_score", type=float,
                        help="Class exports: a row whose score is below this gets label null "
                        "(it abstains) and keeps its scores.")
    parser.add_argument("--output_format", choices=("jsonl", "csv"), default="jsonl",
                        help="JSON lines, or CSV (lists and dicts as JSON) with a header.")
    return parser


def _beam_args(rest):
    """Beam's options: the local runner, one worker process per core, unless given."""
    given = {arg.split("=", 1)[0] for arg in rest}
    if "--runner" in given:
        return list(rest), 0
    workers = os.cpu_count() or 1
    for arg in rest:
        if arg.startswith("--direct_num_workers="):
            workers = int(arg.split("=", 1)[1])
    args = list(rest) + ["--runner=DirectRunner"]
    if "--direct_num_workers" not in given:
        args.append(f"--direct_num_workers={workers}")
    if "--direct_running_mode" not in given:
        args.append("--direct_running_mode=multi_processing")
    return args, max(1, (os.cpu_count() or 1) // max(1, workers))


def checked(args):
    """(Inputs, input names, CSV fields or None) after the checks that need no worker: the
    export loads and has the signature, the files exist, the model's inputs have columns, the
    first file has them."""
    from zoo import serving
    from zoo.batch import pipeline
    from zoo.batch.pipeline import QA_INPUTS, Inputs
    from zoo.data.sources import expand_shards, read_file
    from zoo.data.text_files import BadRow

    if args.batch_size < 1:
        raise ValueError(f"--batch_size must be at least 1, not {args.batch_size}")
    if args.min_score is not None:
        serving.min_score_of(args.min_score, "--min_score")
    model = serving.load(args.export_dir, args.batch_size, args.signature)
    if args.min_score is not None and not model.one_label:
        raise ValueError(f"--min_score is for class exports, and {args.export_dir} is not one "
                         "(one label per row)")
    names = model.input_names
    text, text_b = args.text_column, args.text_b_column
    if names == QA_INPUTS:
        if not (args.question_column and args.context_column):
            raise ValueError(f"{args.export_dir} answers questions: pass --question_column and "
                             "--context_column")
        text, text_b = args.question_column, args.context_column
    elif len(names) == 2 and not text_b:
        raise ValueError(f"{args.export_dir} takes text pairs ({', '.join(names)}): pass "
                         "--text_b_column")
    inputs = Inputs(args.input, text, text_b if len(names) == 2 else None, args.id_column,
                    args.delimiter, not args.noheader)
    first = expand_shards(args.input)[0]
    for item in read_file(first, inputs.columns(), require_label=False):
        if isinstance(item, BadRow) and " column " in item.reason and item.reason.startswith("no "):
            raise ValueError(f"{item.source}: {item.reason}")
        break
    fields = None
    if args.output_format == "csv":  # the columns, from a prediction of the export
        probe = {"question": "?", "context": "."} if names == QA_INPUTS else (
            ("a", "b") if len(names) == 2 else "a")
        fields = pipeline.csv_fields(model.predict([probe])[0], bool(args.id_column))
    return inputs, names, fields


def main(argv=None):
    args, rest = _parser().parse_known_args(sys.argv[1:] if argv is None else argv)
    with quiet.startup():
        from zoo.batch import files, handler, pipeline
        from zoo.base.errors import for_command_line
        from zoo.data.text_files import DataError
    with files.used():  # paths with a scheme through Beam's file systems, as workers read them
        try:
            inputs, names, fields = checked(args)
        except (OSError, ValueError, DataError) as e:
            raise SystemExit(f"error: {for_command_line(e)}") from None
        beam_args, threads = _beam_args(rest)
        summary = pipeline.run(inputs, names, handler.ExportHandler(
            args.export_dir, args.signature, threads, args.batch_size,
            min_score=args.min_score), args.output, beam_args,
            fields)
    print(f"{summary['input_rows']} input rows = {summary['predictions']} predictions + "
          f"{summary['rejected']} rejected, in {summary['seconds']:.1f} s "
          f"({summary['rows_per_second']:.0f} rows/s); {args.output}-summary.json")


def run():
    """The `zoo-batch-predict` console script."""
    quiet.python_logging(False)
    main()


if __name__ == "__main__":
    run()
