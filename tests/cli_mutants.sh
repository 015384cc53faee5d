#!/bin/sh
# tests/mutants.txt stays current with the code: every mutant's original text is found exactly once in
# its file (tools/mutate.sh with MUTATE_CHECK=1 builds and runs nothing), so `make mutate` never meets
# a mutant whose code moved (docs/testing.md, "Mutation testing"). And the check itself fails on a list
# with a stale mutant.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch
scratch tmp
cd "$tmp" || exit 1
out=$(MUTATE_CHECK=1 sh "$VITMAE_ROOT/tools/mutate.sh" 2>&1); rc=$?
t "every mutant of tests/mutants.txt applies" '[ $rc -eq 0 ] && echo "$out" | grep -q ", 0 do not apply$"'
[ $rc -eq 0 ] || echo "$out" | grep DOES-NOT-APPLY
printf 'stale :: src/core/model.c :: text that is not in the file :: x\n# a comment\n\n' > "$tmp/list"
printf 'twice :: tests/cli_mutants.sh :: fail :: x\n' >> "$tmp/list"
out=$(MUTATE_CHECK=1 sh "$VITMAE_ROOT/tools/mutate.sh" "$tmp/list" 2>&1); rc=$?
t "a stale mutant fails the check" '[ $rc -eq 1 ] && echo "$out" | grep -q "^DOES-NOT-APPLY stale .*found 0 times"'
t "a text found twice fails the check" 'echo "$out" | grep -q "^DOES-NOT-APPLY twice .*found [2-9][0-9]* times"'
t "the check counts the mutants, not comments or blank lines" 'echo "$out" | grep -q "^mutate: 2 mutants, 2 do not apply$"'
[ $fail -eq 0 ] && echo "cli mutants ok"
exit $fail
