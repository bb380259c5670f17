"""`python -m tasks.squad.train` in a checkout: `zoo train squad` (zoo/cli/squad.py)."""
from zoo.cli.main import task_main

if __name__ == "__main__":
    task_main("squad")
