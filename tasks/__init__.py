"""`python -m tasks.<task>.train` in a checkout, as before the `zoo` command: each runs
`zoo.cli.main.task_main`. Not installed (setup.cfg installs `zoo` alone)."""
