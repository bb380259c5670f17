"""What every table shares: the raw lines, the CPU and date of a line, the newest line per CPU
kind, numbers and Markdown tables."""
import glob
import json
import os
import re
import shlex
from statistics import mean  # noqa: F401 (the tables' mean)

PYTHON = ".venv/bin/python"
# (vendor word, family, model) -> the short name the tables use; BENCHMARKS.md's intro says more.
CPU_NAMES = {
    ("AMD", "23", "1"): "Zen 1", ("AMD", "25", "1"): "Zen 3", ("AMD", "25", "17"): "Zen 4",
    ("AMD", "26", "2"): "Zen 5", ("Intel", "6", "207"): "Xeon 6/207",
}
# A virtual machine may hide a CPU's AVX-512 (a Zen 4 that shows AVX2 alone): its figures are
# another kind's, so its name says so.
AVX512_KINDS = ("Zen 4", "Zen 5", "Xeon 6/207")


class Results(dict):
    """{raw file name without .jsonl: [its lines, oldest first]}, read from a folder."""

    @classmethod
    def read(cls, folder):
        results = cls()
        for path in sorted(glob.glob(os.path.join(folder, "*.jsonl"))):
            with open(path, encoding="utf-8") as f:
                name = os.path.basename(path)[:-len(".jsonl")]
                results[name] = [json.loads(line) for line in f if line.strip()]
        return results

    def newest(self, name, where=lambda line: True):
        """The last line of `name` for which `where` holds."""
        found = [line for line in self[name] if where(line)]
        if not found:
            raise LookupError(f"bench/results/{name}.jsonl has no line this table needs")
        return found[-1]

    def newest_per_cpu(self, name, where=lambda line: True):
        """{CPU name: its last line of `name` for which `where` holds}, in the order of those
        lines (so the newest CPU comes last)."""
        by_cpu = {}
        for line in self[name]:
            if where(line):
                by_cpu.pop(cpu(line), None)
                by_cpu[cpu(line)] = line
        if not by_cpu:
            raise LookupError(f"bench/results/{name}.jsonl has no line this table needs")
        return by_cpu


def newest_per_class(by_cpu):
    """Of {CPU name: line}, the newest line of a CPU with bf16 and of one without (AVX2 alone)."""
    by_class = {}
    for line in by_cpu.values():
        by_class["avx512_bf16" in (line.get("machine") or {}).get("cpu_flags", [])] = line
    return sorted(by_class.values(), key=list(by_cpu.values()).index)


def cpu(line):
    """The short name of the CPU a line ran on (`CPU_NAMES`), or what /proc/cpuinfo said."""
    machine = line.get("machine") or {}
    vendor = "Intel" if "Intel" in (machine.get("cpu") or "") else "AMD"
    key = (vendor, machine.get("cpu_family"), machine.get("cpu_model"))
    if key in CPU_NAMES:
        name = CPU_NAMES[key]
        flags = machine.get("cpu_flags")
        hidden = name in AVX512_KINDS and flags is not None and "avx512f" not in flags
        return f"{name} (AVX2 only)" if hidden else name
    return f"{machine.get('cpu', 'unknown CPU')} {key[1]}/{key[2]}" if machine else "any CPU"


def date(line):
    """The day a line was measured: its own date, else its machine's (the date of the commit
    measured for lines written before the scripts recorded the day)."""
    return str(line.get("date") or (line.get("machine") or {}).get("date") or "")[:10]


def where(line):
    """'Zen 4, 2026-11-25': the CPU and day of a line."""
    return f"{cpu(line)}, {date(line)}"


def command(words):
    """A command line in a code block, wrapped at 96 columns."""
    lines, current = [], "   "
    for word in words:
        word = re.sub(r"^(--\w+=)?/\S*?/shared/", r"\1../shared/", word)  # this project's copy
        if len(current) + len(word) > 94 and current.strip():
            lines.append(current + " \\")
            current = "       "
        current += " " + (word if word == "&&" else shlex.quote(word))
    return "\n".join(lines + [current]) + "\n"


def command_of(line, fallback):
    """The command a line's script recorded (newer lines), else the words `fallback`, as a
    code block."""
    return command((line.get("machine") or {}).get("command") or fallback)


def one_line(line, fallback):
    """The command a line's script recorded (else the words `fallback`) as one line of text."""
    return " ".join(shlex.quote(word) for word in
                    (line.get("machine") or {}).get("command") or fallback)


def num(value, digits=3, sign=False):
    """A number as the tables write it: thousands separated, `digits` decimals."""
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:+,}" if sign else f"{value:,}"
    return f"{value:+,.{digits}f}" if sign else f"{value:,.{digits}f}"


def spread(median, low, high, digits=2):
    """'20.32 (20.16-20.75)'."""
    return f"{num(median, digits)} ({num(low, digits)}-{num(high, digits)})"


def table(header, rows):
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def points(difference):
    """A difference of two fractions in points, signed: '+0.24'."""
    return num(100 * difference, 2, sign=True)
