#!/bin/sh
# The top-level command line: help, unknown commands, exit statuses, and every flag of every command
# named in docs/interface.md.
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
# docs/interface.md states the interface flag by flag: every flag of every command's --help appears in
# that command's part of it (its "### `vitmae CMD" subsection of section 5 or its "- `vitmae CMD" item
# of section 8; for train also sections 2, 3, 7 and 9, which describe its data, model, processes and
# run folders). undocumented_flags DOC prints "CMD --flag" for each flag missing from DOC.
undocumented_flags() {
  "$VITMAE" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' > "$tmp/cmds"
  while read -r cmd; do
    awk -v cmd="$cmd" '
      /^## [0-9]+\./ { sec = $2 + 0; part = ""; next }
      /^### `vitmae / { part = $3 }
      /^### / && !/^### `vitmae / { part = ""; next }
      sec == 8 && /^- `vitmae / { part = $3 }
      { p = part; gsub(/`/, "", p) }
      p == cmd || (cmd == "train" && (sec == 2 || sec == 3 || sec == 7 || sec == 9)) { print }
    ' "$1" > "$tmp/part"
    "$VITMAE" "$cmd" --help | awk '/^  --/ { print $1 }' | while read -r flag; do
      grep -Eq -- "$flag([^a-z-]|\$)" "$tmp/part" || echo "$cmd $flag"
    done
  done < "$tmp/cmds"
}
doc="$VITMAE_ROOT/docs/interface.md"
missing=$(undocumented_flags "$doc")
t "every --help flag is in its command's part of docs/interface.md (missing: $(echo $missing))" '[ -z "$missing" ]'
# The check can fail: a copy of the file without one flag (and with --val but not --val-max).
sed 's/--linear-lr//g' "$doc" > "$tmp/no-flag.md"
t "a flag missing from docs/interface.md is found" 'undocumented_flags "$tmp/no-flag.md" | grep -qx "probe --linear-lr"'
sed 's/--val-max//g' "$doc" > "$tmp/no-flag.md"
t "a flag whose name begins another's (--val) is still found" \
  'undocumented_flags "$tmp/no-flag.md" | grep -qx "train --val-max" && ! undocumented_flags "$tmp/no-flag.md" | grep -qx "train --val"'

[ $fail -eq 0 ] && echo "cli usage ok"
exit $fail
