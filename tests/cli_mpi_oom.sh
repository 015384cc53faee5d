#!/bin/sh
# Out of memory inside the processes' agreements under mpirun (docs/distributed.md, "Faults"): one
# rank's allocation fails (build/tools/fault.so under LD_PRELOAD on rank 1 alone, failing the
# allocation of a known size that the comparison needs) where the ranks compare their file lists,
# then each file's size. Every rank learns it before the collective that needs the buffer: exit 1,
# one line `vitmae: rank 1: data: out of memory for ...` naming what, no MPI_ABORT banner, no hang
# (under timeout), no run folder. Then rank 0 out of memory for the files found broken that rank 1
# sends it mid-run. It was dist_abort(1): MPI_Abort's banner and no line of vitmae's.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, mpi_setup
scratch dir
cd "$dir" || exit 1
mpi_setup
mpi_need_shm cli_mpi_oom.sh   # else SKIP, said (tests/lib.sh)
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
  t "$_case, rank 1 out of memory: no MPI_ABORT" '! grep -q "MPI_ABORT" "$dir/$_case.err" "$dir/$_case.log"'
  t "$_case, rank 1 out of memory: no run folder" '[ ! -e "$dir/$_case" ]'
}

# The file list: rank 0's names, each with its zero, and one zero more.
list_bytes=$(cd w0/data && find . -type f | sed 's|^\./||' | awk '{ s += length($0) + 1 } END { print s + 1 }')
oom lists w1 "$list_bytes" "file list"
# The sizes: rank 0's 48 numbers of 8 bytes.
oom sizes w2 $((48 * 8)) "file sizes"

# The files found broken gathered to rank 0, mid-run: rank 1's copy of one file is broken (its bytes
# changed, its size kept), rank 0's decodes, so rank 1 alone finds it and sends its line to rank 0,
# which lacks the memory to gather it (12 bytes of rank, item and flag, the path and the reason with
# their zeros, and one zero more; a long name makes the size one no other allocation has). Rank 0
# says it, every rank exits 1 at that step, the last checkpoint stays.
mkdir -p g0 g1
"$VITMAE_TOOLS/synth" "$dir/bdata" --count 40 --size 24 --seed 3 >/dev/null
long=$(printf 'a%.0s' $(seq 1 150)).png
f=$(cd bdata && ls */*.png | sed -n 1p)
mv "bdata/$f" "bdata/${f%/*}/$long"; f="${f%/*}/$long"
cp -r bdata g0/bdata; cp -r bdata g1/bdata
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); i = b.find(b"IDAT")
for k in range(i + 8, min(i + 40, len(b) - 12)): b[k] ^= 0x5a
open(sys.argv[1], "wb").write(bytes(b))' "g1/bdata/$f"
t "rank 1's broken copy has rank 0's size" '[ "$(wc -c < "g0/bdata/$f")" = "$(wc -c < "g1/bdata/$f")" ] && ! cmp -s "g0/bdata/$f" "g1/bdata/$f"'
bsmall="--data bdata --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 16 --val-frac 0.2 --steps 12 --ckpt-every 1 --threads 1 --cache-mb 0 --store none"
# gjob OUT FAULT_VAR=...: rank 0 in g0 under the shim (allocations of $gsize bytes), rank 1 in g1.
gjob() {
  _out=$1; shift
  ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none \
    -np 1 -wdir "$dir/g0" env ASAN_OPTIONS="$mpi_asan:verify_asan_link_order=0" LD_PRELOAD="$shim" FAULT_OWN=1 \
      FAULT_MIN="${gsize:-1}" FAULT_MAX="${gsize:-1}" "$@" "$VITMAE" train $bsmall --out "$dir/$_out" : \
    -np 1 -wdir "$dir/g1" "$VITMAE" train $bsmall --out "$dir/$_out" > "$dir/$_out.log" 2> "$dir/$_out.err"
}
gjob gref; rc=$?
t "broken on rank 1: without a fault, exit 0 ($rc), rank 0 says the file rank 1 found ($(head -c 300 "$dir/gref.err"))" \
  '[ $rc -eq 0 ] && [ "$(grep -c "^vitmae: skipped bdata/$f: .* (found while training" "$dir/gref.err")" -eq 1 ]'
gsize=$(sed -n "s|^vitmae: skipped \(bdata/$f\): \(.*\) (found while training.*|\1\n\2|p" "$dir/gref.err" |
        awk '{ s += length($0) + 1 } END { print s + 12 + 1 }')
gjob gcount FAULT_COUNT="$dir/g.count"
n=$(sed -n 's/^malloc //p' "$dir/g.count" 2>/dev/null)
t "broken on rank 1: rank 0 allocates the gather's $gsize bytes once (${n:-0})" '[ "${n:-0}" -eq 1 ]'
gjob goom FAULT_FUNC=malloc FAULT_N=1; rc=$?
t "rank 0 out of memory for the lines to gather: exit 1 ($rc), not a hang, one line naming it ($(grep "^vitmae:" "$dir/goom.err" | head -c 300))" \
  '[ $rc -eq 1 ] && [ "$(grep -c "^vitmae:" "$dir/goom.err")" -eq 1 ] &&
   grep -q "^vitmae: train: the files found broken by the other processes, to say them: out of memory for the lines to gather ($gsize bytes)$" "$dir/goom.err"'
t "rank 0 out of memory for the lines to gather: no MPI_ABORT" '! grep -q "MPI_ABORT" "$dir/goom.err" "$dir/goom.log"'
t "rank 0 out of memory for the lines to gather: the last checkpoint loads" '[ -n "$(saved_step "$dir/goom/checkpoint.safetensors")" ]'

# bench under mpirun, rank 1 out of memory for its buffers (its 37 steps' times: 2 x 37 doubles, 592
# bytes, a size no other allocation of its has) after rank 0 went on into the reduction's collective
# set-up: rank 0 waited there for ever (timeout's 124). Now the ranks agree first: exit 1, rank 1's one
# line, no MPI_ABORT.
bjob() {
  ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none \
    -np 1 "$VITMAE" bench --img 16 --patch 4 --batch 4 --steps 37 --warmup 0 --threads 1 : \
    -np 1 env ASAN_OPTIONS="$mpi_asan:verify_asan_link_order=0" LD_PRELOAD="$shim" FAULT_OWN=1 FAULT_MIN=592 \
      FAULT_MAX=592 "$@" "$VITMAE" bench --img 16 --patch 4 --batch 4 --steps 37 --warmup 0 --threads 1 \
    > "$dir/bench.log" 2> "$dir/bench.err"
}
bjob FAULT_COUNT="$dir/bench.count"; rc=$?
n=$(sed -n 's/^malloc //p' "$dir/bench.count" 2>/dev/null)
t "bench -np 2: without a fault, exit 0 ($rc), rank 1 allocates 592 bytes once (${n:-0})" '[ $rc -eq 0 ] && [ "${n:-0}" -eq 1 ]'
bjob FAULT_FUNC=malloc FAULT_N=1; rc=$?
t "bench -np 2, rank 1 out of memory: exit 1 ($rc), not a hang, one line ($(grep "^vitmae:" "$dir/bench.err" | head -c 300))" \
  '[ $rc -eq 1 ] && [ "$(grep -c "^vitmae:" "$dir/bench.err")" -eq 1 ] && grep -q "^vitmae: rank 1: bench: out of memory$" "$dir/bench.err"'
t "bench -np 2, rank 1 out of memory: no MPI_ABORT" '! grep -q "MPI_ABORT" "$dir/bench.err" "$dir/bench.log"'

[ $fail -eq 0 ] && echo "cli mpi oom ok"
exit $fail
