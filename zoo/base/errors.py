"""Errors that are the user's to fix.

A task run that ends with one of these prints one line, `error: MESSAGE`, and no traceback: the
message says what to change. Anything else (a bug) keeps its traceback. The user's errors are
`UsageError` (settings), `zoo.data.text_files.DataError` (input data, with file and line),
`zoo.model.hub.HandleError` (model handles), `OutputError` (a full disk, a folder without write
permission), `DivergedError` (training reached a loss that is not a number), `ModelDirBusy` (another
run writes into the model dir) and `FileNotFoundError`.

Below the command line, an error names a setting in backquotes, as a Python API user or a
`tasks.json` entry gives it: "`layer_decay` must be in (0, 1]". `str(error)` reads
"layer_decay must be in (0, 1]"; the command line prints `error.for_command_line()`,
"--layer_decay must be in (0, 1]", the flag of the same setting.
"""
import re

_SETTING = re.compile(r"`([a-z][a-z0-9_]*)`")


class NamesSettings:
    """A user's error whose message names settings in backquotes (see the module docstring)."""

    def __str__(self):
        return _SETTING.sub(r"\1", super().__str__())

    def for_command_line(self):
        """The message with each setting named as its flag (`--name`)."""
        return _SETTING.sub(r"--\1", super().__str__())


class UsageError(NamesSettings, ValueError):
    """A setting's value, a missing setting, or settings that do not fit the model dir."""


def for_command_line(error):
    """What the command line prints of `error`: where it names settings (`NamesSettings`),
    their flags instead."""
    return error.for_command_line() if isinstance(error, NamesSettings) else str(error)


class OutputError(RuntimeError):
    """An output could not be written (a full disk, no permission); the message says what was
    left as it was."""


class DivergedError(NamesSettings, RuntimeError):
    """Training reached a loss (or weights) that is not a finite number; nothing after the last
    finite checkpoint was saved."""


class ModelDirBusy(RuntimeError):
    """Another live run holds the model dir's lock (`zoo.run.lock`)."""
