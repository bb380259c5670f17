#!/usr/bin/env bash
# multilingual-e5-small on many languages (issue 46); bench/multilingual.py collects the results
# as JSON lines:
#
#   bench/multilingual.sh [tweets xquad speed frozen]   # default: the first three
#   .venv/bin/python bench/multilingual.py >> bench/results/multilingual.jsonl
#
# tweets: the XLM-T sentiment benchmark (3 classes) of each language in
# ../shared/data/xlmt_sentiment: multilingual-e5-small trained on its train split ($EPOCHS
# epochs), evaluated on its val and test splits; then the English model evaluated on every
# other language (zero-shot transfer).
# xquad: multilingual-e5-small trained on the first $V11_QUESTIONS questions of SQuAD v1.1 train
# (1 epoch, windows of $SEQ), evaluated on XQuAD English and every XQuAD language here.
# speed: the training step of both encoders on the same batches, taken in turn
# (bench/encoder_speed.py), and MiniLM trained on the English tweets with the same flags as
# tweets' English run, for the one-text latency of both exports called in turn
# (bench/latency_ab.py --time_exports).
# frozen: tweets' run of each language with the word-piece embeddings trained
# (trained_tweets_<language>, --nofreeze_word_embeddings) and frozen (frozen_tweets_<language>,
# --freeze_word_embeddings), the two taken in turn, the first alternating by language.
# Model dirs and logs go to $RUNS (default runs/multilingual); a run whose results are there
# already is not run again. A finished run keeps its newest checkpoint only (a checkpoint of
# multilingual-e5-small with its optimizer state is 1.4 GB, and a run writes three).
set -euo pipefail
cd "$(dirname "$0")/.."
D=${SHARED_DATA:-../shared/data}
PY=.venv/bin/python
R=${RUNS:-runs/multilingual}
E5=multilingual_e5_small
EPOCHS=${EPOCHS:-3}
V11_QUESTIONS=${V11_QUESTIONS:-8000}
SEQ=${SEQ:-256}
LANGS=${LANGS:-$(ls "$D/xlmt_sentiment" | grep -v -e LICENSE -e README)}
mkdir -p "$R"
log() { echo "+ $(date -u +%H:%M:%S) $*" >&2; }
TWEETS=(--text_column=text --label_column=label --label_map=0:negative,1:neutral,2:positive
        --num_train_epochs="$EPOCHS")

newest_only() {  # $1: a finished model dir
  local c="$1/checkpoints" newest
  newest=$(sed -n 's/^model_checkpoint_path: "\(.*\)"$/\1/p' "$c/checkpoint")
  find "$c" -name 'ckpt-*' ! -name "$(basename "$newest").*" -delete
}

tweets_run() {  # $1: model dir name, $2: language, $3: encoder, then further training flags;
  # the English runs export
  local dir="$R/$1" data="$D/xlmt_sentiment/$2" export=()
  [ -f "$dir/test_eval.json" ] && return
  [ "$2" = english ] && export=(--export_dir="$dir/export/1")
  log "tweets, $2, $3 ${*:4}"
  $PY -m tasks.classify.train "${TWEETS[@]}" --encoder_handle="$3" "${export[@]}" "${@:4}" \
    --mode=train_and_eval --train_file="$data/train.csv" --eval_file="$data/val.csv" \
    --model_dir="$dir" > "$dir.log" 2>&1
  cp "$dir/eval_results.json" "$dir/val_eval.json"
  $PY -m tasks.classify.train "${TWEETS[@]}" --encoder_handle="$3" --mode=eval \
    --eval_file="$data/test.csv" --model_dir="$dir" > "$dir.test.log" 2>&1
  cp "$dir/eval_results.json" "$dir/test_eval.json"
  newest_only "$dir"
}

tweets() {
  for lang in $LANGS; do
    tweets_run "tweets_$lang" "$lang" "$E5"
  done
  for lang in $LANGS; do
    [ "$lang" = english ] && continue
    local out="$R/zero_shot_$lang.json"
    [ -f "$out" ] && continue
    log "zero-shot, english -> $lang"
    for split in val test; do
      $PY -m tasks.classify.train "${TWEETS[@]}" --encoder_handle="$E5" --mode=eval \
        --model_dir="$R/tweets_english" --eval_file="$D/xlmt_sentiment/$lang/$split.csv" \
        > "$R/zero_shot_$lang.$split.log" 2>&1
      cp "$R/tweets_english/eval_results.json" "$R/zero_shot_$lang.$split.json"
    done
    touch "$out"
  done
}

frozen() {
  local i=0 lang
  for lang in $LANGS; do
    if ((i++ % 2)); then
      tweets_run "frozen_tweets_$lang" "$lang" "$E5" --freeze_word_embeddings
      tweets_run "trained_tweets_$lang" "$lang" "$E5" --nofreeze_word_embeddings
    else
      tweets_run "trained_tweets_$lang" "$lang" "$E5" --nofreeze_word_embeddings
      tweets_run "frozen_tweets_$lang" "$lang" "$E5" --freeze_word_embeddings
    fi
  done
}

xquad() {
  local dir="$R/squad_v11"
  if [ ! -f "$dir/train_results.json" ]; then
    log "SQuAD v1.1, $V11_QUESTIONS questions"
    $PY -m tasks.squad.train --encoder_handle="$E5" --max_seq_length="$SEQ" --mode=train \
      --train_file="$D/squad_v1/train-v1.1-explorer.json" --num_train_epochs=1 \
      --max_train_questions="$V11_QUESTIONS" --learning_rate=1e-4 --model_dir="$dir" \
      > "$dir.log" 2>&1
    newest_only "$dir"
  fi
  for file in "$D/xquad_en/xquad.en.json" "$D"/xquad/xquad.*.json; do
    local lang
    lang=$(basename "$file" .json)
    lang=${lang#xquad.}
    [ -f "$R/xquad_$lang.json" ] && continue
    log "XQuAD $lang"
    $PY -m tasks.squad.train --encoder_handle="$E5" --max_seq_length="$SEQ" --mode=eval \
      --eval_file="$file" --model_dir="$dir" > "$R/xquad_$lang.log" 2>&1
    cp "$dir/eval_results.json" "$R/xquad_$lang.json"
  done
}

speed() {
  tweets_run tweets_english english "$E5"
  tweets_run minilm_tweets_english english minilm_l6_h384_uncased
  if [ ! -s "$R/encoder_speed.json" ]; then
    log "training step, MiniLM and multilingual-e5-small in turn"
    $PY bench/encoder_speed.py --data_dir="$D/mrpc" > "$R/encoder_speed.json" \
      2> "$R/encoder_speed.log"
  fi
  log "one-text latency, MiniLM (base) and multilingual-e5-small (this)"
  $PY bench/latency_ab.py --data_dir="$D/sst2" \
    --time_exports="$R/minilm_tweets_english/export/1,$R/tweets_english/export/1" \
    > "$R/latency.json" 2> "$R/latency.log"
}

for name in ${@:-tweets xquad speed}; do
  $name
done
