# up-to-date.sh: sourced by scripts/train.sh and scripts/make-test-models.sh, the two scripts whose
# steps are skipped when their outputs are newer than their inputs. Not a program of its own.

# up_to_date OUTPUT INPUT...: OUTPUT exists and is newer than every INPUT.
up_to_date() {
  local output=$1 input
  shift
  [ -e "$output" ] || return 1
  for input in "$@"; do
    [ "$output" -nt "$input" ] || return 1
  done
}
