r"""The peer's SQuAD fine-tuning: transformers `BertForQuestionAnswering` on the MiniLM checkpoint.

  python bench/peer_squad.py          # needs ./install.sh bench (torch==2.13.0, transformers)

`bench/squad_throughput.py` runs this script as its baseline. The first --questions questions of
the SQuAD v1.1 train file are tokenized up front into windows of --max_seq_length (question
first, context truncated with `only_second`, overflowing windows kept, all padded to the full
length, as zoo's windows are), each with the answer's start and end token (0 when the window
does not hold it). Each timed step runs forward, backward, clipping and AdamW on a batch of
windows. Prints one JSON line: windows (features) per second.
"""
import argparse
import json
import os

import torch
from transformers import BertForQuestionAnswering, BertTokenizerFast

from common import minilm_folder
from peer_train import train_seconds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def windows(tokenizer, rows, max_seq_length, overlap):
    encoded = tokenizer([q for q, _, _, _ in rows], [c for _, c, _, _ in rows],
                        truncation="only_second", max_length=max_seq_length, stride=overlap,
                        return_overflowing_tokens=True, return_offsets_mapping=True,
                        padding="max_length", return_tensors="pt")
    starts, ends = [], []
    for i, offsets in enumerate(encoded["offset_mapping"].tolist()):
        _, _, char_start, text = rows[int(encoded["overflow_to_sample_mapping"][i])]
        char_end = char_start + len(text)
        context = [j for j, s in enumerate(encoded.sequence_ids(i)) if s == 1]
        start = next((j for j in context if offsets[j][0] <= char_start < offsets[j][1]), 0)
        end = next((j for j in context if offsets[j][0] < char_end <= offsets[j][1]), 0)
        starts.append(start if end else 0)
        ends.append(end if start else 0)
    inputs = {k: encoded[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    return inputs, torch.tensor(starts), torch.tensor(ends)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train_file", default=os.path.join(
        ROOT, "..", "shared", "data", "squad_v1", "train-v1.1-explorer.json"))
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_seq_length", type=int, default=384)
    parser.add_argument("--doc_stride", type=int, default=128, help="step between windows")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup_steps", type=int, default=2)
    args = parser.parse_args()
    folder = minilm_folder()
    tokenizer = BertTokenizerFast.from_pretrained(folder)
    rows = squad_questions(args.train_file, args.questions)
    # HF's `stride` is the overlap between windows; zoo's doc_stride is the step between them.
    overlap = args.max_seq_length - 64 - 3 - args.doc_stride
    inputs, starts, ends = windows(tokenizer, rows, args.max_seq_length, overlap)
    count = len(starts)
    torch.manual_seed(0)
    model = BertForQuestionAnswering.from_pretrained(folder)

    def batch_at(step):
        index = torch.arange(step * args.batch_size, (step + 1) * args.batch_size) % count
        return dict({k: v[index] for k, v in inputs.items()},
                    start_positions=starts[index], end_positions=ends[index])

    seconds = train_seconds(model, [lambda step=step: batch_at(step)
                                    for step in range(args.warmup_steps + args.steps)],
                            "fp32", args.warmup_steps)
    rate = args.steps * args.batch_size / seconds
    print(json.dumps(dict(framework=f"torch {torch.__version__}", threads=torch.get_num_threads(),
                          questions=len(rows), windows=count, batch_size=args.batch_size,
                          max_seq_length=args.max_seq_length, steps=args.steps,
                          windows_per_second=round(rate, 3))))


if __name__ == "__main__":
    main()
