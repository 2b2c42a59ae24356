# em-objects.sh: sourced by scripts/build-ref-wasm.sh and scripts/build-toolcall-wasm.sh, the two
# Emscripten builds. It compiles sources to objects in parallel, each one again only when its source,
# a header it includes (em++ -MMD) or the flags changed. Not a program of its own.
#
# The caller sets, before calling em_compile_objects:
#   compile_flags, link_flags  arrays of em++ flags (a change to either clears the objects)
#   jobs                       how many em++ to run at once
# and reads afterwards:
#   em_objects                 the objects, in the order of the sources given
#   em_stamp                   OBJ_DIR/flags.txt, newer whenever the flags changed (a reason to relink)

# em_clear_on_new_flags OBJ_DIR: removes OBJ_DIR's objects when em++'s version or the flags differ from
# the ones they were compiled with (OBJ_DIR/flags.txt), and records the flags now in use.
em_clear_on_new_flags() {
  local obj_dir=$1
  local flags_now
  flags_now="$(em++ --version | sed -n 1p) | ${compile_flags[*]} | ${link_flags[*]}"
  em_stamp="$obj_dir/flags.txt"
  mkdir -p "$obj_dir"
  if [ ! -f "$em_stamp" ] || [ "$(cat "$em_stamp")" != "$flags_now" ]; then
    rm -f "$obj_dir"/*.o "$obj_dir"/*.d
    printf '%s' "$flags_now" > "$em_stamp"
  fi
}

# em_up_to_date OBJECT DEPFILE: true when the object exists and nothing in its dependency file is newer.
em_up_to_date() {
  local obj=$1 dep=$2 f
  [ -f "$obj" ] && [ -f "$dep" ] || return 1
  # The .d file is "obj: src hdr hdr \" lines; drop the target and the continuations.
  for f in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$dep"); do
    [ -e "$f" ] || return 1
    [ "$f" -nt "$obj" ] && return 1
  done
  return 0
}

# em_compile_objects WHO OBJ_DIR SOURCE...: compiles each out-of-date SOURCE to OBJ_DIR/<its path with
# / as _>.o, $jobs at a time, and sets em_objects and em_stamp. On a failed compile it says so as WHO
# and exits.
em_compile_objects() {
  local who=$1 obj_dir=$2
  shift 2
  local src name obj dep pid failed=0
  local pids=()
  em_clear_on_new_flags "$obj_dir"
  em_objects=()
  for src in "$@"; do
    name=$(echo "$src" | tr '/' '_')
    obj="$obj_dir/${name%.cpp}.o"
    dep="$obj_dir/${name%.cpp}.d"
    em_objects+=("$obj")
    em_up_to_date "$obj" "$dep" && continue
    echo "em++ $src"
    em++ "${compile_flags[@]}" -MMD -MF "$dep" -c "$src" -o "$obj" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then
      wait "${pids[0]}" || failed=1
      pids=("${pids[@]:1}")
    fi
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  [ $failed = 0 ] || { echo "$who: compilation failed" >&2; exit 1; }
}
