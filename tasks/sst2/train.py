"""`python -m tasks.sst2.train` in a checkout: `zoo train sst2` (zoo/cli/sst2.py)."""
from zoo.cli.main import task_main

if __name__ == "__main__":
    task_main("sst2")
