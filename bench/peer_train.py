r"""The peer: Hugging Face transformers + PyTorch fine-tuning of the same MiniLM checkpoint, on
MRPC (`BertForSequenceClassification`) or SQuAD v1.1 (`BertForQuestionAnswering`).

  python bench/peer_train.py --plan_file=PLAN [--precision=bf16] [--attention=sdpa] [--compile]
  python bench/peer_train.py --write_lengths=FILE    # token length of every MRPC train pair
  python bench/peer_train.py --task=squad --write_windows=FILE   # the SQuAD windows both take

Run by `bench/train_throughput.py` (needs ./install.sh bench: torch==2.13.0, transformers), which
writes the plan: for each padding policy the batches (row indices of MRPC train.tsv, or of the
SQuAD windows) that both sides take, in order (`common.batch_plan`). Texts are tokenized up
front (as `datasets.map` would); each step collates its batch (fixed: pad to --max_seq_length;
dynamic and bucketed: to the batch's longest), runs forward, backward, clipping and AdamW. SQuAD
windows (the first --questions questions of --squad_file; question first, the context cut with
`only_second` into windows --doc_stride tokens apart, each padded to --max_seq_length, with the
answer's start and end token, 0 when the window does not hold it) are written once, with
--write_windows, and zoo's side trains on the same ids. The peer at its best is one of
its settings: --precision=bf16 runs forward and loss under `torch.autocast("cpu",
torch.bfloat16)`; --attention picks transformers' attention implementation; --compile wraps the
model in `torch.compile`. The first --warmup_steps of each policy are not timed. Prints one JSON
line: the seconds of each policy's timed steps, the settings, threads and the matmul peak of the
precision used, measured by torch in the same process after training.
"""
import argparse
import contextlib
import json
import os

import torch
from transformers import (BertForQuestionAnswering, BertForSequenceClassification,
                          BertTokenizerFast)

from common import minilm_folder, mrpc_pairs, timed_steps, torch_matmul_peak_gflops

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train_seconds(model, batches, precision, warmup_steps, faults=None, warmup=None):
    """Seconds of the timed steps (collate, forward, backward, clipping, AdamW) over
    `batches` of keyword inputs made by a collating function (`faults`, `warmup`: see
    `common.timed_steps`)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)
    model.train()

    def step(collate):
        autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16"
                    else contextlib.nullcontext())
        with autocast:
            loss = model(**collate()).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()

    return timed_steps(step, batches, warmup_steps, faults, warmup)


def squad_questions(path, limit):
    """(question, context, answer start char, answer text) of the first `limit` questions."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    rows = []
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                answer = qa["answers"][0]
                rows.append((qa["question"], paragraph["context"], answer["answer_start"],
                             answer["text"]))
                if len(rows) == limit:
                    return rows
    return rows


def squad_windows(tokenizer, rows, max_seq_length, doc_stride, max_query_length=64):
    """{input_ids, token_type_ids, attention_mask, start_positions, end_positions} (lists)."""
    # HF's `stride` is the overlap between windows; zoo's doc_stride is the step between them.
    overlap = max_seq_length - max_query_length - 3 - doc_stride
    encoded = tokenizer([q for q, _, _, _ in rows], [c for _, c, _, _ in rows],
                        truncation="only_second", max_length=max_seq_length, stride=overlap,
                        return_overflowing_tokens=True, return_offsets_mapping=True,
                        padding="max_length")
    starts, ends = [], []
    for i, offsets in enumerate(encoded["offset_mapping"]):
        _, _, char_start, text = rows[encoded["overflow_to_sample_mapping"][i]]
        char_end = char_start + len(text)
        context = [j for j, s in enumerate(encoded.sequence_ids(i)) if s == 1]
        start = next((j for j in context if offsets[j][0] <= char_start < offsets[j][1]), 0)
        end = next((j for j in context if offsets[j][0] < char_end <= offsets[j][1]), 0)
        starts.append(start if end else 0)
        ends.append(end if start else 0)
    return dict({k: encoded[k] for k in ("input_ids", "token_type_ids", "attention_mask")},
                start_positions=starts, end_positions=ends)


def task_data(args, tokenizer):
    """(model class, model kwargs, collate(index rows, padding) -> keyword inputs)."""
    if args.task == "squad":
        windows = squad_windows(tokenizer, squad_questions(args.squad_file, args.questions),
                                args.max_seq_length, args.doc_stride)
        if args.write_windows:
            with open(args.write_windows, "w", encoding="utf-8") as f:
                json.dump(windows, f)
        tensors = {k: torch.tensor(v) for k, v in windows.items()}
        return BertForQuestionAnswering, {}, lambda index, padding: {
            k: v[torch.tensor(index)] for k, v in tensors.items()}
    pairs = mrpc_pairs(os.path.join(args.data_dir, "train.tsv"))
    encoded = tokenizer([a for a, _, _ in pairs], [b for _, b, _ in pairs], truncation=True,
                        max_length=args.max_seq_length)
    if args.write_lengths:
        with open(args.write_lengths, "w", encoding="utf-8") as f:
            json.dump([len(ids) for ids in encoded["input_ids"]], f)
    labels = [y for _, _, y in pairs]

    def collate(index, padding):
        features = [{k: encoded[k][i] for k in encoded} for i in index]
        batch = tokenizer.pad(
            features, padding="max_length" if padding == "fixed" else "longest",
            max_length=args.max_seq_length if padding == "fixed" else None,
            return_tensors="pt")
        return dict(batch, labels=torch.tensor([labels[i] for i in index]))
    return BertForSequenceClassification, {"num_labels": 2}, collate


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", choices=("mrpc", "squad"), default="mrpc")
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "..", "shared", "data", "mrpc"))
    parser.add_argument("--squad_file", default=os.path.join(
        ROOT, "..", "shared", "data", "squad_v1", "train-v1.1-explorer.json"))
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--doc_stride", type=int, default=128, help="step between windows")
    parser.add_argument("--plan_file", help="JSON: {padding: [[row, ...], ...]}")
    parser.add_argument("--write_lengths", help="Write the token length of every pair here.")
    parser.add_argument("--write_windows", help="Write the SQuAD windows here.")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--warmup_steps", type=int, default=3)
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--attention", choices=("eager", "sdpa"), default="sdpa")
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    folder = minilm_folder()
    tokenizer = BertTokenizerFast.from_pretrained(folder)
    model_class, model_kwargs, collate = task_data(args, tokenizer)
    if args.write_lengths or args.write_windows:
        return
    with open(args.plan_file, encoding="utf-8") as f:
        plan = json.load(f)
    results = dict(side="peer", framework=f"torch {torch.__version__}",
                   transformers=__import__("transformers").__version__,
                   threads=torch.get_num_threads(), interop_threads=torch.get_num_interop_threads(),
                   precision=args.precision, attention=args.attention, compile=args.compile,
                   warmup_steps=args.warmup_steps, seconds={}, warmup_seconds={},
                   page_faults_per_step={})
    for padding, rows in plan.items():
        torch.manual_seed(0)
        model = model_class.from_pretrained(folder, attn_implementation=args.attention,
                                            **model_kwargs)
        if args.compile:
            model = torch.compile(model)
        batches = [lambda index=index, padding=padding: collate(index, padding)
                   for index in rows]
        faults, warmup = [], []
        results["seconds"][padding] = train_seconds(model, batches, args.precision,
                                                    args.warmup_steps, faults, warmup)
        results["page_faults_per_step"][padding] = faults[0]
        results["warmup_seconds"][padding] = round(warmup[0], 2)  # with --compile: compiling
    results["matmul_peak_gflops"] = round(torch_matmul_peak_gflops(
        torch.bfloat16 if args.precision == "bf16" else torch.float32), 1)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
