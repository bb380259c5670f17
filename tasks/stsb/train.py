"""`python -m tasks.stsb.train` in a checkout: `zoo train stsb` (zoo/cli/stsb.py)."""
from zoo.cli.main import task_main

if __name__ == "__main__":
    task_main("stsb")
