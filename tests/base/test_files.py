"""File helpers: a folder that appears whole, with the permissions any new folder gets."""
import os
import stat

import pytest

from zoo.base.files import atomic_directory


@pytest.mark.parametrize("umask,mode", [(0o022, 0o755), (0o077, 0o700)])
def test_an_atomic_directory_appears_whole_with_the_umasks_permissions(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        with atomic_directory(tmp_path / "export" / "1") as staging:
            with open(os.path.join(staging, "saved_model.pb"), "w") as f:
                f.write("x")
    finally:
        os.umask(old)
    made = tmp_path / "export" / "1"
    assert (made / "saved_model.pb").read_text() == "x"
    assert stat.S_IMODE(os.stat(made).st_mode) == mode  # readable by a server of another user
    assert os.listdir(tmp_path / "export") == ["1"]  # no staging folder left


def test_a_failed_block_leaves_what_was_there(tmp_path):
    target = tmp_path / "1"
    target.mkdir()
    (target / "old").write_text("kept")
    with pytest.raises(RuntimeError):
        with atomic_directory(target):
            raise RuntimeError("disk full")
    assert (target / "old").read_text() == "kept" and os.listdir(tmp_path) == ["1"]
