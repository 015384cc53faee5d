#!/bin/sh
# --help, --version and usage errors under `mpirun -np 2` (docs/interface.md, sections 1 and 7): said
# once, by rank 0, with the exit status of one process. The commands that run in one process only
# refused `mpirun -np 2 vitmae embed --help` (`vitmae: embed: runs in one process; ...`, exit 2) before
# their flags were read; the refusal now comes after --help, and after a usage error of the command line.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, mpi_setup, mpi
scratch dir
cd "$dir" || exit 1
mpi_setup
mpi_need_shm cli_mpi_usage.sh   # else SKIP, said (tests/lib.sh)
# That skip where /dev/shm is full (a mount namespace of its own, /dev/shm an 8 KB tmpfs, where root may
# make one): one line, exit 0. Without it every check below failed there on OpenMPI's "not enough space
# for /dev/shm/vader_segment..." on stderr, naming no cause, as cli_mpi.sh's did.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  out=$(timeout 120 unshare -m sh -c 'mount -t tmpfs -o size=8k none /dev/shm && sh "$VITMAE_ROOT/tests/cli_mpi_usage.sh"' 2>&1); rc=$?
  t "/dev/shm full: SKIP said, exit 0 ($rc: $(printf '%s' "$out" | head -c 300))" \
    '[ $rc -eq 0 ] && [ "$out" = "SKIP: cli_mpi_usage.sh: /dev/shm has 0 MB free, less than the 64 MB these runs need (OpenMPI'"'"'s shared-memory transport and vitmae'"'"'s shared gradient window live there)" ]'
  # tests/tsan.sh (make tsan) there: its MPI runs are skipped in that line, the rest run. It ran them,
  # and they passed on messages (OpenMPI's warnings in their logs), the shared window unchecked. Run
  # here with the normal build as its TSan one and no test program: its steps, not its races, are checked.
  out=$(timeout 300 unshare -m sh -c 'mount -t tmpfs -o size=8k none /dev/shm && sh "$VITMAE_ROOT/tests/tsan.sh" "$VITMAE" "$VITMAE" "$VITMAE_TOOLS" "$0"' "$dir" 2>&1); rc=$?
  t "/dev/shm full: tsan.sh skips its MPI runs, said, and the rest passes ($rc: $(printf '%s' "$out" | tail -n 3 | tr '\n' ' ' | head -c 400))" \
    '[ $rc -eq 0 ] && printf "%s\n" "$out" | grep -qxF "SKIP: tsan.sh: mpi-train, mpi-finetune: /dev/shm has 0 MB free, less than the 64 MB these runs need (OpenMPI'"'"'s shared-memory transport and vitmae'"'"'s shared gradient window live there)" &&
     ! printf "%s\n" "$out" | grep -q "^mpi-" && printf "%s\n" "$out" | grep -q "^bench: exit 0" && [ "$(printf "%s\n" "$out" | tail -n 1)" = "tsan ok" ]'
fi

"$VITMAE" --help > "$dir/list"
listed=$(awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' "$dir/list")
# usage_once WHAT ARGS...: `mpirun -np 2 vitmae ARGS` prints what `vitmae ARGS` prints, once, exit 0.
usage_once() {
  _what=$1; shift
  "$VITMAE" "$@" > "$dir/one.out" 2>&1
  mpi -np 2 "$VITMAE" "$@" > "$dir/n2.out" 2> "$dir/n2.err"; rc=$?
  t "$_what under -np 2: exit 0 ($rc), stdout as one process's, once, nothing on stderr ($(head -c 300 "$dir/n2.err"))" \
    '[ $rc -eq 0 ] && [ -s "$dir/one.out" ] && cmp -s "$dir/one.out" "$dir/n2.out" && [ ! -s "$dir/n2.err" ]'
}
for c in $listed; do
  usage_once "$c --help" "$c" --help
done
# help CMD goes through one path for every command: one of one process, one of several.
usage_once "help embed" help embed
usage_once "help train" help train
usage_once "embed -h" embed -h
usage_once "--version" --version
usage_once "version --help" version --help
usage_once "help --version" help --version
usage_once "help help" help help
# Usage errors: one line (rank 0's), exit 2, as in one process; a command of one process given a bad
# flag says the flag.
# err_once WHAT LINE ARGS...: `mpirun -np 2 vitmae ARGS` exits 2 with the one line LINE on stderr.
err_once() {
  _what=$1; _line=$2; shift 2
  mpi -np 2 "$VITMAE" "$@" > "$dir/n2.out" 2> "$dir/n2.err"; rc=$?
  t "$_what under -np 2: exit 2 ($rc), one line ($(grep "^vitmae" "$dir/n2.err" | head -n 3 | tr '\n' '|'))" \
    '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae" "$dir/n2.err")" -eq 1 ] && grep -qxF "$_line" "$dir/n2.err" && [ ! -s "$dir/n2.out" ]'
}
err_once "embed --bogus" "vitmae: embed: unknown flag '--bogus' (see vitmae embed --help)" embed --bogus
err_once "info --version" "vitmae: info: unknown flag '--version' (see vitmae info --help)" info --version
err_once "help --bogus" "vitmae: help: unknown flag '--bogus' (see vitmae --help)" help --bogus
err_once "help of an unknown command" "vitmae: bad\\x01: unknown command (see vitmae --help)" help "$(printf 'bad\001')"
err_once "version ARG" "vitmae: version: takes no arguments" version x
# A usage error of the command line past its flags (an argument or a flag the command needs, a flag
# without the one it goes with) is said as without mpirun, before the refusal: it said "runs in one
# process" for `data` alone, where `vitmae data` says "missing DIR".
err_once "data without DIR" "vitmae: data: missing DIR: give the folder to check (see vitmae data --help)" data
err_once "info without FILE" "vitmae: info: expected one checkpoint FILE or RUN folder (see vitmae info --help)" info
err_once "embed without --out" "vitmae: embed: --out FEATS.npy is required (see vitmae embed --help)" embed --ckpt "$dir/c" "$dir/x.png"
err_once "probe --force without --out" "vitmae: probe: --force replaces the confusion matrices of --out DIR, which are written with --out only" \
  probe --ckpt "$dir/c" --train "$dir/a" --test "$dir/b" --force
err_once "eval without --data" "vitmae: eval: --data DIR is required (see vitmae eval --help)" eval --ckpt "$dir/c"
err_once "classify without INPUT" "vitmae: classify: no INPUT: give image files or folders (see vitmae classify --help)" classify --ckpt "$dir/c"
err_once "reconstruct --scale and --display" "vitmae: reconstruct --scale: give --scale K or --display N, not both" \
  reconstruct --ckpt "$dir/c" --out "$dir/o" --scale 2 --display 64 "$dir/x.png"
err_once "attention --mode patch without --query" "vitmae: attention --query: --mode patch needs --query X,Y" \
  attention --ckpt "$dir/c" --out "$dir/o" --mode patch "$dir/x.png"
# ... and with its command line right, the command is refused, before it reads anything (a folder that is not
# there is not looked at).
err_once "data DIR" "vitmae: data: runs in one process; under mpirun only train, finetune and bench use several (run it without mpirun)" \
  data "$dir/nothing"
# ... and before an earlier result is refused: `embed` said "e.txt: already exists (use --force to replace
# it)", and with --force was refused for mpirun; probe's matrices likewise.
mkdir -p "$dir/po" && : > "$dir/e.txt" && : > "$dir/po/confusion-knn.png"
err_once "embed over an earlier result" "vitmae: embed: runs in one process; under mpirun only train, finetune and bench use several (run it without mpirun)" \
  embed --ckpt "$dir/c" --out "$dir/e.npy" "$dir/x.png"
err_once "probe over an earlier result" "vitmae: probe: runs in one process; under mpirun only train, finetune and bench use several (run it without mpirun)" \
  probe --ckpt "$dir/c" --train "$dir/a" --test "$dir/b" --out "$dir/po"

# A rank that multiplies matrices on another path, or with other k-blocks, than rank 0 (VITMAE_GEMM or
# VITMAE_GEMM_KC set on one rank only, as a machine of another kind would): rank 0 warns once, naming
# both, and the run goes on (docs/distributed.md, "Semantics"). Nothing said it, and the run was silently
# not bitwise what one process gives. The same settings on every rank: nothing said.
"$VITMAE_TOOLS/synth" "$dir/kdata" --count 16 --size 16 --seed 3 >/dev/null
ksmall="--data $dir/kdata --img 16 --patch 4 --dim 16 --depth 1 --heads 2 --dec-dim 16 --dec-depth 1 --dec-heads 2 --batch 8 --steps 1 --threads 1 --val-frac 0"
mpi -np 1 env VITMAE_GEMM=ref "$VITMAE" train $ksmall --out "$dir/k1" : -np 1 env VITMAE_GEMM=portable "$VITMAE" train $ksmall \
  --out "$dir/k1" > "$dir/k.out" 2> "$dir/k.err"; rc=$?
t "-np 2, VITMAE_GEMM ref on rank 0, portable on rank 1: exit 0, one warning naming both ($rc: $(head -n 3 "$dir/k.err" | tr '\n' '|'))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/k.err")" -eq 1 ] && grep -qx "vitmae: warning: rank 1 multiplies matrices on the portable path with k-blocks of [0-9]*, rank 0 on the ref path (VITMAE_GEMM, VITMAE_GEMM_KC or another kind of CPU): the run is not bitwise what one process gives (docs/distributed.md)" "$dir/k.err"'
mpi -np 1 env VITMAE_GEMM=portable VITMAE_GEMM_KC=64 "$VITMAE" train $ksmall --out "$dir/k2" : -np 1 env VITMAE_GEMM=portable \
  VITMAE_GEMM_KC=128 "$VITMAE" train $ksmall --out "$dir/k2" > "$dir/k.out" 2> "$dir/k.err"; rc=$?
t "-np 2, VITMAE_GEMM_KC 64 on rank 0, 128 on rank 1: exit 0, the warning names the k-blocks ($rc: $(head -n 3 "$dir/k.err" | tr '\n' '|'))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$dir/k.err")" -eq 1 ] && grep -q "^vitmae: warning: rank 1 multiplies matrices on the portable path with k-blocks of 128, rank 0 on the portable path with k-blocks of 64 (" "$dir/k.err"'
mpi -np 2 env VITMAE_GEMM=portable "$VITMAE" train $ksmall --out "$dir/k3" > "$dir/k.out" 2> "$dir/k.err"; rc=$?
t "-np 2, VITMAE_GEMM the same on every rank: exit 0, nothing on stderr ($rc: $(head -n 3 "$dir/k.err" | tr '\n' '|'))" \
  '[ $rc -eq 0 ] && [ ! -s "$dir/k.err" ]'
# The warning is said where the run is sure to start, not before the flags are read: a usage error, or
# a refusal after the flags (a --data folder that is not there), with VITMAE_GEMM differing is its one
# line alone (of vitmae's: mpirun adds its own block on a non-zero exit, as err_once's runs). It printed
# the warning, then the error: two lines where the rule is one.
for c in train finetune bench; do
  mpi -np 1 env VITMAE_GEMM=ref "$VITMAE" $c --bogus : -np 1 env VITMAE_GEMM=portable "$VITMAE" $c --bogus \
    > "$dir/k.out" 2> "$dir/k.err"; rc=$?
  t "-np 2, VITMAE_GEMM differing, $c --bogus: exit 2, the usage error alone ($rc: $(head -n 3 "$dir/k.err" | tr '\n' '|'))" \
    '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae" "$dir/k.err")" -eq 1 ] && grep -qxF "vitmae: $c: unknown flag '"'"'--bogus'"'"' (see vitmae $c --help)" "$dir/k.err"'
done
kgone=$(echo "$ksmall" | sed "s|--data [^ ]*|--data $dir/nothing|")
mpi -np 1 env VITMAE_GEMM=ref "$VITMAE" train $kgone --out "$dir/k4" : -np 1 env VITMAE_GEMM=portable "$VITMAE" train $kgone \
  --out "$dir/k4" > "$dir/k.out" 2> "$dir/k.err"; rc=$?
t "-np 2, VITMAE_GEMM differing, train of a --data folder not there: refused, one line, no warning ($rc: $(head -n 3 "$dir/k.err" | tr '\n' '|'))" \
  '[ $rc -ne 0 ] && [ "$(grep -c "^vitmae" "$dir/k.err")" -eq 1 ] && ! grep -q "warning" "$dir/k.err"'

# The processes on one machine share its memory: each may take its even share, and a model that fits
# the machine once but not once a process is refused by every rank, one line naming the share, exit 2,
# before anything is allocated. In a 0.50 GiB memory cgroup (where one can be made) a model of about
# 0.3 GiB runs in one process; under -np 2 each rank checked it against the whole 0.50 GiB, passed,
# and the two together were killed by the out-of-memory killer.
cgroup_make memory
if [ -n "$cg" ] && [ "${VITMAE_SANITIZED:-0}" != 1 ]; then
  "$VITMAE_TOOLS/synth" "$dir/cgdata" --count 8 --size 128 --seed 1 > /dev/null
  share="--data $dir/cgdata --img 256 --patch 32 --dim 512 --heads 8 --depth 3 --dec-dim 64 --dec-heads 1 --dec-depth 1 --batch 4 --groups 2 --threads 1 --steps 1 --val-frac 0"
  in_cg "$VITMAE" train $share --out "$dir/cg1" > /dev/null 2> "$dir/cg.err"; rc=$?
  t "a 0.50 GiB cgroup, one process: the model runs ($rc: $(head -c 300 "$dir/cg.err"))" '[ $rc -eq 0 ] && [ -s "$dir/cg1/checkpoint.safetensors" ]'
  in_cg env ASAN_OPTIONS="$mpi_asan" mpirun --oversubscribe --bind-to none -np 2 "$VITMAE" train $share --out "$dir/cg2" \
    > /dev/null 2> "$dir/cg.err"; rc=$?
  t "... -np 2: refused, exit 2, one line naming each process's share ($rc: $(head -c 400 "$dir/cg.err"))" \
    '[ $rc -eq 2 ] && [ "$(grep -c "^vitmae" "$dir/cg.err")" -eq 1 ] && grep -q "^vitmae: train: batch 2 at 256x256 needs [0-9]* bytes (0.[0-9]* GiB, of which .*); its memory cgroup allows each of its 2 processes 0.25 GiB: --batch 4 runs 2 images at a time$" "$dir/cg.err" && [ ! -e "$dir/cg2" ]'
  cgroup_remove
else
  echo "note: the memory share of two processes not checked (no memory cgroup can be made here, or sanitizers)"
fi

[ $fail -eq 0 ] && echo "cli mpi usage ok"
exit $fail
