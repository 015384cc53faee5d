#!/bin/sh
# The top-level command line: help, unknown commands, exit statuses.
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch tmp
cd "$tmp" || exit 1   # a command that wrongly writes to the working directory writes here
out=$("$VITMAE" --help); rc=$?
t "--help exits 0" '[ $rc -eq 0 ]'
t "--help prints usage" 'echo "$out" | grep -q "usage: vitmae COMMAND"'
"$VITMAE" frobnicate 2>"$tmp/err"; rc=$?
t "unknown command exits 2" '[ $rc -eq 2 ]'
t "unknown command message" 'grep -q "^vitmae: frobnicate: unknown command" "$tmp/err"'
"$VITMAE" 2>/dev/null; rc=$?
t "no command exits 2" '[ $rc -eq 2 ]'
# tools/fresh_debian.sh (docs/testing.md) refuses before it bootstraps anything: no DIR, or a DIR that
# exists (it would write a whole system into it).
sh "$VITMAE_ROOT/tools/fresh_debian.sh" 2>"$tmp/err"; rc=$?
t "fresh_debian.sh without DIR exits 2" '[ $rc -eq 2 ] && grep -q "^usage: tools/fresh_debian.sh DIR" "$tmp/err"'
sh "$VITMAE_ROOT/tools/fresh_debian.sh" "$tmp" 2>"$tmp/err"; rc=$?
t "fresh_debian.sh into an existing folder exits 2" '[ $rc -eq 2 ] && grep -q "^vitmae: $tmp: already exists" "$tmp/err"'
[ $fail -eq 0 ] && echo "cli usage ok"
exit $fail
