#!/bin/sh
# Runs every test program in DIR and every tests/cli_*.sh script against the vitmae binary.
# Usage: tests/run.sh TEST_BIN_DIR VITMAE_BIN TOOLS_DIR [TEST...]
# With TEST arguments (paths of test programs or scripts) only those run, in that order.
# Each test runs in a scratch folder of its own: the working directory is an empty folder and TMPDIR
# another; a test that leaves anything in either (output, temporary files) fails, so no test can
# write into the repository or leave files behind. Each test exits 0 on success; the last line is
# "N passed, N failed".
# Tests run VITMAE_TEST_JOBS at a time (default 2; docs/testing.md): most of a command-line test's
# time is spent waiting (mpirun's start and teardown, a signal's grace, a child's exit), so two side
# by side keep both cores busy. Their lines are printed in the list's order whatever order they end in.
# Environment: VITMAE_STOP_FIRST=1 stops at the first failure (tools/mutate.sh; one test at a time
# unless VITMAE_TEST_JOBS says otherwise); VITMAE_TEST_TIMEOUT=S (per test, seconds; tools/mutate.sh):
# a test still running after S fails.
# OpenMP threads sleep at barriers (OMP_WAIT_POLICY=passive) unless the caller chose a policy: the
# test programs run thousands of tiny parallel regions, and on shared cores libgomp's default spin
# made test_gradcheck 16x slower (21 s against 1.3 s at load 15 on 2 cores). Results do not change.
if [ -z "${OMP_WAIT_POLICY:-}" ] && [ -z "${GOMP_SPINCOUNT:-}" ]; then OMP_WAIT_POLICY=passive; export OMP_WAIT_POLICY; fi
# The tests run under umask 022 whatever the caller's: the permission checks run commands as the user
# nobody (tests/lib.sh, as_user), who must read the test's files. Under a caller's umask 077 every file
# and folder a test made was its owner's alone, and those checks were skipped (a note, unseen in a PASS).
# A test of the umask's own effect sets the umask it checks (cli_pipeline.sh).
umask 0022

# run_one RESULTS N: runs the list's Nth test and leaves its report in RESULTS/N.out and its status in
# RESULTS/N.rc (written last: the file the printer waits for).
run_one() {
  t=$(sed -n "${2}p" "$1/list")
  name=$(basename "$t"); path=$(realpath "$t")
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/vitmae-run.XXXXXX") || { echo 1 > "$1/$2.rc"; return; }
  chmod 755 "$scratch"   # the permission checks run commands as an ordinary user (tests/lib.sh, as_user)
  mkdir "$scratch/cwd" "$scratch/tmp"
  log="$scratch/log"
  limit=""
  [ -n "${VITMAE_TEST_TIMEOUT:-}" ] && limit="timeout -k 5 $VITMAE_TEST_TIMEOUT"
  start=$(date +%s.%N)
  case "$t" in
    *.sh) (cd "$scratch/cwd" && TMPDIR="$scratch/tmp" $limit sh "$path") >"$log" 2>&1 < /dev/null ;;
    *)    (cd "$scratch/cwd" && TMPDIR="$scratch/tmp" $limit "$path") >"$log" 2>&1 < /dev/null ;;
  esac
  rc=$?
  # In the C locale: a caller's decimal comma made "2,05 s", which tools/mutate.sh's times did not read.
  secs=$(LC_ALL=C awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  left=$(cd "$scratch" && find cwd tmp -mindepth 1 -maxdepth 2 | head -n 5 | tr '\n' ' ')
  if [ $rc -eq 0 ] && [ -n "$left" ]; then
    echo "left files behind (each test writes only under its own mktemp folder and removes it): $left" >>"$log"
    rc=99
  fi
  if [ $rc -eq 0 ]; then
    echo "PASS $name (${secs} s; $(tail -n 1 "$log"))"
  else
    [ $rc -eq 124 ] && echo "timed out after ${VITMAE_TEST_TIMEOUT:-?} s" >>"$log"
    echo "FAIL $name (exit $rc, ${secs} s)"; sed 's/^/    /' "$log" | tail -n 40
  fi > "$1/$2.out"
  rm -rf "$scratch"
  echo $rc > "$1/$2.rc.tmp" && mv "$1/$2.rc.tmp" "$1/$2.rc"
}
if [ "${1:-}" = --one ]; then run_one "$2" "$3"; exit 0; fi   # one worker's test (xargs, below)

bindir=$1; VITMAE=$(realpath "$2"); VITMAE_TOOLS=$(realpath "$3"); export VITMAE VITMAE_TOOLS
shift 3
VITMAE_ROOT=$(pwd); export VITMAE_ROOT
[ $# -eq 0 ] && set -- "$bindir"/test_* tests/cli_*.sh
jobs=${VITMAE_TEST_JOBS:-2}
[ "${VITMAE_STOP_FIRST:-0}" = 1 ] && jobs=${VITMAE_TEST_JOBS:-1}
case "$jobs" in ''|*[!0-9]*|0) echo "tests/run.sh: VITMAE_TEST_JOBS: not a count >= 1 ($jobs)"; exit 2 ;; esac
results=$(mktemp -d "${TMPDIR:-/tmp}/vitmae-results.XXXXXX") || exit 1
trap 'rm -rf "$results"' EXIT
trap 'exit 130' INT TERM
# `python3` in the tests is Debian's /usr/bin/python3 where the machine has it: the interpreter that
# tools/install-deps.sh installs python3-pil, python3-numpy and python3-torch for. Another one first on
# the caller's PATH (a pyenv shim, a virtual environment) may lack them, and a pyenv shim's start alone
# took 0.29 s against 0.03, some 300 times a pass: the optimised pass's tests summed 1005 s with it and
# 854 s without on the Zen 5 of the eighty-fourth session (docs/testing.md, "Running").
if [ -x /usr/bin/python3 ] && [ "$(command -v python3)" != /usr/bin/python3 ]; then
  mkdir "$results/bin" && ln -s /usr/bin/python3 "$results/bin/python3" && PATH="$results/bin:$PATH" && export PATH
fi
n=0
for t in "$@"; do [ -e "$t" ] && { echo "$t"; n=$((n + 1)); }; done > "$results/list"
workers=""
if [ "$jobs" -gt 1 ]; then
  # The tests by number, $jobs at a time; each number names its line of the list (paths may hold spaces).
  # The mpirun tests start first: the longest, so the others fill the other core beside them rather
  # than leave one of them running alone at the end.
  { grep -n 'mpi[^/]*$' "$results/list"; grep -vn 'mpi[^/]*$' "$results/list"; } | cut -d: -f1 |
    xargs -P "$jobs" -n 1 sh "$0" --one "$results" &
  workers=$!
fi
pass=0; fail=0; failed=""
i=1
while [ $i -le $n ]; do
  if [ -z "$workers" ]; then
    run_one "$results" $i
  else
    while [ ! -e "$results/$i.rc" ] && kill -0 $workers 2>/dev/null; do sleep 0.2; done
  fi
  cat "$results/$i.out" 2>/dev/null
  rc=$(cat "$results/$i.rc" 2>/dev/null || echo lost)
  name=$(basename "$(sed -n "${i}p" "$results/list")")
  if [ "$rc" = 0 ]; then
    pass=$((pass + 1))
  else
    [ "$rc" = lost ] && echo "FAIL $name (its worker ended without a report)"
    fail=$((fail + 1)); failed="$failed $name"
    [ "${VITMAE_STOP_FIRST:-0}" = 1 ] && break
  fi
  i=$((i + 1))
done
[ -n "$workers" ] && { kill $workers 2>/dev/null; wait $workers 2>/dev/null; }
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
