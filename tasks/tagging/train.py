"""`python -m tasks.tagging.train` in a checkout: `zoo train tagging` (zoo/cli/tagging.py)."""
from zoo.cli.main import task_main

if __name__ == "__main__":
    task_main("tagging")
