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

# The same thing said the same way by every command: a missing required flag or INPUT points to the
# command's --help (reconstruct, eval, classify and probe did not; "no INPUT" had three wordings), and
# a checkpoint that cannot be read is named first, "vitmae: PATH: why", as reconstruct, eval, classify,
# info, train and finetune say it (embed, probe and attention put "embed: " before the file).
"$VITMAE_TOOLS/synth" "$tmp/imgs" --count 2 --size 8 --classes 2 > /dev/null || fail=1
# args_of CMD: what CMD needs besides --ckpt (one image folder).
args_of() {
  case $1 in
    eval) echo "--data $tmp/imgs" ;; probe) echo "--train $tmp/imgs --test $tmp/imgs" ;;
    embed) echo "--out $tmp/o.npy $tmp/imgs" ;; *) echo "$tmp/imgs" ;;
  esac
}
for cmd in reconstruct eval classify probe embed attention; do
  "$VITMAE" $cmd $(args_of $cmd) 2>"$tmp/err" >/dev/null; rc=$?
  t "$cmd without --ckpt: exit 2, one line pointing to its --help ($(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $cmd: --ckpt FILE is required (see vitmae $cmd --help)" ]'
  "$VITMAE" $cmd --ckpt "$tmp/none.safetensors" $(args_of $cmd) 2>"$tmp/err" >/dev/null; rc=$?
  t "$cmd --ckpt of a missing file: exit 1, the file named first ($(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/none.safetensors: No such file or directory" ]'
done
for cmd in reconstruct classify embed attention; do
  extra=; [ $cmd = embed ] && extra="--out $tmp/o.npy"
  "$VITMAE" $cmd --ckpt "$tmp/none.safetensors" $extra 2>"$tmp/err" >/dev/null; rc=$?
  t "$cmd without INPUT: exit 2, one wording ($(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $cmd: no INPUT: give image files or folders (see vitmae $cmd --help)" ]'
done
# A folder without an image: train's and data's words in every command ("no decodable image", "no
# decodable image in this folder" and "no image in this folder" before).
mkdir -p "$tmp/empty"; echo notes > "$tmp/empty/notes.txt"
"$VITMAE_TOOLS/hostile" ckpt "$tmp/m.safetensors" 8 4 && "$VITMAE_TOOLS/hostile" clf "$tmp/c.safetensors" 8 4 || fail=1
for cmd in reconstruct eval classify embed attention; do
  case $cmd in eval) a="--data $tmp/empty" ;; embed) a="--out $tmp/e.npy $tmp/empty" ;; *) a="--out $tmp/o $tmp/empty" ;; esac
  ck="$tmp/m.safetensors"; [ $cmd = classify ] && { ck="$tmp/c.safetensors"; a="$tmp/empty"; }
  "$VITMAE" $cmd --ckpt "$ck" $a 2>"$tmp/err" >/dev/null; rc=$?
  t "$cmd of a folder without an image: exit 1, data's words ($(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/empty: no decodable image (0 skipped, 1 ignored)" ]'
done
"$VITMAE" eval --ckpt "$tmp/none.safetensors" 2>"$tmp/err"; rc=$?
t "eval without --data: points to its --help" '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: eval: --data DIR is required (see vitmae eval --help)" ]'
"$VITMAE" embed --ckpt "$tmp/none.safetensors" "$tmp/imgs" 2>"$tmp/err"; rc=$?
t "embed without --out: points to its --help" '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: embed: --out FEATS.npy is required (see vitmae embed --help)" ]'
"$VITMAE" data 2>"$tmp/err"; rc=$?
t "data without DIR: points to its --help" '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: data: missing DIR: give the folder to check (see vitmae data --help)" ]'

# A checkout whose path has a space (`~/My projects/vitmae`): make test's sanitizer pass hands
# LeakSanitizer its suppressions file by path in LSAN_OPTIONS; unquoted, the shell split the line at
# the space and the pass stopped with "ace/main/tests/lsan.supp:print_suppressions=0: not found". The
# recipe `make -n` prints for such a CURDIR, run with printenv in place of the tests, must give the
# whole path in the quotes the sanitizers' option parser reads.
space="$tmp/a b"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -n -C "$VITMAE_ROOT" test-san CURDIR="$space" 2>"$tmp/err" |
  awk '/^ASAN_OPTIONS=/ { on = 1 } on { print } on && /tests\/run\.sh/ { exit }' |
  sed 's|sh tests/run\.sh .*$|printenv LSAN_OPTIONS|' > "$tmp/recipe"
got=$(sh "$tmp/recipe" 2>&1)
t "make test-san in a path with a space: LSAN_OPTIONS whole (got: $got)" \
  '[ "$got" = "suppressions=\"$space/tests/lsan.supp\":print_suppressions=0" ]'
# A value left out before another flag: "--out --force" took "--force" as the folder's name (a folder
# named --force made, nothing forced). One line, exit 2, nothing made; "--out=--force" still names one.
"$VITMAE" attention --ckpt "$VITMAE_ROOT/tests/fixtures/attn_model.safetensors" --out --force "$VITMAE_ROOT/tests/fixtures/attn_input.png" > /dev/null 2> "$tmp/err"; rc=$?
t "attention --out --force IMAGE: exit 2, one line, no folder named --force ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "^vitmae: attention: flag --out needs a value (the next argument, --force, is a flag; a file so named is written --out=--force or --out ./--force)$" "$tmp/err" && [ ! -e "$tmp/--force" ]'
"$VITMAE" data --json --max-pixels --json "$tmp" > /dev/null 2> "$tmp/err"; rc=$?
t "data --max-pixels --json: exit 2, the flag named ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: data: flag --max-pixels needs a value (the next argument, --json, is a flag)$" "$tmp/err"'

[ $fail -eq 0 ] && echo "cli usage ok"
exit $fail
