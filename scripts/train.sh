#!/usr/bin/env bash
# train.sh [--install] [--data-only] [train.py options]: `npm run train`, our Needle 2 model from scratch,
# resumable. --data-only stops after the data stage (the held-out splits, for `npm run eval -- --shipped`).
# docs/training.md (the trainer), docs/training-data.md (the data), docs/evaluation.md (npm run eval).
#
# Stages, in order; each is skipped when its output is newer than its inputs, and each prints its time:
#   tools      needle-pack, needle-info, needle-ref and libneedle_toolcall.so in the build directory
#   data       tools/train/data.py --seed 1 --train 200000 --eval 1000 --group 4 -> build/train/data/
#   tokenizer  tools/train/tokenizer.py --vocab 4096                           -> build/train/tokenizer/
#   train      tools/train/train.py --geometry d256l6 --bits-map 'embedding=4,mhc=4,default=4'
#              --tokens 7000000 --minutes 95 --eval A.jsonl                    -> build/train/run/
#              The budget is tokens (so that a busy machine makes the same model, only later),
#              with a time cap; whichever comes first ends the cosine schedule.
#   continue   the same run resumed with a larger budget, --tokens 30000000 --minutes 195 (the
#              cosine stretched from where it stands: the learning rate rises again), cut at step
#              4330 (--stop-at)                                                -> build/train/run/
#   data-p     data.py as above with --perturb 0.4: the same held-out splits, the training requests
#              drawn again with perturbed phrasings (docs/training-data.md)    -> build/train/data-p/
#   perturbed  a new run from run/'s weights (--init) on data-p: --lr 1.2e-3 --min-lr 1e-4
#              --warmup 30 --minutes 55                                        -> build/train/run-p/
#   data-p8    data.py as above with --perturb 0.8 (twice the share of perturbed requests)
#                                                                              -> build/train/data-p8/
#   perturbed2 a new run from run-p/'s weights on data-p8: --lr 1e-3 --min-lr 1e-4 --warmup 30
#              --steps 2000 --seed 5 (a step budget: the same model on any machine, only sooner or
#              later; 49 minutes here)                                         -> build/train/run-p8/
#   data-p8t   data.py as above with --perturb 0.8 --twins 0.25 (a quarter of the groups followed by
#              their [] twin: the same requests against tools none of them fits) -> build/train/data-p8t/
#   twins      a new run from run-p8/'s weights on data-p8t: --lr 6e-4 --min-lr 6e-5 --warmup 30
#              --minutes 80 --seed 7                                           -> build/train/run-p8t/
#   twins-pack run-p8t exported and packed as the stages below do (the fifth model, shipped from
#              2026-12-01 to 12-02; the next run starts from its CQ values)   -> build/train/run-p8t/needlework-tools.cact
#   data-p8f2  data.py as above with --perturb 0.8 --twins 0.15 --perturb-invented 0.8 (the invented
#              tools' request frames perturbed too)                            -> build/train/data-p8f2/
#   frames     a new run from run-p8t's archive (its dequantised weights) on data-p8f2: --lr 6e-4
#              --min-lr 6e-5 --warmup 30 --steps 2400 --seed 9                 -> build/train/run-p8f2/
#   data-p8r   data.py as above with --perturb 0.8 --twins 0.2 --perturb-invented 0.8 --rename 0.8
#              (a family tool's noun renamed in the tool and its requests)     -> build/train/data-p8r/
#   renamed    a new run from run-p8f2's weights on data-p8r: --lr 4e-4 --min-lr 4e-5 --warmup 30
#              --steps 2100 --seed 11                                          -> build/train/run-p8r/
#   average    tools/train/average.py: the mean of run-p8f2's and run-p8r's weights (--weight 0.5)
#              (the model shipped on 2026-12-02)                        -> build/train/run-avg/
#   data-p8s   data.py as above with --perturb 0.8 --twins 0.2 --perturb-invented 0.8 --rename 0.4
#              --small-talk 0.4 (composed small talk among the [] requests)    -> build/train/data-p8s/
#   talk       a new run from run-avg's weights on data-p8s: --lr 3e-4 --min-lr 3e-5 --warmup 30
#              --steps 2000 --seed 13                                          -> build/train/run-p8s/
#   average2   average.py: the mean of run-avg's and run-p8s's weights (--weight 0.5) (the model
#              shipped from 2026-12-02 to 12-05)                               -> build/train/run-avg2/
#   average2-pack  run-avg2 exported and packed (the next run starts from its CQ values)
#                                                                              -> build/train/run-avg2/needlework-tools.cact
#   data-ow    data.py as above with --perturb 0.8 --twins 0.15 --perturb-invented 0.8
#              --invented-words 0.8 (invented tools named by open word-source words) -> build/train/data-ow/
#   open-words a new run from run-avg2's archive on data-ow: --lr 4e-4 --min-lr 4e-5 --warmup 30
#              --steps 2837 --seed 35                                          -> build/train/run-ow/
#   average3   average.py: the mean of run-avg2's archive (its dequantised weights) and run-ow's
#              weights (--weight 0.5) (the model shipped from 2026-12-05 to 12-06) -> build/train/run-avg3/
#   average3-pack  run-avg3 exported and packed (the next run starts from its CQ values)
#                                                                              -> build/train/run-avg3/needlework-tools.cact
#   dropout    a new run from run-avg3's archive on data-ow (the same data again) with dropout on the
#              blocks' outputs: --lr 4e-4 --min-lr 4e-5 --warmup 30 --steps 2875 --seed 44
#              --dropout 0.1                                                   -> build/train/run-dow/
#   average4   average.py: the mean of run-avg3's archive and run-dow's weights (--weight 0.5) (the
#              model shipped on 2026-12-06)                                    -> build/train/run-avg4/
#   average4-pack  run-avg4 exported and packed (the next run starts from its CQ values)
#                                                                              -> build/train/run-avg4/needlework-tools.cact
#   data-mf    data.py as data-ow with --more-families 0.4 (two in five family requests of 25 more
#              intents, training split only)                                   -> build/train/data-mf/
#   more-families  a new run from run-avg4's archive on data-mf: --lr 4e-4 --min-lr 4e-5 --warmup 30
#              --steps 3127 --seed 47 --dropout 0.1                            -> build/train/run-mf/
#   average5   average.py: the mean of run-avg4's archive and run-mf's weights (--weight 0.5) (the
#              model shipped on 2026-12-06)                                    -> build/train/run-avg5/
#   average5-pack  run-avg5 exported and packed (the next run starts from its CQ values)
#                                                                              -> build/train/run-avg5/needlework-tools.cact
#   data-sf    data.py as data-ow with --more-families 0.6 --second-families 0.5 (three in five family
#              requests of 50 more intents, training split only)               -> build/train/data-sf/
#   second-families  a new run from run-avg5's archive on data-sf: --lr 4e-4 --min-lr 4e-5 --warmup 30
#              --steps 2958 --seed 48 --dropout 0.1 (shipped alone on 2026-12-06: its mean with the
#              archive it started from gets less of B and C)                   -> build/train/run-sf/
#   second-families-pack  run-sf exported and packed (the next run starts from its CQ values)
#                                                                              -> build/train/run-sf/needlework-tools.cact
#   data-tf15  data.py as data-sf with --third-families 0.34 (a third of those requests from a third
#              25 intents)                                                     -> build/train/data-tf15/
#   third-families  a new run from run-sf's archive on data-tf15: --lr 4e-4 --min-lr 4e-5 --warmup 30
#              --steps 2576 --seed 51 --dropout 0.1                            -> build/train/run-tf15/
#   average6   average.py: the mean of run-sf's archive and run-tf15's weights (--weight 0.5) (the
#              model shipped on 2026-12-06)                                    -> build/train/run-avg6/
#   average6-pack  run-avg6 exported and packed (the next run starts from its CQ values)
#                                                                              -> build/train/run-avg6/needlework-tools.cact
#   data-rs    data.py as data-tf15 with --restyle 0.5 (half the family tools' names in another
#              style)                                                          -> build/train/data-rs/
#   restyled   a new run from run-avg6's archive on data-rs: --lr 4e-4 --min-lr 4e-5 --warmup 30
#              --steps 2268 --seed 53 --dropout 0.1                            -> build/train/run-rs/
#   average7   average.py: the mean of run-avg6's archive and run-rs's weights (--weight 0.5) (the
#              model shipped on 2026-12-07 before average8)                    -> build/train/run-avg7/
#   average7-pack  run-avg7 exported and packed (the next run starts from its CQ values)
#                                                                              -> build/train/run-avg7/needlework-tools.cact
#   data-rsnt  data.py as data-tf15 with --restyle 0.8 --near-twins 1.0 (four in five family tools'
#              names in another style; each [] twin offers near misses of its called tools)
#                                                                              -> build/train/data-rsnt/
#   restyled-near  a new run from run-avg7's archive on data-rsnt: --lr 4e-4 --min-lr 4e-5 --warmup 30
#              --steps 1680 --seed 59 --dropout 0.1                            -> build/train/run-rsnt/
#   average8   average.py: the mean of run-avg7's archive and run-rsnt's weights (--weight 0.5) (the
#              model shipped on 2026-12-07 before average9)                    -> build/train/run-avg8/
#   average8-pack  run-avg8 exported and packed (the next run starts from its CQ values)
#   data-vm    data.py as data-rsnt with --verb-misses 0.5 (half the invented tools' near misses
#              take another verb instead of another noun)                      -> build/train/data-vm/
#   verb-misses  a new run from run-avg8's archive on data-vm: --lr 4e-4 --min-lr 4e-5 --warmup 30
#              --steps 1765 --seed 61 --dropout 0.1                            -> build/train/run-vm/
#   average9   average.py: the mean of run-avg8's archive and run-vm's weights (--weight 0.5) (the
#              shipped model)                                                  -> build/train/run-avg9/
#              A run with a checkpoint is resumed (--resume) and a finished one skipped; train.py
#              options go to every run (`npm run train -- --device cuda`); a run whose successor
#              has a checkpoint is skipped. A checkpoint is never older than its data: a run on
#              other data stops with a message instead of being resumed.
#   link       build/train/checkpoint.pt, a link to the last run's checkpoint: the shipped model in
#              float, which npm run eval and decode.py read by default
#   export     tools/train/export.py                                           -> build/train/run-avg9/model.safetensors
#   pack       needle-pack --safetensors --bits-map (the same) --spm tokenizer -> build/train/needlework-tools.cact,
#              then needle-info loads it
#   parity     tools/train/parity.py: the trainer's forward against needle-ref (--kv f32 --act f32) on 3
#              examples of A and a sequence longer than kv_window, without and with a sink
#                                                                              -> build/train/parity.json
#   calibrate  tools/train/calibrate.py: the archive's no-call bias, doubt and named credit, the triple
#              of its grids (bias 0 to 2, doubt weight 0 to 4, credit 0 to 8) with the most exact
#              matches in needle-run on the
#              validation requests (the second half of each held-out split; the evaluation asks the
#              first 500)
#                                                                              -> build/train/calibration/calibration.json
#   install    only with --install: the archive copied to models/needlework-tools.cact
#
# Environment: NEEDLE_BUILD_DIR (default build), NEEDLE_TRAIN_DIR (default build/train). For a quick
# trial of the script itself: NEEDLE_TRAIN_EXAMPLES / NEEDLE_EVAL_EXAMPLES (the data sizes) and
# NEEDLE_TRAIN_TOKENS and NEEDLE_TRAIN_MINUTES (the budget); the defaults are the shipped model's.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NEEDLE_BUILD_DIR:-build}
work=${NEEDLE_TRAIN_DIR:-build/train}
python=/usr/bin/python3
jobs=$(nproc 2>/dev/null || echo 2)

seed=1
train_examples=${NEEDLE_TRAIN_EXAMPLES:-200000}
eval_examples=${NEEDLE_EVAL_EXAMPLES:-1000}
vocab=4096
geometry=d256l6
bits_map='embedding=4,mhc=4,default=4'
tokens=${NEEDLE_TRAIN_TOKENS:-7000000}
minutes=${NEEDLE_TRAIN_MINUTES:-95}
group=4
# the continued run and the later ones (NEEDLE_TRAIN_CONTINUE_AT, NEEDLE_TRAIN_PERTURBED_MINUTES,
# NEEDLE_TRAIN_PERTURBED2_STEPS, NEEDLE_TRAIN_TWINS_MINUTES, NEEDLE_TRAIN_FRAMES_STEPS,
# NEEDLE_TRAIN_RENAMED_STEPS, NEEDLE_TRAIN_TALK_STEPS, NEEDLE_TRAIN_OPEN_WORDS_STEPS,
# NEEDLE_TRAIN_DROPOUT_STEPS, NEEDLE_TRAIN_MORE_FAMILIES_STEPS, NEEDLE_TRAIN_SECOND_FAMILIES_STEPS,
# NEEDLE_TRAIN_THIRD_FAMILIES_STEPS, NEEDLE_TRAIN_RESTYLED_STEPS, NEEDLE_TRAIN_RESTYLED_NEAR_STEPS
# and NEEDLE_TRAIN_VERB_MISSES_STEPS for a quick trial of the script)
continue_tokens=30000000
continue_minutes=195
continue_at=${NEEDLE_TRAIN_CONTINUE_AT:-4330}
perturb=0.4
perturbed_minutes=${NEEDLE_TRAIN_PERTURBED_MINUTES:-55}
perturbed_options=(--lr 1.2e-3 --min-lr 1e-4 --warmup 30 --tokens 30000000)
perturb2=0.8
perturbed2_steps=${NEEDLE_TRAIN_PERTURBED2_STEPS:-2000}
perturbed2_options=(--lr 1e-3 --min-lr 1e-4 --warmup 30 --steps "$perturbed2_steps" --seed 5)
twins=0.25
twins_minutes=${NEEDLE_TRAIN_TWINS_MINUTES:-80}
twins_options=(--lr 6e-4 --min-lr 6e-5 --warmup 30 --minutes "$twins_minutes" --seed 7)
frames_steps=${NEEDLE_TRAIN_FRAMES_STEPS:-2400}
frames_options=(--lr 6e-4 --min-lr 6e-5 --warmup 30 --steps "$frames_steps" --seed 9)
renamed_steps=${NEEDLE_TRAIN_RENAMED_STEPS:-2100}
renamed_options=(--lr 4e-4 --min-lr 4e-5 --warmup 30 --steps "$renamed_steps" --seed 11)
talk_steps=${NEEDLE_TRAIN_TALK_STEPS:-2000}
talk_options=(--lr 3e-4 --min-lr 3e-5 --warmup 30 --steps "$talk_steps" --seed 13)
# the shipped run was cut by --minutes 85 at step 2837: a step budget ends the schedule there on any machine
open_words_steps=${NEEDLE_TRAIN_OPEN_WORDS_STEPS:-2837}
open_words_options=(--lr 4e-4 --min-lr 4e-5 --warmup 30 --steps "$open_words_steps" --seed 35)
# the six late runs share one schedule (with dropout) and differ only in their steps and seed
late_schedule=(--lr 4e-4 --min-lr 4e-5 --warmup 30 --dropout 0.1)
# the shipped run was cut by --minutes 80 at step 2875
dropout_steps=${NEEDLE_TRAIN_DROPOUT_STEPS:-2875}
dropout_options=("${late_schedule[@]}" --steps "$dropout_steps" --seed 44)
# the shipped run was cut by --minutes 80 at step 3127
more_families_steps=${NEEDLE_TRAIN_MORE_FAMILIES_STEPS:-3127}
more_families_options=("${late_schedule[@]}" --steps "$more_families_steps" --seed 47)
# the shipped run was cut by --minutes 72 at step 2958
second_families_steps=${NEEDLE_TRAIN_SECOND_FAMILIES_STEPS:-2958}
second_families_options=("${late_schedule[@]}" --steps "$second_families_steps" --seed 48)
# the shipped run was cut by --minutes 72 at step 2576
third_families_steps=${NEEDLE_TRAIN_THIRD_FAMILIES_STEPS:-2576}
third_families_options=("${late_schedule[@]}" --steps "$third_families_steps" --seed 51)
# the shipped run was cut by --minutes 72 at step 2268
restyled_steps=${NEEDLE_TRAIN_RESTYLED_STEPS:-2268}
restyled_options=("${late_schedule[@]}" --steps "$restyled_steps" --seed 53)
# the shipped run was cut by --minutes 55 at step 1680
restyled_near_steps=${NEEDLE_TRAIN_RESTYLED_NEAR_STEPS:-1680}
restyled_near_options=("${late_schedule[@]}" --steps "$restyled_near_steps" --seed 59)
# the shipped run was cut by --minutes 55 at step 1765
verb_misses_steps=${NEEDLE_TRAIN_VERB_MISSES_STEPS:-1765}
verb_misses_options=("${late_schedule[@]}" --steps "$verb_misses_steps" --seed 61)

install=0
data_only=0
train_options=()
for arg in "$@"; do
  case "$arg" in
    --install) install=1 ;;
    --data-only) data_only=1 ;;
    *) train_options+=("$arg") ;;
  esac
done

data="$work/data"
tokenizer="$work/tokenizer/tokenizer.model"
run="$work/run"
checkpoint="$run/checkpoint.pt"
data_p="$work/data-p"
run_p="$work/run-p"
checkpoint_p="$run_p/checkpoint.pt"
data_p8="$work/data-p8"
run_p8="$work/run-p8"
checkpoint_p8="$run_p8/checkpoint.pt"
data_p8t="$work/data-p8t"
run_p8t="$work/run-p8t"
checkpoint_p8t="$run_p8t/checkpoint.pt"
archive_p8t="$run_p8t/needlework-tools.cact"
data_p8f2="$work/data-p8f2"
run_p8f2="$work/run-p8f2"
checkpoint_p8f2="$run_p8f2/checkpoint.pt"
data_p8r="$work/data-p8r"
run_p8r="$work/run-p8r"
checkpoint_p8r="$run_p8r/checkpoint.pt"
run_avg="$work/run-avg"
checkpoint_avg="$run_avg/checkpoint.pt"
data_p8s="$work/data-p8s"
run_p8s="$work/run-p8s"
checkpoint_p8s="$run_p8s/checkpoint.pt"
run_avg2="$work/run-avg2"
checkpoint_avg2="$run_avg2/checkpoint.pt"
archive_avg2="$run_avg2/needlework-tools.cact"
data_ow="$work/data-ow"
run_ow="$work/run-ow"
checkpoint_ow="$run_ow/checkpoint.pt"
run_avg3="$work/run-avg3"
checkpoint_avg3="$run_avg3/checkpoint.pt"
archive_avg3="$run_avg3/needlework-tools.cact"
run_dow="$work/run-dow"
checkpoint_dow="$run_dow/checkpoint.pt"
run_avg4="$work/run-avg4"
checkpoint_avg4="$run_avg4/checkpoint.pt"
archive_avg4="$run_avg4/needlework-tools.cact"
data_mf="$work/data-mf"
run_mf="$work/run-mf"
checkpoint_mf="$run_mf/checkpoint.pt"
run_avg5="$work/run-avg5"
checkpoint_avg5="$run_avg5/checkpoint.pt"
archive_avg5="$run_avg5/needlework-tools.cact"
data_sf="$work/data-sf"
run_sf="$work/run-sf"
checkpoint_sf="$run_sf/checkpoint.pt"
archive_sf="$run_sf/needlework-tools.cact"
data_tf15="$work/data-tf15"
run_tf15="$work/run-tf15"
checkpoint_tf15="$run_tf15/checkpoint.pt"
run_avg6="$work/run-avg6"
checkpoint_avg6="$run_avg6/checkpoint.pt"
archive_avg6="$run_avg6/needlework-tools.cact"
data_rs="$work/data-rs"
run_rs="$work/run-rs"
checkpoint_rs="$run_rs/checkpoint.pt"
run_avg7="$work/run-avg7"
checkpoint_avg7="$run_avg7/checkpoint.pt"
archive_avg7="$run_avg7/needlework-tools.cact"
data_rsnt="$work/data-rsnt"
run_rsnt="$work/run-rsnt"
checkpoint_rsnt="$run_rsnt/checkpoint.pt"
run_avg8="$work/run-avg8"
checkpoint_avg8="$run_avg8/checkpoint.pt"
archive_avg8="$run_avg8/needlework-tools.cact"
data_vm="$work/data-vm"
run_vm="$work/run-vm"
checkpoint_vm="$run_vm/checkpoint.pt"
run_avg9="$work/run-avg9"
checkpoint_avg9="$run_avg9/checkpoint.pt"
# the last run: the shipped model (exported, packed, checked for parity and linked as $work/checkpoint.pt)
final_run="$run_avg9"
final_checkpoint="$final_run/checkpoint.pt"
weights="$final_run/model.safetensors"
archive="$work/needlework-tools.cact"
parity="$work/parity.json"

die() {
  echo "train: $*" >&2
  exit 1
}

source scripts/up-to-date.sh

# stage NAME COMMAND...: runs COMMAND (its output shown), then prints the time it took. COMMAND runs
# in a subshell with errexit on (a function's failing step fails the stage; `cmd || die` would not).
stage() {
  local name=$1 start end status
  shift
  echo "== train: $name"
  start=$(date +%s)
  set +e
  (set -e; "$@")
  status=$?
  set -e
  [ $status = 0 ] || die "$name failed (exit status $status)"
  end=$(date +%s)
  printf 'train: %-10s %6d s\n' "$name" $((end - start))
}

skipped() {
  printf 'train: %-10s skipped (%s is up to date)\n' "$1" "$2"
}

# --- tools ---------------------------------------------------------------------------------------
build_tools() {
  bash scripts/setup.sh
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$jobs" --target needle-pack needle-info needle-ref needle-run needle_toolcall
}
stage tools build_tools
bin="$build/bin"

# --- data ----------------------------------------------------------------------------------------
# The data and the tokenizer are made again when their code is newer than their stamp (the time they
# were last made or confirmed), unless a checkpoint was trained on them: the trained model decides
# what its data is. They are made into a new directory first: when the result has the same bytes as
# what is there, the old files are kept with their times, so that an edit that does not change the
# output does not make the tokenizer and the checkpoint look stale. PYTHONHASHSEED is fixed, although
# data.py's output no longer depends on Python's string hashing (set iteration order; test_data.py
# checks two hash seeds).
export PYTHONHASHSEED=0

# keep_or_replace NEW OLD FILE...: OLD stays when every FILE is the same in NEW and OLD; else NEW
# replaces OLD.
keep_or_replace() {
  local new=$1 old=$2 f same=1
  shift 2
  if [ -d "$old" ]; then
    for f in "$@"; do cmp -s "$new/$f" "$old/$f" || same=0; done
  else
    same=0
  fi
  if [ $same = 1 ]; then
    echo "train: $old came out the same; kept as it is"
    rm -rf "$new"
  else
    rm -rf "$old.old"
    if [ -d "$old" ]; then mv "$old" "$old.old"; fi
    mv "$new" "$old"
    rm -rf "$old.old"
  fi
}

data_code=(tools/train/data.py tools/train/families.py tools/train/slots.py tools/train/invented.py
           tools/train/wordlists.py tools/train/smalltalk.py tools/train/schema.py tools/train/render.py
           tools/train/more_families.py)
# make_data DIR STAMP [data.py options]: data.py with the recipe's seed, sizes and groups (and the
# options) into DIR.new, then kept or replaced as DIR; STAMP touched.
make_data() {
  local dir=$1 stamp=$2
  shift 2
  rm -rf "$dir.new"
  "$python" tools/train/data.py --seed "$seed" --train "$train_examples" --eval "$eval_examples" --group "$group" "$@" \
    --out "$dir.new"
  keep_or_replace "$dir.new" "$dir" train.jsonl A.jsonl B.jsonl C.jsonl manifest.json stats.json
  touch "$stamp"
}
if up_to_date "$work/data.stamp" "${data_code[@]}" && [ -e "$data/train.jsonl" ]; then
  skipped data "$data"
elif [ -e "$data/train.jsonl" ] && [ "$checkpoint" -nt "$data/train.jsonl" ]; then
  echo "train: data       kept: $checkpoint was trained on it (to make it again, remove $work)"
else
  mkdir -p "$work"
  stage data make_data "$data" "$work/data.stamp"
fi
if [ $data_only = 1 ]; then
  echo "train: --data-only: the data is in $data"
  exit 0
fi

# --- tokenizer -----------------------------------------------------------------------------------
make_tokenizer() {
  rm -rf "$work/tokenizer.new"
  "$python" tools/train/tokenizer.py --data "$data" --vocab "$vocab" --out "$work/tokenizer.new"
  keep_or_replace "$work/tokenizer.new" "$work/tokenizer" tokenizer.model
  touch "$work/tokenizer.stamp"
}
if up_to_date "$work/tokenizer.stamp" "$data/train.jsonl" tools/train/tokenizer.py && [ -e "$tokenizer" ]; then
  skipped tokenizer "$tokenizer"
elif [ -e "$tokenizer" ] && [ "$checkpoint" -nt "$tokenizer" ] && [ "$tokenizer" -nt "$data/train.jsonl" ]; then
  echo "train: tokenizer  kept: $checkpoint was trained with it (to make it again, remove $work)"
else
  stage tokenizer make_tokenizer
fi

# --- train ---------------------------------------------------------------------------------------
# finished CHECKPOINT: the run spent its own budget (the planned last step, its minutes, tokens or steps).
finished() {
  "$python" - "$1" <<'EOF'
import sys, torch
saved = torch.load(sys.argv[1], map_location="cpu")
state, args = saved["state"], saved["args"]
done = (state["total_steps"] is not None and state["step"] >= state["total_steps"]) \
    or bool(args.get("minutes") and state["elapsed"] >= args["minutes"] * 60) \
    or bool(args.get("tokens") and state["tokens"] >= args["tokens"]) \
    or bool(args.get("steps") and state["step"] >= args["steps"]) \
    or bool(args.get("stop_at") is not None and state["step"] >= args["stop_at"])
sys.exit(0 if done else 1)
EOF
}
# step_of CHECKPOINT: its step.
step_of() {
  "$python" -c 'import sys, torch; print(torch.load(sys.argv[1], map_location="cpu")["state"]["step"])' "$1"
}
train_command=("$python" tools/train/train.py --data "$data" --tokenizer "$tokenizer" --geometry "$geometry"
               --bits-map "$bits_map" --tokens "$tokens" --minutes "$minutes" --eval "$data/A.jsonl" --out "$run")
continue_command=("$python" tools/train/train.py --data "$data" --tokenizer "$tokenizer" --tokens "$continue_tokens"
                  --minutes "$continue_minutes" --stop-at "$continue_at" --eval "$data/A.jsonl" --out "$run" --resume)
if [ -e "$checkpoint_p" ]; then
  skipped continue "$checkpoint (the perturbed run started from it)"
elif [ -e "$checkpoint" ]; then
  up_to_date "$checkpoint" "$data/train.jsonl" "$tokenizer" ||
    die "$checkpoint is older than the data or the tokenizer: it was trained on other data. Remove $run to train again."
  if [ "$(step_of "$checkpoint")" -ge "$continue_at" ]; then
    skipped continue "$checkpoint"
  else
    # the first budget unfinished: the first run resumed; then (or else) the continued run
    finished "$checkpoint" || stage train "${train_command[@]}" --resume "${train_options[@]}"
    stage continue "${continue_command[@]}" "${train_options[@]}"
  fi
else
  stage train "${train_command[@]}" "${train_options[@]}"
  stage continue "${continue_command[@]}" "${train_options[@]}"
fi

# --- the perturbed data and the runs on it --------------------------------------------------------
# perturbed_data NAME DIR RUN [data.py options]: the stage NAME that makes DIR (the training requests
# drawn again, the held-out splits the same), unless its stamp is newer than the generator's code, or
# RUN's checkpoint was trained on it.
perturbed_data() {
  local name=$1 dir=$2 run=$3
  shift 3
  if up_to_date "$work/$name.stamp" "${data_code[@]}" && [ -e "$dir/train.jsonl" ]; then
    skipped "$name" "$dir"
  elif [ -e "$dir/train.jsonl" ] && [ "$run/checkpoint.pt" -nt "$dir/train.jsonl" ]; then
    printf 'train: %-10s kept: %s was trained on it (to make it again, remove %s)\n' "$name" "$run/checkpoint.pt" "$run"
  else
    stage "$name" make_data "$dir" "$work/$name.stamp" "$@"
  fi
}
# run_from NAME INIT NEXT COMMAND...: the stage NAME, COMMAND (a train.py run on --data DATA with
# --out RUN) started from INIT's weights, or resumed from RUN's checkpoint; skipped when it is
# finished and no train.py option was given, or when the run after it (NEXT, a checkpoint) exists.
run_from() {
  local name=$1 init=$2 next=$3 data run
  shift 3
  data=$(arg_of --data "$@")
  run=$(arg_of --out "$@")
  if [ -e "$next" ]; then
    skipped "$name" "$run/checkpoint.pt (the next run started from it)"
  elif [ -e "$run/checkpoint.pt" ]; then
    up_to_date "$run/checkpoint.pt" "$data/train.jsonl" "$tokenizer" ||
      die "$run/checkpoint.pt is older than its data or the tokenizer: it was trained on other data. Remove $run to train again."
    if [ ${#train_options[@]} -eq 0 ] && finished "$run/checkpoint.pt"; then
      skipped "$name" "$run/checkpoint.pt"
    else
      stage "$name" "$@" --resume "${train_options[@]}"
    fi
  else
    stage "$name" "$@" --init "$init" "${train_options[@]}"
  fi
}
# arg_of OPTION ARGS...: the value that follows OPTION in ARGS.
arg_of() {
  local option=$1
  shift
  while [ $# -gt 1 ]; do
    if [ "$1" = "$option" ]; then echo "$2"; return; fi
    shift
  done
  die "arg_of: $option not given"
}

perturbed_data data-p "$data_p" "$run_p" --perturb "$perturb"
run_from perturbed "$checkpoint" "$checkpoint_p8" \
  "$python" tools/train/train.py --data "$data_p" --tokenizer "$tokenizer" --minutes "$perturbed_minutes" \
  "${perturbed_options[@]}" --eval "$data/A.jsonl" --out "$run_p"
perturbed_data data-p8 "$data_p8" "$run_p8" --perturb "$perturb2"
run_from perturbed2 "$checkpoint_p" "$checkpoint_p8t" \
  "$python" tools/train/train.py --data "$data_p8" --tokenizer "$tokenizer" \
  "${perturbed2_options[@]}" --eval "$data/A.jsonl" --out "$run_p8"
perturbed_data data-p8t "$data_p8t" "$run_p8t" --perturb "$perturb2" --twins "$twins"
run_from twins "$checkpoint_p8" "$checkpoint_p8f2" \
  "$python" tools/train/train.py --data "$data_p8t" --tokenizer "$tokenizer" \
  "${twins_options[@]}" --eval "$data/A.jsonl" --out "$run_p8t"

# pack_to WEIGHTS ARCHIVE: needle-pack with the recipe's bits map and tokenizer, written to ARCHIVE.tmp,
# checked by needle-info (its report beside ARCHIVE) and only then moved to ARCHIVE.
pack_to() {
  "$bin/needle-pack" --safetensors "$1" --bits-map "$bits_map" --spm "$tokenizer" -o "$2.tmp"
  "$bin/needle-info" "$2.tmp" > "${2%.cact}.info.txt"
  mv "$2.tmp" "$2"
}

# pack_stage NAME CHECKPOINT ARCHIVE NEXT: the stage NAME, CHECKPOINT exported (model.safetensors beside
# it) and packed as ARCHIVE; skipped when ARCHIVE is up to date, or when NEXT (the checkpoint of the run
# that started from ARCHIVE) exists. A model as it shipped is its archive, whose dequantised weights
# (train.py --init X.cact) are its CQ values, not the latent weights of its checkpoint: the runs that
# continue a shipped model start from its archive.
pack_stage() {
  local name=$1 checkpoint=$2 archive=$3 next=$4
  if [ -e "$next" ]; then
    skipped "$name" "$next (the run after it started from it)"
  elif up_to_date "$archive" "$checkpoint" "$tokenizer" tools/train/export.py "$bin/needle-pack"; then
    skipped "$name" "$archive"
  else
    stage "$name" export_and_pack "$checkpoint" "$archive"
  fi
}
export_and_pack() {
  "$python" tools/train/export.py --checkpoint "$1" -o "$(dirname "$1")/model.safetensors"
  pack_to "$(dirname "$1")/model.safetensors" "$2"
}
pack_stage twins-pack "$checkpoint_p8t" "$archive_p8t" "$checkpoint_p8f2"
perturbed_data data-p8f2 "$data_p8f2" "$run_p8f2" --perturb "$perturb2" --twins 0.15 --perturb-invented 0.8
run_from frames "$archive_p8t" "$checkpoint_p8r" \
  "$python" tools/train/train.py --data "$data_p8f2" --tokenizer "$tokenizer" \
  "${frames_options[@]}" --eval "$data/A.jsonl" --out "$run_p8f2"
perturbed_data data-p8r "$data_p8r" "$run_p8r" --perturb "$perturb2" --twins 0.2 --perturb-invented 0.8 --rename 0.8
run_from renamed "$checkpoint_p8f2" "$checkpoint_p8s" \
  "$python" tools/train/train.py --data "$data_p8r" --tokenizer "$tokenizer" \
  "${renamed_options[@]}" --eval "$data/A.jsonl" --out "$run_p8r"
# average_of NAME A B OUT: the stage NAME, the mean of checkpoints A and B (average.py --weight 0.5)
# as OUT; skipped when OUT is newer than both and average.py.
average_of() {
  if up_to_date "$4" "$2" "$3" tools/train/average.py; then
    skipped "$1" "$4"
  else
    stage "$1" "$python" tools/train/average.py "$2" "$3" --weight 0.5 -o "$4"
  fi
}
# The renamed run answers [] more often than it should (lights requests against set_light); the mean
# of its weights and those it started from keeps most of what it learned about [] and loses that
# (docs/training-data.md, "Renamed nouns").
average_of average "$checkpoint_p8f2" "$checkpoint_p8r" "$checkpoint_avg"
perturbed_data data-p8s "$data_p8s" "$run_p8s" --perturb "$perturb2" --twins 0.2 --perturb-invented 0.8 \
  --rename 0.4 --small-talk 0.4
run_from talk "$checkpoint_avg" "$checkpoint_ow" \
  "$python" tools/train/train.py --data "$data_p8s" --tokenizer "$tokenizer" \
  "${talk_options[@]}" --eval "$data/A.jsonl" --out "$run_p8s"
# The talk run answers [] to most small talk and to half of split C, and to more of A and B than it
# should; the mean of its weights and those it started from keeps most of the first and little of
# the second (docs/training-data.md, "Composed small talk").
average_of average2 "$checkpoint_avg" "$checkpoint_p8s" "$checkpoint_avg2"
pack_stage average2-pack "$checkpoint_avg2" "$archive_avg2" "$checkpoint_ow"
# data-ow's options, which data-mf draws with as well (and --more-families)
open_words_data=(--perturb "$perturb2" --twins 0.15 --perturb-invented 0.8 --invented-words 0.8)
perturbed_data data-ow "$data_ow" "$run_ow" "${open_words_data[@]}"
run_from open-words "$archive_avg2" "$checkpoint_dow" \
  "$python" tools/train/train.py --data "$data_ow" --tokenizer "$tokenizer" \
  "${open_words_options[@]}" --eval "$data/A.jsonl" --out "$run_ow"
# The open-words run answers [] to half of B, as every run from the shipped model did; the mean of its
# weights and the archive it started from keeps what it learned of split C and loses that
# (docs/training-data.md, "Open tool words").
average_of average3 "$archive_avg2" "$checkpoint_ow" "$checkpoint_avg3"
pack_stage average3-pack "$checkpoint_avg3" "$archive_avg3" "$checkpoint_dow"
run_from dropout "$archive_avg3" "$checkpoint_mf" \
  "$python" tools/train/train.py --data "$data_ow" --tokenizer "$tokenizer" \
  "${dropout_options[@]}" --eval "$data/A.jsonl" --out "$run_dow"
# Dropout moves C again and, like every run from the shipped model, answers [] to most of B; the mean
# with the archive it started from keeps B and part of C (docs/training-data.md, "With dropout").
average_of average4 "$archive_avg3" "$checkpoint_dow" "$checkpoint_avg4"
pack_stage average4-pack "$checkpoint_avg4" "$archive_avg4" "$checkpoint_mf"
perturbed_data data-mf "$data_mf" "$run_mf" "${open_words_data[@]}" --more-families 0.4
run_from more-families "$archive_avg4" "$checkpoint_sf" \
  "$python" tools/train/train.py --data "$data_mf" --tokenizer "$tokenizer" \
  "${more_families_options[@]}" --eval "$data/A.jsonl" --out "$run_mf"
# The run on 25 more intents answers [] to half of B as the others did, but gets more of A and B
# right alone; the mean with the archive it started from keeps B and C and gains A
# (docs/training-data.md, "More families").
average_of average5 "$archive_avg4" "$checkpoint_mf" "$checkpoint_avg5"
pack_stage average5-pack "$checkpoint_avg5" "$archive_avg5" "$checkpoint_sf"
# data-sf's options, on which data-tf15, data-rs and data-rsnt build
second_families_data=("${open_words_data[@]}" --more-families 0.6 --second-families 0.5)
third_families_data=("${second_families_data[@]}" --third-families 0.34)
perturbed_data data-sf "$data_sf" "$run_sf" "${second_families_data[@]}"
run_from second-families "$archive_avg5" "$checkpoint_tf15" \
  "$python" tools/train/train.py --data "$data_sf" --tokenizer "$tokenizer" \
  "${second_families_options[@]}" --eval "$data/A.jsonl" --out "$run_sf"
# The run on 50 more intents gets more of B and C alone than any model shipped before it, and less
# of A; its mean with the archive it started from gets more of A and less of B and C, so the run
# itself shipped (docs/training-data.md, "A second 25").
pack_stage second-families-pack "$checkpoint_sf" "$archive_sf" "$checkpoint_tf15"
perturbed_data data-tf15 "$data_tf15" "$run_tf15" "${third_families_data[@]}"
run_from third-families "$archive_sf" "$checkpoint_rs" \
  "$python" tools/train/train.py --data "$data_tf15" --tokenizer "$tokenizer" \
  "${third_families_options[@]}" --eval "$data/A.jsonl" --out "$run_tf15"
# The run on 75 more intents answers [] to less of split C than the archive it started from (the
# third 25 comes with it); its mean with that archive keeps C and B and gains A
# (docs/training-data.md, "A third 25").
average_of average6 "$archive_sf" "$checkpoint_tf15" "$checkpoint_avg6"
pack_stage average6-pack "$checkpoint_avg6" "$archive_avg6" "$checkpoint_rs"
perturbed_data data-rs "$data_rs" "$run_rs" "${third_families_data[@]}" --restyle 0.5
run_from restyled "$archive_avg6" "$checkpoint_rsnt" \
  "$python" tools/train/train.py --data "$data_rs" --tokenizer "$tokenizer" \
  "${restyled_options[@]}" --eval "$data/A.jsonl" --out "$run_rs"
# The run on restyled names calls a tool for more of split B and more often the right one, with
# wrong arguments as often, and says [] to less of C; its mean with the archive it started from
# keeps A, gains B and gives up some of C (docs/training-data.md, "Restyled names").
average_of average7 "$archive_avg6" "$checkpoint_rs" "$checkpoint_avg7"
pack_stage average7-pack "$checkpoint_avg7" "$archive_avg7" "$checkpoint_rsnt"
perturbed_data data-rsnt "$data_rsnt" "$run_rsnt" "${third_families_data[@]}" --restyle 0.8 --near-twins 1.0
run_from restyled-near "$archive_avg7" "$checkpoint_vm" \
  "$python" tools/train/train.py --data "$data_rsnt" --tokenizer "$tokenizer" \
  "${restyled_near_options[@]}" --eval "$data/A.jsonl" --out "$run_rsnt"
# Restyled names with near-miss twins: the run calls a tool for more of split B, more often the
# right one, and reads tools named in other styles far better than the archive it started from, with
# less of A; its mean with that archive gains A and B and keeps C (docs/training-data.md, "Restyled
# names").
average_of average8 "$archive_avg7" "$checkpoint_rsnt" "$checkpoint_avg8"
pack_stage average8-pack "$checkpoint_avg8" "$archive_avg8" "$checkpoint_vm"
perturbed_data data-vm "$data_vm" "$run_vm" "${third_families_data[@]}" --restyle 0.8 --near-twins 1.0 \
  --verb-misses 0.5
run_from verb-misses "$archive_avg8" "" \
  "$python" tools/train/train.py --data "$data_vm" --tokenizer "$tokenizer" \
  "${verb_misses_options[@]}" --eval "$data/A.jsonl" --out "$run_vm"
# Near misses by verb: the run alone says [] to more of split C's family requests (its invented-tool
# requests no more often); its mean with the archive it started from gets a little more of every
# split (docs/training-data.md, "Near misses by verb").
average_of average9 "$archive_avg8" "$checkpoint_vm" "$checkpoint_avg9"

# --- link, export, pack --------------------------------------------------------------------------
# A relative link, so that the training directory can be moved or copied whole.
ln -sfn "${final_checkpoint#"$work"/}" "$work/checkpoint.pt"
echo "train: link       $work/checkpoint.pt -> ${final_checkpoint#"$work"/}"
if up_to_date "$weights" "$final_checkpoint" tools/train/export.py; then
  skipped export "$weights"
else
  stage export "$python" tools/train/export.py --checkpoint "$final_checkpoint" -o "$weights"
fi

pack() {
  pack_to "$weights" "$archive"
  sed -n 1,2p "${archive%.cact}.info.txt"
}
if up_to_date "$archive" "$weights" "$tokenizer" "$bin/needle-pack"; then
  skipped pack "$archive"
else
  stage pack pack
fi

# --- parity --------------------------------------------------------------------------------------
check_parity() {
  "$python" tools/train/parity.py --checkpoint "$final_checkpoint" --bin "$bin" --data "$data/A.jsonl" \
    --tokenizer "$tokenizer" --count 3 --long | tee "$parity.log"
  tail -n 1 "$parity.log" > "$parity"
  rm "$parity.log"
}
if up_to_date "$parity" "$archive" "$bin/needle-ref"; then
  skipped parity "$parity"
else
  stage parity check_parity
fi

# --- calibrate -----------------------------------------------------------------------------------
# The validation requests: the second half of each held-out split (examples 501-1000 at the full size).
# calibrate.py writes the archive's calibration where evaluate.py looks for it (evaluate.calibration_path).
calibration=$("$python" -c 'import sys; sys.path.insert(0, "tools/train"); import evaluate; print(evaluate.calibration_path(sys.argv[1]))' "$archive")
calibrate() {
  local skip=$((eval_examples / 2))
  "$python" tools/train/calibrate.py --archive "$archive" --data "$data" --build "$build" \
    --skip $skip --count $((eval_examples - skip)) --jobs "$jobs"
}
if up_to_date "$calibration" "$archive" "$bin/needle-run" tools/train/calibrate.py tools/train/evaluate.py; then
  skipped calibrate "$calibration"
else
  stage calibrate calibrate
fi

# --- install -------------------------------------------------------------------------------------
if [ $install = 1 ]; then
  mkdir -p models
  if cmp -s "$archive" models/needlework-tools.cact; then
    echo "train: models/needlework-tools.cact is already this archive"
  else
    cp "$archive" models/needlework-tools.cact.tmp
    mv models/needlework-tools.cact.tmp models/needlework-tools.cact
    echo "train: installed models/needlework-tools.cact"
  fi
fi
echo "train: $archive ($(stat -c %s "$archive") bytes, sha256 $(sha256sum "$archive" | cut -c1-16)...)"
echo "train: $("$python" -c 'import json, sys; c = json.load(open(sys.argv[1])); print("no-call bias %g, doubt %g, named credit %g" % (c["no_call_bias"], c.get("no_call_doubt", 0), c.get("no_call_named", 0)))' "$calibration")" \
  "($calibration; site/models.json's no_call_bias, no_call_doubt and no_call_named for this archive)"
