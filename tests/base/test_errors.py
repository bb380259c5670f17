"""zoo.base.errors: a user's error names settings as Python and tasks.json give them, and the
command line names the same settings as flags."""
import pytest

from zoo.base.errors import DivergedError, UsageError, for_command_line
from zoo.data.text_files import DataError
from zoo.model.hub import HandleError


@pytest.mark.parametrize("error_class", [UsageError, DataError, HandleError, DivergedError])
def test_settings_in_backquotes_read_as_settings_and_on_the_command_line_as_flags(error_class):
    error = error_class("`mode`=export needs `export_dir`; `layer_decay` must be in (0, 1]")
    assert str(error) == "mode=export needs export_dir; layer_decay must be in (0, 1]"
    assert for_command_line(error) == \
        "--mode=export needs --export_dir; --layer_decay must be in (0, 1]"
    with pytest.raises(error_class, match="^mode=export needs export_dir"):
        raise error


def test_other_text_is_left_as_it_is():
    error = UsageError("runs/m: `zoo predict` and `Capital` and `two words` stay; --flag too")
    assert str(error) == for_command_line(error) == \
        "runs/m: `zoo predict` and `Capital` and `two words` stay; --flag too"
    assert for_command_line(FileNotFoundError("x: no such file")) == "x: no such file"
