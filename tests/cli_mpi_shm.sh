#!/bin/sh
# The gradients' shared window under mpirun (docs/distributed.md, "Semantics"): every rank on one
# machine maps the others' files in /dev/shm, so a rank that sees another /dev/shm (a mount namespace of
# its own: a container with a private /dev/shm on the same host) cannot. OpenMPI's window then failed on
# that rank alone (open(2): No such file or directory) and the others waited in it for ever: `mpirun
# -np 1 vitmae train ... : -np 1 unshare -m sh -c 'mount -t tmpfs none /dev/shm && exec vitmae train
# ...'` hung until killed. The ranks now check that each sees rank 0's folder first: messages then,
# the same bits, no hang (under timeout). And the window where they do see it: shared memory, as before.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, mpi_setup, mpi, same_weights
scratch dir
cd "$dir" || exit 1
mpi_setup
mpi_need_shm cli_mpi_shm.sh   # else SKIP, said (tests/lib.sh)

bench="bench --img 8 --patch 4 --batch 4 --steps 1 --warmup 0 --threads 1"
t "bench -np 2, one /dev/shm: combined through shared memory" 'mpi -np 2 "$VITMAE" $bench 2>&1 | grep -q "combined through shared memory"'
# Rank 0's probe file "vitmae-window-probe.<host>.<pid>.<time>" that a kill of rank 0 left there goes
# when the next job's rank 0 makes its own (its host this one, its pid gone: io/files.h's file_sweep_dead);
# a live process's, another host's and a near name stay. Here in a folder of the test's own
# (osc_sm_backing_directory), which the window takes as it takes /dev/shm.
mkdir -p "$dir/shm"
host=$(uname -n); other=$(echo "$host" | tr "a-zA-Z0-9" "b-zaB-ZA1-90")
sh -c 'exit 0' & dead=$!; wait $dead
p=vitmae-window-probe
for n in "$p.$host.$dead.1764680000123456789" "$p.$host.$$.1764680000123456789" "$p.$other.$dead.1764680000123456789" \
         "$p.$host.$dead.123" "$p.$host.$dead.1764680000123456789.notes" "$p.$dead.1764680000123456789"; do
  echo leftover > "$dir/shm/$n"
done
OMPI_MCA_osc_sm_backing_directory="$dir/shm" mpi -np 2 "$VITMAE" $bench > "$dir/probe.out" 2>&1; rc=$?
t "a probe file a dead rank 0 of this host left goes; the others stay ($rc; now: $(ls -A "$dir/shm" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && grep -q "combined through shared memory" "$dir/probe.out" && [ ! -e "$dir/shm/$p.$host.$dead.1764680000123456789" ] &&
   [ -e "$dir/shm/$p.$host.$$.1764680000123456789" ] && [ -e "$dir/shm/$p.$other.$dead.1764680000123456789" ] &&
   [ -e "$dir/shm/$p.$host.$dead.123" ] && [ -e "$dir/shm/$p.$host.$dead.1764680000123456789.notes" ] &&
   [ -e "$dir/shm/$p.$dead.1764680000123456789" ]'

# A rank in a /dev/shm of its own needs root's mount namespace.
if [ "$(id -u)" != 0 ] || ! unshare -m sh -c 'mount -t tmpfs -o size=1m none /dev/shm' 2>/dev/null; then
  echo "SKIP: cli_mpi_shm.sh: a rank with a /dev/shm of its own needs root, unshare -m and a tmpfs mount in it"
  exit $fail
fi
"$VITMAE_TOOLS/synth" "$dir/data" --count 24 --size 16 --seed 5 >/dev/null || { echo "FAILED: synth"; exit 1; }
small="--data $dir/data --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 8 --steps 3 --val-frac 0.2 --threads 1"
"$VITMAE" train $small --out "$dir/one" > /dev/null 2>&1; rc=$?
t "one process: exit 0" '[ $rc -eq 0 ]'
# Rank 1 in a mount namespace whose /dev/shm is an empty tmpfs with room (so no check of room tells).
timeout -k 5 30 env ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none -np 1 "$VITMAE" train $small --out "$dir/two" : \
  -np 1 unshare -m sh -c 'mount -t tmpfs -o size=256m none /dev/shm && exec "$0" "$@"' "$VITMAE" train $small --out "$dir/two" \
  > "$dir/two.log" 2>&1; rc=$?
t "-np 2, rank 1 with a /dev/shm of its own: exit 0, not a hang (exit $rc: $(grep "^vitmae" "$dir/two.log" | head -n 2))" '[ $rc -eq 0 ]'
t "-np 2, rank 1 with a /dev/shm of its own: bitwise what one process gives" '[ $rc -eq 0 ] && same_weights "$dir/one/checkpoint.safetensors" "$dir/two/checkpoint.safetensors"'
# (After a hang above, not run: one hang is enough to tell, and the test stays within the runner's limit.)
if [ $rc -eq 0 ]; then
  timeout -k 5 30 env ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none -np 1 "$VITMAE" $bench : \
    -np 1 unshare -m sh -c 'mount -t tmpfs -o size=256m none /dev/shm && exec "$0" "$@"' "$VITMAE" $bench \
    > "$dir/bench.log" 2>&1; rc=$?
  t "bench -np 2, rank 1 with a /dev/shm of its own: through messages (exit $rc)" '[ $rc -eq 0 ] && grep -q "combined through messages" "$dir/bench.log"'
fi

[ $fail -eq 0 ] && echo "cli mpi shm ok"
exit $fail
