"""Plain helpers for the tests (fixtures live in conftest.py)."""
import collections
import contextlib
import glob
import io
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
REFERENCE = os.path.join(SHARED, "reference")
# Texts that test a tokenizer: accents, CJK, emoji sequences, scripts, control and zero-width
# characters, ligatures, an empty text, texts longer than any sequence
TOKENIZER_TEXTS = [
    "Café façade naïve ÜBER Straße", "東京は大きい都市です。北京！", "I ❤️ emoji 🙂🙃 👩‍👩‍👧 ok",
    "x" * 250 + " tail", "Ελληνικά Кириллица हिन्दी ไทย عربي", "tabs\tand\nnewlines  here", "",
    "MiXeD CaSe DON'T won't", "a\u0301\u0300 combining marks", "\u200b zero width \ufeff",
    "ﬁ ligature ½ Ⅻ", "word " * 100]


def reference_file(name):
    path = os.path.join(REFERENCE, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not here (../shared/reference is needed)")
    return path


def run_module(module, *args, env=None, timeout=600):
    """Runs `python -m module args` from the project root; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def forget_task_flags():
    """Undefines the flags of zoo's task CLIs and forgets their modules, so that the next
    command in this process defines them afresh (absl flags are global to a process)."""
    from absl import flags
    from zoo.cli.common import is_zoo_module

    for name in list(flags.FLAGS):
        module = flags.FLAGS.find_module_defining_flag(name)
        if module and is_zoo_module(module) and name in flags.FLAGS:
            delattr(flags.FLAGS, name)
    for module in [m for m in sys.modules if m.startswith("zoo.cli.")]:
        if module not in ("zoo.cli.main", "zoo.cli.quiet", "zoo.cli.common"):
            del sys.modules[module]


def exit_code_inline(command):
    """Runs `command()` (a zoo command line in this process) on task flags defined afresh
    (`forget_task_flags`); returns what it exited with (`SystemExit.code`: an `error:` line, a
    status, or None), None when it returned."""
    forget_task_flags()
    try:
        command()
    except SystemExit as e:
        return e.code
    return None


def run_inline(module, *args):
    """`python -m tasks.<task>.train args` (`module`) run in this process as the command line
    runs it (flags defined afresh and parsed, the same `main`), for tests whose point is not a
    fresh process: no TensorFlow import and start-up to pay again. Returns a CompletedProcess:
    exit status 0, or 1 with the run's `error:` line at the end of stderr, and what it printed.
    An exception the command line does not turn into an error line (a bug) is raised."""
    from zoo.cli import main

    return _inline([module, *args], lambda: main.task_main(module.split(".")[1], list(args)))


def zoo_inline(*args):
    """`zoo args` (the console script: `zoo.cli.main.run`) run in this process, as
    `run_inline` runs a task's command line; returns a CompletedProcess."""
    from zoo.cli import main

    return _inline(["zoo", *args], lambda: main.run(list(args)))


def _inline(argv, command):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = exit_code_inline(command)
    if isinstance(status, str):  # as Python prints an uncaught SystemExit's message
        err.write(status + "\n")
        status = 1
    return subprocess.CompletedProcess(argv, status or 0, out.getvalue(), err.getvalue())


def executed_graphs(call):
    """The graphs TensorFlow ran for `call()`'s function calls (those it instantiated then)."""
    from tensorflow.python.eager import context
    ctx = context.context()
    ctx.enable_run_metadata()
    try:
        call()
        metadata = ctx.export_run_metadata()
    finally:
        ctx.disable_run_metadata()
    return [graph for function in metadata.function_graphs for graph in function.partition_graphs]


def profiled_ops(logdir, fn, *args, runs=3):
    """{"node name:op type": times run} over `runs` calls of `fn`, after 3 warm-up calls (XLA
    compiles a cluster lazily, after its first runs)."""
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    for _ in range(3):
        fn(*args)
    tf.profiler.experimental.start(logdir)
    for _ in range(runs):
        tf.nest.map_structure(lambda t: t.numpy(), fn(*args))
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    with open(glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)[0], "rb") as f:
        space.ParseFromString(f.read())
    counts = collections.Counter()
    for plane in space.planes:
        names = {k: v.name for k, v in plane.event_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                name = names.get(event.metadata_id, "")
                if ":" in name:
                    counts[name] += 1
    return counts


def check_the_model_dir_suffices(model_dir, full, data, tmp_path, suffix=".csv", export=True,
                                 full_data=None):
    """`zoo predict`, `zoo eval` and `zoo export` given --model_dir and data flags alone (no
    TASK, no model flags: the model dir's run.json gives them) do what the task's command line
    with every flag repeated does: `full(mode, *flags)` runs that. Predict writes the same
    file, eval the same numbers, export a SavedModel. `data`: {"predict": [flags], "eval":
    [flags]} (`full_data`: the full command line's, if other)."""
    import json

    results = {}
    for how in ("full", "short"):
        output = tmp_path / f"{how}{suffix}"
        run = (lambda mode, *flags: full(f"--mode={mode}", *flags)) if how == "full" else (
            lambda mode, *flags: zoo_inline(mode, f"--model_dir={model_dir}", *flags))
        given = (full_data or data) if how == "full" else data
        for mode, extra in (("predict", [f"--output_file={output}"]), ("eval", [])):
            result = run(mode, *given[mode], *extra)
            assert result.returncode == 0, (how, mode, result.stderr[-3000:])
        with open(os.path.join(model_dir, "eval_results.json"), encoding="utf-8") as f:
            results[how] = {k: v for k, v in json.load(f).items() if isinstance(v, float)}
    full_out, short_out = tmp_path / f"full{suffix}", tmp_path / f"short{suffix}"
    if full_out.is_dir():
        names = sorted(p.relative_to(full_out) for p in full_out.rglob("*") if p.is_file())
        assert names and names == sorted(p.relative_to(short_out) for p in short_out.rglob("*")
                                         if p.is_file())
        assert all((full_out / n).read_bytes() == (short_out / n).read_bytes() for n in names)
    else:
        assert short_out.read_bytes() == full_out.read_bytes()
    assert results["full"] and results["short"] == pytest.approx(results["full"], abs=1e-5)
    if export:
        result = zoo_inline("export", f"--model_dir={model_dir}",
                            f"--export_dir={tmp_path / 'export'}")
        assert result.returncode == 0, result.stderr[-3000:]
        assert (tmp_path / "export" / "saved_model.pb").exists()
