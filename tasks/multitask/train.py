"""`python -m tasks.multitask.train` in a checkout: `zoo train multitask` (zoo/cli/multitask.py)."""
from zoo.cli.main import task_main

if __name__ == "__main__":
    task_main("multitask")
