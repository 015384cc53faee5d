#!/bin/sh
# Runs every test program in DIR and every tests/cli_*.sh script against the vitmae binary.
# Usage: tests/run.sh TEST_BIN_DIR VITMAE_BIN TOOLS_DIR [TEST...]
# With TEST arguments (paths of test programs or scripts) only those run, in that order.
# Each test runs in a scratch folder of its own: the working directory is an empty folder and TMPDIR
# another; a test that leaves anything in either (output, temporary files) fails, so no test can
# write into the repository or leave files behind. Each test exits 0 on success; the last line is
# "N passed, N failed".
# Environment: VITMAE_STOP_FIRST=1 stops at the first failure (tools/mutate.sh);
# VITMAE_TEST_TIMEOUT=S (per test, seconds; tools/mutate.sh): a test still running after S fails.
# OpenMP threads sleep at barriers (OMP_WAIT_POLICY=passive) unless the caller chose a policy: the
# test programs run thousands of tiny parallel regions, and on shared cores libgomp's default spin
# made test_gradcheck 16x slower (21 s against 1.3 s at load 15 on 2 cores). Results do not change.
if [ -z "${OMP_WAIT_POLICY:-}" ] && [ -z "${GOMP_SPINCOUNT:-}" ]; then OMP_WAIT_POLICY=passive; export OMP_WAIT_POLICY; fi
bindir=$1; VITMAE=$(realpath "$2"); VITMAE_TOOLS=$(realpath "$3"); export VITMAE VITMAE_TOOLS
shift 3
VITMAE_ROOT=$(pwd); export VITMAE_ROOT
[ $# -eq 0 ] && set -- "$bindir"/test_* tests/cli_*.sh
pass=0; fail=0; failed=""
for t in "$@"; do
  [ -e "$t" ] || continue
  name=$(basename "$t"); path=$(realpath "$t")
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/vitmae-run.XXXXXX") || exit 1
  chmod 755 "$scratch"   # the permission checks run commands as an ordinary user (tests/lib.sh, as_user)
  mkdir "$scratch/cwd" "$scratch/tmp"
  log="$scratch/log"
  limit=""
  [ -n "${VITMAE_TEST_TIMEOUT:-}" ] && limit="timeout -k 5 $VITMAE_TEST_TIMEOUT"
  start=$(date +%s.%N)
  case "$t" in
    *.sh) (cd "$scratch/cwd" && TMPDIR="$scratch/tmp" $limit sh "$path") >"$log" 2>&1 ;;
    *)    (cd "$scratch/cwd" && TMPDIR="$scratch/tmp" $limit "$path") >"$log" 2>&1 ;;
  esac
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  left=$(cd "$scratch" && find cwd tmp -mindepth 1 -maxdepth 2 | head -n 5 | tr '\n' ' ')
  if [ $rc -eq 0 ] && [ -n "$left" ]; then
    echo "left files behind (each test writes only under its own mktemp folder and removes it): $left" >>"$log"
    rc=99
  fi
  if [ $rc -eq 0 ]; then
    pass=$((pass + 1)); echo "PASS $name (${secs} s; $(tail -n 1 "$log"))"
  else
    fail=$((fail + 1)); failed="$failed $name"
    [ $rc -eq 124 ] && echo "timed out after ${VITMAE_TEST_TIMEOUT:-?} s" >>"$log"
    echo "FAIL $name (exit $rc, ${secs} s)"; sed 's/^/    /' "$log" | tail -n 40
  fi
  rm -rf "$scratch"
  [ $rc -ne 0 ] && [ "${VITMAE_STOP_FIRST:-0}" = 1 ] && break
done
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
