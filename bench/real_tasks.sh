#!/usr/bin/env bash
# Fine-tunes the default encoder (MiniLM-L6-H384) on the real data sets of the tasks added in
# issue 16, evaluates each on its held-out split and checks each export against --mode=predict;
# then bench/real_tasks.py collects the results as JSON lines.
#
#   bench/real_tasks.sh [stsb|ner|wnut|go_emotions|squad2|squad2_dev|multitask ...]  # default: all
#   .venv/bin/python bench/real_tasks.py > bench/results/real_tasks.jsonl
#
# Model dirs go to runs/<name>; each run's output to runs/<name>.log. On 2 cores: STS-B about 6
# minutes a run, CoNLL-2003 about 20, GoEmotions about 20, SQuAD 2.0 (10,000 SQuAD v1.1
# questions and 5,000 unanswerable copies, then all of the v2.0 dev set) about 55, SQuAD 2.0 on
# half of its dev set (2 epochs) about 30.
set -euo pipefail
cd "$(dirname "$0")/.."
D=${SHARED_DATA:-../shared/data}
PY=.venv/bin/python
CHECK="$PY bench/export_vs_predict.py"
# BENCHMARKS.md's rows were trained in fp32, what --precision=auto chose on the CPUs of those
# sessions; on a CPU with avx512_bf16 it now picks bf16, so the precision is given.
FP32=--precision=fp32
log() { echo "+ $*" >&2; }

stsb() {
  for pooling in cls mean; do
    log "STS-B, --pooling=$pooling"
    $PY -m tasks.stsb.train $FP32 --data_dir=$D/stsb --pooling=$pooling --learning_rate=5e-5 \
      --model_dir=runs/stsb_$pooling \
      --export_dir=runs/stsb_$pooling/export/1 > runs/stsb_$pooling.log 2>&1
    $CHECK --kind=regression --model_dir=runs/stsb_$pooling --data=$D/stsb/dev.tsv \
      --text_column=sentence1 --text_b_column=sentence2 -- tasks.stsb.train --pooling=$pooling \
      > runs/stsb_$pooling.export_check.json
  done
}

tagging() {  # name, train, dev, test files
  local name=$1 train=$2 dev=$3 test=$4
  log "$name"
  $PY -m tasks.tagging.train $FP32 --train_file=$train --eval_file=$dev --learning_rate=1e-4 \
    --model_dir=runs/$name --export_dir=runs/$name/export/1 > runs/$name.log 2>&1
  cp runs/$name/eval_results.json runs/$name/eval_results_dev.json
  $PY -m tasks.tagging.train --mode=eval --eval_file=$test --model_dir=runs/$name \
    > runs/${name}_test.log 2>&1
  cp runs/$name/eval_results.json runs/$name/eval_results_test.json
  $CHECK --kind=tagging --model_dir=runs/$name --data=$dev -- tasks.tagging.train \
    > runs/$name.export_check.json
}

ner() {
  tagging ner $D/conll2003/iob2/train.txt $D/conll2003/iob2/valid.txt $D/conll2003/iob2/test.txt
}

wnut() {
  tagging wnut $D/wnut17/wnut17train.conll $D/wnut17/emerging.dev.conll \
    $D/wnut17/emerging.test.annotated
}

go_emotions() {
  local flags="--task_type=multi_label --noheader --quoting=csv --text_column=0 --label_column=1
    --id_column=2 --pooling=mean --learning_rate=5e-5"
  log "GoEmotions"
  $PY -m tasks.classify.train $FP32 $flags --label_names_file=$D/go_emotions/emotions.txt \
    --train_file=$D/go_emotions/train.tsv --eval_file=$D/go_emotions/dev.tsv \
    --model_dir=runs/go_emotions --export_dir=runs/go_emotions/export/1 > runs/go_emotions.log 2>&1
  cp runs/go_emotions/eval_results.json runs/go_emotions/eval_results_dev.json
  $PY -m tasks.classify.train $flags --mode=eval --eval_file=$D/go_emotions/test.tsv \
    --model_dir=runs/go_emotions > runs/go_emotions_test.log 2>&1
  cp runs/go_emotions/eval_results.json runs/go_emotions/eval_results_test.json
  $CHECK --kind=multi_label --model_dir=runs/go_emotions --data=$D/go_emotions/dev.tsv \
    --noheader --text_column=0 -- tasks.classify.train $flags > runs/go_emotions.export_check.json
}

squad2() {
  log "SQuAD 2.0"
  $PY -m tasks.squad.train $FP32 --version_2_with_negative \
    --train_file=$D/squad_v1/train-v1.1-explorer.json --max_train_questions=10000 \
    --unanswerable_fraction=0.5 --eval_file=$D/squad_v2/dev-v2.0-rebuilt.json \
    --num_train_epochs=1 --learning_rate=1e-4 --model_dir=runs/squad2 \
    --export_dir=runs/squad2/export/1 > runs/squad2.log 2>&1
  $CHECK --kind=squad --model_dir=runs/squad2 --data=$D/squad_v2/dev-v2.0-rebuilt.json \
    -- tasks.squad.train --version_2_with_negative > runs/squad2.export_check.json
  $PY bench/squad2_floor.py --eval_file=$D/squad_v2/dev-v2.0-rebuilt.json \
    > runs/squad2_floor.json
}

squad2_dev() {
  # SQuAD 2.0's own unanswerable questions: train on the dev articles at even positions,
  # evaluate on the others (bench/squad2_dev_split.py)
  log "SQuAD 2.0, dev split by article"
  $PY bench/squad2_dev_split.py --dev_file=$D/squad_v2/dev-v2.0-rebuilt.json \
    --out_dir=runs/squad2_split > runs/squad2_split.json
  $PY -m tasks.squad.train $FP32 --version_2_with_negative \
    --train_file=runs/squad2_split/train.json \
    --eval_file=runs/squad2_split/eval.json --num_train_epochs=2 --learning_rate=1e-4 \
    --model_dir=runs/squad2_dev > runs/squad2_dev.log 2>&1
  $PY bench/squad2_floor.py --eval_file=runs/squad2_split/eval.json > runs/squad2_dev_floor.json
}

multitask() {
  # MRPC and the first 10,000 rows of SST-2 train, jointly (proportional sampling: each task
  # sees about the examples it sees alone) and each alone; then the exports side by side.
  head -n 10001 $D/sst2/train.tsv > runs/sst2_train_10k.tsv
  printf '{"mrpc": {"kind": "mrpc", "data_dir": "%s"}, "sst2": {"kind": "sst2", "train_file": "%s", "eval_file": "%s"}}' \
    $D/mrpc runs/sst2_train_10k.tsv $D/sst2/dev.tsv > runs/mt_tasks.json
  log "MRPC alone"
  # (the single-task runs at the multi-task runner's learning rate, 5e-5)
  $PY -m tasks.mrpc.train $FP32 --data_dir=$D/mrpc --learning_rate=5e-5 \
    --model_dir=runs/mt_single_mrpc \
    --export_dir=runs/mt_single_mrpc/export/1 > runs/mt_single_mrpc.log 2>&1
  log "SST-2 (10,000 rows) alone"
  $PY -m tasks.sst2.train $FP32 --train_file=runs/sst2_train_10k.tsv --eval_file=$D/sst2/dev.tsv \
    --learning_rate=5e-5 \
    --model_dir=runs/mt_single_sst2 --export_dir=runs/mt_single_sst2/export/1 \
    > runs/mt_single_sst2.log 2>&1
  log "MRPC + SST-2 jointly"
  $PY -m tasks.multitask.train $FP32 --tasks_file=runs/mt_tasks.json --model_dir=runs/mt_joint \
    --export_dir=runs/mt_joint/export/1 > runs/mt_joint.log 2>&1
  $PY bench/multitask_export.py --multi=runs/mt_joint/export/1 \
    --single=runs/mt_single_mrpc/export/1,runs/mt_single_sst2/export/1 > runs/mt_export.json
}

mkdir -p runs
for name in "${@:-stsb ner wnut go_emotions squad2 squad2_dev multitask}"; do
  for task in $name; do $task; done
done
