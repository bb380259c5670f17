"""Settings declared once: a dataclass field with its default, help text and choices.

Every setting of a run (`zoo.run.settings`) and every data key of a task kind (`zoo.data.specs`)
is declared with `setting(default, help, choices, low=..., high=...)`. The CLIs turn the fields
into absl flags, so `--help` lists exactly what a task uses and a default is never written twice;
a multi-task `tasks.json` entry and a call from Python are checked against the same fields
(`check_fields`): a value out of its range, a non-finite number or a value that is not one of
the field's choices stops the run before any work, naming the setting and what it may be.
"""
import dataclasses
import math

from zoo.base import fs
from zoo.base.errors import UsageError


@dataclasses.dataclass(frozen=True)
class Range:
    """The numbers a setting may take: `low` <= value (< value if `low_open`), value <= `high`
    (< if `high_open`); None: no bound. Floats must also be finite."""

    low: float = None
    high: float = None
    low_open: bool = False
    high_open: bool = False

    def problem(self, value):
        """What is wrong with `value` (a phrase), or None."""
        if isinstance(value, float) and not math.isfinite(value):
            return "a finite number"
        low_ok = self.low is None or (value > self.low if self.low_open else value >= self.low)
        high_ok = self.high is None or (value < self.high if self.high_open else
                                        value <= self.high)
        if low_ok and high_ok:
            return None
        if self.high is None:
            return f"{'more than' if self.low_open else 'at least'} {self.low:g}"
        if self.low is None:
            return f"{'less than' if self.high_open else 'at most'} {self.high:g}"
        return (f"{'more than' if self.low_open else 'at least'} {self.low:g} and "
                f"{'less than' if self.high_open else 'at most'} {self.high:g}")


def setting(default, help, choices=None, flag=True, low=None, high=None,
            low_open=False, high_open=False, check=None, path=False, group=None):
    """A settings field: its default, help text, (for an enum) its choices and (for a number)
    its range: `low` and `high` are included unless `low_open` / `high_open`. A float field is
    always checked to be finite. `check(value)` may return what is wrong with a value (a
    phrase: "one character"), or None.

    `group`: which part of a run reads it (`zoo.run.settings.GROUPS`: model, data, trainer,
    runtime, export, output); a layer takes the group it uses (`group_of`), not every setting.

    `path=True` marks a path a user gives (a file, glob, folder or model dir; comma-separated
    paths too): its scheme must be one a file system serves (`zoo.base.fs.problem`).

    `flag=False` keeps a field out of the command line (set by code: a task's own data flags).
    """
    if path:
        check = fs.problem
    bounds = (Range(low, high, low_open, high_open)
              if low is not None or high is not None else None)
    return dataclasses.field(default=default, metadata=dict(
        help=help, choices=tuple(choices) if choices else None, flag=flag, range=bounds,
        check=check, group=group))


class Group:
    """The settings of one group (`group_of`), read as attributes; a setting of another group
    is an AttributeError that names the group, so a layer cannot reach past what it takes.

    Args:
        name: the group's name.
        values: {setting: value} of the group.
    """

    def __init__(self, name, values):
        self.__dict__.update(values)
        self._name = name

    def __getattr__(self, key):  # (only for a name that is not a setting of the group)
        raise AttributeError(f"{key} is not a setting of the {self._name} group")

    def as_dict(self):
        """{setting: value} of the group."""
        return {k: v for k, v in vars(self).items() if k != "_name"}

    def __repr__(self):
        values = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items())
        return f"Group({self._name}: {values})"


def group_of(settings, name):
    """The `Group` of `settings`' fields declared with `group=name`."""
    return Group(name, {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
                        if f.metadata.get("group") == name})


def override(base, name, default, help=None, flag=None):
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


def field_problem(field, value):
    """What is wrong with `value` for `field` (a sentence naming the setting in backquotes, as
    `zoo.base.errors` has it), or None."""
    meta = field.metadata
    name = f"`{field.name}`"
    if meta.get("choices") and value not in meta["choices"]:
        return f"{name} must be one of {', '.join(map(str, meta['choices']))}, not {value!r}"
    if value is None or isinstance(value, bool):
        return None
    if field.type in (int, float, "int", "float"):
        if not isinstance(value, (int, float)):
            return f"{name} must be a number, not {value!r}"
        bounds = meta.get("range") or Range()
        problem = bounds.problem(value)
        if problem:
            return f"{name} must be {problem}, not {value!r}"
    if meta.get("check"):
        problem = meta["check"](value)
        if problem:
            return f"{name} must be {problem}, not {value!r}"
    return None


def check_fields(instance, where=""):
    """A `UsageError` for the first field of a settings or data spec dataclass whose value is
    not one of its choices, out of its range or not finite; `where` begins the message (a
    tasks.json entry)."""
    for field in dataclasses.fields(instance):
        problem = field_problem(field, getattr(instance, field.name))
        if problem:
            raise UsageError(f"{where}{problem}")


def as_declared(fields_class, values):
    """`values` with whole numbers given for float fields made floats (a tasks.json or Python
    `1` where a flag gives `1.0`), so that run records compare equal however they were given."""
    floats = {f.name for f in dataclasses.fields(fields_class) if f.type in (float, "float")}
    return {k: float(v) if k in floats and isinstance(v, int) and not isinstance(v, bool) else v
            for k, v in values.items()}
