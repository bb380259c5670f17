"""The `zoo` command: its subcommands, a quiet start, what a person sees on a terminal and in a
log, and what the distribution installs."""
import configparser
import fcntl
import json
import logging
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time

import pytest
import setuptools

from tests.helpers import ROOT, run_module, zoo_inline
from zoo.cli import main

NOISE = ("cudart_stub", "cuInit", "cpu_feature_guard", "oneDNN custom operations", "I0000",
         "absl::InitializeLog")


def test_help_lists_every_subcommand(capsys):
    main.run(["--help"])
    out = capsys.readouterr().out
    for command in list(main.MODES) + list(main.TOOLS) + ["serve-predict", "batch-predict"]:
        assert f"zoo {command}" in out, command
    for task in main.TASKS:
        assert task in out


@pytest.mark.parametrize("argv,message", [
    (["train"], "`zoo train` needs a TASK first"),
    (["predict", "nope"], "`zoo predict` needs a TASK first"),
    (["fly"], "unknown command 'fly'"),
])
def test_a_wrong_command_says_what_is_wrong(argv, message):
    with pytest.raises(SystemExit, match=message):
        main.run(argv)


def test_a_task_command_starts_quietly_and_runs_its_mode(tmp_path, tiny_hub):
    data = tmp_path / "train.csv"
    data.write_text("text,label\n" + "".join(f"row {i} good,{i % 2}\n" for i in range(40)))
    result = run_module("zoo.cli.main", "check-data", "classify", f"--train_file={data}",
                        f"--model_dir={tmp_path / 'model'}", "--encoder_handle=tiny")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "data check, train: 40 rows in 1 file(s)" in result.stdout
    assert os.path.exists(tmp_path / "model" / "data_check_train.json")  # --mode=check_data
    assert not [n for n in NOISE if n in result.stderr + result.stdout], result.stderr[-3000:]
    loud = run_module("zoo.cli.main", "check-data", "classify", f"--train_file={data}",
                      f"--model_dir={tmp_path / 'model'}", "--encoder_handle=tiny",
                      env={"ZOO_TF_LOGS": "1"})
    assert loud.returncode == 0 and "I0000" in loud.stderr  # asked for: shown


def test_a_task_command_helps_with_the_tasks_own_flags():
    result = run_module("zoo.cli.main", "train", "sst2", "--help")
    flags = {line.split(":")[0].strip() for line in result.stdout.splitlines()
             if line.startswith("  --")}
    assert {"--data_dir", "--model_dir", "--[no]dedupe"} <= flags
    assert "Fine-tune, evaluate, predict and export" in result.stdout  # the task's own docs
    assert not [n for n in NOISE if n in result.stderr]


def test_the_distribution_installs_zoo_alone():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    include = config["options.packages.find"]["include"].split()
    packages = setuptools.find_packages(ROOT, include=include)
    assert {p.split(".")[0] for p in packages} == {"zoo"}
    assert "zoo.cli" in packages
    scripts = config["options.entry_points"]["console_scripts"]
    assert "zoo = zoo.cli.main:run" in scripts and "zoo-build-hub" in scripts


def test_the_quiet_start_drops_two_tensorflow_warnings_and_keeps_the_others():
    from zoo.cli import quiet

    def kept(message):
        return quiet._DropNoise().filter(logging.LogRecord(
            "tensorflow", logging.WARNING, "f.py", 1, message, None, None))

    assert not kept("Found untraced functions such as _update_step_xla while saving (showing 5 "
                    "of 110).")
    assert not kept("5 out of the last 9 calls to <function f> triggered tf.function retracing. "
                    "Tracing is expensive ...")
    assert kept("Skipping full serialization of Keras layer")


def _on_a_terminal(argv, timeout=600):
    """Runs `argv` with its standard streams on a pseudo-terminal; (exit status, output)."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # 120 wide
    process = subprocess.Popen(argv, stdin=terminal, stdout=terminal, stderr=terminal, cwd=ROOT)
    os.close(terminal)
    output, deadline = b"", time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([controller], [], [], 1)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the process closed the terminal
                break
            if not chunk:
                break
            output += chunk
        elif process.poll() is not None:
            break
    os.close(controller)
    return process.wait(timeout=60), output.decode("utf-8", "replace")


def _long_floats(text):
    """Numbers in `text` with more than six significant digits."""
    return [n for n in re.findall(r"\d+\.\d+", text)
            if len(n.replace(".", "").lstrip("0")) > 6]


def test_training_shows_a_person_a_bar_or_lines_and_a_summary(tmp_path, tiny_hub):
    data = tmp_path / "train.csv"
    data.write_text("text,label\n" + "".join(f"row {i} {'good' if i % 2 else 'bad'},{i % 2}\n"
                                             for i in range(64)))
    flags = [f"--train_file={data}", f"--eval_file={data}", "--encoder_handle=tiny",
             "--max_seq_length=16", "--train_batch_size=16", "--num_train_epochs=2"]
    status, shown = _on_a_terminal([sys.executable, "-m", "zoo.cli.main", "train", "classify",
                                    f"--model_dir={tmp_path / 'tty'}", *flags])
    assert status == 0, shown[-3000:]
    assert re.search(r"train epoch 1/2: .*\d\d:\d\d<\d\d:\d\d", shown), shown[-3000:]  # ETA
    assert re.search(r"epoch 2/2: .*accuracy \d", shown) and "trained 8 steps in " in shown
    logged = zoo_inline("train", "classify", f"--model_dir={tmp_path / 'log'}", *flags)
    assert logged.returncode == 0, logged.stderr[-3000:]
    lines = (logged.stdout + logged.stderr).splitlines()
    progress = [line for line in lines if line.startswith("train epoch")]
    assert progress and all(" taken, " in line and " left " in line for line in progress)
    assert not [line for line in lines if "\r" in line or "█" in line]
    summary = "\n".join(logged.stdout.splitlines()[-5:])
    for part in ("trained 8 steps in ", "last evaluation: accuracy ", f"model dir "
                 f"{tmp_path / 'log'}: ", "eval_results.json", "training_curves.png",
                 f"next: zoo predict --model_dir={tmp_path / 'log'}"):
        assert part in summary, (part, summary)
    assert not _long_floats(logged.stdout + logged.stderr) and not _long_floats(
        shown.replace(str(tmp_path), "")), _long_floats(logged.stdout)
    json_lines = zoo_inline("eval", f"--model_dir={tmp_path / 'log'}", f"--eval_file={data}",
                            "--print_json")
    record = [line for line in json_lines.stdout.splitlines() if line.startswith("eval: ")]
    assert len(record) == 1 and "accuracy" in json.loads(record[0][len("eval: "):])
