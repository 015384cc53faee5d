#!/bin/sh
# Runs every test program in DIR and every tests/cli_*.sh script against the vitmae binary.
# Usage: tests/run.sh TEST_BIN_DIR VITMAE_BIN TOOLS_DIR
# Each test exits 0 on success; the last line is "N passed, N failed".
bindir=$1; VITMAE=$(realpath "$2"); VITMAE_TOOLS=$(realpath "$3"); export VITMAE VITMAE_TOOLS
VITMAE_ROOT=$(pwd); export VITMAE_ROOT
pass=0; fail=0; failed=""
for t in "$bindir"/test_* tests/cli_*.sh; do
  [ -e "$t" ] || continue
  name=$(basename "$t")
  log=$(mktemp)
  case "$t" in
    *.sh) sh "$t" >"$log" 2>&1 ;;
    *)    "$t" >"$log" 2>&1 ;;
  esac
  rc=$?
  if [ $rc -eq 0 ]; then
    pass=$((pass + 1)); echo "PASS $name ($(tail -n 1 "$log"))"
  else
    fail=$((fail + 1)); failed="$failed $name"
    echo "FAIL $name (exit $rc)"; sed 's/^/    /' "$log" | tail -n 40
  fi
  rm -f "$log"
done
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
