#!/usr/bin/env bash
# Warm starts (--init_from) measured on MiniLM (issue 47); bench/warm_start.py collects the
# results as JSON lines:
#
#   bench/warm_start.sh [squad2 xquad tweets recipes]   # default: all four
#   .venv/bin/python bench/warm_start.py >> bench/results/warm_start.jsonl
#
# squad2: SQuAD 2.0 on its own unanswerable questions. The v2.0 dev articles are split in two
# (bench/squad2_dev_split.py): the odd ones are held out for the evaluation; the even ones are
# split again, 3 articles of 4 to train on and 1 to choose the null threshold on (never the
# held-out half). (a) trains from the encoder, (b) from a SQuAD v1.1 model trained first on
# $V11_QUESTIONS questions; the same schedule for both ($SQUAD2_EPOCHS epoch(s), windows of $SEQ).
# xquad: domain transfer without leaking evaluation data. XQuAD's English paragraphs (from SQuAD
# v1.1 dev, never trained on) split by article: the even ones to train on, the odd ones held
# out. From the encoder and from the SQuAD v1.1 model of squad2 ($XQUAD_EPOCHS epochs each), and
# the v1.1 model as it is.
# tweets: the English tweets of the XLM-T benchmark (3 classes) from the encoder and from an
# SST-2 model ($SST2_ROWS rows of SST-2 train; its 2-class head cannot be reused and starts
# fresh), $SEEDS seeds each; val and test macro F1.
# recipes: the same tweets from the encoder with --layer_decay=0.8 and with --reinit_layers=1,
# against tweets' runs from the encoder.
# Model dirs and logs go to $RUNS (default runs/warm). A run whose results are there already is
# not run again (move its folder away to rerun it).
set -euo pipefail
cd "$(dirname "$0")/.."
D=${SHARED_DATA:-../shared/data}
PY=.venv/bin/python
R=${RUNS:-runs/warm}
V11_QUESTIONS=${V11_QUESTIONS:-6000}
SQUAD2_EPOCHS=${SQUAD2_EPOCHS:-1}
SQUAD2_LR=${SQUAD2_LR:-1e-4}
SQUAD2_STARTS=${SQUAD2_STARTS:-"encoder squad_v11"}
SEQ=${SEQ:-256}  # SQuAD windows (384 trains about 1.6x slower)
XQUAD_EPOCHS=${XQUAD_EPOCHS:-2}
SST2_ROWS=${SST2_ROWS:-10000}
SEEDS=${SEEDS:-"0 1 2"}
mkdir -p "$R"
log() { echo "+ $(date -u +%H:%M:%S) $*" >&2; }
json_value() { $PY -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }

v11() {
  # the SQuAD v1.1 source model, trained once (an interrupted run resumes at its last
  # checkpoint), then evaluated once on SQuAD v1.1 dev
  if [ ! -f "$R/squad_v11/train_results.json" ]; then
    log "SQuAD v1.1, $V11_QUESTIONS questions"
    $PY -m tasks.squad.train --max_seq_length="$SEQ" \
      --train_file="$D/squad_v1/train-v1.1-explorer.json" \
      --max_train_questions="$V11_QUESTIONS" --num_train_epochs=1 --learning_rate=1e-4 \
      --mode=train --checkpoint_every=200 --model_dir="$R/squad_v11" > "$R/squad_v11.log" 2>&1
  fi
  [ -f "$R/squad_v11/eval_results.json" ] && return
  log "SQuAD v1.1 dev, the source model"
  $PY -m tasks.squad.train --max_seq_length="$SEQ" --mode=eval \
    --eval_file="$D/squad_v1/dev-v1.1.json" --model_dir="$R/squad_v11" > "$R/squad_v11.eval.log" 2>&1
}

squad2() {
  $PY bench/squad2_dev_split.py --dev_file="$D/squad_v2/dev-v2.0-rebuilt.json" \
    --out_dir="$R/split" > "$R/split.json"
  $PY bench/squad2_dev_split.py --dev_file="$R/split/train.json" --eval_every=4 \
    --out_dir="$R/split_train" > "$R/split_train.json"
  case " $SQUAD2_STARTS " in *" squad_v11 "*) v11 ;; esac  # the source only when (b) runs
  for start in $SQUAD2_STARTS; do
    local dir="$R/squad2_from_$start" init=()
    [ -f "$dir/held_out_eval.json" ] && continue
    [ "$start" = squad_v11 ] && init=(--init_from="$R/squad_v11")
    log "SQuAD 2.0 from $start"
    $PY -m tasks.squad.train --version_2_with_negative --max_seq_length="$SEQ" "${init[@]}" \
      --mode=train_and_eval --keep_best=best_f1 \
      --train_file="$R/split_train/train.json" --eval_file="$R/split_train/eval.json" \
      --num_train_epochs="$SQUAD2_EPOCHS" --learning_rate="$SQUAD2_LR" --model_dir="$dir" \
      > "$dir.log" 2>&1
    # the kept (best) epoch's evaluation on the threshold articles gives the threshold
    $PY -m tasks.squad.train --version_2_with_negative --max_seq_length="$SEQ" --mode=eval \
      --eval_file="$R/split_train/eval.json" --model_dir="$dir" > "$dir.threshold.log" 2>&1
    cp "$dir/eval_results.json" "$dir/threshold_eval.json"
    $PY -m tasks.squad.train --version_2_with_negative --max_seq_length="$SEQ" --mode=eval \
      --eval_file="$R/split/eval.json" --model_dir="$dir" \
      --null_score_diff_threshold="$(json_value "$dir/threshold_eval.json" best_f1_thresh)" \
      > "$dir.eval.log" 2>&1
    cp "$dir/eval_results.json" "$dir/held_out_eval.json"
  done
  $PY bench/squad2_floor.py --eval_file="$R/split/eval.json" > "$R/squad2_floor.json"
}

xquad() {
  local split="$R/xquad_split" eval_flags=(--max_seq_length="$SEQ" --mode=eval)
  $PY bench/squad2_dev_split.py --dev_file="$D/xquad_en/xquad.en.json" \
    --out_dir="$split" > "$R/xquad_split.json"
  v11
  for start in encoder squad_v11; do
    local dir="$R/xquad_from_$start" init=()
    [ -f "$dir/held_out_eval.json" ] && continue
    [ "$start" = squad_v11 ] && init=(--init_from="$R/squad_v11")
    log "XQuAD English from $start"
    $PY -m tasks.squad.train --max_seq_length="$SEQ" "${init[@]}" --mode=train \
      --train_file="$split/train.json" --num_train_epochs="$XQUAD_EPOCHS" \
      --learning_rate=1e-4 --model_dir="$dir" > "$dir.log" 2>&1
    $PY -m tasks.squad.train "${eval_flags[@]}" --eval_file="$split/eval.json" \
      --model_dir="$dir" > "$dir.eval.log" 2>&1
    cp "$dir/eval_results.json" "$dir/held_out_eval.json"
  done
  if [ ! -f "$R/xquad_v11_as_is.json" ]; then
    log "XQuAD English, the SQuAD v1.1 model as it is"
    $PY -m tasks.squad.train "${eval_flags[@]}" --eval_file="$split/eval.json" \
      --model_dir="$R/squad_v11" > "$R/xquad_v11_as_is.log" 2>&1
    cp "$R/squad_v11/eval_results.json" "$R/xquad_v11_as_is.json"
  fi
}

tweets() {
  local en="$D/xlmt_sentiment/english" flags=(--text_column=text --label_column=label
    --label_map=0:negative,1:neutral,2:positive --num_train_epochs=3)
  head -n $((SST2_ROWS + 1)) "$D/sst2/train.tsv" > "$R/sst2_train.tsv"
  log "SST-2, $SST2_ROWS rows"
  $PY -m tasks.sst2.train --train_file="$R/sst2_train.tsv" --eval_file="$D/sst2/dev.tsv" \
    --num_train_epochs=1 --mode=train_and_eval --model_dir="$R/sst2" > "$R/sst2.log" 2>&1
  for seed in $SEEDS; do
    for start in encoder sst2; do
      local dir="$R/tweets_from_${start}_$seed" init=()
      [ "$start" = sst2 ] && init=(--init_from="$R/sst2")
      log "English tweets from $start, seed $seed"
      $PY -m tasks.classify.train "${flags[@]}" "${init[@]}" --seed="$seed" \
        --mode=train_and_eval --train_file="$en/train.csv" --eval_file="$en/val.csv" \
        --model_dir="$dir" > "$dir.log" 2>&1
      cp "$dir/eval_results.json" "$dir/val_eval.json"
      $PY -m tasks.classify.train "${flags[@]}" --mode=eval --eval_file="$en/test.csv" \
        --model_dir="$dir" > "$dir.test.log" 2>&1
      cp "$dir/eval_results.json" "$dir/test_eval.json"
    done
  done
}

recipes() {
  # small-data recipes on the same English tweets, from the encoder (baseline: tweets' runs)
  local en="$D/xlmt_sentiment/english" flags=(--text_column=text --label_column=label
    --label_map=0:negative,1:neutral,2:positive --num_train_epochs=3)
  for seed in $SEEDS; do
    for recipe in layer_decay=0.8 reinit_layers=1; do
      local dir="$R/tweets_${recipe%%=*}_$seed"
      log "English tweets, --$recipe, seed $seed"
      $PY -m tasks.classify.train "${flags[@]}" "--$recipe" --seed="$seed" \
        --mode=train_and_eval --train_file="$en/train.csv" --eval_file="$en/val.csv" \
        --model_dir="$dir" > "$dir.log" 2>&1
      cp "$dir/eval_results.json" "$dir/val_eval.json"
      $PY -m tasks.classify.train "${flags[@]}" "--$recipe" --mode=eval \
        --eval_file="$en/test.csv" --model_dir="$dir" > "$dir.test.log" 2>&1
      cp "$dir/eval_results.json" "$dir/test_eval.json"
    done
  done
}

for name in ${@:-squad2 xquad tweets recipes}; do
  $name
done
