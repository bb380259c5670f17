"""`python -m tasks.classify.train` in a checkout: `zoo train classify` (zoo/cli/classify.py)."""
from zoo.cli.main import task_main

if __name__ == "__main__":
    task_main("classify")
