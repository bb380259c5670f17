"""TensorFlow Datasets as a source of `Example`s (e.g. `glue/mrpc`, `glue/sst2`, `imdb_reviews`)."""
import tensorflow_datasets as tfds

from zoo.data.text_files import DataError, Example

# Text columns of the GLUE configs people use most, so `--tfds_name=glue/mrpc` needs no more flags.
TFDS_COLUMNS = {
    "glue/mrpc": ("sentence1", "sentence2"),
    "glue/sst2": ("sentence", None),
    "glue/cola": ("sentence", None),
    "glue/qqp": ("question1", "question2"),
    "glue/mnli": ("premise", "hypothesis"),
    "glue/qnli": ("question", "sentence"),
    "glue/rte": ("sentence1", "sentence2"),
    "imdb_reviews": ("text", None),
}


def read_tfds(name, split, text_column=None, text_b_column=None, label_column="label",
              id_column=None, data_dir=None, require_label=True, label_ids=False,
              unavailable=""):
    """Loads a TFDS split as `Example`s; ClassLabel ids come back as their names (as the ids,
    "0", "1", ..., with `label_ids`). If TFDS cannot load the split (offline and not
    downloaded yet), a `DataError` says why, followed by `unavailable` (what to do instead)."""
    default_a, default_b = TFDS_COLUMNS.get(name, (None, None))
    text_column = text_column or default_a
    text_b_column = text_b_column if text_b_column is not None else default_b
    if not text_column:
        raise DataError(f"tfds:{name}: pass `text_column` (no default known for this dataset)")
    try:
        ds, info = tfds.load(name, split=split, with_info=True, data_dir=data_dir)
    except Exception as e:  # TFDS fails in many ways offline
        reason = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        raise DataError(f"tfds:{name}[{split}]: TensorFlow Datasets could not load it "
                        f"({type(e).__name__}: {reason}){unavailable}") from e
    features = info.features
    for column in filter(None, (text_column, text_b_column, id_column,
                                label_column if require_label else None)):
        if column not in features:
            raise DataError(f"tfds:{name}: no feature {column!r} (features: {list(features)})")
    names = getattr(features[label_column], "names", None) if label_column in features else None
    examples = []
    for i, row in enumerate(tfds.as_numpy(ds)):
        def text(column, row=row):
            value = row[column]
            return value.decode("utf-8") if isinstance(value, bytes) else str(value)

        label = None
        if label_column in row:
            label_id = int(row[label_column])
            label = names[label_id] if names and label_id >= 0 and not label_ids \
                else str(label_id)
            if label_id < 0:  # unlabelled split (GLUE test sets use -1)
                label = None
        examples.append(Example(
            text_a=text(text_column), text_b=text(text_b_column) if text_b_column else None,
            label=label, id=text(id_column) if id_column else None,
            source=f"tfds:{name}[{split}]:{i}"))
    return examples
