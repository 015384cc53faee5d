#!/bin/sh
# ThreadSanitizer on every command at 2, 3 and 4 threads (the team of kernels, gradient groups, the
# loader's prefetch threads and its store, resume) and on the test programs that run threads: no data
# race between threads. The build is clang's with LLVM's OpenMP runtime, whose Archer tool tells TSan
# what OpenMP's forks and barriers order; the runtime itself is not instrumented, so TSan ignores what it
# does inside (ignore_noninstrumented_modules, as Archer asks). Slow (a few minutes), so `make tsan`
# runs it, not `make test` (docs/testing.md, "Sanitizers and valgrind"). Its first training run must also
# end bitwise equal to the same run of the normal build (another compiler, another optimisation level:
# docs/design.md, "Determinism").
# Usage: tests/tsan.sh TSAN_BIN VITMAE_BIN TOOLS_DIR TESTS_DIR [TEST ...]   (the TSan build: make tsan)
set -u
VITMAE=$(realpath "$1"); PLAIN=$(realpath "$2"); TOOLS=$(realpath "$3"); TESTS=$(realpath "$4"); shift 4
. "$(dirname "$0")/lib.sh"   # t, scratch, same_weights, mpi_setup, mpi
scratch dir
TSAN_OPTIONS="ignore_noninstrumented_modules=1 halt_on_error=0 exitcode=66 allocator_may_return_null=1 history_size=4"
export TSAN_OPTIONS
fail=0
# Runs one command; it fails on any TSan report or exit status other than 0.
ts() {
  name=$1; shift
  "$@" > "$dir/$name.log" 2>&1; rc=$?
  races=$(grep -c "WARNING: ThreadSanitizer" "$dir/$name.log")
  echo "$name: exit $rc, $races TSan reports"
  if [ "$rc" -ne 0 ] || [ "$races" -ne 0 ]; then
    fail=1
    if [ "$races" -ne 0 ]; then grep -m 1 -A 30 "WARNING: ThreadSanitizer" "$dir/$name.log"; else tail -n 20 "$dir/$name.log"; fi
  fi
}
"$TOOLS/synth" "$dir/data" --count 48 --size 16 --seed 3 > /dev/null
small="--data $dir/data --img 16 --patch 4 --dim 32 --depth 2 --heads 2 --dec-dim 32 --dec-depth 1 --dec-heads 2 --batch 8 --warmup-steps 2 --val-frac 0.2"
ts train-kernels-2 "$VITMAE" train $small --steps 4 --eval-every 2 --threads 2 --parallel kernels --out "$dir/run"
"$PLAIN" train $small --steps 4 --eval-every 2 --threads 2 --parallel kernels --out "$dir/plain" > /dev/null 2>&1 ||
  { echo "the normal build's training run failed"; fail=1; }
# The weights' bytes (past the header, which names the version): the same bits from either build.
t "train-kernels-2 against the normal build: the same weights" \
  'same_weights "$dir/run/checkpoint.safetensors" "$dir/plain/checkpoint.safetensors"'
ts train-kernels-3 "$VITMAE" train $small --steps 3 --threads 3 --parallel kernels --out "$dir/run3"
ts train-groups-4 "$VITMAE" train $small --steps 3 --threads 4 --parallel groups --out "$dir/run4"
ts train-store "$VITMAE" train $small --steps 3 --threads 2 --cache-mb 0 --store "$dir/store" --prefetch 4 --out "$dir/runs"
ts train-resume "$VITMAE" train --resume "$dir/run" --threads 3
ck="$dir/run/checkpoint.safetensors"
img=$(find "$dir/data" -name '*.png' | head -n 1)
ts reconstruct "$VITMAE" reconstruct --ckpt "$ck" --threads 3 --out "$dir/recon" "$dir/data"
ts attention "$VITMAE" attention --ckpt "$ck" --threads 3 --out "$dir/attn" "$img"
ts eval "$VITMAE" eval --ckpt "$ck" --data "$dir/data" --threads 3
ts finetune-2 "$VITMAE" finetune --ckpt "$ck" --data "$dir/data" --batch 8 --steps 3 --eval-every 2 --threads 2 --out "$dir/ft"
ts finetune-3 "$VITMAE" finetune --ckpt "$ck" --data "$dir/data" --batch 8 --steps 2 --threads 3 --parallel kernels --out "$dir/ft3"
ts classify "$VITMAE" classify --ckpt "$dir/ft/checkpoint.safetensors" --threads 3 "$dir/data"
ts embed "$VITMAE" embed --ckpt "$ck" --threads 3 --out "$dir/feats.npy" "$dir/data"
ts probe "$VITMAE" probe --ckpt "$ck" --train "$dir/data" --test "$dir/data" --linear --threads 3
ts data "$VITMAE" data "$dir/data" --threads 3
ts bench "$VITMAE" bench --img 16 --patch 4 --batch 8 --steps 2 --warmup 1 --threads 2 --profile
# Two MPI processes of two threads each (OpenMPI is not instrumented either: its own threads are not
# checked, the ranks' threads and their hand-offs are). Skipped, said in one line, where /dev/shm has
# not the room OpenMPI's transport needs (tests/lib.sh, mpi_need_shm): the rest still runs.
mpi_setup   # OpenMPI's session folder in $dir, running as root allowed (tests/lib.sh)
if ! mpi_shm_skip "tsan.sh: mpi-train, mpi-finetune"; then
  ts mpi-train mpi -np 2 "$VITMAE" train $small --steps 3 --threads 2 --out "$dir/mpirun"
  ts mpi-finetune mpi -np 2 "$VITMAE" finetune --ckpt "$ck" --data "$dir/data" --batch 8 --steps 2 --threads 2 \
    --out "$dir/mpift"
fi
# The test programs, each at 3 threads (an odd split), at the sanitizers' smaller sizes.
for t in "$@"; do
  ts "$t" env OMP_NUM_THREADS=3 VITMAE_SANITIZED=1 "$TESTS/$t"
done
[ $fail -eq 0 ] && echo "tsan ok"
exit $fail
