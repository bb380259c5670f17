"""Inference: the export against the peer, the bf16 export's accuracy, `zoo.serving` against
the peer's `pipeline()`, batch prediction on Beam, explanations, LiteRT files."""
from tables.base import (PYTHON, command_of, cpu, mean, newest_per_class, num, points,
                         table, where)


def _batches(line):
    return [k for k in next(iter(line["settings"].values())) if k.startswith("batch_") and
            k.split("_")[1] != "1"]


def _inference_command(results, line):
    """bench/inference.py's command of a summary line, from its fields and its runs' lines."""
    runs = results["inference"][:results["inference"].index(line)]
    requests = next(r["batch_1_latency"]["requests"] for r in reversed(runs) if "batch_1_latency" in r)
    configs = {side: [n.split(":", 1)[1] for n in line["settings"] if n.startswith(side + ":")]
               for side in ("zoo", "peer")}
    batches = _batches(line)
    words = [PYTHON, "bench/inference.py", f"--rounds={line['rounds']}",
             f"--repeats={line['repeats']}", "--zoo_configs=" + ",".join(configs["zoo"]),
             "--peer_configs=" + ",".join(configs["peer"]),
             "--batch_sizes=" + ",".join(dict.fromkeys(b.split("_")[1] for b in batches)),
             "--policies=" + ",".join(dict.fromkeys(b.split("_")[2] for b in batches)),
             f"--latency_requests={requests}"]
    return command_of(line, words)


def inference(results):
    """Per CPU kind, the newest summary line with the peer: ratios, then every setting."""
    newest = results.newest_per_cpu("inference", lambda ln: ln.get("summary") == "inference")
    rows = []
    for line in newest.values():
        r = line["ratios"]
        best = r["batched_best_vs_best"]
        rows.append([where(line), num(r["batched_fp32_vs_fp32"]["ratio"]),
                     f"**{num(best['ratio'])}** ({best['zoo'][0]} vs {best['peer'][0]}, {best['zoo'][1]})",
                     *(f"**{num(r[k]['ratio'])}** ({r[k]['zoo'][0]})" for k in (
                         "batch_1_p50_ms_zoo_over_peer", "first_prediction_seconds_zoo_over_peer"))])
    parts = [table(["CPU, date", "batched, fp32 vs fp32", "batched, best vs best",
                    "one text p50, best vs best (lower is better)", "first answer (lower is better)"],
                   rows)]
    for line in newest_per_class(newest):
        batches = _batches(line)
        with_mfu = all("mfu" in s for s in line["settings"].values())
        body = []
        for name, s in line["settings"].items():
            mfu = [" / ".join(num(s["mfu"][k], 2) for k in (*batches, "batch_1_p50"))] if with_mfu else []
            body.append([name.replace(":", " "), *(num(s[b]["median"], 1) for b in batches),
                         num(s["batch_1_p50_ms"]["median"], 2), *mfu,
                         f"{num(s['first_prediction_seconds']['median'], 2)} "
                         f"({num(s['first_prediction_imports_seconds']['median'], 2)} / "
                         f"{num(s['first_prediction_load_seconds']['median'], 2)} / "
                         f"{num(s['first_prediction_first_call_seconds']['median'], 2)})"])
        header = (["setting"] + [b.replace("batch_", "batch ").replace("_", ", ") + ", ex/s"
                                 for b in batches] +
                  ["one text p50, ms"] + (["MFU: " + ", ".join(b.replace("batch_", "").replace(
                      "_", " ") for b in batches) + ", one text"] if with_mfu else []) +
                  ["first answer, s (imports / load / first call)"])
        parts.append(f"**{where(line)}**:\n\n" + _inference_command(results, line) +
                     "\n" + table(header, body))
    return "\n".join(parts)


def _precision_cells(line):
    metrics = ("accuracy", "f1") if "f1" in line["fp32"] else ("accuracy",)
    return [" / ".join(points(line[f"{m}_bf16_minus_fp32"]) for m in metrics),
            f"{line['labels_changed']} of {num(line['rows'])}", num(line["max_probability_change"])]


def export_precision(results):
    """The last CPU's newest line per model and request size: fp32 export against bf16."""
    lines = results["export_precision"]
    newest = {}
    for line in lines:
        if "batch_size" in line and cpu(line) == cpu(lines[-1]):
            newest[(line["task"], line["model_dir"], line["batch_size"])] = line
    sizes = sorted({key[2] for key in newest})
    models = list(dict.fromkeys(key[:2] for key in newest))
    rows = [[f"{task}, `{folder.rstrip('/').split('/')[-1]}`",
             num(newest[(task, folder, sizes[0])]["fp32"]["accuracy"], 4),
             *(cell for size in sizes for cell in _precision_cells(newest[(task, folder, size)]))]
            for task, folder in models]
    mrpc = [key for key in models if key[0] == "mrpc"]
    rows.append(["mrpc, mean", num(mean(newest[(*k, sizes[0])]["fp32"]["accuracy"] for k in mrpc), 4),
                 *(cell for size in sizes for cell in (
                     "**" + " / ".join(points(mean(newest[(*k, size)][f"{m}_bf16_minus_fp32"] for k in mrpc))
                                       for m in ("accuracy", "f1")) + "**", "", ""))])
    header = ["model", "fp32 export accuracy"]
    for size in sizes:
        header += [f"{size} a request: bf16 - fp32, points (accuracy / F1)", "labels changed",
                   "largest change of a probability"]
    return f"{where(lines[-1])}:\n\n" + table(header, rows)


def serving_api(results):
    line = results.newest("serving_api")
    rates = {side: ", ".join(f"{b}: {num(v['median'], 1)}"
                             for b, v in line[side]["examples_per_second"].items())
             for side in ("zoo", "peer")}
    return (f"{where(line)}, `{PYTHON} bench/serving_api.py`, examples/s by batch size (median of "
            f"{line['rounds']} rounds): zoo {rates['zoo']}; the pipeline {rates['peer']}. Each at its "
            f"best batch size: **{num(line['ratio_zoo_best_over_peer_best'])}**.\n")


def batch_predict(results):
    line = results.newest("batch_predict")
    names = dict(beam1="`zoo batch-predict`, 1 worker", beam2="`zoo batch-predict`, 2 workers",
                 predict="`zoo predict classify`", serving="`zoo serve-predict`, a line each")
    rows = [[names[k], num(r["seconds"], 1), num(r["rows_per_second"], 0), num(r["peak_rss_mb"], 0)]
            for k, r in line["results"].items()]
    return (f"{where(line)}, {num(line['rows'])} rows in {line['shards']} shards; 2 workers / the "
            f"best single process: **{num(line['beam2_over_best_single_process'], 2)}**, / 1 worker: "
            f"**{num(line['beam2_over_beam1'], 2)}**\n\n" +
            command_of(line, ["cd", "bench", "&&", "../" + PYTHON, "batch_predict.py"]) + "\n" +
            table(["way", "seconds", "rows/s", "peak RSS of the largest process, MB"], rows))


def explain(results):
    line = results.newest("explain")
    cost, pointing, loading = line["cost"], line["pointing"], line["loading"]
    return (f"{where(line)}, {num(line['train_rows'])} training sentences (dev accuracy "
            f"{num(line['dev_accuracy'], 3)}), {line['steps']} steps, {line['texts']} timed texts:\n\n" +
            command_of(line, [PYTHON, "bench/explain.py", "--work=/tmp/zoo-bench-explain"]) + "\n" +
            table(["per dev sentence", "ms", "an explanation is"], [
                ["`predict`, batches of 32", num(cost["predict_batched_ms"], 2),
                 num(cost["explain_over_batched_prediction"], 1) + "x"],
                ["`predict`, one text a call", num(cost["predict_one_ms"], 2),
                 num(cost["explain_over_one_prediction"], 1) + "x"],
                ["`explain`", num(cost["explain_ms"], 1), ""]]) +
            f"\nOf {pointing['sentences']} sentences with one swapped sentiment word, the swapped-in "
            f"word was the top-attributed word in **{100 * pointing['hit_rate']:.1f}%** (chance "
            f"{100 * pointing['chance']:.1f}%); the prediction followed it in "
            f"{100 * pointing['prediction_follows_inserted_word']:.1f}%, and there the word was on top in "
            f"{100 * pointing['hit_rate_where_it_follows']:.1f}%. The attributions of "
            f"{100 * pointing['relative_completeness_gap_under_5_percent']:.1f}% of the sentences add up "
            f"to within 5% of score minus baseline score. Loading the export in a new process: " +
            ", ".join(f"{name.replace('_', ' ')} {num(v['load_seconds'], 2)} s ({num(v['size_mb'], 1)} MB)"
                      for name, v in loading.items()) + ".\n")


def litert(results):
    lines = {ln["task"]: ln for ln in results["litert"]}
    rows = []
    for name in next(iter(lines.values()))["exports"]:
        cells = []
        for line in lines.values():
            e = line["exports"][name]
            one = e.get("latency_1_thread")
            every = e.get("latency_all_threads") or e.get("latency")
            cells += [f"{num(e['accuracy'], 4)} ({num(e['agreement_with_savedmodel_fp32'], 3)})",
                      f"{num(e['size_mb'], 1)} ({num(e['size_over_savedmodel_fp32'])})",
                      f"{num(one['p50_ms'], 2) if one else '-'} / {num(every['p50_ms'], 2)}"]
        rows.append([name.replace("_", " "), *cells])
    header = ["export"]
    for task in lines:
        header += [f"{task}: dev accuracy (labels as the fp32 SavedModel's)",
                   "MB (of the SavedModel's)", "p50 ms, 1 thread / all"]
    runs = ", ".join(f"{task} ({num(ln['dev_rows'])} dev rows) {where(ln)}" for task, ln in lines.items())
    return runs + ":\n\n" + table(header, rows)


TABLES = dict(inference=inference, export_precision=export_precision, serving_api=serving_api,
              batch_predict=batch_predict, explain=explain, litert=litert)
