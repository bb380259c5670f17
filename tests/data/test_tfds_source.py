"""TFDS as a source, tested offline with TFDS's own mock-data facility."""
import pytest
import tensorflow_datasets as tfds

from zoo.data.text_files import DataError
from zoo.data.tfds_source import read_tfds


def test_glue_mrpc_from_mock_data():
    with tfds.testing.mock_data(num_examples=12):
        examples = read_tfds("glue/mrpc", "train")
    assert len(examples) == 12
    assert all(e.text_a and e.text_b for e in examples)
    assert {e.label for e in examples} <= {"not_equivalent", "equivalent"}
    assert examples[0].source == "tfds:glue/mrpc[train]:0"


def test_unknown_feature_is_named():
    with tfds.testing.mock_data(num_examples=3):
        with pytest.raises(DataError, match="no feature 'tweet'"):
            read_tfds("glue/sst2", "train", text_column="tweet")
