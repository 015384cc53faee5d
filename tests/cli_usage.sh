#!/bin/sh
# The top-level command line: help, unknown commands, exit statuses.
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT; trap 'exit 1' HUP INT TERM
cd "$tmp" || exit 1   # a command that wrongly writes to the working directory writes here
t() { if eval "$2"; then :; else echo "FAILED: $1"; fail=1; fi; }
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
