#!/bin/sh
# `make mutate`: plants plausible one-line bugs (mutants) one at a time in a scratch copy of the tree
# and runs the optimised test suite against each, stopping at the first failing test. A mutant that
# makes a test fail is KILLED; one that passes every test SURVIVED: a missing test.
#
# Usage: tools/mutate.sh [LIST]          (LIST default tests/mutants.txt)
#   MUTANTS="name1 name2"  only these mutants;  MUTATE_JOBS=N  make -j (default 2);
#   MUTATE_TESTS="build/tests/test_x tests/cli_y.sh"  only these tests, in this order (e.g. to see
#   whether a new test kills a mutant); MUTATE_VERBOSE=1  show how the killing test failed;
#   MUTATE_CHECK=1  only whether every mutant applies, nothing built or run (seconds: tests/cli_mutants.sh).
#
# LIST: one mutant a line, four fields separated by " :: ":
#   name :: file :: original text :: replacement
# The original text must occur exactly once in the file (in one line); that occurrence is replaced.
# A mutant whose text is not found (the code moved or changed) or is found more than once is reported
# as DOES-NOT-APPLY, never skipped silently; one that does not build is INVALID. Lines starting with
# '#' and blank lines are ignored.
#
# First the unmutated suite runs in the scratch copy (it must pass); its per-test times order the
# tests cheap-first for the mutants (tests that killed earlier mutants go first) and give each test a
# time limit (a mutant that hangs is killed by the limit). Exit status 0 when every mutant applies, builds and is killed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
list=$(realpath "${1:-$root/tests/mutants.txt}")
jobs=${MUTATE_JOBS:-2}
only=${MUTANTS:-}
sep=' :: '
# A list line's fields: name, file, original text, replacement.
read_mutant() {
  name=${1%%"$sep"*}; rest=${1#*"$sep"}
  file=${rest%%"$sep"*}; rest=${rest#*"$sep"}
  orig=${rest%%"$sep"*}; repl=${rest#*"$sep"}
}
# How many times text $2 occurs in file $1 (0 when there is no such file): the mutant applies at 1.
occurrences() {
  if [ -f "$1" ]; then
    ORIG="$2" awk '{ s = $0; while ((i = index(s, ENVIRON["ORIG"])) > 0) { n++; s = substr(s, i + length(ENVIRON["ORIG"])) } } END { print n + 0 }' "$1"
  else echo 0; fi
}
no_apply() { printf '%-14s %-34s (%s: original text found %s times)\n' DOES-NOT-APPLY "$name" "$file" "$1"; }

if [ "${MUTATE_CHECK:-0}" = 1 ]; then
  n=0; bad=0
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in ''|'#'*) continue ;; esac
    read_mutant "$line"; n=$((n + 1))
    count=$(occurrences "$root/$file" "$orig")
    [ "$count" -eq 1 ] || { bad=$((bad + 1)); no_apply "$count"; }
  done < "$list"
  echo "mutate: $n mutants, $bad do not apply"
  [ $bad -eq 0 ]; exit
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/vitmae-mutate.XXXXXX") || exit 1
chmod 755 "$scratch"   # the permission checks run the mutated vitmae as an ordinary user (tests/lib.sh, as_user)
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' HUP INT TERM
tree="$scratch/tree"
t_start=$(date +%s)
elapsed() { echo $(( $(date +%s) - t_start )); }

# The working tree as it is (tracked and untracked files, not ignored ones), modification times kept,
# plus the optimised build outputs so the first build is incremental.
mkdir "$tree"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - 2>/dev/null) \
  | tar -xpf - -C "$tree" || { echo "mutate: cannot copy the tree"; exit 1; }
if [ -d "$root/build/obj" ]; then
  mkdir -p "$tree/build"
  for p in obj tests tools libvitmae.a .deps-ok; do
    [ -e "$root/build/$p" ] && cp -pR "$root/build/$p" "$tree/build/"
  done
  [ -e "$root/vitmae" ] && cp -p "$root/vitmae" "$tree/"
fi

mk() { make -C "$tree" -j"$jobs" --no-print-directory "$@" >> "$scratch/build.log" 2>&1 < /dev/null; }
build() { : > "$scratch/build.log"; mk build-fast; }
suite() {   # suite [TIMEOUT] [TESTS...]: the optimised suite in the scratch tree
  limit=$1; shift
  (cd "$tree" && VITMAE_STOP_FIRST=1 VITMAE_TEST_TIMEOUT="$limit" sh tests/run.sh build/tests ./vitmae build/tools "$@" < /dev/null)
}

cp "$list" "$scratch/mutants.txt" || exit 1   # the list as it is now, whatever happens to it later
echo "mutate: building and running the unmutated suite in $tree"
if ! build; then echo "mutate: the unmutated tree does not build:"; tail -n 20 "$scratch/build.log"; exit 1; fi
# shellcheck disable=SC2086
suite "" ${MUTATE_TESTS:-} > "$scratch/base.log" 2>&1
if ! tail -n 1 "$scratch/base.log" | grep -q " 0 failed"; then
  echo "mutate: the unmutated suite fails; fix it first:"; grep -A 20 '^FAIL' "$scratch/base.log" | head -n 30
  exit 1
fi
# Tests ordered by their time (cheap first); the limit is 4 x the slowest + 60 s.
order=$(sed -n 's/^PASS \([^ ]*\) (\([0-9.]*\) s;.*/\2 \1/p' "$scratch/base.log" | sort -n -k1,1 |
        while read -r s n; do case $n in *.sh) echo "tests/$n" ;; *) echo "build/tests/$n" ;; esac; done)
slowest=$(sed -n 's/^PASS [^ ]* (\([0-9.]*\) s;.*/\1/p' "$scratch/base.log" | sort -n | tail -n 1)
limit=$(awk -v s="$slowest" 'BEGIN { printf "%d", 4 * s + 60 }')
echo "mutate: baseline passed in $(elapsed) s ($(echo "$order" | wc -l) tests, per-test limit $limit s)"

killed=0; survived=0; invalid=0; noapply=0; total=0; killers=""
survivors=""; invalids=""; noapplies=""
while IFS= read -r line || [ -n "$line" ]; do
  case $line in ''|'#'*) continue ;; esac
  read_mutant "$line"
  if [ -n "$only" ]; then case " $only " in *" $name "*) ;; *) continue ;; esac; fi
  total=$((total + 1))
  t0=$(date +%s)
  target="$tree/$file"
  count=$(occurrences "$target" "$orig")
  if [ "$count" -ne 1 ]; then
    noapply=$((noapply + 1)); noapplies="$noapplies $name"
    no_apply "$count"
    continue
  fi
  cp -p "$target" "$scratch/original"
  ORIG="$orig" REPL="$repl" awk '{ i = index($0, ENVIRON["ORIG"]); if (i > 0) $0 = substr($0, 1, i - 1) ENVIRON["REPL"] substr($0, i + length(ENVIRON["ORIG"])); print }' \
    "$scratch/original" > "$target"
  # The program and the library first; each test program is linked just before it runs and the
  # tools just before the first command-line test, so a mutant killed early costs little.
  : > "$scratch/build.log"
  by=""; nobuild=""; tools_built=""
  if ! mk vitmae; then
    nobuild=1
  else
    # Tests that killed earlier mutants go first (most recent first): mutants of the same code tend
    # to fail the same test. The order changes speed only: a survivor has passed every test.
    run_order="$killers $(for t in $order; do case " $killers " in *" $t "*) ;; *) echo "$t" ;; esac; done)"
    for t in $run_order; do
      case $t in
        build/tests/*) mk "$t" || { nobuild=1; break; } ;;
        *) [ -n "$tools_built" ] || { mk all || { nobuild=1; break; }; tools_built=1; } ;;
      esac
      if ! suite "$limit" "$t" > "$scratch/run.log" 2>&1; then
        by=$(basename "$t")
        killers="$t $(for k in $killers; do [ "$k" = "$t" ] || echo "$k"; done)"
        break
      fi
    done
  fi
  if [ -n "$nobuild" ]; then
    invalid=$((invalid + 1)); invalids="$invalids $name"
    printf '%-14s %-34s (does not build: %s)\n' INVALID "$name" "$(grep -m 1 'error' "$scratch/build.log" | cut -c 1-100)"
  else
    if [ -n "$by" ]; then
      killed=$((killed + 1))
      printf '%-14s %-34s by %s (%s s)\n' KILLED "$name" "$by" $(( $(date +%s) - t0 ))
      [ -n "${MUTATE_VERBOSE:-}" ] && sed -n '/^FAIL/,$p' "$scratch/run.log" | head -n 12
    else
      survived=$((survived + 1)); survivors="$survivors $name"
      printf '%-14s %-34s (%s s) %s: %s -> %s\n' SURVIVED "$name" $(( $(date +%s) - t0 )) "$file" "$orig" "$repl"
    fi
  fi
  # Restore with a fresh modification time so that make rebuilds what the mutant touched.
  cp "$scratch/original" "$target"
  touch "$target"
done < "$scratch/mutants.txt"

applied=$((killed + survived))
echo "mutate: $total mutants: $killed killed, $survived survived, $invalid invalid (do not build), $noapply do not apply"
[ $applied -gt 0 ] && echo "mutate: score $killed/$applied = $(awk -v k=$killed -v a=$applied 'BEGIN { printf "%.1f", 100 * k / a }')% killed"
[ -n "$survivors" ] && echo "mutate: survivors:$survivors"
[ -n "$invalids" ] && echo "mutate: invalid:$invalids"
[ -n "$noapplies" ] && echo "mutate: do not apply:$noapplies"
echo "mutate: total time $(elapsed) s"
[ $survived -eq 0 ] && [ $invalid -eq 0 ] && [ $noapply -eq 0 ]
