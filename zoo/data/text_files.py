"""Reading labelled text from CSV, TSV and JSONL files, and GLUE's TSV layouts.

Every row becomes an `Example` that remembers its file and line, so any later problem (an unknown
label, say) can be reported as `file:line: what is wrong`. Files may start with a UTF-8 byte-order
mark. TSV files are split on tabs with no quoting (as GLUE's are); CSV files use standard quoting.
"""
import csv
import dataclasses
import json
from typing import Optional

from zoo.base import fs
from zoo.base.errors import NamesSettings


class DataError(NamesSettings, ValueError):
    """Bad input data; the message names the file, the line and the problem."""


@dataclasses.dataclass(frozen=True)
class Example:
    text_a: str
    text_b: Optional[str] = None
    label: Optional[str] = None
    id: Optional[str] = None
    source: str = ""  # "file:line", for error messages


@dataclasses.dataclass(frozen=True)
class BadRow:
    """A row that could not be used: where it is, what is wrong, and its raw text."""

    source: str  # "file:line" (or "file:first-last" when a broken quote spans lines)
    reason: str
    raw: str = ""
    id: Optional[str] = None

    def error(self):
        return DataError(f"{self.source}: {self.reason}")


# GLUE layouts: column of text_a, text_b, label and id, by header name.
GLUE_LAYOUTS = {
    "mrpc": dict(text_column="#1 String", text_b_column="#2 String", label_column="Quality",
                 id_column=None),
    "sst2": dict(text_column="sentence", text_b_column=None, label_column="label",
                 id_column=None),
    "mnli": dict(text_column="sentence1", text_b_column="sentence2", label_column="gold_label",
                 id_column="pairID"),
}


def file_format(path, delimiter=None):
    """'jsonl', or the delimiter of a delimited file (',' for .csv, tab for .tsv/.txt)."""
    name = path.lower()
    if name.endswith((".jsonl", ".json")):
        return "jsonl"
    if delimiter:
        return "\t" if delimiter in ("\\t", "tab") else delimiter
    if name.endswith(".csv"):
        return ","
    if name.endswith((".tsv", ".txt")):
        return "\t"
    raise DataError(f"{path}: unknown file type; use .csv, .tsv, .jsonl or pass `delimiter`")


def check_file(path):
    """A `DataError` unless `path` is a readable file (not missing, not a directory)."""
    fs.check(path)
    if not fs.exists(path):
        raise DataError(f"{path}: no such file")
    if fs.isdir(path):
        raise DataError(f"{path}: a directory, not a file (give its files, e.g. "
                        f"{fs.join(path, '*.csv')})")
    if not fs.readable(path):
        raise DataError(f"{path}: not readable (permission denied)")


def _lines(path, problems):
    """Yields (line number, text) of a UTF-8 file; an undecodable line goes to `problems`."""
    check_file(path)
    with fs.open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                problems.append(BadRow(f"{path}:{number}", f"invalid UTF-8 at byte {e.start}",
                                       raw.decode("utf-8", "replace").rstrip("\r\n")))


QUOTINGS = ("auto", "none", "csv")


FIELD_LIMIT = 2 ** 30  # characters in one field (the csv module's default is 128 KiB)


class _LineFeed:
    """The lines of a file for `csv.reader`, remembering those of the row being read; the lines
    of a broken row after its first are put back and given again (an iterator, not a
    generator, so it can give lines again after the end of the file)."""

    def __init__(self, path, problems):
        self.path = path
        self.lines = _lines(path, problems)
        self.numbers, self.raw, self.again = [], [], []

    def __iter__(self):
        return self

    def __next__(self):
        number, line = self.again.pop(0) if self.again else next(self.lines)
        self.numbers.append(number)
        self.raw.append(line)
        return line

    def new_row(self):
        del self.numbers[:], self.raw[:]

    def where(self):
        return f"{self.path}:{self.numbers[-1]}"

    def text(self):
        return "".join(self.raw).rstrip("\r\n")

    def broken(self):
        """(source, raw text) of a broken row: over several lines, its first line alone, and
        the lines after it put back to be read again."""
        if len(self.raw) == 1:
            return self.where(), self.text()
        self.again[:0] = list(zip(self.numbers[1:], self.raw[1:]))
        return f"{self.path}:{self.numbers[0]}", self.raw[0].rstrip("\r\n")


def _header(reader, path, problems):
    """The header line's columns; a `DataError` if it is missing or undecodable."""
    try:
        header = next(reader)
    except StopIteration:
        if problems:
            raise DataError(
                f"{problems[0].source}: {problems[0].reason} (in the header)") from None
        raise DataError(f"{path}: empty file (a header line is required)") from None
    if problems:
        raise DataError(f"{problems[0].source}: {problems[0].reason} (in the header)")
    return header


def _delimited_rows(path, delimiter, has_header=True, quoting="auto"):
    """Yields (line number, header, {column: value}) of a delimited file, or a `BadRow`.

    Without a header line (`has_header` False), the columns are named by their positions ("0",
    "1", ...), as many as the first row has. `quoting`: "csv" (quotes as in CSV), "none" (quotes
    are text), or "auto": none for tabs (GLUE's TSV), csv for other delimiters.

    A row that spans several lines (a quoted field with line breaks) and is broken (an
    unbalanced quote, the wrong column count) is reported as its first line alone; the lines
    after it are read again as rows of their own, so an unbalanced quote never swallows the
    valid rows that follow it: every line is a row, part of a row, or reported.
    """
    if quoting == "auto":
        quoting = "none" if delimiter == "\t" else "csv"
    csv.field_size_limit(max(csv.field_size_limit(), FIELD_LIMIT))
    problems = []
    feed = _LineFeed(path, problems)
    reader = csv.reader(feed, delimiter=delimiter, strict=True,
                        quoting=csv.QUOTE_NONE if quoting == "none" else csv.QUOTE_MINIMAL)
    reference = "header" if has_header else "first row"
    header = _header(reader, path, problems) if has_header else None
    while True:
        feed.new_row()
        try:
            row = next(reader)
        except StopIteration:
            yield from problems
            return
        except csv.Error as e:
            yield from problems
            del problems[:]
            hint = " (unbalanced quotes?)" if any(
                w in str(e) for w in ("quote", "expected", "end of data")) else ""
            where, raw = feed.broken()
            yield BadRow(where, f"{e}{hint}", raw)
            continue
        yield from problems  # undecodable lines the reader passed over, in line order
        del problems[:]
        if not row:
            continue
        if header is None:  # no header line: columns are named by position
            header = [str(i) for i in range(len(row))]
        if len(row) == len(header):
            yield feed.numbers[-1], header, dict(zip(header, row))
        elif len(feed.raw) > 1:  # a quote opened on one line, closed lines later
            lines = len(feed.raw) - 1
            where, raw = feed.broken()
            yield BadRow(where, f"a quoted field runs from this line over {lines} more line(s) "
                         f"and the row has {len(row)} columns, the {reference} {len(header)} "
                         "(an unbalanced quote?); the lines after it are read as rows again", raw)
        else:
            yield BadRow(feed.where(), f"{len(row)} columns, the {reference} has {len(header)}",
                         feed.text())


def _jsonl_rows(path):
    problems = []
    for number, line in _lines(path, problems):
        yield from problems
        del problems[:]
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            yield BadRow(f"{path}:{number}", f"not valid JSON ({e.msg})", line.rstrip("\r\n"))
            continue
        if not isinstance(row, dict):
            yield BadRow(f"{path}:{number}", "expected a JSON object per line",
                         line.rstrip("\r\n"))
            continue
        yield number, list(row), row
    yield from problems


def _is_empty(text):
    return text is None or not text.strip()


@dataclasses.dataclass(frozen=True)
class Columns:
    """Which column (header name or JSON key) holds what; `label` None for unlabelled data."""

    text: str = "text"
    text_b: Optional[str] = None
    label: Optional[str] = None
    id: Optional[str] = None
    delimiter: Optional[str] = None
    header: bool = True  # False: delimited files have no header; columns are positions "0", ...
    quoting: str = "auto"  # delimited files: "auto", "none" or "csv" (see `_delimited_rows`)


def example_from_row(row, columns, where, require_label=True):
    """An `Example` from a {column: value} row, or a `BadRow` saying what is wrong."""
    wanted = {"text": columns.text, "text_b": columns.text_b, "id": columns.id,
              "label": columns.label if require_label else None}

    def value(column):
        found = row.get(column) if column else None
        if found is None or (isinstance(found, float) and found != found):  # JSON null, NaN
            return None
        return str(found)

    def bad(reason):  # the raw text is only built for a bad row: this runs for every row
        return BadRow(where, reason, json.dumps(row, ensure_ascii=False), value(columns.id))

    for role, column in wanted.items():
        if column and column not in row:
            return bad(f"no {role} column {column!r} (columns: {list(row)})")
    text_a, text_b = value(columns.text), value(columns.text_b)
    for column, text in ((columns.text, text_a), (columns.text_b, text_b)):
        if column and _is_empty(text):
            return bad(f"empty text in column {column!r}")
    label = value(columns.label)
    if require_label and (label is None or not label.strip()):
        return bad(f"empty label in column {columns.label!r}")
    return Example(text_a=text_a, text_b=text_b, label=label.strip() if label is not None else None,
                   id=value(columns.id), source=where)


def iter_file(path, columns, require_label=True):
    """Yields an `Example` or a `BadRow` for every row of a CSV/TSV/JSONL file, in file order."""
    fmt = file_format(path, columns.delimiter)
    rows = _jsonl_rows(path) if fmt == "jsonl" else _delimited_rows(path, fmt, columns.header,
                                                                     columns.quoting)
    for item in rows:
        if isinstance(item, BadRow):
            yield item
            continue
        number, _, row = item
        yield example_from_row(row, columns, f"{path}:{number}", require_label)


def read_examples(path, text_column, text_b_column=None, label_column=None, id_column=None,
                  delimiter=None, require_label=True):
    """Reads a whole CSV/TSV/JSONL file into `Example`s; the first bad row is a `DataError`."""
    columns = Columns(text_column, text_b_column, label_column, id_column, delimiter)
    examples = []
    for item in iter_file(path, columns, require_label):
        if isinstance(item, BadRow):
            raise item.error()
        examples.append(item)
    return examples


def glue_columns(task):
    """The `Columns` of a GLUE TSV layout (`mrpc`, `sst2` or `mnli`)."""
    if task not in GLUE_LAYOUTS:
        raise DataError(f"unknown GLUE layout {task!r}; known: {sorted(GLUE_LAYOUTS)}")
    layout = GLUE_LAYOUTS[task]
    return Columns(layout["text_column"], layout["text_b_column"], layout["label_column"],
                   layout["id_column"], "\t")


def read_glue(task, path, require_label=True):
    """Reads a GLUE TSV (`mrpc`, `sst2` or `mnli` layout)."""
    columns = glue_columns(task)
    return read_examples(path, columns.text, columns.text_b, columns.label, columns.id, "\t",
                         require_label=require_label)
