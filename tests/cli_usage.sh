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
[ $fail -eq 0 ] && echo "cli usage ok"
exit $fail
