"""`python -m tasks.mrpc.train` in a checkout: `zoo train mrpc` (zoo/cli/mrpc.py)."""
from zoo.cli.main import task_main

if __name__ == "__main__":
    task_main("mrpc")
