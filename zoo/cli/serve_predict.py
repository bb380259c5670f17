r"""`zoo serve-predict EXPORT_DIR < inputs > predictions.jsonl` (also `python -m zoo.serving`):
predictions from an export (`zoo.serving`) as JSON lines, one out per line in, in order.

A line is a text, two texts separated by a tab for pair models, or a JSON object with the
signature's input names (`--format=text` or `--format=json` reads every line one way). A bad
line stops the run naming its line number; the lines before it have their predictions. Like
`zoo.serving`, it needs only tensorflow and tensorflow_text.
"""
import json
import sys

from zoo.serving import DEFAULT_BATCH_SIZE, load, min_score_of

FORMATS = ("auto", "text", "json")


def _line_input(line, model, line_format="auto"):
    """The input of one stdin line: a text (two tab-separated texts for a pair model) or, as
    JSON, an object with the signature's input names. `auto` reads a line as JSON only if it
    parses as an object that has one of the input names; any other line is text (a text may
    begin with "{")."""
    line = line.rstrip("\r\n")
    if line_format != "text" and line.startswith("{"):
        try:
            item = json.loads(line)
        except json.JSONDecodeError as e:
            if line_format == "json":
                raise ValueError(f"not valid JSON ({e.msg})") from None
            item = None
        if line_format == "json" or (isinstance(item, dict)
                                     and set(item) & set(model.input_names)):
            return item
    elif line_format == "json":
        raise ValueError("not a JSON object")
    if len(model.input_names) > 1:
        return tuple(line.split("\t"))
    return line


USAGE = ("usage: zoo serve-predict EXPORT_DIR [--batch_size=N] [--format=auto|text|json] "
         "[--min_score=S] < inputs > predictions.jsonl")


def _options(argv):
    """(export dir, batch size, line format, min score or None) from the command line; a
    SystemExit naming what is wrong."""
    options = dict(batch_size=str(DEFAULT_BATCH_SIZE), format="auto", min_score="")
    rest = []
    for arg in argv:
        name, _, value = arg.partition("=")
        if name.lstrip("-") in options and arg.startswith("--"):
            options[name.lstrip("-")] = value
        elif arg.startswith("--"):
            raise SystemExit(f"error: unknown flag {name}\n{USAGE}")
        else:
            rest.append(arg)
    if len(rest) != 1:
        raise SystemExit(USAGE)
    if not options["batch_size"].isdigit() or int(options["batch_size"]) < 1:
        raise SystemExit(f"error: --batch_size must be a whole number, at least 1, not "
                         f"{options['batch_size']!r}")
    if options["format"] not in FORMATS:
        raise SystemExit(f"error: --format must be one of {', '.join(FORMATS)}, not "
                         f"{options['format']!r}")
    min_score = None
    if options["min_score"]:
        try:
            min_score = min_score_of(options["min_score"], "--min_score")
        except ValueError as e:
            raise SystemExit(f"error: {e}") from None
    return rest[0], int(options["batch_size"]), options["format"], min_score


def _stdin_lines():
    """Standard input's lines, decoded from UTF-8 here (a line that is not valid UTF-8 comes
    as its `UnicodeDecodeError`, for the caller to name); a text stream's lines as they are."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        yield from sys.stdin
        return
    for raw in stream:
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as e:
            yield e


def main(argv=None):
    """`zoo serve-predict EXPORT_DIR [--batch_size=N] [--format=F] < inputs > JSON lines`:
    one JSON line out per line in, in order; a bad line stops the run with `error: stdin:LINE:
    what is wrong` (lines before it have their predictions). Ends with a count on stderr."""
    export_dir, batch_size, line_format, min_score = _options(
        sys.argv[1:] if argv is None else argv)
    try:
        model = load(export_dir, batch_size)
        if min_score is not None and not model.one_label:
            raise ValueError(f"{export_dir}: --min_score is for class models (one label per row)")
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    pending, counts = [], dict(lines=0, predictions=0)

    def flush():
        for row in model.predict(pending, min_score=min_score):
            print(json.dumps(row, ensure_ascii=False))
            counts["predictions"] += 1
        pending.clear()

    for number, line in enumerate(_stdin_lines(), start=1):
        counts["lines"] = number
        try:
            if isinstance(line, UnicodeDecodeError):
                raise ValueError(f"not valid UTF-8 (byte {line.start})")
            item = _line_input(line, model, line_format)
            model.values(item)
        except ValueError as e:
            flush()
            raise SystemExit(f"error: stdin:{number}: {e} ({counts['predictions']} lines "
                             "before it were predicted)") from None
        pending.append(item)
        if len(pending) == batch_size * 64:
            flush()
    flush()
    if counts["predictions"] != counts["lines"]:  # every line has its prediction
        raise SystemExit(f"error: {counts['lines']} lines in, {counts['predictions']} "
                         "predictions out")
    print(f"{counts['lines']} lines in, {counts['predictions']} predictions out",
          file=sys.stderr)
