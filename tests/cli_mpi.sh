#!/bin/sh
# `mpirun -np N ./vitmae train` (docs/distributed.md): bitwise the same weights, AdamW moments and
# metrics.csv losses for 1, 2 and 4 processes, --accum 2 and 4, 2 processes x --accum 2, each
# process's threads as workers, and across a resume with another process count; N and K recorded; refusals (N or K that cannot keep that, a rank
# seeing another file list); SIGINT / SIGUSR1 to mpirun; SIGKILL of one rank; a stop signal to one rank
# only, and one rank's data gone mid-run (each ends, under timeout); the streaming data
# pipeline (--val, --store, --init, a broken file) and the run-folder guard under mpirun. Tiny model,
# few steps.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, same_weights, same_run, mpi_setup, mpi, usr1_stop, ...
scratch dir
cd "$dir" || exit 1
mpi_setup   # TMPDIR, OpenMPI as root, $mpi_asan, mpi (tests/lib.sh)
mpi_need_shm cli_mpi.sh   # else SKIP, said (tests/lib.sh)
# That skip, on a machine whose /dev/shm is full (here in a mount namespace of its own, /dev/shm an 8 KB
# tmpfs, where root may make one): this test run there says SKIP and why in its one line, exit 0. It
# failed there with "FAILED: -np 2: nothing on stderr" (OpenMPI's "not enough space for
# /dev/shm/vader_segment...") and "bench -np 2: combined through shared memory", naming no cause.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  out=$(timeout 120 unshare -m sh -c 'mount -t tmpfs -o size=8k none /dev/shm && sh "$VITMAE_ROOT/tests/cli_mpi.sh"' 2>&1); rc=$?
  t "/dev/shm full: SKIP said, exit 0 ($rc: $out)" \
    '[ $rc -eq 0 ] && [ "$out" = "SKIP: cli_mpi.sh: /dev/shm has 0 MB free, less than the 64 MB these runs need (OpenMPI'"'"'s shared-memory transport and vitmae'"'"'s shared gradient window live there)" ]'
fi

"$VITMAE_TOOLS/synth" "$dir/data" --count 48 --size 16 --seed 3 >/dev/null || { echo "synth failed"; exit 1; }
# --val-frac 0.2 holds out 9 of the 48 images: enough that train does not warn about a noisy
# validation loss (stderr must stay empty).
small="--data $dir/data --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 16 --lr 3e-3 --warmup-steps 2 --val-frac 0.2 --eval-every 3 --ckpt-every 3 --log-every 1 --keep 5"
steps=6

# 1. One process without mpirun is the reference (its 2 threads a team in every kernel); every split
#    of the batch gives the same bits.
"$VITMAE" train $small --steps $steps --threads 2 --parallel kernels --out "$dir/ref" > "$dir/ref.log" 2>&1; rc=$?
t "reference run exits 0" '[ $rc -eq 0 ]'
mpi -np 2 "$VITMAE" train $small --steps $steps --threads 1 --out "$dir/n2" > "$dir/n2.log" 2> "$dir/n2.err"; rc=$?
t "-np 2 exits 0" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || cat "$dir/n2.log" "$dir/n2.err"
t "-np 2: bitwise equal weights, moments and losses" 'same_run "$dir/ref" "$dir/n2"'
t "-np 2: nothing on stderr" '[ ! -s "$dir/n2.err" ]'
t "-np 2: one progress report (rank 0)" '[ "$(grep -c "^done:" "$dir/n2.log")" -eq 1 ]'
# mpirun hands each rank a terminal of its own (a pty it copies to its stdout): the rank took it for the
# user's and drew \r progress bars into the log file; its output is a file here, so plain lines.
t "-np 2 > file: plain progress lines, no carriage-return bars (docs/interface.md, section 5; lines with one: $(grep -c "$(printf '\r')" "$dir/n2.log"))" \
  '! grep -q "$(printf "\r")" "$dir/n2.log" && [ "$(grep -c "^step [1-6]/6 loss " "$dir/n2.log")" -eq 6 ]'
mpi -np 4 "$VITMAE" train $small --steps $steps --threads 1 --out "$dir/n4" > "$dir/n4.log" 2>&1; rc=$?
t "-np 4 exits 0" '[ $rc -eq 0 ]'
t "-np 4: bitwise equal" 'same_run "$dir/ref" "$dir/n4"'
# Groups at once (docs/distributed.md): this model's groups have more rows (4 images x 5 tokens) than
# it is wide (16), but at 2 threads few enough (GROUPS_AT_ONCE_ROWS), so the reference ran all four at
# once (the tree's adds inside the backward) and the -np runs above, at 1 thread, one at a time;
# VITMAE_GROUPS_AT_ONCE=1 and 2 run them one and two at a time, with --accum 2 in two chunks of 2, and
# as 2 processes of 2 groups each, the gradients combined in shared memory or as messages: the same bits.
t "the reference ran its groups all at once (2 threads)" 'grep -q "4 gradient groups of 4 images (4 at once)" "$dir/ref.log"'
t "-np 2 at 1 thread ran its groups one at a time" 'grep -q "(1 at once)" "$dir/n2.log"'
for w in 1 2; do
  VITMAE_GROUPS_AT_ONCE=$w "$VITMAE" train $small --steps $steps --threads 2 --parallel kernels --out "$dir/w$w" > "$dir/w$w.log" 2>&1; rc=$?
  t "$w groups at once exits 0" '[ $rc -eq 0 ] && grep -q "($w at once)" "$dir/w$w.log"'
  t "$w groups at once: bitwise equal" 'same_run "$dir/ref" "$dir/w$w"'
done
VITMAE_GROUPS_AT_ONCE=4 "$VITMAE" train $small --steps $steps --accum 2 --threads 2 --parallel kernels --out "$dir/k2w" > "$dir/k2w.log" 2>&1; rc=$?
t "--accum 2: at most 2 groups at once, in 2 chunks: bitwise equal" '[ $rc -eq 0 ] && grep -q "(2 at once)" "$dir/k2w.log" && same_run "$dir/ref" "$dir/k2w"'
# The 2 threads as workers (the default here: docs/distributed.md, "Threads as workers"), each its 2
# groups two at a time, or with --accum 2 one at a time; and 4 workers of one group each: the same bits.
for wk in "2 1 2" "2 2 1" "4 1 1"; do
  wt=${wk%% *}; wa=$(echo "$wk" | cut -d" " -f2); ww=${wk##* }; wg=$((4 / wt))
  VITMAE_GROUPS_AT_ONCE=4 "$VITMAE" train $small --steps $steps --threads $wt --accum $wa --out "$dir/wk$wt$wa" > "$dir/wk$wt$wa.log" 2>&1; rc=$?
  t "$wt threads as workers, --accum $wa: $ww at once, bitwise equal" '[ $rc -eq 0 ] && grep -q "threads as workers: each of the $wt threads takes $wg of the gradient groups ($ww at once)" "$dir/wk$wt$wa.log" && same_run "$dir/ref" "$dir/wk$wt$wa"'
done
VITMAE_GROUPS_AT_ONCE=2; export VITMAE_GROUPS_AT_ONCE
mpi -np 2 -x VITMAE_GROUPS_AT_ONCE "$VITMAE" train $small --steps $steps --threads 1 --out "$dir/n2w2" > "$dir/n2w2.log" 2>&1; rc=$?
t "-np 2, 2 groups at once each: bitwise equal" '[ $rc -eq 0 ] && grep -q "(2 at once)" "$dir/n2w2.log" && same_run "$dir/ref" "$dir/n2w2"'
# --threads is each process's: the header said "1 thread" of a job of 2 processes.
header() { grep -E "^  [0-9]+ steps? of batch" "$1"; }
t "-np 2: the header says 2 processes x 1 thread ($(header "$dir/n2w2.log" | grep -o "[^,]*$"); one process: $(header "$dir/ref.log" | grep -o "[^,]*$"))" \
  'header "$dir/n2w2.log" | grep -q ", 2 processes x 1 thread$" && header "$dir/ref.log" | grep -q "[0-9)], 2 threads$"'
VITMAE_REDUCE=messages mpi -np 2 -x VITMAE_GROUPS_AT_ONCE -x VITMAE_REDUCE "$VITMAE" train $small --steps $steps --threads 1 --out "$dir/n2w2m" > /dev/null 2>&1; rc=$?
t "-np 2, 2 groups at once each, messages: bitwise equal" '[ $rc -eq 0 ] && same_run "$dir/ref" "$dir/n2w2m"'
unset VITMAE_GROUPS_AT_ONCE
# The blocks' forward in passes of one image (docs/interface.md, VITMAE_FORWARD_IMAGES; this model's
# images are few rows, so the default takes one pass): on the workers and on a team, the same bits.
VITMAE_FORWARD_IMAGES=1 "$VITMAE" train $small --steps $steps --threads 2 --out "$dir/fp1" > /dev/null 2>&1; rc=$?
t "forward in passes of one image, 2 workers: bitwise equal" '[ $rc -eq 0 ] && same_run "$dir/ref" "$dir/fp1"'
VITMAE_FORWARD_IMAGES=3 "$VITMAE" train $small --steps $steps --threads 2 --parallel kernels --out "$dir/fp3" > /dev/null 2>&1; rc=$?
t "forward in passes of 3 images, a team of 2: bitwise equal" '[ $rc -eq 0 ] && same_run "$dir/ref" "$dir/fp3"'
for k in 2 4; do
  "$VITMAE" train $small --steps $steps --accum $k --threads 1 --out "$dir/k$k" > /dev/null 2>&1; rc=$?
  t "--accum $k exits 0" '[ $rc -eq 0 ]'
  t "--accum $k: bitwise equal" 'same_run "$dir/ref" "$dir/k$k"'
done
mpi -np 2 "$VITMAE" train $small --steps $steps --accum 2 --threads 2 --out "$dir/n2k2" > /dev/null 2>&1; rc=$?
t "-np 2 --accum 2 exits 0" '[ $rc -eq 0 ]'
t "-np 2 --accum 2: bitwise equal" 'same_run "$dir/ref" "$dir/n2k2"'
"$VITMAE" train $small --steps $steps --groups 8 --threads 1 --out "$dir/g8" > /dev/null 2>&1
t "other --groups: other bits (the test can tell)" '! same_weights "$dir/ref/checkpoint.safetensors" "$dir/g8/checkpoint.safetensors"'
mpi -np 2 "$VITMAE" train $small --steps $steps --groups 8 --threads 1 --out "$dir/n2g8" > /dev/null 2>&1; rc=$?
t "-np 2 --groups 8 (4 groups per process): bitwise equal to one process" '[ $rc -eq 0 ] && same_run "$dir/g8" "$dir/n2g8"'
# Each process's threads as workers (docs/distributed.md, "Threads as workers"), the default where
# they fit: 2 processes x 2 threads take a group each (the second worker's gradient is the process's
# right half in shared memory, added in the ranks' pass), 2 x 4 threads with --groups 8 one each (the
# workers' adds in the process's tree but its root's), in shared memory or as messages; with --clip
# (no weights updated beside the backward under mpirun): the same bits as one process.
for red in shared messages; do
  for wk in "2 4 ref" "4 8 g8"; do
    wt=${wk%% *}; wg=$(echo "$wk" | cut -d" " -f2); wr=${wk##* }
    VITMAE_REDUCE=$red mpi -np 2 -x VITMAE_REDUCE "$VITMAE" train $small --groups $wg --steps $steps --threads $wt --out "$dir/pw$wt$red" > "$dir/pw$wt$red.log" 2>&1; rc=$?
    t "-np 2 x $wt threads as workers, --groups $wg, $red: bitwise equal to one process" '[ $rc -eq 0 ] && grep -q "threads as workers: each of the $wt threads takes 1 of the gradient groups" "$dir/pw$wt$red.log" && same_run "$dir/$wr" "$dir/pw$wt$red"'
  done
done
"$VITMAE" train $small --steps $steps --clip 0.05 --threads 1 --out "$dir/c1" > /dev/null 2>&1
mpi -np 2 "$VITMAE" train $small --steps $steps --clip 0.05 --threads 2 --out "$dir/c2" > "$dir/c2.log" 2>&1; rc=$?
t "-np 2 x 2 threads as workers, --clip: bitwise equal to one process" '[ $rc -eq 0 ] && grep -q "threads as workers" "$dir/c2.log" && same_run "$dir/c1" "$dir/c2"'
t "--clip changes the bits (the test can tell)" '! same_weights "$dir/ref/checkpoint.safetensors" "$dir/c1/checkpoint.safetensors"'
mpi -np 2 "$VITMAE" train $small --steps $steps --threads 4 --parallel groups --out "$dir/pw4x" > /dev/null 2> "$dir/pw4x.err"; rc=$?
t "--parallel groups, 4 threads for a process's 2 groups: exit 2, one line" '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/pw4x.err")" -eq 1 ] && grep -q "a power of two dividing the 2 gradient groups of each process (4 threads)" "$dir/pw4x.err" && [ ! -e "$dir/pw4x" ]'
# One machine combines the ranks' gradients in shared memory; across machines they go as messages
# (docs/distributed.md). VITMAE_REDUCE=messages forces the messages here: the same bits.
for n in 2 4; do
  VITMAE_REDUCE=messages mpi -np $n "$VITMAE" train $small --steps $steps --threads 1 --out "$dir/m$n" > /dev/null 2>&1; rc=$?
  t "-np $n, gradients as messages: bitwise equal" '[ $rc -eq 0 ] && same_run "$dir/ref" "$dir/m$n"'
done
bench="bench --img 8 --patch 4 --batch 4 --steps 1 --warmup 0 --threads 1"
t "bench -np 2: combined through shared memory" 'mpi -np 2 "$VITMAE" $bench 2>&1 | grep -q "combined through shared memory"'
t "bench -np 2, VITMAE_REDUCE=messages: through messages" 'VITMAE_REDUCE=messages mpi -np 2 "$VITMAE" $bench 2>&1 | grep -q "combined through messages"'
# OpenMPI backs the shared window with a file in its osc_sm_backing_directory (/dev/shm unless set;
# docs/distributed.md), and vitmae checks the room there. Set to a folder that does not exist, vitmae
# checked /dev/shm all the same and the ranks hung in the window ("shmem: mmap: an error occurred
# ... nowhere/osc_sm..."): now no room there is found, and the gradients go as messages.
timeout -k 5 60 env ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none -np 2 --mca osc_sm_backing_directory "$dir/nowhere" \
  "$VITMAE" $bench > "$dir/nowhere.out" 2>&1; rc=$?
t "bench -np 2, the window's folder (osc_sm_backing_directory) missing: through messages, no hang (exit $rc)" \
  '[ $rc -eq 0 ] && grep -q "combined through messages" "$dir/nowhere.out"'
# ... and set in an MCA parameter file ($HOME/.openmpi/mca-params.conf), which OpenMPI reads as it does
# --mca: the room was checked in /dev/shm (vitmae read only OMPI_MCA_osc_sm_backing_directory) and the
# ranks hung as above. It is now read as OpenMPI has it (MPI_T, src/dist/dist.c).
mkdir -p "$dir/home/.openmpi"
echo "osc_sm_backing_directory = $dir/nowhere" > "$dir/home/.openmpi/mca-params.conf"
HOME="$dir/home" timeout -k 5 60 env ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none -np 2 \
  "$VITMAE" $bench > "$dir/nowhere2.out" 2>&1; rc=$?
t "bench -np 2, the window's folder set in \$HOME/.openmpi/mca-params.conf, missing: through messages, no hang (exit $rc: $(grep -m 1 combined "$dir/nowhere2.out"))" \
  '[ $rc -eq 0 ] && grep -q "combined through messages" "$dir/nowhere2.out"'
# ... and a window's folder without room (VITMAE_FAULT_FREE_BYTES=0: io/files.h's file_free_bytes, the
# one reader of a disk's free space, as the store's floor reads it): through messages.
VITMAE_FAULT_FREE_BYTES=0 mpi -x VITMAE_FAULT_FREE_BYTES -np 2 "$VITMAE" $bench > "$dir/noroom.out" 2>&1; rc=$?
t "bench -np 2, no room in the window's folder: through messages (exit $rc: $(grep -m 1 combined "$dir/noroom.out"))" \
  '[ $rc -eq 0 ] && grep -q "combined through messages" "$dir/noroom.out"'
# The reduce phase (docs/distributed.md; the time spent combining gradients, the MPI issue's figure) is
# measured apart from the wait for the slower rank: with it dropped, its time went to "other" unseen.
for ex in "shared memory" messages; do
  red=$(env VITMAE_REDUCE="${ex%% *}" ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none -np 2 -x VITMAE_REDUCE "$VITMAE" \
        bench --img 8 --patch 4 --batch 4 --steps 2 --warmup 0 --threads 1 --json 2> /dev/null |
        /usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin); p = d["phases_s"]; print(d["exchange"], p["reduce"] > 0 and p["sync_wait"] >= 0)' 2>&1)
  t "bench -np 2 --json ($ex): a reduce phase above 0 and a sync_wait ($red)" '[ "$red" = "$ex True" ]'
done
t "bench -np 2 x 2 threads: workers over each process's 2 groups" 'mpi -np 2 "$VITMAE" bench --img 8 --patch 4 --batch 4 --steps 1 --warmup 0 --threads 2 2>&1 | grep -q "threads as workers: each of the 2 threads takes 1 of the gradient groups (1 at once)"'
# The default thread count under mpirun (no --threads, no OMP_NUM_THREADS): the ranks on one machine
# share the CPUs they may both run on (docs/distributed.md, "Threads of several processes"). Unbound
# (--bind-to none, as mpi runs) each took them all: 2 ranks of 2 threads on 2 cores. Bound to a core
# each (mpirun's own default for 2) 1 as before; OMP_NUM_THREADS that libgomp takes still decides.
# The share is half of what one process takes (its CPUs, or a CPU quota's count where that is fewer,
# as in a container: nproc alone would expect too many there).
cpus=$(unset OMP_NUM_THREADS; "$VITMAE" bench --img 8 --patch 4 --batch 4 --steps 1 --warmup 0 2>&1 | grep -o "[0-9]* threads*, gemm")
cpus=${cpus%% *}; share=$((${cpus:-0} / 2)); [ $share -ge 1 ] || share=1
tc=$(unset OMP_NUM_THREADS; mpi -np 2 "$VITMAE" bench --img 8 --patch 4 --batch 4 --steps 1 --warmup 0 2>&1 | grep -o "[0-9]* threads*, gemm")
t "bench -np 2 unbound on $cpus CPUs, no --threads: $share thread(s) each (${tc:-none})" '[ "${tc%% *}" = "$share" ]'
tc=$(OMP_NUM_THREADS=3 mpi -np 2 -x OMP_NUM_THREADS "$VITMAE" bench --img 8 --patch 4 --batch 4 --steps 1 --warmup 0 2>&1 | grep -o "[0-9]* threads*, gemm")
t "bench -np 2, OMP_NUM_THREADS=3: 3 threads each (${tc:-none})" '[ "${tc%% *}" = 3 ]'
if [ "${cpus:-0}" -ge 2 ]; then
  tc=$(unset OMP_NUM_THREADS; ASAN_OPTIONS=$mpi_asan mpirun -np 2 --bind-to core "$VITMAE" bench --img 8 --patch 4 --batch 4 --steps 1 --warmup 0 2>&1 | grep -o "[0-9]* threads*, gemm")
  t "bench -np 2 bound to a core each: 1 thread each (${tc:-none})" '[ "${tc%% *}" = 1 ]'
fi

# 2. N, K and G are recorded.
t "config.json records processes, accum, grad_groups" 'grep -q "\"processes\":[[:space:]]*2" "$dir/n2k2/config.json" && grep -q "\"accum\":[[:space:]]*2" "$dir/n2k2/config.json" && grep -q "\"grad_groups\":[[:space:]]*4" "$dir/n2k2/config.json"'
t "vitmae info shows them" '"$VITMAE" info "$dir/n2k2/checkpoint.safetensors" | grep -q "processes.*2" && "$VITMAE" info "$dir/n2k2/checkpoint.safetensors" | grep -q "accum.*2"'

# 3. Resume across process counts: a 2-process snapshot under 1 process, a 1-process one under 4.
"$VITMAE" train --resume "$dir/n2/checkpoint-3.safetensors" --out "$dir/r21" --threads 1 > "$dir/r21.log" 2>&1; rc=$?
t "resume -np 2 -> 1 exits 0" '[ $rc -eq 0 ]'
t "resume -np 2 -> 1: bitwise equal to the uninterrupted run" 'same_weights "$dir/ref/checkpoint.safetensors" "$dir/r21/checkpoint.safetensors"'
mpi -np 4 "$VITMAE" train --resume "$dir/ref/checkpoint-3.safetensors" --out "$dir/r14" --threads 1 > "$dir/r14.log" 2>&1; rc=$?
t "resume -np 1 -> 4 exits 0" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || tail -n 20 "$dir/r14.log"
t "resume -np 1 -> 4: bitwise equal" 'same_weights "$dir/ref/checkpoint.safetensors" "$dir/r14/checkpoint.safetensors"'
mpi -np 2 "$VITMAE" train --resume "$dir/ref/checkpoint-3.safetensors" --out "$dir/r1w" --threads 2 > "$dir/r1w.log" 2>&1; rc=$?
t "resume -np 1 -> 2 processes x 2 threads as workers: bitwise equal" '[ $rc -eq 0 ] && grep -q "threads as workers" "$dir/r1w.log" && same_weights "$dir/ref/checkpoint.safetensors" "$dir/r1w/checkpoint.safetensors"'

# 4. Refusals: one line from rank 0, exit 2; nothing written.
mpi -np 3 "$VITMAE" train $small --steps 2 --out "$dir/bad3" > /dev/null 2> "$dir/bad3.err"; rc=$?
t "-np 3 with 4 groups: exit 2" '[ $rc -eq 2 ]'
# ... and the counts that run it, as the resume's refusal below names them (it stated the rule alone).
t "-np 3: one line naming the process count and the counts that work ($(head -n 1 "$dir/bad3.err"))" \
  '[ "$(grep -c "^vitmae:" "$dir/bad3.err")" -eq 1 ] && grep -q "^vitmae: train: 3 processes: .*, so the count must be a power of two dividing 4: run it without mpirun or with mpirun -np 2 or 4$" "$dir/bad3.err"'
t "-np 3: no run folder" '[ ! -e "$dir/bad3" ]'
mpi -np 2 "$VITMAE" train --steps 2 --out "$dir/nodata" > /dev/null 2> "$dir/nodata.err"; rc=$?
t "a usage error under mpirun: exit 2, one line from rank 0" '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/nodata.err")" -eq 1 ] && ! grep -q "rank 1" "$dir/nodata.err"'
"$VITMAE" train $small --steps 2 --accum 3 --out "$dir/badk" > /dev/null 2> "$dir/badk.err"; rc=$?
t "--accum 3: exit 2, naming the flag and value" '[ $rc -eq 2 ] && grep -q "^vitmae: train --accum: 3 micro-batches" "$dir/badk.err"'
"$VITMAE" train $small --steps 2 --batch 12 --groups 8 --out "$dir/badg" > /dev/null 2> "$dir/badg.err"; rc=$?
t "--groups 8 of a batch of 12: exit 2" '[ $rc -eq 2 ]'
"$VITMAE" train --resume "$dir/ref" --groups 8 --out "$dir/badr" > /dev/null 2> "$dir/badr.err"; rc=$?
t "resume with other --groups: exit 2" '[ $rc -eq 2 ] && grep -q "groups" "$dir/badr.err"'

# A resumed run's groups are its own (fixed when it started): a process count that cannot share them
# is refused naming the counts that can, not --groups (which a resume refuses to change).
mpi -np 3 "$VITMAE" train --resume "$dir/ref/checkpoint-3.safetensors" --out "$dir/r13" --threads 1 > /dev/null 2> "$dir/r13.err"; rc=$?
t "resume under -np 3 of a 4-group run: exit 2, one line naming the counts that resume it" \
  '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/r13.err")" -eq 1 ] && grep -q "^vitmae: train: 3 processes: this run sums each step as 4 gradient groups, fixed when it started (--groups), .*: resume it without mpirun or with mpirun -np 2 or 4$" "$dir/r13.err" && [ ! -e "$dir/r13" ]'
mpi -np 2 "$VITMAE" train --resume "$dir/ref/checkpoint-3.safetensors" --accum 4 --out "$dir/r1k" --threads 1 > /dev/null 2> "$dir/r1k.err"; rc=$?
t "resume under -np 2 --accum 4 of a 4-group run: exit 2, one line naming the --accum that can, not --groups" \
  '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/r1k.err")" -eq 1 ] && grep -q "^vitmae: train --accum: 4 micro-batches cannot share the 2 gradient groups each of the 2 processes has per step evenly, and this run.s 4 gradient groups are fixed since it started (--groups): use an --accum that divides 2$" "$dir/r1k.err" && [ ! -e "$dir/r1k" ]'
# ... and the counts named are those whose share this session's --accum divides: it named "2 or 4"
# for -np 3 --accum 2, and -np 4 --accum 2 was then refused again, for --accum. Each count it names
# resumes the run, bitwise equal to the uninterrupted one.
mpi -np 3 "$VITMAE" train --resume "$dir/ref/checkpoint-3.safetensors" --accum 2 --out "$dir/r3k" --threads 1 > /dev/null 2> "$dir/r3k.err"; rc=$?
t "resume under -np 3 --accum 2 of a 4-group run: exit 2, one line naming only -np 2 ($(head -n 1 "$dir/r3k.err"))" \
  '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/r3k.err")" -eq 1 ] && grep -q "^vitmae: train: 3 processes: this run sums each step as 4 gradient groups, fixed when it started (--groups), .*: resume it without mpirun or with mpirun -np 2$" "$dir/r3k.err" && [ ! -e "$dir/r3k" ]'
for n in $(sed -n 's/.* with mpirun -np \([0-9, or]*\)$/\1/p' "$dir/r3k.err" | sed 's/,//g; s/ or / /g'); do
  mpi -np "$n" "$VITMAE" train --resume "$dir/ref/checkpoint-3.safetensors" --accum 2 --out "$dir/r3k$n" --threads 1 > /dev/null 2> "$dir/r3k$n.err"; rc=$?
  t "the count it names, -np $n --accum 2, resumes it: exit 0, bitwise equal ($(head -n 1 "$dir/r3k$n.err"))" \
    '[ $rc -eq 0 ] && same_weights "$dir/ref/checkpoint.safetensors" "$dir/r3k$n/checkpoint.safetensors"'
done
mpi -np 2 "$VITMAE" info "$dir/ref/checkpoint.safetensors" > /dev/null 2> "$dir/info2.err"; rc=$?
t "other commands refuse to run on several processes (exit 2, one line)" '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/info2.err")" -eq 1 ]'
# Every command that does not share its work (docs/interface.md, section 7), given real inputs and
# outputs: refused before any work, one line from rank 0, nothing written (two ranks would each write
# the same files).
ck="$dir/ref/checkpoint.safetensors"; one=$(ls "$dir"/data/*/*.png | head -n 1)
for c in "embed --ckpt $ck --out $dir/one/f.npy $one" "probe --ckpt $ck --train $dir/data --test $dir/data --out $dir/one/probe" \
         "classify --ckpt $ck $one" "eval --ckpt $ck --data $dir/data" "reconstruct --ckpt $ck --out $dir/one/rec $one" \
         "attention --ckpt $ck --out $dir/one/attn $one" "data $dir/data"; do
  mkdir -p "$dir/one"
  mpi -np 2 "$VITMAE" $c > "$dir/one.out" 2> "$dir/one.err"; rc=$?
  t "${c%% *} under -np 2: exit 2 ($rc), one line, nothing written" \
    '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/one.err")" -eq 1 ] && grep -q "^vitmae: ${c%% *}: runs in one process" "$dir/one.err" && [ -z "$(ls -A "$dir/one")" ] && [ ! -s "$dir/one.out" ]'
done

# 5. A rank that sees another file list stops the run, naming itself and the file. Here the same
#    command line (a relative --data) runs in two working directories, as on two machines without a
#    shared filesystem: rank 1's copy lacks one file.
mkdir -p "$dir/w0" "$dir/w1"
cp -r "$dir/data" "$dir/w0/data" && cp -r "$dir/data" "$dir/w1/data"
gone=$(cd "$dir/w1/data" && find . -name '*.png' | sort | sed -n 5p | sed 's|^\./||')
rm "$dir/w1/data/$gone"
rel=$(echo "$small" | sed "s|--data $dir/data|--data data|")
mpi -np 1 -wdir "$dir/w0" "$VITMAE" train $rel --steps 2 --out "$dir/lists" : \
  -np 1 -wdir "$dir/w1" "$VITMAE" train $rel --steps 2 --out "$dir/lists" > /dev/null 2> "$dir/lists.err"; rc=$?
t "different file lists: exit 1" '[ $rc -eq 1 ]'
t "different file lists: rank 1 names itself" 'grep -q "^vitmae: rank 1: data: rank 1 sees a different file list" "$dir/lists.err"'
t "different file lists: the file missing on rank 1 is named as missing there ($(grep "^vitmae: rank 1" "$dir/lists.err" | head -c 300))" \
  'grep -q "^vitmae: rank 1: data: rank 1 sees a different file list than rank 0: .$gone. (rank 0.s entry [0-9]*) is missing here ([0-9]* entries here, [0-9]* on rank 0)$" "$dir/lists.err"'
#    ... and a file on rank 1 that rank 0 lacks, as missing on rank 0.
mkdir -p "$dir/w3" && cp -r "$dir/data" "$dir/w3/data" && cp "$dir/w3/data/$gone" "$dir/w3/data/$gone.extra.png"
mpi -np 1 -wdir "$dir/w0" "$VITMAE" train $rel --steps 2 --out "$dir/lists3" : \
  -np 1 -wdir "$dir/w3" "$VITMAE" train $rel --steps 2 --out "$dir/lists3" > /dev/null 2> "$dir/lists3.err"; rc=$?
t "a file only rank 1 has: exit 1 ($rc), named as missing on rank 0 ($(grep "^vitmae: rank 1" "$dir/lists3.err" | head -c 300))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: rank 1: data: rank 1 sees a different file list than rank 0: .$gone.extra.png. (entry [0-9]* here) is missing on rank 0 ([0-9]* entries here, [0-9]* on rank 0)$" "$dir/lists3.err" && [ ! -e "$dir/lists3/checkpoint.safetensors" ]'
t "different file lists: no checkpoint" '[ ! -e "$dir/lists/checkpoint.safetensors" ]'
# One line per problem: rank 1's. Rank 0 also said "rank 1 sees a different file list than this rank
# (its message names the first difference)", a second line for one problem, and so for the sizes, the
# command lines, the builds and the starting checkpoints below.
for e in lists lists3; do
  t "different file lists ($e): one line, rank 1's ($(grep -c "^vitmae:" "$dir/$e.err") lines: $(grep "^vitmae:" "$dir/$e.err" | head -c 400))" \
    '[ "$(grep -c "^vitmae:" "$dir/$e.err")" -eq 1 ] && [ "$(grep -c "^vitmae: rank 1: data: " "$dir/$e.err")" -eq 1 ]'
done
#    The same names, another file under one of them on rank 1 (a copy made apart, or still being
#    copied): it trained on other images, exit 0. Each file's size is compared too.
mkdir -p "$dir/w2" && cp -r "$dir/data" "$dir/w2/data"
other=$(cd "$dir/w2/data" && find . -name '*.png' | sort | sed -n 9p | sed 's|^\./||')
cp "$dir/w2/data/$other" "$dir/w2/data/$gone"
t "another file under one name: the sizes differ (the test can tell)" '! cmp -s "$dir/data/$gone" "$dir/w2/data/$gone" && [ "$(wc -c < "$dir/data/$gone")" != "$(wc -c < "$dir/w2/data/$gone")" ]'
mpi -np 1 -wdir "$dir/w0" "$VITMAE" train $rel --steps 2 --out "$dir/sizes" : \
  -np 1 -wdir "$dir/w2" "$VITMAE" train $rel --steps 2 --out "$dir/sizes" > /dev/null 2> "$dir/sizes.err"; rc=$?
t "another file under one name on rank 1: exit 1 ($rc), rank 1 names it and both sizes ($(grep "^vitmae: rank 1" "$dir/sizes.err" | head -c 300)), no run folder" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: rank 1: data: rank 1 sees a different file list than rank 0: entry [0-9]*, .$gone., is $(wc -c < "$dir/w2/data/$gone") bytes here and $(wc -c < "$dir/data/$gone") on rank 0 (every process must read the same files)$" "$dir/sizes.err" && [ ! -e "$dir/sizes" ]'
t "another file under one name on rank 1: one line ($(grep -c "^vitmae:" "$dir/sizes.err"))" '[ "$(grep -c "^vitmae:" "$dir/sizes.err")" -eq 1 ]'

# 6. Signals to mpirun. SIGUSR1 is forwarded at once: every rank finishes its step, rank 0 saves,
#    all exit 0 (mpirun too), and the run resumes to the same end as the uninterrupted one.
#    The run must still be going when the signal lands (step 3 seen by a 0.1 s poll, then mpirun
#    forwards it): 300 steps of this model take 0.2 s on a fast core, so the signalled run is
#    $ulong steps (~3.5 s there).
long=300; [ "${VITMAE_SANITIZED:-0}" = 1 ] && long=120
ulong=5000; [ "${VITMAE_SANITIZED:-0}" = 1 ] && ulong=600
lsmall="$small --eval-every 100000 --sample-every 100000 --ckpt-every 100000"
"$VITMAE" train $lsmall --steps $long --threads 1 --out "$dir/lref" > /dev/null 2>&1
"$VITMAE" train $lsmall --steps $ulong --threads 1 --out "$dir/uref" > /dev/null 2>&1
usr1_stop train $ulong $lsmall
"$VITMAE" train --resume "$dir/usr1" --threads 2 > /dev/null 2>&1; rc=$?
t "SIGUSR1: resume exits 0" '[ $rc -eq 0 ]'
t "SIGUSR1: resumed run equals the uninterrupted one" 'same_weights "$dir/uref/checkpoint.safetensors" "$dir/usr1/checkpoint.safetensors"'
#    SIGINT: mpirun sends SIGTERM to the ranks after odls_base_sigkill_timeout seconds and SIGKILL as
#    long after that (docs/distributed.md); 5 s leaves a loaded machine time to finish the step and
#    save. The run is far from its end: only the stop can save it mid-run.
OMPI_MCA_odls_base_sigkill_timeout=5 ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none -np 2 "$VITMAE" \
  train $lsmall --steps 100000 --threads 1 --out "$dir/int" > "$dir/int.log" 2>&1 &
pid=$!
wait_step "$dir/int" 3
#    The same job started again into the running one's folder (a user who starts it twice): its rank 0
#    finds the folder locked, exit 1, one line; the running job goes on (docs/distributed.md).
mpi -np 2 "$VITMAE" train $lsmall --steps 100000 --threads 1 --out "$dir/int" > /dev/null 2> "$dir/int2.err"; rc=$?
t "a second job into a running job's --out: exit 1 ($rc), one line, the first goes on" \
  '[ $rc -eq 1 ] && [ "$(grep -c "^vitmae:" "$dir/int2.err")" -eq 1 ] && grep -q "^vitmae: train: .*/int: in use by another vitmae process" "$dir/int2.err" && kill -0 $pid'
#    ... and a --resume of it, which holds no checkpoint yet: the same line, exit 1 (rank 1, which takes no
#    lock, found no checkpoint, exit 2, and the job exited 2 under rank 0's line of exit 1).
mpi -np 2 "$VITMAE" train --resume "$dir/int" --threads 1 > /dev/null 2> "$dir/int3.err"; rc=$?
t "a --resume of a running job's folder, no checkpoint in it yet: exit 1 ($rc), one line" \
  '[ $rc -eq 1 ] && [ "$(grep -c "^vitmae:" "$dir/int3.err")" -eq 1 ] && grep -q "^vitmae: train: .*/int: in use by another vitmae process" "$dir/int3.err" && kill -0 $pid'
start=$(date +%s)
kill -INT $pid; wait $pid
t "SIGINT to mpirun: the job ends within 30 s" '[ $(($(date +%s) - start)) -le 30 ]'
saved=$(saved_step "$dir/int/checkpoint.safetensors")
t "SIGINT: rank 0 saved a loadable checkpoint mid-run (step ${saved:-none})" '[ -n "$saved" ] && [ "$saved" -gt 0 ] && [ "$saved" -lt 100000 ]'
#    ... and one that lands in a step that validates: the ranks agree on the stop at that step and rank
#    0 saves before the step's validation, sample sheet and metrics row. It saved after them, and a
#    validation longer than odls_base_sigkill_timeout (1 s by default) lost the stop's checkpoint to the
#    SIGKILL (docs/distributed.md, "Faults"). Held at the gate before those outputs
#    (VITMAE_FAULT_HOLD_BEFORE_STOPPED_OUTPUTS: a validation that never ends), the job is killed there,
#    its checkpoint of the stopped step (the one after metrics.csv's last row) in the folder, and the
#    run resumes. 5 s, as above: time for a loaded machine's step and save, never for the gate. The stop
#    is asked in the ranks' start-up (VITMAE_FAULT_STOP_IN_SETUP), so that step 1's exchange learns it
#    and the gate is reached: a SIGTERM during a step's validation gives it up and saves at once
#    (tests/cli_train.sh), and the gate was missed whenever mpirun's SIGTERM landed there.
rm -f "$dir/vstop.gate" "$dir/vstop.gate.held"
OMPI_MCA_odls_base_sigkill_timeout=5 ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none -np 2 \
  -x VITMAE_FAULT_STOP_IN_SETUP=1 -x VITMAE_FAULT_HOLD_BEFORE_STOPPED_OUTPUTS="$dir/vstop.gate" "$VITMAE" train $small \
  --eval-every 1 --ckpt-every 100000 --steps 100000 --threads 1 --out "$dir/vstop" > "$dir/vstop.log" 2>&1 &
pid=$!
wait_gate "$dir/vstop.gate" $pid
kill -INT $pid; wait $pid
saved=$(saved_step "$dir/vstop/checkpoint.safetensors")
last=$(tail -n 1 "$dir/vstop/metrics.csv" | cut -d, -f1)
t "SIGINT to mpirun in a step that validates, the validation held past the SIGKILL: the stop's checkpoint saved (step ${saved:-none}; metrics.csv to $last)" \
  '[ -e "$dir/vstop.gate.held" ] && [ -n "$saved" ] && [ "$saved" -eq $((last + 1)) ] && [ "$(saved_step "$dir/vstop/checkpoint-$saved.safetensors")" = "$saved" ] &&
   mpi -np 2 "$VITMAE" train --resume "$dir/vstop" --steps $((saved + 1)) --threads 1 > /dev/null 2>&1 && [ "$(saved_step "$dir/vstop/checkpoint.safetensors")" = $((saved + 1)) ]'
rm -rf "$dir/vstop"

# 7. SIGKILL of rank 1: the job ends, non-zero, within 30 s; the last checkpoint loads and resumes exactly.
ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none -np 2 "$VITMAE" train $lsmall --ckpt-every 2 --steps $long --threads 1 \
  --out "$dir/kill" > "$dir/kill.log" 2>&1 &
pid=$!
wait_step "$dir/kill" 5
rank1=""
# mpirun's children from /proc (no procps on a minimal system): field 2 after "(comm) " is the ppid.
# Shell builtins only (read, set), so the scan is quick and the job is still running when it ends.
for s in /proc/[0-9]*/stat; do
  { read -r st < "$s"; } 2>/dev/null || continue
  set -- ${st##*) }
  [ "${2:-}" = "$pid" ] || continue
  c=${s#/proc/}; c=${c%/stat}
  tr '\0' '\n' < /proc/$c/environ 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=1$' && rank1=$c
done
t "found rank 1's process" '[ -n "$rank1" ]'
[ -n "$rank1" ] && kill -KILL "$rank1"
start=$(date +%s)
i=0; while [ $i -lt 300 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
if kill -0 $pid 2>/dev/null; then kill -KILL $pid; fi
wait $pid; rc=$?
t "SIGKILL of a rank: mpirun ends within 30 s" '[ $(($(date +%s) - start)) -le 30 ]'
t "SIGKILL of a rank: non-zero exit ($rc)" '[ $rc -ne 0 ]'
t "SIGKILL of a rank: the last checkpoint loads" '"$VITMAE" info "$dir/kill/checkpoint.safetensors" > /dev/null'
"$VITMAE" train --resume "$dir/kill" --threads 2 > /dev/null 2>&1; rc=$?
t "SIGKILL of a rank: resume exits 0" '[ $rc -eq 0 ]'
t "SIGKILL of a rank: resumed run equals the uninterrupted one" 'same_weights "$dir/lref/checkpoint.safetensors" "$dir/kill/checkpoint.safetensors"'
# 7b. A stop signal to one rank only (a `kill` of one process, a scheduler that signals one): the
#     ranks agree on the stop at the next step's status exchange, finish that step together, rank 0
#     saves, every rank and mpirun exit 0 (docs/distributed.md, "Faults"). Under `timeout`: a rank left
#     waiting in a collective fails the test instead of hanging it.
for sig in INT TERM; do
  one_rank_signal $sig "$dir/one$sig" train $lsmall --steps 100000 --threads 1
  t "SIG$sig to rank 1 only: found rank 1's process" '[ -n "$r1" ]'
  t "SIG$sig to rank 1 only: the job ends, exit 0 ($rc), nothing on stderr ($(head -c 300 "$dir/one$sig.err"))" \
    '[ $rc -eq 0 ] && [ ! -s "$dir/one$sig.err" ] && grep -q "^interrupted at step $saved of 100000; saved " "$dir/one$sig.log"'
  t "SIG$sig to rank 1 only: rank 0 saved mid-run (step ${saved:-none})" '[ -n "$saved" ] && [ "$saved" -gt 0 ] && [ "$saved" -lt 100000 ]'
done
# Two SIGINTs to one rank: a rank says nothing of a stop and does not end at once on a second Ctrl-C,
# as a process of its own does (mpirun has its own; a rank gone would fail the job): as for one.
one_rank_signal "INT INT" "$dir/oneII" train $lsmall --steps 100000 --threads 1
t "two SIGINTs to rank 1: the job ends as for one, exit 0 ($rc), nothing on stderr ($(head -c 300 "$dir/oneII.err"))" \
  '[ $rc -eq 0 ] && [ ! -s "$dir/oneII.err" ] && grep -q "^interrupted at step $saved of 100000; saved " "$dir/oneII.log"'
# 7c. A rank that fails at run time where the others do not (each rank its own copy of the data, as
#     without a shared filesystem; rank 1's moved away mid-run, its images read afresh each step with no
#     cache): every rank learns it at the step's exchange, rank 1 names the cause, all exit 1 at once;
#     the last checkpoint stays loadable.
mkdir -p "$dir/f0" "$dir/f1"; cp -r "$dir/data" "$dir/f0/data"; cp -r "$dir/data" "$dir/f1/data"
frel=$(echo "$lsmall" | sed "s|--data $dir/data|--data data|")
ASAN_OPTIONS=$mpi_asan timeout 60 mpirun --oversubscribe --bind-to none \
  -np 1 -wdir "$dir/f0" "$VITMAE" train $frel --steps 100000 --ckpt-every 2 --cache-mb 0 --store none --threads 1 --out "$dir/fail" : \
  -np 1 -wdir "$dir/f1" "$VITMAE" train $frel --steps 100000 --ckpt-every 2 --cache-mb 0 --store none --threads 1 --out "$dir/fail" \
  > /dev/null 2> "$dir/fail.err" &
pid=$!
wait_step "$dir/fail" 3
mv "$dir/f1/data" "$dir/f1/moved"   # at once: a removal file by file would first show single files gone
wait $pid; rc=$?
t "rank 1's data gone mid-run: exit 1 ($rc), not a hang, rank 1 names the cause ($(grep "^vitmae:" "$dir/fail.err" | head -c 300))" \
  '[ $rc -eq 1 ] && [ "$(grep -c "^vitmae:" "$dir/fail.err")" -eq 1 ] && grep -q "^vitmae: rank 1: data: the data folder is gone (moved or deleted during the run)$" "$dir/fail.err"'
t "rank 1's data gone mid-run: the last checkpoint loads" '[ -n "$(saved_step "$dir/fail/checkpoint.safetensors")" ]'
# ... the one data folder of both ranks gone: each rank met it alike, and each said it (rank 0's line,
# then "rank 1: " the same): said once now, by rank 0 (docs/distributed.md, "Semantics").
cp -r "$dir/data" "$dir/fbdata"
fboth=$(echo "$lsmall" | sed "s|--data $dir/data|--data $dir/fbdata|")
ASAN_OPTIONS=$mpi_asan timeout 60 mpirun --oversubscribe --bind-to none -np 2 "$VITMAE" train $fboth --steps 100000 \
  --ckpt-every 2 --cache-mb 0 --store none --threads 1 --out "$dir/failb" > /dev/null 2> "$dir/failb.err" &
pid=$!
wait_step "$dir/failb" 3
mv "$dir/fbdata" "$dir/fbmoved"
wait $pid; rc=$?
t "both ranks' data gone mid-run: exit 1 ($rc), the cause said once, by rank 0 ($(grep "^vitmae:" "$dir/failb.err" | tr "\n" "|" | head -c 300))" \
  '[ $rc -eq 1 ] && [ "$(grep -c "^vitmae:" "$dir/failb.err")" -eq 1 ] && grep -q "^vitmae: .*fbdata: the data folder is gone (moved or deleted during the run)$" "$dir/failb.err"'
# 7d. The "data pipeline is the bottleneck" note is the job's: a step waits for the slowest process, and
#     rank 0 judged on its own waits alone. Rank 1's copy of the data holds 800x800 photos under the
#     names of rank 0's 16x16 images (each rank its own folder), decoded afresh each step (no cache, no
#     store): rank 1 waits for images most of each step, rank 0 hardly at all. The ranks compare each
#     file's size: each pair is padded with zeros past its end (a PNG ends at its IEND chunk) to one size.
mkdir -p "$dir/s0" "$dir/s1"
"$VITMAE_TOOLS/synth" "$dir/s0/data" --count 16 --size 16 --seed 3 > /dev/null
"$VITMAE_TOOLS/synth" "$dir/s1/data" --count 16 --size 800 --seed 3 > /dev/null
python3 -c 'import os, sys
for d, _, names in os.walk(sys.argv[1]):
    for n in names:
        a = os.path.join(d, n); b = os.path.join(sys.argv[2], os.path.relpath(a, sys.argv[1]))
        m = max(os.path.getsize(a), os.path.getsize(b))
        for p in (a, b): open(p, "ab").write(bytes(m - os.path.getsize(p)))' "$dir/s0/data" "$dir/s1/data"
slow="--data data --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 16 --val-frac 0 --steps 10 --log-every 10 --eval-every 100 --sample-every 100 --ckpt-every 100 --cache-mb 0 --store none --threads 1 --out $dir/slow"
ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 -wdir "$dir/s0" "$VITMAE" train $slow : \
  -np 1 -wdir "$dir/s1" "$VITMAE" train $slow > "$dir/slow.log" 2> "$dir/slow.err"; rc=$?
t "rank 1 waits for its images: the note says so, for the process that waited most, the images of both ($rc: $(grep bottleneck "$dir/slow.log" | cut -c1-200))" \
  '[ $rc -eq 0 ] && grep -q "^data pipeline is the bottleneck: steps waited [0-9]*% of the time ([0-9]*\.[0-9][0-9] [nmu]\{0,1\}s per step) for images (the process that waited most); working images so far (2 processes together): [0-9]* decoded, " "$dir/slow.log"'

# 7e. The working images' line counts every process's images: with no cache and no store each image
#     is decoded by the process whose share it is, so 2 processes together decode what one decodes.
cnt="--data $dir/data --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 16 --steps 4 --val-frac 0 --cache-mb 0 --store none --threads 1"
"$VITMAE" train $cnt --out "$dir/cnt1" > "$dir/cnt1.log" 2>&1
mpi -np 2 "$VITMAE" train $cnt --out "$dir/cnt2" > "$dir/cnt2.log" 2>&1
d1=$(sed -n 's/^working images: \([0-9]*\) decoded, .*/\1/p' "$dir/cnt1.log")
d2=$(sed -n 's/^working images (2 processes together): \([0-9]*\) decoded, .*/\1/p' "$dir/cnt2.log")
t "working images: 2 processes together decoded what one did (${d1:-none} / ${d2:-none})" \
  '[ -n "$d1" ] && [ "$d1" -gt 0 ] && [ "$d1" = "$d2" ]'
# ... and with a store every rank reads it (docs/distributed.md, "Semantics"): after one process has
#     stored the run's working images, 2 processes decode none (rank 1 decoded its share again when the
#     store was rank 0's alone).
sto="${cnt%% --store none --threads 1} --store $dir/cstore --threads 1"
"$VITMAE" train $sto --out "$dir/cst1" > "$dir/cst1.log" 2>&1
mpi -np 2 "$VITMAE" train $sto --out "$dir/cst2" > "$dir/cst2.log" 2>&1; rc=$?
s1=$(sed -n 's/^working images: \([0-9]*\) decoded, \([0-9]*\) read from the store.*/\1 \2/p' "$dir/cst1.log")
s2=$(sed -n 's/^working images (2 processes together): \([0-9]*\) decoded, \([0-9]*\) read from the store.*/\1 \2/p' "$dir/cst2.log")
t "store: 2 processes read every working image from the store one process filled (${s1:-none} / ${s2:-none}, $rc)" \
  '[ $rc -eq 0 ] && [ -n "$s1" ] && [ $((${s1% *} + ${s1#* })) = "$d1" ] && [ "$s2" = "0 $d1" ]'
# ... and a store whose disk is short of --store-min-free (docs/data.md; VITMAE_FAULT_FREE_BYTES gives the
#     disk's free space): no process writes there, the job's count is said once by rank 0 and on the end
#     line (the note's sum is collective: every rank takes part).
sfull="${cnt%% --store none --threads 1} --store $dir/cfull --threads 1"
VITMAE_FAULT_FREE_BYTES=1000000 mpi -x VITMAE_FAULT_FREE_BYTES -np 2 "$VITMAE" train $sfull --out "$dir/cfull2" > "$dir/cfull2.log" 2>&1; rc=$?
t "store below --store-min-free, 2 processes: exit 0, nothing stored, one line, the job's count ($rc: $(grep "^working" "$dir/cfull2.log"))" \
  '[ $rc -eq 0 ] && [ -z "$(ls -A "$dir/cfull")" ] && [ "$(grep -c "^the disk of the store .*/cfull has less than --store-min-free 2048 MB free: working images are no longer written there ([1-9][0-9]* left out so far)" "$dir/cfull2.log")" -eq 1 ] && grep -q "^working images (2 processes together): $d1 decoded, 0 read from the store (0 written, $d1 not: its disk at --store-min-free)" "$dir/cfull2.log"'

# 8. The streaming data pipeline under mpirun (docs/data.md): each rank loads its share through its
#    prefetching loader; with a file broken past its header (replaced inside its batch), --val DIR,
#    an on-disk store and --init, 2 processes give the same bits as one.
"$VITMAE_TOOLS/synth" "$dir/pdata" --count 40 --size 24 --seed 2 >/dev/null
"$VITMAE_TOOLS/synth" "$dir/pval" --count 10 --size 24 --seed 4 >/dev/null
f=$(ls "$dir"/pdata/circle/*.png | head -n 1)
head -c 80 "$f" > "$dir/cut.png" && mv "$dir/cut.png" "$f"
pipe="--data $dir/pdata --val $dir/pval --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 16 --steps 4 --eval-every 2 --log-every 1 --cache-mb 0 --prefetch 3 --loader-threads 2"
"$VITMAE" train $pipe --threads 2 --store "$dir/store1" --out "$dir/pref" > /dev/null 2> "$dir/pref.err"; rc=$?
t "pipeline: reference run exits 0 ($(head -c 300 "$dir/pref.err"))" '[ $rc -eq 0 ] && grep -q "found while training" "$dir/pref.err"'
mpi -np 2 "$VITMAE" train $pipe --threads 1 --store "$dir/store2" --out "$dir/pn2" > /dev/null 2> "$dir/pn2.err"; rc=$?
t "pipeline -np 2 exits 0 ($(head -c 300 "$dir/pn2.err"))" '[ $rc -eq 0 ]'
t "pipeline -np 2: bitwise equal weights, moments and losses" 'same_run "$dir/pref" "$dir/pn2"'
t "pipeline -np 2: the broken file is reported" 'grep -q "skipped .*circle/.*found while training" "$dir/pn2.err"'
t "pipeline -np 2: the store was written" '[ -n "$(ls "$dir/store2")" ]'
# Files broken past their headers, found while training: every rank that meets one finds it (its
# share's replacements lie in other ranks' groups), and each rank said it, so 4 processes said each up
# to 4 times. Rank 0 now says each once, the lines of one process (docs/distributed.md, "Semantics");
# the working images' line counts the 4 processes together.
"$VITMAE_TOOLS/synth" "$dir/bdata" --count 40 --size 24 --seed 3 >/dev/null
for k in 1 12 25; do f=$(ls "$dir"/bdata/*/*.png | sed -n ${k}p); head -c 80 "$f" > "$dir/cut.png" && mv "$dir/cut.png" "$f"; done
bsmall="--data $dir/bdata --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 16 --val-frac 0.2 --steps 6 --threads 1"
"$VITMAE" train $bsmall --out "$dir/b1" > /dev/null 2> "$dir/b1.err"
mpi -np 4 "$VITMAE" train $bsmall --out "$dir/b4" > "$dir/b4.log" 2> "$dir/b4.err"; rc=$?
t "broken files, -np 4: exit 0, each file said once, as one process says them ($(grep -c skipped "$dir/b4.err") lines)" \
  '[ $rc -eq 0 ] && [ "$(grep -c "^vitmae: skipped" "$dir/b1.err")" -eq 3 ] && [ "$(sort "$dir/b1.err")" = "$(sort "$dir/b4.err")" ]'
t "broken files, -np 4: the working images of the 4 processes together" \
  'grep -q "^working images (4 processes together): [0-9]* decoded, .*steps waited [0-9]*\.[0-9][0-9] [nmu]\{0,1\}s each for images (the process that waited most)$" "$dir/b4.log"'
# A batch none of whose images decodes, under -np 4: each rank's share of it is broken, and each rank said
# its own line, naming its own file (4 lines for one stop, in any order): the lowest failed rank says it
# alone, as one process does (docs/distributed.md, "Semantics"), with the saved step's advice.
"$VITMAE_TOOLS/synth" "$dir/adata" --count 18 --size 24 --classes 2 --seed 5 >/dev/null
for f in $(ls "$dir"/adata/*/*.png | awk 'NR % 9 != 1'); do head -c 80 "$f" > "$dir/cut.png" && mv "$dir/cut.png" "$f"; done
abroken="--data $dir/adata --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 4 --val-frac 0 --steps 30 --threads 1"
"$VITMAE" train $abroken --out "$dir/ab1" > /dev/null 2> "$dir/ab1.err"; rc1=$?
mpi -np 4 "$VITMAE" train $abroken --out "$dir/ab4" > /dev/null 2> "$dir/ab4.err"; rc=$?
n1=$(grep -c "no image of its batch decodes" "$dir/ab1.err"); n4=$(grep -c "no image of its batch decodes" "$dir/ab4.err")
t "a batch all broken, -np 4: exit 1, one line as one process's, its step saved ($rc1 $rc: $n1 / $n4 lines)" \
  '[ $rc1 -eq 1 ] && [ $rc -ne 0 ] && [ "$n1" -eq 1 ] && [ "$n4" -eq 1 ] &&
   grep -q "^vitmae: .*no image of its batch decodes to take its place (all 4 are broken); .*ab4/checkpoint.safetensors holds step [1-9]" "$dir/ab4.err"'
#    A copy that differs on one machine (each rank its own folder, as without a shared filesystem):
#    rank 1's copy of a file broken another way is said again, naming rank 1. (Of the same size, cut
#    where rank 0's is, the ranks comparing each file's size before they start; its first data chunk
#    made short enough to end in the file, so that its check sum fails before the data runs out.)
mkdir -p "$dir/v0" "$dir/v1"; cp -r "$dir/bdata" "$dir/v0/bdata"; cp -r "$dir/bdata" "$dir/v1/bdata"
"$VITMAE_TOOLS/synth" "$dir/bfresh" --count 40 --size 24 --seed 3 >/dev/null
f=$(cd "$dir/bdata" && ls */*.png | sed -n 1p)
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); i = b.find(b"IDAT")
b[i - 4:i] = (30).to_bytes(4, "big")
open(sys.argv[2], "wb").write(bytes(b[:80]))' "$dir/bfresh/$f" "$dir/v1/bdata/$f"
brel=$(echo "$bsmall" | sed "s|--data $dir/bdata|--data bdata|")
ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 -wdir "$dir/v0" "$VITMAE" train $brel --out "$dir/bv" : \
  -np 1 -wdir "$dir/v1" "$VITMAE" train $brel --out "$dir/bv" > /dev/null 2> "$dir/bv.err"; rc=$?
t "a broken file that differs on rank 1: said once plainly, once naming rank 1 ($(grep -c "$f" "$dir/bv.err") lines)" \
  '[ $rc -eq 0 ] && [ "$(grep -c "^vitmae: skipped bdata/$f: truncated PNG data (found while training" "$dir/bv.err")" -eq 1 ] &&
   [ "$(grep -c "^vitmae: skipped bdata/$f: .* (on rank 1, found while training" "$dir/bv.err")" -eq 1 ] && [ "$(grep -c "$f" "$dir/bv.err")" -eq 2 ]'
"$VITMAE" train $pipe --steps 2 --threads 2 --init "$dir/pref/checkpoint.safetensors" --out "$dir/iref" > /dev/null 2>&1
mpi -np 2 "$VITMAE" train $pipe --steps 2 --threads 1 --init "$dir/pref/checkpoint.safetensors" --out "$dir/in2" > /dev/null 2> "$dir/in2.err"; rc=$?
t "--init under -np 2 exits 0 ($(head -c 300 "$dir/in2.err"))" '[ $rc -eq 0 ]'
t "--init under -np 2: bitwise equal" 'same_run "$dir/iref" "$dir/in2"'
mpi -np 2 "$VITMAE" train $pipe --steps 2 --out "$dir/pn2" > /dev/null 2> "$dir/guard.err"; rc=$?
t "run-folder guard under -np 2: exit 2, one line from rank 0" '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae:" "$dir/guard.err")" -eq 1 ] && grep -q "already holds a run" "$dir/guard.err"'

# An MPMD launch with another --steps on rank 1: refused before any work (it used to wait forever at
# the step rank 0 never took), exit 2, rank 1 naming the difference; nothing written.
ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 "$VITMAE" train $small --steps 4 \
  --threads 1 --out "$dir/mpmd" : -np 1 "$VITMAE" train $small --steps 6 --threads 1 --out "$dir/mpmd" \
  > /dev/null 2> "$dir/mpmd.err"; rc=$?
t "different command lines: exit 2 ($rc), rank 1 names the difference" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: rank 1: mpi: rank 1 sees a different command line than rank 0: entry [0-9]* is .6. here and .4. on rank 0" "$dir/mpmd.err"'
t "different command lines: nothing written" '[ ! -e "$dir/mpmd" ]'
t "different command lines: one line ($(grep -c "^vitmae:" "$dir/mpmd.err"))" '[ "$(grep -c "^vitmae:" "$dir/mpmd.err")" -eq 1 ]'
# ... and a rank given --version, --help or no command: it ended at once, without the comparison, and
# rank 0 waited in it for ever (docs/distributed.md, "Semantics"). Now refused alike, exit 2.
for other in --version --help ""; do
  ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 "$VITMAE" train $small --steps 4 \
    --threads 1 --out "$dir/mpmdv" : -np 1 "$VITMAE" $other > /dev/null 2> "$dir/mpmdv.err"; rc=$?
  t "rank 1 runs 'vitmae $other' beside train: exit 2 ($rc), not a hang, rank 1 names the difference, nothing written" \
    '[ $rc -eq 2 ] && grep -q "^vitmae: rank 1: mpi: rank 1 sees a different command line than rank 0: " "$dir/mpmdv.err" && [ ! -e "$dir/mpmdv" ]'
done
# ... and a rank running another command: the words differ from the first on, and the line said
# "'data' (entry 1 here) is missing on rank 0", the missing-file form, pointing at the wrong thing
# (rank 1's folder named `train`, which the comparison, before anything else, never looks for).
ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 "$VITMAE" train $small --steps 4 \
  --threads 1 --out "$dir/mpmdd" : -np 1 "$VITMAE" data train > /dev/null 2> "$dir/mpmdd.err"; rc=$?
t "rank 1 runs 'vitmae data' beside train: exit 2 ($rc), the first word named as different ($(grep "^vitmae:" "$dir/mpmdd.err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: rank 1: mpi: rank 1 sees a different command line than rank 0: entry 1 is .data. here and .train. on rank 0 (2 entries here, [0-9]* on rank 0)$" "$dir/mpmdd.err" && [ ! -e "$dir/mpmdd" ]'
# ... a rank of one word counts it as one ("1 entries here" was said).
ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 "$VITMAE" train $small --steps 4 \
  --threads 1 --out "$dir/mpmdv" : -np 1 "$VITMAE" --version > /dev/null 2> "$dir/mpmdv.err"; rc=$?
t "rank 1 runs 'vitmae --version' beside train: exit 2 ($rc), its one word counted as one ($(grep "^vitmae:" "$dir/mpmdv.err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: rank 1: mpi: rank 1 sees a different command line than rank 0: entry 1 is .--version. here and .train. on rank 0 (1 entry here, [0-9]* on rank 0)$" "$dir/mpmdv.err" && [ ! -e "$dir/mpmdv" ]'
# ... and the differing word echoed as any word of the command line (docs/interface.md, section 1): two
# of 301 bytes, apart only at the last, were quoted whole; now their first 96 bytes, "...", and the byte
# where they part.
long=$(printf 'x%.0s' $(seq 300))
ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 "$VITMAE" data "$dir/data" "${long}a" : \
  -np 1 "$VITMAE" data "$dir/data" "${long}b" > /dev/null 2> "$dir/mpmdw.err"; rc=$?
t "different long words on rank 1: exit 2 ($rc), each cut to 96 bytes, where they part said ($(grep -c . "$dir/mpmdw.err") lines)" \
  '[ $rc -eq 2 ] && grep -qx "vitmae: rank 1: mpi: rank 1 sees a different command line than rank 0: entry 3 is .$(printf %.96s "$long")\.\.\.. here and .$(printf %.96s "$long")\.\.\.. on rank 0 (the two differ from byte 301 on)" "$dir/mpmdw.err"'
# Another build of vitmae on rank 1 (a machine with an older or newer copy): its ranks exchange other
# messages, so the job crashed in MPI (MPI_ERR_TRUNCATE, exit 15) or waited for ever. The ranks now
# compare their versions first: rank 1 names both, exit 1, nothing written. The other build is this
# binary with its version text changed (vitmae --version prints it; it occurs once in the file).
ver=$("$VITMAE" --version | sed -n '1s/^vitmae //p')
python3 -c 'import sys; b = open(sys.argv[1], "rb").read(); v = sys.argv[2].encode() + b"\0"
if b.count(v) != 1: sys.exit("the version text occurs %d times" % b.count(v))
open(sys.argv[3], "wb").write(b.replace(v, b"X" * (len(v) - 1) + b"\0"))' "$VITMAE" "$ver" "$dir/other-vitmae" &&
  chmod +x "$dir/other-vitmae"
xver=$(echo "$ver" | tr -c '\n' X)
t "another build: its copy says another version ($("$dir/other-vitmae" --version 2>&1 | head -n 1))" '[ "$("$dir/other-vitmae" --version | head -n 1)" = "vitmae $xver" ]'
ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 "$VITMAE" train $small --steps 2 --threads 1 \
  --out "$dir/vers" : -np 1 "$dir/other-vitmae" train $small --steps 2 --threads 1 --out "$dir/vers" > /dev/null 2> "$dir/vers.err"; rc=$?
t "another build on rank 1: exit 1 ($rc), rank 1 names both versions ($(grep "^vitmae: rank 1" "$dir/vers.err" | head -c 300)), nothing written" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: rank 1: mpi: rank 1 sees a different build than rank 0: entry 1 is .vitmae $xver. here and .vitmae $ver. on rank 0 (every process must run the same build of vitmae: the same vitmae --version)$" "$dir/vers.err" && [ ! -e "$dir/vers" ]'
t "another build on rank 1: one line ($(grep -c "^vitmae:" "$dir/vers.err"))" '[ "$(grep -c "^vitmae:" "$dir/vers.err")" -eq 1 ]'
# What one rank alone has, found by the forty-fifth session's tries (each used to crash, hang or
# train another model; docs/distributed.md, "Semantics"):
# - VITMAE_REDUCE=messages on one rank only: the ranks agree on messages, the same bits.
for side in 0 1; do
  if [ $side = 0 ]; then
    ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 -x VITMAE_REDUCE=messages "$VITMAE" train $small \
      --steps $steps --threads 1 --out "$dir/red$side" : -np 1 "$VITMAE" train $small --steps $steps --threads 1 --out "$dir/red$side" > /dev/null 2>&1; rc=$?
  else
    ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 "$VITMAE" train $small --steps $steps --threads 1 \
      --out "$dir/red$side" : -np 1 -x VITMAE_REDUCE=messages "$VITMAE" train $small --steps $steps --threads 1 --out "$dir/red$side" > /dev/null 2>&1; rc=$?
  fi
  t "VITMAE_REDUCE=messages on rank $side only: exit 0 ($rc), bitwise the reference" '[ $rc -eq 0 ] && same_run "$dir/ref" "$dir/red$side"'
done
# - Another checkpoint on one rank (each machine its own copy): --init and --resume refused, exit 1,
#   the differing rank named; nothing trained.
mkdir -p "$dir/k0" "$dir/k1"
cp "$dir/ref/checkpoint.safetensors" "$dir/k0/init.safetensors"; cp "$dir/ref/checkpoint-3.safetensors" "$dir/k1/init.safetensors"
rel=$(echo "$small" | sed "s|--data $dir/data|--data $dir/data --init init.safetensors|")
ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 -wdir "$dir/k0" "$VITMAE" train $rel --steps 2 --threads 1 \
  --out "$dir/kinit" : -np 1 -wdir "$dir/k1" "$VITMAE" train $rel --steps 2 --threads 1 --out "$dir/kinit" > /dev/null 2> "$dir/kinit.err"; rc=$?
t "--init, another file on rank 1: exit 1 ($rc), rank 1 named, no run folder" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: rank 1: rank 1 sees a different starting checkpoint than rank 0" "$dir/kinit.err" && [ ! -e "$dir/kinit" ]'
t "--init, another file on rank 1: one line ($(grep -c "^vitmae:" "$dir/kinit.err"))" '[ "$(grep -c "^vitmae:" "$dir/kinit.err")" -eq 1 ]'
cp -r "$dir/ref" "$dir/k0/run"; cp -r "$dir/ref" "$dir/k1/run"; cp "$dir/ref/checkpoint-3.safetensors" "$dir/k1/run/checkpoint.safetensors"
ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 1 -wdir "$dir/k0" "$VITMAE" train --resume run --steps 9 --threads 1 \
  : -np 1 -wdir "$dir/k1" "$VITMAE" train --resume run --steps 9 --threads 1 > /dev/null 2> "$dir/kres.err"; rc=$?
t "--resume, a stale copy on rank 1: exit 1 ($rc), not a hang, rank 1 named, nothing written" \
  '[ $rc -eq 1 ] && grep -q "different starting checkpoint than rank 0: entry 1 is .step 3, .* here and .step 6, " "$dir/kres.err" && same_weights "$dir/ref/checkpoint.safetensors" "$dir/k0/run/checkpoint.safetensors"'
# - A file size limit below the gradient window's file (ulimit -f): the ranks use messages instead
#   of waiting in the window for ever; the run ends with the documented full-disk line, exit 1.
#   (The limit on the ranks alone, through a wrapper: mpirun itself is not ours to limit. 450 KB: below
#   this model's window file, 2 ranks x 2 halves x 43600 floats, and below its checkpoint too.)
printf '#!/bin/bash\nulimit -f 450\nexec "%s" "$@"\n' "$VITMAE" > "$dir/fsz.sh" && chmod +x "$dir/fsz.sh"
ASAN_OPTIONS=$mpi_asan timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$dir/fsz.sh" train --data "$dir/data" --img 16 \
  --patch 4 --dim 32 --depth 2 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 16 --val-frac 0.2 --ckpt-every 3 \
  --steps 6 --threads 1 --out "$dir/fsz" > /dev/null 2> "$dir/fsz.err"; rc=$?
t "ulimit -f below the window: exit 1 ($rc), not a hang, a write refused by name" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: .*fsz/checkpoint-3.safetensors: write failed: File too large" "$dir/fsz.err"'
# - Usage said once: --help, no command, an unknown command.
t "--help under -np 2: once" '[ "$(mpi -np 2 "$VITMAE" --help | grep -c "^usage")" -eq 1 ]'
t "no command under -np 2: once" '[ "$(mpi -np 2 "$VITMAE" 2>&1 | grep -c "^usage")" -eq 1 ]'
t "unknown command under -np 2: one line" '[ "$(mpi -np 2 "$VITMAE" bogus 2>&1 | grep -c "^vitmae: bogus: unknown command")" -eq 1 ]'
# - A stop signal while the ranks start (VITMAE_FAULT_STOP_IN_SETUP raises SIGUSR1 there): every rank
#   ends after the first step, saved, exit 0.
mpi -np 2 -x VITMAE_FAULT_STOP_IN_SETUP=1 "$VITMAE" train $small --steps $steps --threads 1 --out "$dir/early" > "$dir/early.log" 2>&1; rc=$?
t "SIGUSR1 during start-up: exit 0 ($rc), saved at step 1" \
  '[ $rc -eq 0 ] && grep -q "interrupted at step 1 of $steps" "$dir/early.log" && [ "$(saved_step "$dir/early/checkpoint.safetensors")" = 1 ]'
# - ... and one that lands in MPI's start-up (=mpi, before MPI_Init: its half a second or more is most of
#   a rank's start-up; `kill -USR1 <mpirun pid>` then killed the rank, exit 138): the same.
mpi -np 2 -x VITMAE_FAULT_STOP_IN_SETUP=mpi "$VITMAE" train $small --steps $steps --threads 1 --out "$dir/early-mpi" > "$dir/early-mpi.log" 2>&1; rc=$?
t "SIGUSR1 as MPI starts: exit 0 ($rc), saved at step 1" \
  '[ $rc -eq 0 ] && grep -q "interrupted at step 1 of $steps" "$dir/early-mpi.log" && [ "$(saved_step "$dir/early-mpi/checkpoint.safetensors")" = 1 ]'

# - A sample sheet that cannot be written at the last step (samples/step-6.png a folder; the first
#   session stopped at step 5 by the NaN hook, its checkpoint step 3's): rank 0 says it, saves the
#   step's checkpoint and says so (docs/data.md, "Run folders"), every rank exits; the weights are
#   the reference's.
mpi -np 2 -x VITMAE_FAULT_NAN_STEP=5 "$VITMAE" train $small --steps $steps --threads 1 --out "$dir/pic" > /dev/null 2>&1
mkdir -p "$dir/pic/samples/step-6.png"
timeout -k 5 120 env ASAN_OPTIONS=$mpi_asan mpirun --oversubscribe --bind-to none -np 2 "$VITMAE" train --resume "$dir/pic" \
  --threads 1 > /dev/null 2> "$dir/pic.err"; rc=$?
t "-np 2, the last sheet unwritable: exit 1, the sheet's line and the save's, the reference's weights ($rc: $(grep "^vitmae" "$dir/pic.err" | tr '\n' '|'))" \
  '[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(grep "^vitmae" "$dir/pic.err")" = "vitmae: train: $dir/pic/samples/step-6.png: Is a directory
vitmae: saved $dir/pic/checkpoint.safetensors at step 6, the run'"'"'s last" ] && same_weights "$dir/ref/checkpoint.safetensors" "$dir/pic/checkpoint.safetensors"'
[ $fail -eq 0 ] && echo "cli mpi ok"
exit $fail
