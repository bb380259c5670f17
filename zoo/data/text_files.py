"""Reading labelled text from CSV, TSV and JSONL files, and GLUE's TSV layouts.

Every row becomes an `Example` that remembers its file and line, so any later problem (an unknown
label, say) can be reported as `file:line: what is wrong`. Files may start with a UTF-8 byte-order
mark. TSV files are split on tabs with no quoting (as GLUE's are); CSV files use standard quoting.
"""
import csv
import dataclasses
import json
import os
from typing import Optional


class DataError(ValueError):
    """Bad input data; the message names the file, the line and the problem."""


@dataclasses.dataclass(frozen=True)
class Example:
    text_a: str
    text_b: Optional[str] = None
    label: Optional[str] = None
    id: Optional[str] = None
    source: str = ""  # "file:line", for error messages


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
    raise DataError(f"{path}: unknown file type; use .csv, .tsv, .jsonl or pass --delimiter")


def _lines(path):
    """Yields (line number, text) of a UTF-8 file, naming the line of any invalid byte."""
    if not os.path.exists(path):
        raise DataError(f"{path}: no such file")
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(f"{path}:{number}: invalid UTF-8 at byte {e.start}") from None


def _delimited_rows(path, delimiter):
    """Yields (line number, {column: value}) of a delimited file with a header line."""
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    lines = _lines(path)
    line_numbers = []

    def text_lines():
        for number, line in lines:
            line_numbers.append(number)
            yield line

    reader = csv.reader(text_lines(), delimiter=delimiter, quoting=quoting, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise DataError(f"{path}: empty file (a header line is required)") from None
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise DataError(f"{path}:{line_numbers[-1]}: {e} (unbalanced quotes?)") from None
        number = line_numbers[-1]
        if not row:
            continue
        if len(row) != len(header):
            raise DataError(f"{path}:{number}: {len(row)} columns, the header has {len(header)}")
        yield number, header, dict(zip(header, row))


def _jsonl_rows(path):
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{number}: not valid JSON ({e.msg})") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}:{number}: expected a JSON object per line")
        yield number, list(row), row


def _is_empty(text):
    return text is None or not text.strip() or text.strip().lower() == "nan"


def read_examples(path, text_column, text_b_column=None, label_column=None, id_column=None,
                  delimiter=None, require_label=True):
    """Reads a CSV/TSV/JSONL file into `Example`s; columns are named by header (or JSON key)."""
    fmt = file_format(path, delimiter)
    rows = _jsonl_rows(path) if fmt == "jsonl" else _delimited_rows(path, fmt)
    wanted = {"text": text_column, "text_b": text_b_column, "id": id_column,
              "label": label_column if require_label else None}
    examples = []
    for number, columns, row in rows:
        where = f"{path}:{number}"
        for role, column in wanted.items():
            if column and column not in row:
                raise DataError(f"{where}: no {role} column {column!r} (columns: {list(columns)})")

        def value(column, row=row):
            if not column or column not in row or row[column] is None:
                return None
            return str(row[column])

        text_a, text_b = value(text_column), value(text_b_column)
        for column, text in ((text_column, text_a), (text_b_column, text_b)):
            if column and _is_empty(text):
                raise DataError(f"{where}: empty text in column {column!r}")
        label = value(label_column)
        if require_label and (label is None or not label.strip()):
            raise DataError(f"{where}: empty label in column {label_column!r}")
        examples.append(Example(text_a=text_a, text_b=text_b,
                                label=label.strip() if label is not None else None,
                                id=value(id_column), source=where))
    return examples


def read_glue(task, path, require_label=True):
    """Reads a GLUE TSV (`mrpc`, `sst2` or `mnli` layout)."""
    if task not in GLUE_LAYOUTS:
        raise DataError(f"unknown GLUE layout {task!r}; known: {sorted(GLUE_LAYOUTS)}")
    return read_examples(path, delimiter="\t", require_label=require_label, **GLUE_LAYOUTS[task])
