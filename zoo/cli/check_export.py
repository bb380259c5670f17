"""zoo check-export EXPORT_DIR: will this SavedModel serve under TF Serving?

Loads the export as TF Serving's loader does (a TF1 session), lists its ops against those TF
Serving's model server links (TensorFlow's and its bundled TF Text's), and calls every signature
through TF Serving's REST (row and columnar) and gRPC PredictRequest formats. Prints a report
(--json: the report as JSON) and exits 1 when anything would fail. zoo.export.conformance says
how each part is checked.
"""
import json
import sys

from absl import flags

flags.DEFINE_bool("json", False, "Print the report as one JSON object.")
FLAGS = flags.FLAGS


def _print(report):
    print(f"{report['export']}: {'serves' if report['ok'] else 'would NOT serve'} under TF "
          f"Serving ({report['ops']} op types)")
    for problem in report["problems"]:
        print(f"  op {problem['op']}: {problem['why']}")
    for name, signature in report["signatures"].items():
        if "error" in signature:
            print(f"  signature {name}: fails in a session: {signature['error']}")
            continue
        formats = ", ".join(f"{k} {'ok' if signature[k] else 'DIFFERS'}"
                            for k in ("rest_rows", "rest_columns", "grpc"))
        print(f"  signature {name} ({', '.join(signature['inputs'])} -> "
              f"{', '.join(signature['outputs'])}): {formats}")


def main(argv):
    if len(argv) != 2:
        raise SystemExit("usage: zoo check-export EXPORT_DIR [--json]")
    from zoo.base.errors import UsageError
    from zoo.export import conformance
    try:
        report = conformance.check(argv[1])
    except UsageError as e:
        raise SystemExit(f"zoo check-export: {e.for_command_line()}") from None
    if FLAGS.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        _print(report)
    sys.exit(0 if report["ok"] else 1)
