"""Every benchmark script still imports what it names of zoo and of `bench/common.py` (in its
functions too), and defines and parses its flags: a refactor that breaks one fails here, not at
its next run. Each script is run as a module (its `main` not called), its flags parsed at their
defaults, then forgotten. The PyTorch peer's scripts need torch (`./install.sh bench`) and skip
without it."""
import ast
import json
import glob
import importlib.util
import os
import re
import runpy
import sys

import pytest
from absl import flags

from tests.helpers import ROOT, forget_task_flags

BENCH = os.path.join(ROOT, "bench")
SCRIPTS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(BENCH, "*.py")))
PEER = ("torch", "transformers")


def _code_strings(tree):
    """The script's string constants that are Python code importing something (what it runs in
    a child process with `python -c`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                "import " in node.value):
            try:
                yield ast.parse(node.value)
            except SyntaxError:  # prose
                continue


def _imports_resolve(source, script):
    """Every `from zoo... import X` / `from common import X` of the script, at any depth
    (functions import zoo lazily) and in the code it runs as `python -c`, names something
    that exists."""
    tree = ast.parse(source)
    for node in [n for code in [tree, *_code_strings(tree)] for n in ast.walk(code)]:
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module == "common" or node.module.split(".")[0] == "zoo"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name) or importlib.util.find_spec(
                    f"{node.module}.{alias.name}"), f"{script}: {node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "zoo":
                    importlib.import_module(alias.name)


def _a_value(flag):
    """A value a required flag parses: its first choice, or 1."""
    return next(iter(getattr(flag.parser, "enum_values", None) or ["1"]))


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_benchmark_script_imports_and_parses_its_flags(script, monkeypatch):
    path = os.path.join(BENCH, script)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    if any(f"import {m}" in source or f"from {m} " in source for m in PEER) and not all(
            importlib.util.find_spec(m) for m in PEER):
        pytest.skip("the PyTorch peer is not installed (./install.sh bench)")
    monkeypatch.syspath_prepend(BENCH)
    _imports_resolve(source, script)
    monkeypatch.setattr(sys, "argv", [path])
    forget_task_flags()  # a CLI run earlier in this process left its flags defined
    before = set(flags.FLAGS)
    try:
        runpy.run_path(path, run_name="bench_smoke_test")
        flags.FLAGS.unparse_flags()
        try:
            flags.FLAGS([path])  # every flag it defines parses at its default
        except flags.IllegalFlagValueError as e:  # required flags: given a value
            required = re.findall(r"--(\w+)=None: Flag --\1 must have a value", str(e))
            assert required, e
            flags.FLAGS.unparse_flags()
            flags.FLAGS([path] + [f"--{name}={_a_value(flags.FLAGS[name])}" for name in required])
    finally:
        flags.FLAGS.unparse_flags()
        for name in set(flags.FLAGS) - before:
            delattr(flags.FLAGS, name)
        sys.modules.pop("common", None)


def _tables(monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    for name in [m for m in sys.modules if m == "tables" or m.startswith("tables.")]:
        monkeypatch.delitem(sys.modules, name)
    return importlib.import_module("tables")


def test_benchmarks_md_is_what_bench_report_renders(monkeypatch):
    """BENCHMARKS.md is generated: a figure typed into it by hand, or a raw line added without
    running `bench/report.py`, fails here."""
    tables = _tables(monkeypatch)
    with open(os.path.join(ROOT, "BENCHMARKS.md"), encoding="utf-8") as f:
        committed = f.read()
    assert committed == tables.render(), "BENCHMARKS.md is not what bench/report.py renders: run it"
    assert len(committed.splitlines()) <= 400


def test_a_newer_line_replaces_its_cpus_figures_and_a_new_cpu_gets_a_row(monkeypatch, tmp_path):
    _tables(monkeypatch)
    base = importlib.import_module("tables.base")
    results = base.Results.read(os.path.join(BENCH, "results"))
    zen3 = results.newest("train_throughput", lambda ln: base.cpu(ln) == "Zen 3" and ln.get("summary"))
    newer = json.loads(json.dumps(zen3))
    newer["date"] = "2099-01-02"
    newer["ratios"]["best_policy_vs_best_policy"]["ratio"] = 9.876
    other = json.loads(json.dumps(zen3))
    other["machine"].update(cpu="AMD EPYC", cpu_family="23", cpu_model="1")
    results["train_throughput"] += [newer, other]
    text = importlib.import_module("tables.training").training(results)
    assert "Zen 3, 2099-01-02" in text and "**9.876**" in text
    assert "Zen 3, " + base.date(zen3) not in text  # the older Zen 3 line is gone
    assert "| Zen 1, " in text
    hidden = json.loads(json.dumps(zen3))  # a Zen 4 whose virtual machine hides its AVX-512
    hidden["machine"].update(cpu_family="25", cpu_model="17", cpu_flags=["avx2", "fma"])
    results["train_throughput"].append(hidden)
    text = importlib.import_module("tables.training").training(results)
    assert "| Zen 4 (AVX2 only), " in text and "| Zen 4, " in text
    with pytest.raises(LookupError, match="no line"):
        base.Results(train_throughput=[]).newest("train_throughput")


def test_forward_flops_count_the_dense_layers_and_attention_of_each_token(monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    common = importlib.import_module("common")
    config = dict(hidden_size=4, intermediate_size=8, num_hidden_layers=2)
    # a layer: 2 (4 d^2 + 2 d d_ff) + 4 S d a token = 2 (64 + 64) + 48 = 304; 2 layers, 3 tokens
    assert common.forward_flops(config, 3, pooled_only=False) == 2 * 3 * 304
    # pooled: the last layer's keys and values at 3 tokens, the rest at the first alone
    assert common.forward_flops(config, 3) == pytest.approx(3 * 304 + 3 * 64 + (304 - 64))
