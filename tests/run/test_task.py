"""Every kind of the table against the task contract (`zoo.run.task`): no abstract hook left
undefined, each capability it declares backed by its hooks, and its modes and export formats
following from what it declares."""
import inspect

import pytest

from zoo.base.errors import UsageError
from zoo.kinds import multitask, table
from zoo.run import runner, task
from zoo.run.settings import RunSettings

TASKS = {**{name: kind.task for name, kind in table.KINDS.items()},
         "multitask": multitask.MultiTask}


@pytest.mark.parametrize("name", sorted(TASKS))
def test_each_kind_defines_every_hook_of_the_contract_and_of_what_it_can_do(name):
    task_class = TASKS[name]
    assert not inspect.isabstract(task_class), task_class.__abstractmethods__
    assert task_class.NAME and task_class.OUTPUT_FILES
    for capability in task_class.CAN.names():
        for hook in task.HOOKS[capability]:
            assert getattr(task_class, hook) is not getattr(task.Task, hook), (capability, hook)


def test_what_each_kind_can_do():
    can = {name: task_class.CAN.names() for name, task_class in TASKS.items()}
    every = ["check_data", "explain", "litert", "requests"]
    assert can == {"classify": every, "mrpc": every, "sst2": every, "multi_label": every,
                   "regression": ["check_data", "explain", "litert"],
                   "stsb": ["check_data", "explain", "litert"],
                   "tagging": ["check_data"], "squad": [], "multitask": []}
    assert TASKS["squad"].CAN.modes == ("train", "eval", "train_and_eval", "predict", "export")
    assert TASKS["tagging"].CAN.modes[-1] == "check_data"
    assert TASKS["classify"].CAN.modes[-2:] == ("check_data", "explain")


def test_a_task_missing_a_hook_cannot_be_made():
    class Half(task.Task):
        NAME = "half"

        def outputs(self):
            return []

    assert inspect.isabstract(Half)
    with pytest.raises(TypeError, match="abstract"):
        Half(None, None)


def test_a_capability_left_undeclared_is_refused_before_any_work(tmp_path):
    def settings(**values):
        return RunSettings(model_dir=str(tmp_path), encoder_handle="tiny", **values)

    with pytest.raises(UsageError, match="export_format=litert is for class"):
        runner.check_export_format(TASKS["squad"], settings(export_format="litert"))
    runner.check_export_format(TASKS["classify"], settings(export_format="litert"))
    with pytest.raises(UsageError, match="mode must be one of"):
        runner.start("explain", TASKS["tagging"], settings())
