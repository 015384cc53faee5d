#!/bin/sh
# `vitmae data`: counts, classes and skipped files (JSON) on a synthetic folder with bad files; exit
# statuses for an empty folder, a missing folder and an unknown flag.
fail=0
t() { if eval "$2"; then :; else echo "FAILED: $1"; fail=1; fi; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT; trap 'exit 1' HUP INT TERM
cd "$dir" || exit 1   # a command that wrongly writes to the working directory writes here
"$VITMAE_TOOLS/synth" "$dir/set" --count 10 --size 16 --classes 3 --seed 1 >/dev/null
t "synth exits 0" '[ $? -eq 0 ]'
printf 'not a png' > "$dir/set/circle/broken.png"
head -c 50 "$dir/set/square/00001.png" > "$dir/set/square/cut.png"
printf 'notes' > "$dir/set/README.txt"

out=$("$VITMAE" data --json "$dir/set" 2>"$dir/err"); rc=$?
t "data --json exits 0" '[ $rc -eq 0 ]'
check=$(printf '%s' "$out" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
want_classes = {"circle": 4, "square": 3, "triangle": 3}
ok = (d["ok"] == 10 and d["skipped"] == 2 and d["ignored"] == 1 and d["classes"] == want_classes
      and [(f["path"].split("/set/")[1], f["reason"]) for f in d["skipped_files"]]
          == [("circle/broken.png", "not a PNG or JPEG file"), ("square/cut.png", "truncated PNG data")])
print("ok" if ok else "bad: %r" % d)' 2>&1)
t "JSON counts, classes, skipped files ($check)" '[ "$check" = ok ]'

out=$("$VITMAE" data "$dir/set"); rc=$?
t "text form exits 0" '[ $rc -eq 0 ]'
t "text form has the counts" 'echo "$out" | grep -q "10 ok, 2 skipped, 1 ignored"'
t "text form lists classes" 'echo "$out" | grep -q "circle *4"'
t "text form lists the skipped reason" 'echo "$out" | grep -q "cut.png: truncated PNG data"'

mkdir "$dir/empty"
"$VITMAE" data "$dir/empty" >/dev/null 2>"$dir/err"; rc=$?
t "empty folder exits 1" '[ $rc -eq 1 ]'
t "empty folder message" 'grep -q "^vitmae: .*/empty: no decodable image (0 skipped, 0 ignored)" "$dir/err"'
"$VITMAE" data "$dir/missing" >/dev/null 2>"$dir/err"; rc=$?
t "missing folder exits 1" '[ $rc -eq 1 ]'
t "missing folder message" 'grep -q "^vitmae: .*/missing: " "$dir/err"'
"$VITMAE" data --frobnicate "$dir/set" >/dev/null 2>"$dir/err"; rc=$?
t "unknown flag exits 2" '[ $rc -eq 2 ]'
"$VITMAE" data >/dev/null 2>&1; rc=$?
t "missing DIR exits 2" '[ $rc -eq 2 ]'
"$VITMAE" data --max-pixels 100 "$dir/set" >/dev/null 2>&1; rc=$?
t "--max-pixels below every image: nothing usable, exit 1" '[ $rc -eq 1 ]'
"$VITMAE" data --help >/dev/null; rc=$?
t "--help exits 0" '[ $rc -eq 0 ]'
rm -rf "$dir"
[ $fail -eq 0 ] && echo "cli data ok"
exit $fail
