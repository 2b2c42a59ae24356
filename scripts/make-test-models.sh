#!/usr/bin/env bash
# make-test-models.sh BUILD_DIR: the "models" test fixture, in BUILD_DIR/models/.
#
#   corpus.txt          BUILD_DIR/bin/needle-corpus --seed 1 (a synthetic corpus, one sentence a line)
#   needle-test.model   spm_train on it with Needle's tokenizer settings (docs/tokenizer.md): BPE,
#                       8192 pieces, byte fallback, identity normalisation, no whitespace collapsing,
#                       dummy prefix, pad/eos/bos/unk at 0..3 and the ten chat markers at 4..13
#   tiny.cact           needle-pack --random, seed 1, with that tokenizer
#   small.cact          the same for the small geometry
#   base.cact           the same for the base geometry (with probe heads, needle-pack's default)
#   micro.cact          the micro geometry (d 64, 2 layers, window 64, context 2048) with probe heads:
#                       cheap steps for the tool-call tests
#   tiny-notok.cact     tiny without a tokenizer record
#
# A step is skipped when its output is newer than all its inputs (including this script and the
# programs it runs), so running the test suite again costs nothing. Outputs are written to a temporary
# name and renamed, so an interrupted run never leaves a complete-looking file behind.
set -euo pipefail

die() {
  echo "make-test-models: $*" >&2
  exit 1
}

[ $# -eq 1 ] || die "usage: make-test-models.sh BUILD_DIR"
[ -d "$1" ] || die "build directory '$1' does not exist"
build=$(cd "$1" && pwd)
bin="$build/bin"
models="$build/models"
script="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
mkdir -p "$models"

# Settings. The corpus size is the smallest that still gives spm_train far more than 8192 candidate
# pieces (1 MB already reaches 8192); training takes about 8 s of CPU time.
corpus_seed=1
corpus_bytes=1500000
vocab=8192
markers='<|im_start|>,<|im_end|>,<think>,</think>,<tools>,</tools>,<tool_call>,</tool_call>,<tool_result>,</tool_result>'

source "$(dirname "${BASH_SOURCE[0]}")/up-to-date.sh"

need_program() {
  [ -x "$bin/$1" ] || die "$bin/$1 is missing: build it first (cmake --build $build --target $1)"
}

# step NAME COMMAND...: runs COMMAND, reporting its time; on failure shows its log and stops.
step() {
  local name=$1 log="$models/$1.log" start end elapsed_ms
  shift
  start=$(date +%s%N)
  if ! "$@" >"$log" 2>&1; then
    echo "make-test-models: $name failed; the end of $log:" >&2
    tail -n 25 "$log" >&2
    exit 1
  fi
  end=$(date +%s%N)
  elapsed_ms=$(((end - start) / 1000000))
  printf 'make-test-models: %-12s %4d.%01d s\n' "$name" $((elapsed_ms / 1000)) $((elapsed_ms % 1000 / 100))
}

# --- corpus.txt ------------------------------------------------------------------------------
need_program needle-corpus
corpus="$models/corpus.txt"
if ! up_to_date "$corpus" "$bin/needle-corpus" "$script"; then
  # needle-corpus is relinked whenever the host library changes, but its output rarely does: an
  # identical corpus keeps its old timestamp, so the model is not trained again for nothing.
  step corpus "$bin/needle-corpus" --seed "$corpus_seed" --bytes "$corpus_bytes" -o "$corpus.tmp"
  if [ -e "$corpus" ] && cmp -s "$corpus.tmp" "$corpus"; then
    rm "$corpus.tmp"
  else
    mv "$corpus.tmp" "$corpus"
  fi
fi

# --- needle-test.model -----------------------------------------------------------------------
command -v spm_train >/dev/null || die "spm_train is not installed (Debian package 'sentencepiece')"
model="$models/needle-test.model"
if ! up_to_date "$model" "$corpus" "$script"; then
  # character_coverage 0.9995 (SentencePiece's default) leaves the rarest characters of the corpus
  # (some CJK, some emoji) out of the vocabulary, so that byte fallback is exercised by real text.
  step spm_train spm_train \
    --input="$corpus" --model_prefix="$models/needle-test.tmp" \
    --model_type=bpe --vocab_size="$vocab" --byte_fallback=true \
    --pad_id=0 --eos_id=1 --bos_id=2 --unk_id=3 \
    --pad_piece='<pad>' --eos_piece='</s>' --bos_piece='<s>' --unk_piece='<unk>' \
    --user_defined_symbols="$markers" \
    --normalization_rule_name=identity --remove_extra_whitespaces=false --add_dummy_prefix=true \
    --character_coverage=0.9995 --input_sentence_size=0 --num_threads=2

  # The id layout Needle's tokenizer has: checked on the .vocab listing (line n is id n-1).
  vocab_file="$models/needle-test.tmp.vocab"
  lines=$(wc -l <"$vocab_file")
  [ "$lines" -eq "$vocab" ] || die "spm_train made $lines pieces, not $vocab: the corpus is too small"
  expected=$(printf '%s\n' '<pad>' '</s>' '<s>' '<unk>'; tr ',' '\n' <<<"$markers";
             for b in $(seq 0 255); do printf '<0x%02X>\n' "$b"; done)
  actual=$(head -n 270 "$vocab_file" | cut -f1)
  if [ "$expected" != "$actual" ]; then
    diff <(echo "$expected") <(echo "$actual") | head -n 10 >&2
    die "ids 0..269 of the trained model are not <pad> </s> <s> <unk>, the ten markers, <0x00>..<0xFF>"
  fi
  mv "$vocab_file" "$models/needle-test.vocab"
  mv "$models/needle-test.tmp.model" "$model"
fi

# --- archives --------------------------------------------------------------------------------
need_program needle-pack
pack() {  # pack OUTPUT NEEDLE-PACK-ARGUMENT...
  local output="$models/$1" name=${1%.cact} inputs=("$bin/needle-pack" "$script")
  shift
  if [[ " $* " == *" --spm "* ]]; then inputs+=("$model"); fi
  if ! up_to_date "$output" "${inputs[@]}"; then
    step "$name" "$bin/needle-pack" "$@" -o "$output.tmp"
    mv "$output.tmp" "$output"
  fi
}
pack tiny.cact --random --geometry tiny --seed 1 --spm "$model"
pack small.cact --random --geometry small --seed 1 --spm "$model"
pack base.cact --random --geometry base --seed 1 --spm "$model"
pack micro.cact --random --geometry micro --seed 1 --heads --spm "$model"
pack tiny-notok.cact --random --geometry tiny --seed 1

echo "make-test-models: $models is ready"
