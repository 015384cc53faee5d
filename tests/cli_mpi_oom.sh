#!/bin/sh
# Out of memory inside the processes' agreements under mpirun (docs/distributed.md, "Faults"): one
# rank's allocation fails (build/tools/fault.so under LD_PRELOAD on rank 1 alone, failing the
# allocation of a known size that the comparison needs) where the ranks compare their file lists,
# then each file's size. Every rank learns it before the collective that needs the buffer: exit 1,
# one line `vitmae: rank 1: data: out of memory for ...` naming what, no MPI_ABORT banner, no hang
# (under timeout), no run folder. It was dist_abort(1): MPI_Abort's banner and no line of vitmae's.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, mpi_setup
scratch dir
cd "$dir" || exit 1
mpi_setup
shim="$VITMAE_TOOLS/fault.so"
export GOMP_SPINCOUNT=1000   # no run again of vitmae by itself (cmd/main.c): one process to count in

"$VITMAE_TOOLS/synth" "$dir/data" --count 48 --size 16 --seed 3 >/dev/null || { echo "FAILED: synth"; exit 1; }
small="--data data --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 16 --steps 2 --val-frac 0.2 --threads 1"
# Each rank its own copy of the data (as without a shared filesystem): rank 1's lacks a file (w1), or
# holds another file under its name (w2, another size).
mkdir -p w0 w1 w2
for w in w0 w1 w2; do cp -r data $w/data; done
gone=$(cd data && find . -name '*.png' | sort | sed -n 5p | sed 's|^\./||')
other=$(cd data && find . -name '*.png' | sort | sed -n 9p | sed 's|^\./||')
rm "w1/data/$gone"
cp "w2/data/$other" "w2/data/$gone"
t "rank 1's file under the name of another: another size (the test can tell)" \
  '[ "$(wc -c < "data/$gone")" != "$(wc -c < "w2/data/$gone")" ]'

# job WDIR SIZE OUT FAULT_VAR=...: rank 0 in w0, rank 1 in WDIR with the shim on its own allocations
# of exactly SIZE bytes (counted, or the Nth failing).
job() {
  _w=$1; _size=$2; _out=$3; shift 3
  ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none \
    -np 1 -wdir "$dir/w0" "$VITMAE" train $small --out "$dir/$_out" : \
    -np 1 -wdir "$dir/$_w" env ASAN_OPTIONS="$mpi_asan:verify_asan_link_order=0" LD_PRELOAD="$shim" FAULT_OWN=1 \
      FAULT_MIN="$_size" FAULT_MAX="$_size" "$@" "$VITMAE" train $small --out "$dir/$_out" \
    > "$dir/$_out.log" 2> "$dir/$_out.err"
}

# oom CASE WDIR SIZE WHAT: counts rank 1's allocations of SIZE bytes in the job that stops at the
# difference, then fails the last of them (the comparison's buffer: the job ends right after it).
oom() {
  _case=$1; _w=$2; _size=$3; _what=$4
  job "$_w" "$_size" "$_case-count" FAULT_COUNT="$dir/$_case.count"; rc=$?
  t "$_case: without a fault the difference stops the job (exit $rc)" \
    '[ $rc -eq 1 ] && grep -q "^vitmae: rank 1: data: rank 1 sees a different file list" "$dir/$_case-count.err"'
  n=$(sed -n 's/^malloc //p' "$dir/$_case.count" 2>/dev/null)
  t "$_case: rank 1 allocates $_size bytes (${n:-0} times)" '[ -n "$n" ] && [ "$n" -ge 1 ]'
  [ -n "$n" ] || return
  job "$_w" "$_size" "$_case" FAULT_FUNC=malloc FAULT_N="$n"; rc=$?
  t "$_case, rank 1 out of memory: exit 1 ($rc), not a hang, one line naming it ($(grep "^vitmae:" "$dir/$_case.err" | head -c 300))" \
    '[ $rc -eq 1 ] && [ "$(grep -c "^vitmae:" "$dir/$_case.err")" -eq 1 ] &&
     grep -q "^vitmae: rank 1: data: out of memory for rank 0.s $_what, to compare ($_size bytes)$" "$dir/$_case.err"'
  t "$_case, rank 1 out of memory: no MPI_ABORT" '! grep -q "MPI_ABORT" "$dir/$_case.err"'
  t "$_case, rank 1 out of memory: no run folder" '[ ! -e "$dir/$_case" ]'
}

# The file list: rank 0's names, each with its zero, and one zero more.
list_bytes=$(cd w0/data && find . -type f | sed 's|^\./||' | awk '{ s += length($0) + 1 } END { print s + 1 }')
oom lists w1 "$list_bytes" "file list"
# The sizes: rank 0's 48 numbers of 8 bytes.
oom sizes w2 $((48 * 8)) "file sizes"

[ $fail -eq 0 ] && echo "cli mpi oom ok"
exit $fail
