# Shell helpers shared by the command-line tests (sourced, not run: the runner takes tests/cli_*.sh).
# Sourced first thing; the test then sets fail=0 and makes its own scratch folder.

# t NAME CHECK: evaluates CHECK; when it fails, prints "FAILED: NAME" and sets fail=1.
t() { if eval "$2"; then :; else echo "FAILED: $1"; fail=1; fi; }
# scratch VAR: a new temporary folder in $VAR, removed when the test exits (also on HUP/INT/TERM).
scratch() {
  _scratch=$(mktemp -d) || exit 1
  eval "$1=\$_scratch"
  trap "rm -rf '$_scratch'" EXIT; trap 'exit 1' HUP INT TERM
}

# The data section of a safetensors file (parameters and AdamW moments), without the header, which
# holds run-specific metadata such as elapsed time.
data_of() { python3 -c 'import struct,sys; b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[:8])[0]; sys.stdout.buffer.write(b[8+n:])' "$1"; }
# 0 when two checkpoints hold bitwise the same tensors (scratch files in $dir).
same_weights() { data_of "$1" > "$dir/a.bin"; data_of "$2" > "$dir/b.bin"; cmp -s "$dir/a.bin" "$dir/b.bin"; }
# wait_step RUN STEP: waits until run folder RUN has a metrics.csv row for STEP (at most 120 s: a
# loaded machine). saved_step CKPT: the step a checkpoint holds (empty when it does not load).
wait_step() {
  i=0; while [ $i -lt 1200 ] && ! grep -q "^$2," "$1/metrics.csv" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
}
saved_step() { "$VITMAE" info --json "$1" 2>/dev/null | tr -d ' \t' | grep -o '"step":[0-9]*' | head -n 1 | cut -d: -f2; }
# usr1_stop CMD STEPS ARGS...: `mpirun -np 2 $VITMAE CMD ARGS --steps STEPS --threads 1 --out $dir/usr1`
# in the background, SIGUSR1 to mpirun once step 3 is logged (mpirun forwards it at once); checks that
# every process exits 0, rank 0 says how to resume and saved a checkpoint mid-run. ($mpi_asan: the
# caller's ASAN_OPTIONS for runs under mpirun.)
usr1_stop() {
  _cmd=$1; _steps=$2; shift 2
  ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none -np 2 "$VITMAE" "$_cmd" "$@" --steps "$_steps" \
    --threads 1 --out "$dir/usr1" > "$dir/usr1.log" 2>&1 &
  _pid=$!
  wait_step "$dir/usr1" 3
  kill -USR1 $_pid; wait $_pid; _rc=$?
  t "SIGUSR1 to mpirun: exit 0" '[ $_rc -eq 0 ]'
  t "SIGUSR1: rank 0 says how to resume" 'grep -q "interrupted at step" "$dir/usr1.log"'
  _saved=$(saved_step "$dir/usr1/checkpoint.safetensors")
  t "SIGUSR1: saved mid-run (step ${_saved:-none} of $_steps)" '[ -n "$_saved" ] && [ "$_saved" -gt 0 ] && [ "$_saved" -lt $_steps ]'
}
