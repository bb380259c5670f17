"""`--mode=explain`: every row of a file explained into `explanations.jsonl` and an HTML page.

Rows are read in input order and explained in small batches (an explanation runs the model
`steps + 2` times per text); each input row is one JSON line, in order: the explanation
(`zoo.evaluation.explanations.rows`) with the row's `id` when the input has ids, or, for a bad
row with `--bad_rows=skip`, its `error`. The HTML page beside it (same name, `.html`) shows the
same rows. Both files appear complete or not at all.
"""
import html
import json

from zoo.base import fs
from zoo.base.files import PartialFile, written
from zoo.base.errors import UsageError
from zoo.data.sources import iterate
from zoo.data.text_files import BadRow
from zoo.evaluation import explanations
from zoo.evaluation.predict import account

DEFAULT_BATCH = 4


def html_path(path):
    """The HTML page written beside the JSON lines file `path`."""
    return path[:-len(".jsonl")] + ".html" if path.lower().endswith(".jsonl") else path + ".html"


def check_path(path):
    if not path.lower().endswith(".jsonl"):
        raise UsageError(f"`output_file`={path}: explanations are written as JSON lines; give "
                         "a file ending in .jsonl (the HTML page goes beside it)")


def explain_to_file(explain, source, path, bad_rows="error", batch_size=DEFAULT_BATCH):
    """Explains every row of `source` into `path` (JSON lines) and its HTML page; returns the
    number of rows written. `explain(texts)`: `texts` a list of string lists (one per
    segment) -> one dict per text (`zoo.evaluation.explanations.rows`)."""
    check_path(path)
    lines, page = PartialFile(path), PartialFile(html_path(path))
    page.file.write(explanations.PAGE_HEAD.format(title=html.escape(fs.basename(path))))
    rejected, batch = 0, []

    def flush():
        if not batch:
            return
        texts = [[e.text_a for e in batch]] + ([[e.text_b for e in batch]] if source.pair else [])
        for example, row in zip(batch, explain(texts)):
            _write(lines, page, example, row)
        batch.clear()

    with written(lines, page):
        for item in iterate(source):
            if isinstance(item, BadRow):
                if bad_rows != "skip":
                    raise item.error()
                flush()
                rejected += 1
                _write(lines, page, item, None)
                continue
            batch.append(item)
            if len(batch) == batch_size:
                flush()
        flush()
        page.file.write(explanations.page_end())
    print(account(lines.count, rejected, "row", "explain", "explained"))
    return lines.count


def _write(lines, page, item, row):
    """One input's JSON line and HTML block (`row` None: a bad row, with its error)."""
    name = item.id if item.id is not None else f"row {lines.count + 1}"
    record = {"id": item.id} if item.id is not None else {}
    if row is None:
        error = f"{item.source}: {item.reason}"
        record["error"] = error
        page.file.write(explanations.error_block(name, error))
    else:
        record.update(row)
        texts = [item.text_a] + ([item.text_b] if item.text_b is not None else [])
        page.file.write(explanations.text_block(texts, row, name))
    lines.file.write(json.dumps(record, ensure_ascii=False) + "\n")
    lines.count += 1
