"""Errors that are the user's to fix.

A task run that ends with one of these prints one line, `error: MESSAGE`, and no traceback: the
message says what to change. Anything else (a bug) keeps its traceback. The user's errors are
`UsageError` (flags), `zoo.data.text_files.DataError` (input data, with file and line),
`zoo.model.hub.HandleError` (model handles), `OutputError` (a full disk, a folder without write
permission), `DivergedError` (training reached a loss that is not a number), `ModelDirBusy` (another
run writes into the model dir) and `FileNotFoundError`.
"""


class UsageError(ValueError):
    """A flag value, a missing flag, or settings that do not fit the model dir."""


class OutputError(RuntimeError):
    """An output could not be written (a full disk, no permission); the message says what was
    left as it was."""


class DivergedError(RuntimeError):
    """Training reached a loss (or weights) that is not a finite number; nothing after the last
    finite checkpoint was saved."""


class ModelDirBusy(RuntimeError):
    """Another live run holds the model dir's lock (`zoo.run.lock`)."""
