"""Settings declared once: a dataclass field with its default, help text and choices.

Every setting of a run (`zoo.run.settings`) and every data key of a task kind (`zoo.data.specs`)
is declared with `setting(default, help, choices)`. The CLIs turn the fields into absl flags, so
`--help` lists exactly what a task uses and a default is never written twice; a multi-task
`tasks.json` entry is checked against the same fields.
"""
import dataclasses

from zoo.base.errors import UsageError


def setting(default, help, choices=None, flag=True):  # pylint: disable=redefined-builtin
    """A settings field: its default, help text and (for an enum) its choices.

    `flag=False` keeps a field out of the command line (set by code: a task's own data flags).
    """
    return dataclasses.field(default=default, metadata=dict(
        help=help, choices=tuple(choices) if choices else None, flag=flag))


def override(base, name, default, help=None, flag=None):  # pylint: disable=redefined-builtin
    """The field `name` of settings class `base` with another default (and help text, if
    given); its choices are kept. `flag=False` takes it off the command line of a task that
    does not use it."""
    field = next(f for f in dataclasses.fields(base) if f.name == name)
    return dataclasses.field(default=default, metadata=dict(
        field.metadata, **({"help": help} if help else {}),
        **({"flag": flag} if flag is not None else {})))


def flag_fields(settings_class):
    """The fields of a settings class that are command-line flags."""
    return [f for f in dataclasses.fields(settings_class) if f.metadata.get("flag", False)]


def check_choices(settings):
    """A `UsageError` for a field whose value is not one of its choices (code, not flags)."""
    for field in dataclasses.fields(settings):
        choices = field.metadata.get("choices")
        value = getattr(settings, field.name)
        if choices and value not in choices:
            raise UsageError(f"{field.name} must be one of {choices}, not {value!r}")


def as_declared(fields_class, values):
    """`values` with whole numbers given for float fields made floats (a tasks.json or Python
    `1` where a flag gives `1.0`), so that run records compare equal however they were given."""
    floats = {f.name for f in dataclasses.fields(fields_class) if f.type in (float, "float")}
    return {k: float(v) if k in floats and isinstance(v, int) and not isinstance(v, bool) else v
            for k, v in values.items()}
