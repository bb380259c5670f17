"""What a person reads of a run: a line per evaluation, and at the end of each mode what it did,
in how long, where its outputs are and what to run next.

Numbers are given at four significant digits and durations in minutes and seconds
(`zoo.base.progress`); the full records stay in the model dir's JSON files. With
`--print_json`, each record also goes to standard output as one JSON line, as scripts read it
(`eval: {...}`, `train: {...}`), and the lines for a person go to standard error.

    report = Report(print_json=False)
    report.evaluation({"accuracy": 0.7916666865348816, "loss": 0.5543}, epoch=2, epochs=3)
    # epoch 2/3: accuracy 0.7917, loss 0.5543
"""
import json
import sys

from zoo.base import fs
from zoo.base.progress import duration, number

HEADLINE = 4  # metrics in a summary's headline


class Report:
    """The lines of one run (see the module docstring)."""

    def __init__(self, print_json=False):
        self.print_json = print_json

    def say(self, *lines):
        for line in lines:
            print(line, file=sys.stderr if self.print_json else sys.stdout, flush=True)

    def record(self, name, value):
        """`name: JSON` on standard output, with --print_json."""
        if self.print_json:
            print(f"{name}: {json.dumps(value)}", flush=True)

    def evaluation(self, scalars, epoch=None, epochs=None, seconds=None):
        """The line of an evaluation (after an epoch: "epoch 2/3: accuracy 0.7917, ...")."""
        self.record("eval", scalars)
        where = f"epoch {epoch}/{epochs}" if epoch and epochs else "eval"
        took = f" ({duration(seconds)})" if seconds is not None else ""
        self.say(f"{where}: {metrics(scalars)}{took}")

    def trained(self, timing, model_dir, metric_names, results=None, export_dir=None,
                seconds=None):
        """The summary of a training run."""
        self.record("train", timing)
        lines = [f"trained {timing['steps']:,} steps in {duration(seconds or 0)} "
                 f"({number(timing.get('examples_per_second', 0.0))} examples/s)"]
        if results:
            lines.append(f"last evaluation: {metrics(results, metric_names)}")
        if timing.get("calibration"):
            lines += calibrated(timing["calibration"])
        best = timing.get("best")
        if best and best.get("epoch"):
            lines.append(f"best: epoch {best['epoch']} (step {best.get('step')}) by "
                         f"{best.get('metric')} {number(best.get('value'))}")
        lines += self._where(model_dir, export_dir)
        self.say(*lines)

    def evaluated(self, results, model_dir, metric_names, step, seconds):
        self.say(f"evaluated step {step:,} in {duration(seconds)}: "
                 f"{metrics(results, metric_names)}",
                 f"results: {fs.join(model_dir, 'eval_results.json')}")

    def wrote(self, count, path, seconds, extra=""):
        self.record("predict", dict(rows=count, output_file=path, seconds=seconds))
        self.say(f"wrote {count:,} rows to {path}{extra} in {duration(seconds)}")

    def exported(self, path, seconds, litert=False, what_next=True):
        self.record("export", dict(export_dir=path, seconds=seconds))
        lines = [f"exported to {path} in {duration(seconds)}"]
        if what_next and litert:
            lines.append(f"next: python -c \"from zoo import litert; print(litert.load('{path}')"
                         ".predict(['some text']))\"")
        elif what_next:
            lines.append(f"next: zoo serve-predict {path} < texts.txt   (TF Serving: zoo "
                         f"check-export {path})")
        self.say(*lines)

    def _where(self, model_dir, export_dir):
        found = [n for n in fs.listdir(model_dir) if not n.startswith(".")
                 and n not in ("train", "eval", "flags.txt")]
        lines = [f"model dir {model_dir}: {', '.join(found)} (TensorBoard: tensorboard "
                 f"--logdir {model_dir})"]
        if export_dir:
            lines.append(f"export: {export_dir}")
        lines.append(f"next: zoo predict --model_dir={model_dir} --predict_file=FILE "
                     "--output_file=FILE" + (f"; zoo serve-predict {export_dir} < texts.txt"
                                             if export_dir else ""))
        return lines


def metrics(results, names=None):
    """"accuracy 0.7917, f1 0.8532": the float numbers of `results` (the `names` first, at most
    `HEADLINE` of them when names are given)."""
    floats = {k: v for k, v in results.items()
              if isinstance(v, float) and k not in ("epoch", "step")}
    if names:
        chosen = [n for n in names if n in floats][:HEADLINE] or list(floats)[:HEADLINE]
        floats = {n: floats[n] for n in chosen}
    return ", ".join(f"{k} {number(v)}" for k, v in floats.items())


def calibrated(record, name=""):
    """The lines of a calibration record (`zoo.evaluation.calibration`; a multi-task run's:
    {task: record})."""
    if "temperature" not in record:
        return [line for task, r in record.items() for line in calibrated(r, f"{task}: ")]
    if record.get("fitted_on") is None:
        return [f"{name}probabilities as the model gives them ({record['reason']})"]
    before, after = record["before"], record["after"]
    return [f"{name}temperature {number(record['temperature'])} fitted on {record['rows']:,} "
            f"{record['fitted_on']} rows: ECE {number(before['ece'])} -> "
            f"{number(after['ece'])}, labels unchanged"]
