#!/bin/sh
# `vitmae embed` and `vitmae probe` from the command line: files written (npy header, list), refusal to
# overwrite without --force, bitwise the same for any --threads and --batch, --pool / --layer, --json
# keys, confusion PNGs, --pixels, and every documented bad input (one line on stderr, exit 2 for usage,
# 1 for runtime, nothing written). The numbers themselves are checked against PyTorch in
# tests/test_probe.c. Data: synthetic shapes (build/tools/synth), 16 px, and the attention fixture's
# encoder-only checkpoint (16 px RGB, 3 blocks, D 32).
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
set -u
fail=0
scratch tmp
ck="$VITMAE_ROOT/tests/fixtures/attn_model.safetensors"
n_train=32; n_test=16
[ "${VITMAE_SANITIZED:-0}" = 1 ] && { n_train=16; n_test=8; }
"$VITMAE_TOOLS/synth" "$tmp/train" --count $n_train --size 16 --classes 4 --seed 1 >/dev/null
"$VITMAE_TOOLS/synth" "$tmp/test" --count $n_test --size 16 --classes 4 --seed 2 >/dev/null
one_line() { [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^vitmae: " "$tmp/err"; }
# The shape in an .npy header, e.g. "(32, 32)".
npy_shape() { head -c 128 "$1" | LC_ALL=C tr -d '\000' | LC_ALL=C sed -n "s/.*'shape': \(([0-9, ]*)\).*/\1/p"; }

# --- embed: files -----------------------------------------------------------------------------------
"$VITMAE" embed --ckpt "$ck" --out "$tmp/f.npy" "$tmp/train" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "embed exits 0" '[ $rc -eq 0 ]'
t "npy shape [N, D]" '[ "$(npy_shape "$tmp/f.npy")" = "($n_train, 32)" ]'
t "npy size = 128-byte header + N*D*4" '[ "$(wc -c <"$tmp/f.npy")" -eq $((128 + n_train * 32 * 4)) ]'
t "txt has N lines" '[ "$(wc -l <"$tmp/f.txt")" -eq $n_train ]'
t "txt line: path<TAB>class, the path as found under the INPUT folder" '[ "$(head -n 1 "$tmp/f.txt")" = "$(printf "%s/circle/00000.png\tcircle" "$tmp/train")" ]'
t "txt classes from folders" '[ "$(cut -f2 "$tmp/f.txt" | sort -u | tr "\n" " ")" = "circle square stripes triangle " ]'
t "no temporary files left" '[ "$(ls "$tmp" | grep -c tmp)" -eq 0 ]'
# --blocks K: the K blocks ending at --layer side by side, each row the single blocks' rows in order
# (DINO's n_last_blocks); more blocks than there are before --layer refused, exit 2, nothing written.
"$VITMAE" embed --ckpt "$ck" --pool mean --blocks 3 --out "$tmp/fb.npy" "$tmp/train" >"$tmp/out" 2>"$tmp/err"; rc=$?
for l in 0 1 2; do "$VITMAE" embed --ckpt "$ck" --pool mean --layer $l --out "$tmp/fb$l.npy" "$tmp/train" >/dev/null 2>&1; done
cat_ok=$(python3 - "$tmp/fb.npy" "$tmp/fb0.npy" "$tmp/fb1.npy" "$tmp/fb2.npy" <<'PY'
import sys
rows = lambda p, w: (lambda b: [b[i:i + w] for i in range(128, len(b), w)])(open(p, "rb").read())
D = 32 * 4
cat, parts = rows(sys.argv[1], 3 * D), [rows(p, D) for p in sys.argv[2:]]
print("same" if cat and len(cat) == len(parts[0]) and all(c == a + b + d for c, a, b, d in zip(cat, *parts)) else "differ")
PY
)
t "embed --blocks 3: [N, 3 x D], each row blocks 0, 1, 2's side by side ($rc: $cat_ok; $(cat "$tmp/out"))" \
  '[ $rc -eq 0 ] && [ "$(npy_shape "$tmp/fb.npy")" = "($n_train, 96)" ] && [ "$cat_ok" = same ] &&
   grep -q "^$n_train images -> .* \[$n_train, 96\] (mean tokens, blocks 0..2 of 0..2 side by side) and " "$tmp/out"'
"$VITMAE" embed --ckpt "$ck" --blocks 2 --layer 0 --out "$tmp/fbx.npy" "$tmp/train" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "embed --blocks 2 --layer 0: refused, exit 2, one line, nothing written ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: embed --blocks: 2 blocks ending at block 0 would begin before block 0: at most 1" ] && [ ! -e "$tmp/fbx.npy" ] && [ ! -e "$tmp/fbx.txt" ]'
"$VITMAE" probe --ckpt "$ck" --blocks 2 --train "$tmp/train" --test "$tmp/test" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe --blocks 2: blocks 1 and 2 side by side, 64 values ($rc: $(head -n 1 "$tmp/out"))" \
  '[ $rc -eq 0 ] && head -n 1 "$tmp/out" | grep -q "^probe: encoder cls token, blocks 1..2 of 0..2 side by side, .* (dim 64); "'
"$VITMAE" probe --ckpt "$ck" --blocks 4 --train "$tmp/train" --test "$tmp/test" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe --blocks 4 of 3 blocks: refused, exit 2 ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: probe --blocks: 4 blocks ending at block 2 would begin before block 0: at most 3" ]'

# `vitmae embed ... | head`: stdout's reader gone. SIGPIPE ended embed at its summary line (exit 141);
# now the line is dropped, one line on stderr says so, the pair is written whole, exit 0.
closed_pipe stdout "$tmp/pipe.err" "$VITMAE" embed --ckpt "$ck" --out "$tmp/fp.npy" "$tmp/train"; rc=$?
t "embed, stdout's reader gone: FEATS.npy and FEATS.txt whole, exit 0 ($rc: $(cat "$tmp/pipe.err"))" \
  '[ $rc -eq 0 ] && cmp -s "$tmp/f.npy" "$tmp/fp.npy" && cmp -s "$tmp/f.txt" "$tmp/fp.txt" && [ $(grep -c "standard output: its reader has gone" "$tmp/pipe.err") -eq 1 ]'

# FEATS.txt read back as docs/encoder.md reads it: a row per image, and the names os.listdir gives. A \r
# was written as it is (2 images read as 7 rows by Python's universal newlines); then the other control
# bytes were: a terminal escape (ESC [) obeyed by `cat FEATS.txt`, \v, \f and \x1c, which Python's
# str.splitlines() ends a line at, the C1 control U+0085 (NEL), and a stray byte 0x9b (an 8-bit
# terminal's ESC [). They are now written as the per-image lines write them (\xHH, \xc2\x85); other
# bytes as they are (U+00E9, a Latin-1 byte 0xE9 that is not UTF-8).
mkdir -p "$tmp/odd_e/$(printf 'k\rc')"
cp "$tmp/train/circle/00000.png" "$tmp/odd_e/$(printf 'k\rc')/$(printf 'x\ry')".png
cp "$tmp/train/circle/00000.png" "$tmp/odd_e/$(printf 'k\rc')/$(printf 'b\\\\n\tt\nu')".png
cp "$tmp/train/circle/00000.png" "$tmp/odd_e/$(printf 'k\rc')/$(printf 'e\033[31m\v\f\034\302\205\233_\303\251\351')".png
"$VITMAE" embed --ckpt "$ck" --out "$tmp/odd_e.npy" "$tmp/odd_e" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "FEATS.txt with control characters, C1 controls and stray bytes in names: a row per image, no control byte but tab and newline, names back ($rc: $(od -c "$tmp/odd_e.txt" | head -n 8 | tr -s " " | tr "\n" "|"))" '[ $rc -eq 0 ] && python3 - "$tmp/odd_e" <<PY
import os, re, sys
data = open(sys.argv[1] + ".txt", "rb").read()
bad = [b for b in data if (b < 0x20 and b not in b"\t\n") or 0x7f <= b <= 0x9f]   # no name here has such a UTF-8 byte
assert not bad, bad
assert b"\xc3\xa9\xe9.png" in data, data   # U+00E9 and the Latin-1 byte, as they are
unescape = lambda b: re.sub(rb"\\\\(x[0-9a-f]{2}|[\\\\tnr])", lambda m: bytes([int(m[1][1:], 16)]) if m[1][:1] == b"x"
                            else {b"\\\\": b"\\\\", b"t": b"\t", b"n": b"\n", b"r": b"\r"}[m[1]], b)
rows = [[os.fsdecode(unescape(f)) for f in line.split(b"\t")] for line in data.split(b"\n")[:-1]]
assert len(rows) == 3 and all(len(r) == 2 for r in rows), rows
names = sorted(os.path.join(sys.argv[1], c, f) for c in os.listdir(sys.argv[1]) for f in os.listdir(os.path.join(sys.argv[1], c)))
assert sorted(r[0] for r in rows) == names and {r[1] for r in rows} == {"k\rc"}, (rows, names)
PY'
rm -f "$tmp/odd_e.npy" "$tmp/odd_e.txt"

# docs/encoder.md's two Python blocks that read FEATS.npy and FEATS.txt, run as written, in a folder
# holding them, on names a user's photos have: a Latin-1 byte (not UTF-8), a space, a backslash. The
# short one opened FEATS.txt as UTF-8 and stopped at the Latin-1 name (UnicodeDecodeError).
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  mkdir -p "$tmp/docs_e/in/k"
  for name in "$(printf 'caf\351')" "a b" "$(printf 'x\\\\ny')"; do cp "$tmp/train/circle/00000.png" "$tmp/docs_e/in/k/$name.png"; done
  (cd "$tmp/docs_e" && "$VITMAE" embed --ckpt "$ck" --out feats.npy in >/dev/null 2>&1)
  cp "$tmp/docs_e/feats.txt" "$tmp/docs_e/FEATS.txt"
  # Every python block of the page, each dedented by its fence's indent; those that read feats.txt.
  awk -v d="$tmp/docs_e" '/^ *```python/ { n++; on = 1; match($0, /^ */); ind = RLENGTH; next }
       /^ *```/ { on = 0 } on { print substr($0, ind + 1) > (d "/block" n ".py") }' "$VITMAE_ROOT/docs/encoder.md"
  out=$(cd "$tmp/docs_e" && /usr/bin/python3 -c '
import glob, os
blocks = [open(b).read() for b in sorted(glob.glob("block*.py"))]
readers = [b for b in blocks if "feats.txt" in b.lower()]
assert len(readers) == 2, len(readers)
for b in readers:
    exec(b)   # one defines rows (the exact names), the other x and names
want = sorted(os.path.join("in", "k", f) for f in os.listdir("in/k"))
assert sorted(r[0] for r in rows) == want, (rows, want)
assert x.shape[0] == len(names) == 3 and all(len(r) == 2 and r[1] == "k" for r in names), names
assert sorted(os.fsencode(r[0]) for r in names if "\\" not in r[0]) == sorted(os.fsencode(w) for w in want if "\\" not in w), names
print("ok")' 2>&1)
  t "docs/encoder.md's Python reads FEATS.npy and FEATS.txt as written, a Latin-1 name too ($(echo "$out" | tail -n 1))" '[ "$out" = ok ]'
  rm -rf "$tmp/docs_e"
fi

# The summary line names FEATS.npy with its control characters written out (a newline split it).
mkdir -p "$tmp/$(printf 'o\nd')"
"$VITMAE" embed --ckpt "$ck" --out "$tmp/$(printf 'o\nd')/f.npy" "$tmp/train/circle/00000.png" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "embed's summary: one line, the folder's newline written out ($rc)" '[ $rc -eq 0 ] && [ "$(wc -l < "$tmp/out")" -eq 1 ] && grep -qF "o\\nd/f.npy [1, 32]" "$tmp/out"'
t "embed's summary of one image: '1 image -> ', not '1 images' ($(cat "$tmp/out"))" 'grep -q "^1 image -> " "$tmp/out"'
rm -rf "$tmp/$(printf 'o\nd')"
# A name the system takes (251 + ".npy" = 255 bytes) but whose temporary name "NAME.tmp.<pid>.<n>" it
# would not: the staged name is cut to fit (it failed, "File name too long", after the work).
long=$(awk 'BEGIN { for (i = 0; i < 251; i++) printf "l"; print "" }')
"$VITMAE" embed --ckpt "$ck" --out "$tmp/$long.npy" "$tmp/train/circle/00000.png" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "embed --out a 255-byte name ($rc: $(head -c 300 "$tmp/err"))" '[ $rc -eq 0 ] && [ -s "$tmp/$long.npy" ] && [ -s "$tmp/$long.txt" ]'
t "... no temporary file left" '[ -z "$(ls "$tmp" | grep "\.tmp\.")" ]'
rm -f "$tmp/$long.npy" "$tmp/$long.txt"

# --- embed: never overwrite without --force ---------------------------------------------------------
sum=$(cksum <"$tmp/f.npy")
"$VITMAE" embed --ckpt "$ck" --pool mean --out "$tmp/f.npy" "$tmp/train" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "existing FEATS.npy: exit 2" '[ $rc -eq 2 ]'
t "existing: one line naming --force" 'one_line && grep -q -- "--force" "$tmp/err"'
t "existing: file untouched" '[ "$(cksum <"$tmp/f.npy")" = "$sum" ]'
"$VITMAE" embed --ckpt "$ck" --pool mean --force --out "$tmp/f.npy" "$tmp/train" >/dev/null 2>&1; rc=$?
t "--force replaces" '[ $rc -eq 0 ] && [ "$(cksum <"$tmp/f.npy")" != "$sum" ]'
# A folder where FEATS.npy (or FEATS.txt) goes: --force cannot replace it; refused before any image is
# encoded, exit 2, one line (it failed after all the work, exit 1: "embed: ...: is a directory").
mkdir -p "$tmp/dirout/f.npy" "$tmp/dirout/g.txt"
for o in f g; do
  "$VITMAE" embed --ckpt "$ck" --force --out "$tmp/dirout/$o.npy" "$tmp/train" >"$tmp/out" 2>"$tmp/err"; rc=$?
  x=npy; [ $o = g ] && x=txt
  t "--force onto a folder $o.$x: exit 2 before the work, one line ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/dirout/$o.$x: is a folder: --force replaces files, not folders (choose another name)" ] && [ ! -s "$tmp/out" ]'
  # Without --force the line said "already exists (use --force to replace it)": advice refused in turn.
  "$VITMAE" embed --ckpt "$ck" --out "$tmp/dirout/$o.npy" "$tmp/train" >"$tmp/out" 2>"$tmp/err"; rc=$?
  t "a folder $o.$x, no --force: exit 2, says it is a folder, not to use --force ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/dirout/$o.$x: is a folder: --force replaces files, not folders (choose another name)" ] && [ ! -s "$tmp/out" ]'
done
# ... also when FEATS.npy is there as a file (an earlier run's) and FEATS.txt is the folder: the folder is
# said first, not "use --force" for FEATS.npy, which would only lead to the folder's refusal.
: > "$tmp/dirout/g.npy"
"$VITMAE" embed --ckpt "$ck" --out "$tmp/dirout/g.npy" "$tmp/train" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "FEATS.npy a file, FEATS.txt a folder: exit 2, the folder said first ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/dirout/g.txt: is a folder: --force replaces files, not folders (choose another name)" ] && [ ! -s "$tmp/dirout/g.npy" ]'

# --- embed: two commands at once with the same outputs ----------------------------------------------
# Both find FEATS.npy / FEATS.txt free before computing. The first waits before it publishes its pair
# (VITMAE_FAULT_HOLD_BEFORE_PUBLISH, docs/testing.md) until the second has written its own: the first
# then exits 1 with one line and leaves the second's pair whole (it used to replace it silently, exit 0).
race() {  # go-file, args of the waiting embed...
  go=$1; shift
  VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$go" "$VITMAE" embed --ckpt "$ck" "$@" >/dev/null 2>"$tmp/race.err" &
  racer=$!
  wait_gate "$go" $racer
}
race "$tmp/go1" --out "$tmp/race.npy" "$tmp/train"
"$VITMAE" embed --ckpt "$ck" --pool mean --out "$tmp/race.npy" "$tmp/test" >/dev/null 2>&1; rc1=$?
cp "$tmp/race.npy" "$tmp/first.npy"; cp "$tmp/race.txt" "$tmp/first.txt"
touch "$tmp/go1"; wait $racer; rc2=$?
t "embed racing another: the later publisher exits 1, one line ($rc1, $rc2: $(cat "$tmp/race.err"))" \
  '[ $rc1 -eq 0 ] && [ $rc2 -eq 1 ] && [ "$(wc -l <"$tmp/race.err")" -eq 1 ] && grep -qx "vitmae: $tmp/race.npy: exists now (written by another command meanwhile); pass --force to replace it" "$tmp/race.err"'
t "embed racing another: the other's pair whole ($(npy_shape "$tmp/race.npy"), $(wc -l <"$tmp/race.txt") names)" \
  'cmp -s "$tmp/race.npy" "$tmp/first.npy" && cmp -s "$tmp/race.txt" "$tmp/first.txt" && [ "$(npy_shape "$tmp/race.npy")" = "($n_test, 32)" ] && [ "$(wc -l <"$tmp/race.txt")" -eq $n_test ]'
t "embed racing another: no temporary file left" '! ls "$tmp" | grep -q "\.tmp\."'
# Only FEATS.txt written meanwhile: the pair stays one run's, so the features published first go again.
rm -f "$tmp/race.npy" "$tmp/race.txt"
race "$tmp/go2" --out "$tmp/race.npy" "$tmp/train"
echo "someone else's list" > "$tmp/race.txt"
touch "$tmp/go2"; wait $racer; rc=$?
t "embed: FEATS.txt taken meanwhile: exit 1, one line naming it ($(cat "$tmp/race.err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/race.err")" -eq 1 ] && grep -qx "vitmae: $tmp/race.txt: exists now (written by another command meanwhile); pass --force to replace it" "$tmp/race.err"'
t "embed: FEATS.txt taken meanwhile: no FEATS.npy without its list, the list untouched" \
  '[ ! -e "$tmp/race.npy" ] && [ "$(cat "$tmp/race.txt")" = "someone else'"'"'s list" ] && ! ls "$tmp" | grep -q "\.tmp\."'
# With --force the waiting command replaces the pair, as the user said.
race "$tmp/go3" --force --out "$tmp/race.npy" "$tmp/train"
"$VITMAE" embed --ckpt "$ck" --force --out "$tmp/race.npy" "$tmp/test" >/dev/null 2>&1
touch "$tmp/go3"; wait $racer; rc=$?
t "embed --force racing another: exit 0, its own pair" \
  '[ $rc -eq 0 ] && [ "$(npy_shape "$tmp/race.npy")" = "($n_train, 32)" ] && [ "$(wc -l <"$tmp/race.txt")" -eq $n_train ]'

# --- embed: determinism, pool, layer ------------------------------------------------------------
"$VITMAE" embed --ckpt "$ck" --threads 1 --batch 5 --out "$tmp/t1.npy" "$tmp/train" >/dev/null 2>&1
"$VITMAE" embed --ckpt "$ck" --threads 2 --out "$tmp/t2.npy" "$tmp/train" >/dev/null 2>&1
t "bitwise same for --threads 1 --batch 5 and --threads 2" 'cmp -s "$tmp/t1.npy" "$tmp/t2.npy"'
t "--pool mean differs from cls" '! cmp -s "$tmp/t1.npy" "$tmp/f.npy"'
"$VITMAE" embed --ckpt "$ck" --layer 2 --out "$tmp/l2.npy" "$tmp/train" >/dev/null 2>&1
"$VITMAE" embed --ckpt "$ck" --layer 0 --out "$tmp/l0.npy" "$tmp/train" >/dev/null 2>&1
t "--layer 2 = last (3 blocks)" 'cmp -s "$tmp/l2.npy" "$tmp/t1.npy"'
t "--layer 0 differs" '! cmp -s "$tmp/l0.npy" "$tmp/t1.npy"'
"$VITMAE" embed --ckpt "$ck" --out "$tmp/one.npy" "$tmp/train/square/00001.png" >/dev/null 2>&1
t "a file INPUT: its path, no class" '[ "$(cat "$tmp/one.txt")" = "$(printf "%s\t" "$tmp/train/square/00001.png")" ]'
# An image directly in a folder INPUT has no class either, beside those of its class folders: embed
# knows no class list, and a folder's own name is no class (docs/interface.md, section 8; classify
# labels a file by its folder only when the model has that class).
mkdir -p "$tmp/flat_e/circle"
cp "$tmp/train/circle/00000.png" "$tmp/flat_e/circle/c.png"; cp "$tmp/train/square/00001.png" "$tmp/flat_e/z.png"
"$VITMAE" embed --ckpt "$ck" --out "$tmp/flat_e.npy" "$tmp/flat_e" >/dev/null 2>&1; rc=$?
t "an image directly in a folder INPUT: no class, its neighbour in a class folder its class ($rc: $(tr "\t\n" "^|" <"$tmp/flat_e.txt"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$tmp/flat_e.txt")" = "$(printf "%s\tcircle\n%s\t" "$tmp/flat_e/circle/c.png" "$tmp/flat_e/z.png")" ]'

# --- embed: bad input ---------------------------------------------------------------------------
bad() {  # name, expected exit, grep pattern, args...
  name=$1; want=$2; pat=$3; shift 3
  "$VITMAE" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
  t "$name: exit $want" '[ $rc -eq $want ]'
  t "$name: one line" 'one_line'
  t "$name: says '$pat'" 'grep -q -- "$pat" "$tmp/err"'
}
bad "embed --layer 3" 2 "0..2" embed --ckpt "$ck" --layer 3 --out "$tmp/x.npy" "$tmp/train"
bad "embed --layer x" 2 "last" embed --ckpt "$ck" --layer x --out "$tmp/x.npy" "$tmp/train"
bad "embed --pool max" 2 "cls|mean" embed --ckpt "$ck" --pool max --out "$tmp/x.npy" "$tmp/train"
bad "embed --out x.bin" 2 ".npy" embed --ckpt "$ck" --out "$tmp/x.bin" "$tmp/train"
# A name that is only the extension wrote the hidden files .npy and .txt (dir/.npy passed the check).
# (A name of ".npy" alone was told it "must be a file name ending in .npy", which it is: it lacks the name.)
bad "embed --out DIR/.npy" 2 "^vitmae: embed --out: '$tmp/.npy' has no name before .npy: give one, such as feats.npy (FEATS.txt is written beside it)$" embed --ckpt "$ck" --out "$tmp/.npy" "$tmp/train"
bad "embed --out .npy" 2 "^vitmae: embed --out: '.npy' has no name before .npy: give one, such as feats.npy (FEATS.txt is written beside it)$" embed --ckpt "$ck" --out ".npy" "$tmp/train"
t "embed --out DIR/.npy: nothing written" '[ ! -e "$tmp/.npy" ] && [ ! -e "$tmp/.txt" ]'
# A name ending in '/' names a folder: `--out feats.npy/` wrote the file feats.npy (the '/' cleaned away
# as from any path) where the user said a folder; it is a usage error, and nothing is written.
bad "embed --out FEATS.npy/" 2 "^vitmae: embed --out: '$tmp/slash.npy/' ends in '/', a folder: a file name goes here, such as FEATS.npy$" \
  embed --ckpt "$ck" --out "$tmp/slash.npy/" "$tmp/train"
t "embed --out FEATS.npy/: nothing written" '[ ! -e "$tmp/slash.npy" ] && [ ! -e "$tmp/slash.txt" ]'
bad "embed --out FEATS.npy/." 2 "^vitmae: embed --out: '$tmp/slash.npy/.' ends in '/.', a folder: a file name goes here, such as FEATS.npy$" \
  embed --ckpt "$ck" --out "$tmp/slash.npy/." "$tmp/train"
t "embed --out FEATS.npy/.: nothing written" '[ ! -e "$tmp/slash.npy" ] && [ ! -e "$tmp/slash.txt" ]'
# FEATS.npy a symbolic link to nothing: "already exists" of a path that names nothing read as a
# contradiction; the line says what is there, and --force replaces the link, never its target.
ln -s "$tmp/gone/f.npy" "$tmp/dang.npy"
bad "embed --out a link to nothing" 2 "^vitmae: $tmp/dang.npy: already exists, a symbolic link to $tmp/gone/f.npy, which does not exist (use --force to replace the link with the file)$" \
  embed --ckpt "$ck" --out "$tmp/dang.npy" "$tmp/train"
"$VITMAE" embed --ckpt "$ck" --out "$tmp/dang.npy" --force "$tmp/train" >/dev/null 2>&1; rc=$?
t "embed --out a link to nothing, --force: the file in the link's place ($rc)" \
  '[ $rc -eq 0 ] && [ ! -L "$tmp/dang.npy" ] && [ -s "$tmp/dang.npy" ] && [ ! -e "$tmp/gone" ]'
bad "embed no --ckpt" 2 "ckpt" embed --out "$tmp/x.npy" "$tmp/train"
# An output folder that cannot be made or written: one wording, "CMD --out: ...", found before the
# work. embed computed every feature before it found that FEATS.npy's folder did not exist
# ("vitmae: embed: DIR/x.npy: No such file or directory"); probe printed its results, then failed.
bad "embed --out in a missing folder" 1 "^vitmae: embed --out: $tmp/nodir: cannot write in this folder: No such file or directory$" \
  embed --ckpt "$ck" --out "$tmp/nodir/x.npy" "$tmp/train"
# A name the folder cannot hold (past 255 bytes) was found only as the features were published, after
# every image's features were computed: now before the work, before even the INPUTs are looked at (a
# missing one is said after it).
long=$(printf 'b%.0s' $(seq 1 252))
bad "embed --out a name too long" 1 "^vitmae: embed --out: $tmp/$long.npy: File name too long$" \
  embed --ckpt "$ck" --out "$tmp/$long.npy" "$tmp/nothing"
# A name that fits whose temporary name ("NAME.tmp.<host>.<pid>.<n>") would not pass the 4096-byte path
# limit: embed and probe --out did all the work (probe printed its results), then failed naming the folder
# (`vitmae: probe: DIR: File name too long`, exit 1). Now the rule of reconstruct's names
# (output_names_fit: the stem, 64 bytes and this host's name with a dot) is checked before any image is
# read, said as the name's. The folder is built at the rule's last length and one past it.
hn=$(uname -n); case $hn in *[!A-Za-z0-9._-]*) hn= ;; esac
deep() {  # deep LEN: a folder of LEN bytes (its path from /) under $tmp/lp, in $D
  rm -rf "$tmp/lp"; D="$tmp/lp"
  while [ ${#D} -lt $1 ]; do r=$(($1 - ${#D} - 1)); [ $r -gt 200 ] && r=200; D="$D/$(printf 'd%.0s' $(seq 1 $r))"; done
  mkdir -p "$D"
}
# embed --out D/f.npy: the stem "f"; D of 4029 - host bytes is the longest taken.
deep $((4029 - ${#hn}))
"$VITMAE" embed --ckpt "$ck" --out "$D/f.npy" "$tmp/train" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "embed --out at the longest folder its temporary names fit (${#D}): written ($rc: $(tail -c 80 "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ -s "$D/f.npy" ] && [ -s "$D/f.txt" ] && [ -z "$(ls "$D" | grep "\.tmp\.")" ]'
deep $((4030 - ${#hn}))
bad "embed --out whose temporary name would pass the path limit (${#D})" 1 "^vitmae: embed --out: $D/f.npy: File name too long$" \
  embed --ckpt "$ck" --out "$D/f.npy" "$tmp/nothing"
t "... before the work (nothing printed, no file)" '[ ! -s "$tmp/out" ] && [ -z "$(ls "$D")" ]'
deep 4075   # the auditor's: the path fits, its temporary name not
bad "embed --out f.npy in a 4075-byte folder" 1 "^vitmae: embed --out: $D/f.npy: File name too long$" \
  embed --ckpt "$ck" --out "$D/f.npy" "$tmp/train"
t "... before the work (nothing printed, no file)" '[ ! -s "$tmp/out" ] && [ -z "$(ls "$D")" ]'
# probe --out D: the stem "confusion-knn" (13 bytes), with --linear "confusion-linear" (16).
deep $((4018 - ${#hn}))
bad "probe --out whose matrix's temporary name would pass the path limit (${#D})" 1 "^vitmae: probe --out: $D/confusion-knn.png: File name too long$" \
  probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$D"
t "... before the work (no result printed, no file)" '[ ! -s "$tmp/out" ] && [ -z "$(ls "$D")" ]'
deep $((4017 - ${#hn}))
"$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$D" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe --out at the longest folder its kNN matrix's temporary name fits (${#D}): written ($rc)" \
  '[ $rc -eq 0 ] && [ -s "$D/confusion-knn.png" ] && [ -z "$(ls "$D" | grep "\.tmp\.")" ]'
bad "probe --linear --out there: confusion-linear.png's would not fit" 1 "^vitmae: probe --out: $D/confusion-linear.png: File name too long$" \
  probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --linear --force --out "$D"
t "... before the work (no result printed)" '[ ! -s "$tmp/out" ]'
deep 4065   # the auditor's
bad "probe --out a 4065-byte folder" 1 "^vitmae: probe --out: $D/confusion-knn.png: File name too long$" \
  probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$D"
t "... before the work (no result printed, no file)" '[ ! -s "$tmp/out" ] && [ -z "$(ls "$D")" ]'
rm -rf "$tmp/lp"
bad "probe --out under a file" 1 "^vitmae: probe --out: cannot create the output folder: $tmp/train/circle/.*: Not a directory$" \
  probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$tmp/train/circle/$(ls "$tmp/train/circle" | head -n 1)/p"
t "probe --out under a file: before the work (no result printed)" '[ ! -s "$tmp/out" ]'
bad "embed no INPUT" 2 "INPUT" embed --ckpt "$ck" --out "$tmp/x.npy"
bad "embed missing input" 1 "No such file" embed --ckpt "$ck" --out "$tmp/x.npy" "$tmp/nothing"
printf 'not a checkpoint' >"$tmp/bad.safetensors"
bad "embed bad checkpoint" 1 "bad.safetensors" embed --ckpt "$tmp/bad.safetensors" --out "$tmp/x.npy" "$tmp/train"
printf 'not a png' >"$tmp/broken.png"
bad "embed undecodable file" 1 "broken.png" embed --ckpt "$ck" --out "$tmp/x.npy" "$tmp/broken.png"
t "nothing written after errors" '[ ! -e "$tmp/x.npy" ] && [ ! -e "$tmp/x.txt" ]'
mkdir -p "$tmp/mixed/a"; cp "$tmp/train/circle/00000.png" "$tmp/mixed/a/"; cp "$tmp/broken.png" "$tmp/mixed/a/"
"$VITMAE" embed --ckpt "$ck" --out "$tmp/m.npy" "$tmp/mixed" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "a broken file in a folder is skipped" '[ $rc -eq 0 ] && grep -q "broken.png" "$tmp/err" && [ "$(npy_shape "$tmp/m.npy")" = "(1, 32)" ]'
# ... in train's words, "skipped PATH: why" (embed, probe and eval said "PATH: why (skipped)").
t "embed: the skipped file in train's words ($(cat "$tmp/err"))" 'grep -q "^vitmae: skipped $tmp/mixed/a/broken.png: not a PNG, JPEG or WebP file$" "$tmp/err"'
mkdir -p "$tmp/mixed/b"; cp "$tmp/train/square/00001.png" "$tmp/mixed/b/"
"$VITMAE" probe --ckpt "$ck" --train "$tmp/mixed" --test "$tmp/mixed" >"$tmp/out" 2>"$tmp/err"; rc=$?
# The same folder as --train and --test: its skipped file said once (it was said once per scan, twice,
# until the seventy-ninth session), beside the one warning that the two are the same folder.
t "probe: the skipped file in train's words, once ($(head -n 1 "$tmp/err"))" '[ $rc -eq 0 ] && [ "$(grep -c "^vitmae: skipped $tmp/mixed/a/broken.png: not a PNG, JPEG or WebP file$" "$tmp/err")" -eq 1 ]'
t "probe --test equal to --train: one warning" '[ "$(grep -c "^vitmae: warning: --test $tmp/mixed is --train $tmp/mixed: its images also fit the probes; the results measure fit" "$tmp/err")" -eq 1 ]'
# A folder with 25 broken files and a macOS copy's ._NAME files: the skipped files as train says them,
# 20 lines, "... and 5 more skipped", the hidden ones one warning (embed and probe printed a line per
# file, with no cap: thousands for a folder copied from a Mac).
mkdir -p "$tmp/brokens/a" "$tmp/brokens/b"
cp "$tmp/train/circle/00000.png" "$tmp/brokens/a/"; cp "$tmp/train/square/00001.png" "$tmp/brokens/b/"
for k in $(seq 10 34); do cp "$tmp/broken.png" "$tmp/brokens/a/bad$k.png"; done
for k in 1 2 3; do head -c 4096 /dev/urandom > "$tmp/brokens/b/._$k.png"; done
many_ok() {   # $1: how many times each line is said
  [ "$(grep -c "^vitmae: skipped $tmp/brokens/a/bad[0-9]*.png: not a PNG, JPEG or WebP file$" "$tmp/err")" -eq $((20 * $1)) ] &&
  [ "$(grep -cx "vitmae: \.\.\. and 5 more skipped (vitmae data lists them)" "$tmp/err")" -eq "$1" ] &&
  [ "$(grep -c "\._" "$tmp/err")" -eq "$1" ] &&
  [ "$(grep -c "^vitmae: warning: skipped 3 hidden files (names starting with '.', .*; the first: $tmp/brokens/b/\._1.png: " "$tmp/err")" -eq "$1" ]
}
"$VITMAE" embed --ckpt "$ck" --out "$tmp/brokens.npy" "$tmp/brokens" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "embed: 25 skipped files and 3 ._NAME files as train says them ($rc: $(wc -l < "$tmp/err") lines)" '[ $rc -eq 0 ] && many_ok 1'
"$VITMAE" probe --ckpt "$ck" --train "$tmp/brokens" --test "$tmp/brokens" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe: 25 skipped files and 3 ._NAME files as train says them, once for the one folder ($rc: $(wc -l < "$tmp/err") lines)" '[ $rc -eq 0 ] && many_ok 1'
# Two folders (a copy as --test): each folder's lines, once each.
rm -rf "$tmp/brokens2" && cp -r "$tmp/brokens" "$tmp/brokens2"
"$VITMAE" probe --ckpt "$ck" --train "$tmp/brokens" --test "$tmp/brokens2" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe: a copy as --test, its own skipped lines ($rc: $(wc -l < "$tmp/err") lines)" \
  '[ $rc -eq 0 ] && [ "$(grep -c "^vitmae: skipped $tmp/brokens/a/bad[0-9]*.png: " "$tmp/err")" -eq 20 ] &&
   [ "$(grep -c "^vitmae: skipped $tmp/brokens2/a/bad[0-9]*.png: " "$tmp/err")" -eq 20 ] &&
   [ "$(grep -cx "vitmae: \.\.\. and 5 more skipped (vitmae data lists them)" "$tmp/err")" -eq 2 ]'
rm -rf "$tmp/brokens2"
# embed's lines in input order, as reconstruct's (docs/interface.md, "Bad files"). A missing INPUT after
# a folder with a skipped file ended the run with its one line: the folder's line, held, was never said.
# Now the folder's line, then the missing path's (the file after it is not read), exit 1, nothing written;
# a file that does not decode after the folder: the folder's line, then the file's, the one that ends it.
"$VITMAE" embed --ckpt "$ck" --out "$tmp/o.npy" "$tmp/mixed" "$tmp/nothing" "$tmp/broken.png" >"$tmp/out" 2>"$tmp/err"; rc=$?
printf 'vitmae: skipped %s/mixed/a/broken.png: not a PNG, JPEG or WebP file\nvitmae: %s/nothing: No such file or directory\n' "$tmp" "$tmp" >"$tmp/want"
t "embed: a folder's skipped file, then a missing INPUT: both lines, in order ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && cmp -s "$tmp/want" "$tmp/err" && [ ! -e "$tmp/o.npy" ] && [ ! -e "$tmp/o.txt" ]'
"$VITMAE" embed --ckpt "$ck" --out "$tmp/o.npy" "$tmp/mixed" "$tmp/broken.png" >"$tmp/out" 2>"$tmp/err"; rc=$?
printf 'vitmae: skipped %s/mixed/a/broken.png: not a PNG, JPEG or WebP file\nvitmae: %s/broken.png: not a PNG, JPEG or WebP file\n' "$tmp" "$tmp" >"$tmp/want"
t "embed: a folder's skipped file, then a file that does not decode: both lines, in order ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && cmp -s "$tmp/want" "$tmp/err" && [ ! -e "$tmp/o.npy" ] && [ ! -e "$tmp/o.txt" ]'
# Two INPUT folders of 15 skipped files each: 20 named for the run, the first 20 in input order (each
# folder counted its own 20: 30 lines), then "... and 10 more"; a missing INPUT after them says them all first.
mkdir -p "$tmp/capA" "$tmp/capB"
for d in capA capB; do
  cp "$tmp/train/circle/00000.png" "$tmp/$d/good.png"
  for k in $(seq 10 24); do cp "$tmp/broken.png" "$tmp/$d/bad$k.png"; done
done
{ for k in $(seq 10 24); do echo "vitmae: skipped $tmp/capA/bad$k.png: not a PNG, JPEG or WebP file"; done
  for k in $(seq 10 14); do echo "vitmae: skipped $tmp/capB/bad$k.png: not a PNG, JPEG or WebP file"; done
  echo "vitmae: ... and 10 more skipped (vitmae data lists them)"; } >"$tmp/want"
"$VITMAE" embed --ckpt "$ck" --out "$tmp/cap.npy" "$tmp/capA" "$tmp/capB" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "embed: 2 folders of 15 skipped files: 20 named, then 10 more ($rc: $(wc -l < "$tmp/err") lines)" \
  '[ $rc -eq 0 ] && cmp -s "$tmp/want" "$tmp/err" && [ "$(npy_shape "$tmp/cap.npy")" = "(2, 32)" ]'
echo "vitmae: $tmp/nothing: No such file or directory" >>"$tmp/want"
"$VITMAE" embed --ckpt "$ck" --out "$tmp/o.npy" "$tmp/capA" "$tmp/capB" "$tmp/nothing" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "embed: 2 folders of 15 skipped files, then a missing INPUT: 20 named, 10 more, its line ($rc: $(wc -l < "$tmp/err") lines)" \
  '[ $rc -eq 1 ] && cmp -s "$tmp/want" "$tmp/err" && [ ! -e "$tmp/o.npy" ]'
# A file that does not decode between them: capA's 15, its line in its place, capB's first 5, then
# the count (its line came after all 20 and the count, after capB's lines: it is image 1 of 3).
{ for k in $(seq 10 24); do echo "vitmae: skipped $tmp/capA/bad$k.png: not a PNG, JPEG or WebP file"; done
  echo "vitmae: $tmp/broken.png: not a PNG, JPEG or WebP file"
  for k in $(seq 10 14); do echo "vitmae: skipped $tmp/capB/bad$k.png: not a PNG, JPEG or WebP file"; done
  echo "vitmae: ... and 10 more skipped (vitmae data lists them)"; } >"$tmp/want"
"$VITMAE" embed --ckpt "$ck" --out "$tmp/o.npy" "$tmp/capA" "$tmp/broken.png" "$tmp/capB" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "embed: folder, a file that does not decode, folder: its line between the folders' ($rc: $(sed -n 16p "$tmp/err"))" \
  '[ $rc -eq 1 ] && cmp -s "$tmp/want" "$tmp/err" && [ ! -e "$tmp/o.npy" ] && [ ! -e "$tmp/o.txt" ]'
# A refused run on a folder with a skipped file is its one line (the skipped lines came first): --layer
# out of range, an --out that cannot be made.
bad "embed --layer 3, a skipped file" 2 "^vitmae: embed --layer: " embed --ckpt "$ck" --layer 3 --out "$tmp/m3.npy" "$tmp/mixed"
bad "probe --layer 3, a skipped file" 2 "^vitmae: probe --layer: " probe --ckpt "$ck" --layer 3 --train "$tmp/mixed" --test "$tmp/mixed"
bad "probe --out under a file, a skipped file" 1 "^vitmae: probe --out: cannot create the output folder: " \
  probe --ckpt "$ck" --train "$tmp/mixed" --test "$tmp/mixed" --out "$tmp/broken.png/p"
# Images directly in a folder of classes: one warning, in finetune's words, the folder's name written
# out (it printed "vitmae: DIR: 1 image directly in the folder has no class (left out)", an error's
# form, and finetune wrote the name raw).
mkdir -p "$tmp/ro$(printf '\033')t/a" "$tmp/ro$(printf '\033')t/b"
cp "$tmp/train/circle/00000.png" "$tmp/ro$(printf '\033')t/a/"; cp "$tmp/train/square/00001.png" "$tmp/ro$(printf '\033')t/b/"
cp "$tmp/train/circle/00000.png" "$tmp/ro$(printf '\033')t/loose.png"
"$VITMAE" probe --ckpt "$ck" --train "$tmp/ro$(printf '\033')t" --test "$tmp/mixed" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe: an image directly in --train, one warning ($(grep -a directly "$tmp/err"))" '[ $rc -eq 0 ] &&
  [ "$(grep -c "^vitmae: warning: $tmp/ro\\\\x1bt: 1 image directly in the folder has no class and is not used$" "$tmp/err")" -eq 1 ] &&
  ! grep -q "$(printf "\033")" "$tmp/err"'
rm -rf "$tmp/ro$(printf '\033')t"
# A hidden class folder (.ipynb_checkpoints beside a notebook's images) is a class, as in data and
# finetune, and probe says so as they do (it said nothing: the folder became a class unseen).
mkdir -p "$tmp/hc/a" "$tmp/hc/b" "$tmp/hc/.ipynb_checkpoints"
cp "$tmp/train/circle/00000.png" "$tmp/hc/a/"; cp "$tmp/train/square/00001.png" "$tmp/hc/b/"
cp "$tmp/train/circle/00004.png" "$tmp/hc/.ipynb_checkpoints/"
"$VITMAE" probe --ckpt "$ck" --train "$tmp/hc" --test "$tmp/hc" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe: a hidden class folder, a warning in data's and finetune's words, once for the one folder ($rc: $(grep -a hidden "$tmp/err"))" '[ $rc -eq 0 ] &&
  [ "$(grep -c "hidden" "$tmp/err")" -eq 1 ] &&
  [ "$(grep -cxF "vitmae: warning: $tmp/hc/.ipynb_checkpoints: a hidden folder (its name starts with '"'"'.'"'"') holding images: they train as a class of its own" "$tmp/err")" -eq 1 ]'
rm -rf "$tmp/hc"

# --- probe: text, json, files -------------------------------------------------------------------
probe() { "$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" "$@" >"$tmp/out" 2>"$tmp/err"; }
probe --linear --linear-epochs 5 --out "$tmp/cm"; rc=$?
t "probe exits 0" '[ $rc -eq 0 ]'
t "prints knn and linear top1" 'grep -q "^knn  *top1 0\.[0-9]* (" "$tmp/out" && grep -q "^linear top1 0\.[0-9]* (" "$tmp/out"'
t "per-class table" '[ "$(grep -c "^  [a-z]" "$tmp/out")" -eq 4 ]'
png_magic() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d " \n")" = "89504e470d0a1a0a" ]; }
t "confusion-knn.png" 'png_magic "$tmp/cm/confusion-knn.png"'
t "confusion-linear.png" 'png_magic "$tmp/cm/confusion-linear.png"'
# An earlier run's matrices are replaced only with --force (docs/interface.md, "Earlier results"),
# checked before the probes run; a matrix this run does not write is not in the way.
cp "$tmp/cm/confusion-knn.png" "$tmp/knn.before.png"
bad "probe --out holding an earlier run" 2 "cm/confusion-knn.png: already exists (use --force to replace it)" \
  probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$tmp/cm"
t "the earlier matrix left as it was" 'cmp -s "$tmp/knn.before.png" "$tmp/cm/confusion-knn.png"'
rm "$tmp/cm/confusion-knn.png"
probe --out "$tmp/cm"; rc=$?
t "only the kNN matrix written: the earlier linear one is not in the way" '[ $rc -eq 0 ] && png_magic "$tmp/cm/confusion-knn.png"'
rm "$tmp/cm/confusion-knn.png"
bad "probe --linear, an earlier linear matrix" 2 "cm/confusion-linear.png: already exists (use --force to replace it)" \
  probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --linear --out "$tmp/cm"
t "refused before the probes ran: no kNN matrix written" '[ ! -e "$tmp/cm/confusion-knn.png" ]'
echo "not a picture" > "$tmp/cm/confusion-linear.png"
probe --linear --linear-epochs 5 --force --out "$tmp/cm"; rc=$?
t "--force replaces them" '[ $rc -eq 0 ] && png_magic "$tmp/cm/confusion-linear.png" && png_magic "$tmp/cm/confusion-knn.png"'
# A --force run without --linear removes the earlier linear matrix: it stayed beside the new kNN one,
# the two matrices of the folder from two runs (on other data, another checkpoint).
probe --force --out "$tmp/cm"; rc=$?
t "--force without --linear: the earlier linear matrix removed, the new kNN one written ($rc)" \
  '[ $rc -eq 0 ] && [ "$(ls "$tmp/cm")" = confusion-knn.png ] && png_magic "$tmp/cm/confusion-knn.png"'
# A folder at confusion-linear.png beside an earlier confusion-knn.png: the folder is said first, with or
# without --force ("use --force" for the kNN matrix would only lead to the folder's refusal).
mkdir -p "$tmp/cmd/confusion-linear.png"; : > "$tmp/cmd/confusion-knn.png"
bad "probe --linear, an earlier kNN matrix, a folder at the linear one" 2 \
  "^vitmae: $tmp/cmd/confusion-linear.png: is a folder: --force replaces files, not folders (choose another name)$" \
  probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --linear --out "$tmp/cmd"
t "... the earlier kNN matrix untouched" '[ ! -s "$tmp/cmd/confusion-knn.png" ]'
# Two at once into one --out: the one that waited before publishing (VITMAE_FAULT_HOLD_BEFORE_PUBLISH)
# while the other wrote its matrix exits 1 with one line, the other's matrix untouched.
mkdir "$tmp/cm2"
VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$tmp/go5" "$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" \
  --out "$tmp/cm2" >/dev/null 2>"$tmp/race.err" &
racer=$!
wait_gate "$tmp/go5" $racer
"$VITMAE" probe --pixels --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$tmp/cm2" >/dev/null 2>&1; rc1=$?
cp "$tmp/cm2/confusion-knn.png" "$tmp/knn.first.png"
touch "$tmp/go5"; wait $racer; rc2=$?
t "probe --out racing another: the later publisher exits 1, one line ($rc1, $rc2: $(cat "$tmp/race.err"))" \
  '[ $rc1 -eq 0 ] && [ $rc2 -eq 1 ] && [ "$(wc -l <"$tmp/race.err")" -eq 1 ] && grep -qx "vitmae: $tmp/cm2/confusion-knn.png: exists now (written by another command meanwhile); pass --force to replace it" "$tmp/race.err"'
t "probe --out racing another: the other's matrix untouched, no temporary file" \
  'cmp -s "$tmp/cm2/confusion-knn.png" "$tmp/knn.first.png" && [ "$(ls "$tmp/cm2")" = confusion-knn.png ]'
# The --out folder moved away while probe waits to publish (VITMAE_FAULT_HOLD_BEFORE_PUBLISH): exit 1,
# one line naming the folder, and no temporary matrix left in it where it went (both were left, and
# the line said "DIR/confusion-knn.png: No such file or directory"). Removed (rm -r): the same line.
VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$tmp/go6" "$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" \
  --linear --linear-epochs 2 --out "$tmp/cm3" >/dev/null 2>"$tmp/err" &
moved_at_gate "$tmp/go6" $! "$tmp/cm3" "$tmp/cm3moved"; rc=$?
t "probe --out moved before its matrices are published: exit 1, one line ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: probe: $tmp/cm3: the folder is gone (moved or deleted during the run)" ]'
t "probe --out moved: nothing left in it where it went ($(ls -A "$tmp/cm3moved" | head -n 3 | tr "\n" " "))" \
  '[ -d "$tmp/cm3moved" ] && [ -z "$(ls -A "$tmp/cm3moved")" ] && [ ! -e "$tmp/cm3" ]'
VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$tmp/go7" "$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" \
  --out "$tmp/cm4" >/dev/null 2>"$tmp/err" &
pid=$!; wait_gate "$tmp/go7" $pid; rm -r "$tmp/cm4"; touch "$tmp/go7"; wait $pid; rc=$?
t "probe --out removed before its matrix is published: exit 1, one line ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: probe: $tmp/cm4: the folder is gone (moved or deleted during the run)" ] && [ ! -e "$tmp/cm4" ]'
probe --json; rc=$?
t "json exits 0" '[ $rc -eq 0 ]'
py() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $1" "$tmp/out"; }
# Every key docs/interface.md names is there in every run: without --linear, linear_top1 is null (it was
# left out, and a script reading j["linear_top1"] failed with a KeyError), in per_class too.
t "json: knn_top1 in [0, 1], linear_top1 null" 'py "assert 0 <= j[\"knn_top1\"] <= 1 and j[\"linear_top1\"] is None"'
t "json: per_class linear_top1 null" 'py "assert all(\"linear_top1\" in v and v[\"linear_top1\"] is None for v in j[\"per_class\"].values())"'
t "json: classes and per_class" 'py "assert j[\"classes\"] == [\"circle\", \"square\", \"stripes\", \"triangle\"]; assert set(j[\"per_class\"]) == set(j[\"classes\"]); assert all(0 <= v[\"knn_top1\"] <= 1 and v[\"images\"] > 0 for v in j[\"per_class\"].values())"'
# K larger than the training set is cut to its size (docs/encoder.md): the JSON gives the K used, as
# the text does (it gave the K asked for).
probe --json --knn 100000; rc=$?
t "json: --knn above the training set: knn_k is its size ($n_train), exit 0" \
  '[ $rc -eq 0 ] && py "assert j[\"knn_k\"] == j[\"train_images\"] == $n_train, j[\"knn_k\"]"'
probe --knn 100000
t "text: --knn above the training set: k $n_train (of $n_train)" 'grep -qx "knn: k $n_train (of $n_train), T 0.07" "$tmp/out"'
probe --json --temperature 0.1234567 --knn 3; rc=$?
t "json: knn_temperature as typed, to its last digit (\"%g\" gave 0.123457)" '[ $rc -eq 0 ] && py "assert (j[\"knn_temperature\"], j[\"knn_k\"]) == (0.1234567, 3), j"'
probe --json --linear --linear-epochs 5 --threads 1; cp "$tmp/out" "$tmp/j1"
probe --json --linear --linear-epochs 5 --threads 2
t "json: linear_top1 with --linear" 'py "assert 0 <= j[\"linear_top1\"] <= 1 and j[\"features\"] == \"encoder\""'
t "json identical for --threads 1 and 2" 'cmp -s "$tmp/j1" "$tmp/out"'
"$VITMAE" probe --pixels --img 16 --json --linear --linear-epochs 5 --train "$tmp/train" --test "$tmp/test" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "--pixels --img without --ckpt" '[ $rc -eq 0 ] && py "assert j[\"features\"] == \"pixels\" and 0 <= j[\"linear_top1\"] <= 1"'
# Wide rows, few of them: 2 images of 2500 x 2500 grey pixels (6.25 million values a row) fit; the
# linear probe's predictions once asked for 1024 such rows at a time (25 GB) and said out of memory.
mkdir -p "$tmp/two/p" "$tmp/two/q"
cp "$(ls "$tmp"/train/circle/*.png | head -n 1)" "$tmp/two/p/"; cp "$(ls "$tmp"/train/square/*.png | head -n 1)" "$tmp/two/q/"
"$VITMAE" probe --pixels --img 2500 --channels 1 --json --linear --linear-epochs 1 --train "$tmp/two" --test "$tmp/two" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "--pixels --img 2500 --linear on 2 images ($(head -c 100 "$tmp/err"))" '[ $rc -eq 0 ] && py "assert 0 <= j[\"linear_top1\"] <= 1"'
# Feature matrices larger than the machine: refused before any feature is computed, one line with the
# bytes (a pixel baseline at a large --img was killed by the system's out-of-memory killer partway,
# exit 137: malloc does not fail where memory is overcommitted). Enough 16-pixel images that their
# 4096 x 4096 x 3 views need more than 90% of this machine's memory (the images twice: --train and
# --test are one folder); ulimit -v 4 GB keeps a build without the check from taking the machine's
# memory (its malloc fails instead). Not under the sanitizers, whose shadow memory ulimit -v refuses.
mem=$(($(getconf _PHYS_PAGES) * $(getconf PAGE_SIZE)))
per=$((2 * 4096 * 4096 * 3 * 4))
count=$((mem * 9 / 10 / (2 * per) + 4))
if [ "${VITMAE_SANITIZED:-0}" = 1 ] || [ $count -gt 3000 ]; then
  echo "note: probe's memory refusal not checked (sanitized build, or $count images would be needed)"
else
  "$VITMAE_TOOLS/synth" "$tmp/many" --count $count --size 16 --classes 2 --seed 4 >/dev/null
  (ulimit -v 4000000 && exec "$VITMAE" probe --pixels --img 4096 --channels 3 --train "$tmp/many" --test "$tmp/many" --out "$tmp/mcm") >"$tmp/out" 2>"$tmp/err"; rc=$?
  t "--pixels views larger than memory: exit 1, one line with the bytes, nothing made ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && one_line && grep -q "^vitmae: probe: the features of $((2 * count)) images of dim 50331648 need [0-9]* bytes (.* GiB, with kNN.s normalised copies); this machine has .* GiB (use a smaller --img)$" "$tmp/err" && [ ! -s "$tmp/out" ] && [ ! -e "$tmp/mcm" ]'
fi
probe --pixels --json
t "--pixels with --ckpt: view from the checkpoint" 'py "assert j[\"features\"] == \"pixels\""'
# --img and --channels given with --ckpt take the place of its view; --help said they were for
# "--pixels without --ckpt" only.
"$VITMAE" probe --pixels --ckpt "$ck" --img 8 --channels 1 --train "$tmp/train" --test "$tmp/test" >"$tmp/out" 2>&1; rc=$?
t "--pixels --ckpt --img 8 --channels 1: an 8x8x1 view" '[ $rc -eq 0 ] && grep -q "^probe: pixels 8x8x1 (dim 64)" "$tmp/out"'
t "--help says so" '"$VITMAE" probe --help | grep -- "--img S" | grep -q "default: --ckpt.s img_size; required without --ckpt" && "$VITMAE" probe --help | grep -- "--channels 1|3|auto" | grep -q "default --ckpt.s channels, else auto"'

# The per-class table, a row per class: a class folder's tab or newline written out (\t, \n), as in
# data's report (the newline split the row in two), and a name longer than the column whole (its first
# 30 bytes were printed: two classes alike in them read as one); names padded by characters, not bytes
# (ünï's row had its numbers 2 columns left of the others').
long=$(printf "%040d" 0)
for c in "$(printf 'ta\tb')" "$(printf 'nl\nx')" "${long}a" "${long}b" ünï; do
  mkdir -p "$tmp/odd/$c"; cp $(ls "$tmp"/train/circle/*.png | head -n 2) "$tmp/odd/$c/"
done
"$VITMAE" probe --pixels --img 8 --train "$tmp/odd" --test "$tmp/odd" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe's table: a row per class, names written out whole ($rc: $(sed -n "/^per class/,\$p" "$tmp/out" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && [ "$(sed -n "/^per class/,\$p" "$tmp/out" | wc -l)" -eq 6 ] &&
   [ "$(sed -n "/^per class/,\$p" "$tmp/out" | /usr/bin/python3 -c "import re, sys; print(sorted({re.search(r\"  [0-9]\", l).start() for l in sys.stdin.read().split(chr(10)) if l.startswith((\"  ta\", \"  nl\", \"  ünï\"))}))")" = "[32]" ] && grep -q "^  ta\\\\tb  *[0-9.]*  *2$" "$tmp/out" && grep -q "^  nl\\\\nx  *[0-9.]*  *2$" "$tmp/out" && grep -q "^  ${long}a  *[0-9.]*  *2$" "$tmp/out" && grep -q "^  ${long}b  *[0-9.]*  *2$" "$tmp/out"'

# --- probe: bad input ---------------------------------------------------------------------------
mkdir -p "$tmp/flat" "$tmp/oneclass/circle" "$tmp/extra/hexagon"
cp "$tmp/train/circle/00000.png" "$tmp/flat/"; cp "$tmp/train/circle/00000.png" "$tmp/oneclass/circle/"
cp "$tmp/train/circle/00000.png" "$tmp/extra/hexagon/"
bad "probe flat folder" 2 "DIR/<class>/<image>" probe --ckpt "$ck" --train "$tmp/flat" --test "$tmp/test"
bad "probe flat test folder" 2 "DIR/<class>/<image>" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/flat"
bad "probe unknown test class" 2 "hexagon" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/extra"
mkdir "$tmp/train/hexagon"   # there, but no class: empty (docs/encoder.md, probe's bad input)
bad "probe test class empty in --train" 2 "^vitmae: probe --test: class 'hexagon' of $tmp/extra is not a class of the training folder $tmp/train ($tmp/train/hexagon holds no usable image)\$" \
  probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/extra"
rmdir "$tmp/train/hexagon"
# A link there to a class's folder (hexagon -> circle), to the folder itself (-> .) or into a class's
# sub-folder (-> circle/inner) holds images, counted once under their class (the scan met the folder
# again): the line said "($tmp/train/hexagon holds no usable image)" of each. It now says what it is,
# in the words of `vitmae data`'s "folders ignored (met again through a link, searched once)".
mkdir "$tmp/train/circle/inner" && cp "$tmp/train/circle/00000.png" "$tmp/train/circle/inner/"
for to in circle . circle/inner; do
  ln -s "$to" "$tmp/train/hexagon"
  bad "probe test class a link in --train (hexagon -> $to)" 2 "^vitmae: probe --test: class 'hexagon' of $tmp/extra is not a class of the training folder $tmp/train ($tmp/train/hexagon is a folder met again through a link, searched once: its images count under their class)\$" \
    probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/extra"
  rm "$tmp/train/hexagon"
done
rm -r "$tmp/train/circle/inner"
bad "probe one class" 2 "^vitmae: probe --train: $tmp/oneclass has one class only ('circle'): a probe needs at least 2 class folders\$" \
  probe --ckpt "$ck" --train "$tmp/oneclass" --test "$tmp/oneclass"
# One class beside a class folder without an image (empty; torchvision's ImageFolder: "Found no valid
# file for the classes cat"): the line says why that folder is no class, as --test's refusal says it
# (the first such folder by name; a hidden folder is none). It said "one class only" of two folders.
mkdir "$tmp/oneclass/zebra" "$tmp/oneclass/square" "$tmp/oneclass/.git"
bad "probe one class beside an empty class folder" 2 "^vitmae: probe --train: $tmp/oneclass has one class only ('circle'): a probe needs at least 2 class folders ($tmp/oneclass/square holds no usable image)\$" \
  probe --ckpt "$ck" --train "$tmp/oneclass" --test "$tmp/oneclass"
rmdir "$tmp/oneclass/zebra" "$tmp/oneclass/square" "$tmp/oneclass/.git"
bad "probe --pixels without a size" 2 "--img" probe --pixels --train "$tmp/train" --test "$tmp/test"
bad "probe without --ckpt" 2 "ckpt" probe --train "$tmp/train" --test "$tmp/test"
bad "probe without --test" 2 "test" probe --ckpt "$ck" --train "$tmp/train"
bad "probe --knn 0" 2 "knn" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --knn 0
bad "probe --temperature 0" 2 "temperature" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --temperature 0
bad "probe --layer 9" 2 "0..2" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --layer 9
# Flags the run does not use were silently ignored (--pixels --layer 9 ran); now refused.
bad "probe --pixels --layer" 2 "probe --pixels: probes the raw pixels; --pool, --layer, --blocks and --ema" probe --ckpt "$ck" --pixels --train "$tmp/train" --test "$tmp/test" --layer 9
bad "probe --pixels --pool" 2 "probe --pixels: probes the raw pixels; --pool, --layer, --blocks and --ema" probe --pixels --img 8 --train "$tmp/train" --test "$tmp/test" --pool mean
bad "probe --pixels --blocks" 2 "probe --pixels: probes the raw pixels; --pool, --layer, --blocks and --ema" probe --pixels --img 8 --train "$tmp/train" --test "$tmp/test" --blocks 2
bad "probe --pixels --ema" 2 "probe --pixels: probes the raw pixels; --pool, --layer, --blocks and --ema" probe --pixels --img 8 --train "$tmp/train" --test "$tmp/test" --ema
bad "probe --linear-epochs without --linear" 2 "probe: --linear-epochs sets the linear probe, which runs with --linear only" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --linear-epochs 3
bad "probe --seed without --linear" 2 "probe: --seed sets the linear probe" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --seed 3
bad "probe --linear-batch without --linear" 2 "probe: --linear-batch sets the linear probe, which runs with --linear only" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --linear-batch 8
# --force without --out (nothing is written for it to replace) ran, the flag ignored.
bad "probe --force without --out" 2 "^vitmae: probe: --force replaces the confusion matrices of --out DIR, which are written with --out only\$" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --force
bad "probe --linear-batch 0" 2 "^vitmae: probe --linear-batch: 0 is out of range \\[1, 1048576\\]\$" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --linear --linear-batch 0
# A folder that is not there is exit 1, as in data, train, finetune, eval and embed (probe said 2).
bad "probe missing folder" 1 "No such file" probe --ckpt "$ck" --train "$tmp/nothing" --test "$tmp/test"
printf x >"$tmp/afile"
# A file where a folder goes is exit 1 too, as data, train, finetune and eval's "not a folder" (probe said 2).
bad "probe --train a file" 1 "^vitmae: probe --train: $tmp/afile is not a folder" probe --ckpt "$ck" --train "$tmp/afile" --test "$tmp/test"
bad "probe --out is a file" 1 "afile" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$tmp/afile"

# SIGTERM while the files are written under temporary names (held at the publishing gate): ended by it,
# no temporary file left (embed left FEATS.npy.tmp.<pid>.1 and FEATS.txt.tmp.<pid>.2; probe --out its
# matrices'), as in cli_reconstruct.sh.
for c in embed probe; do
  mkdir -p "$tmp/sig$c"
  if [ $c = embed ]; then set -- embed --ckpt "$ck" --out "$tmp/sig$c/f.npy" "$tmp/train"
  else set -- probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$tmp/sig$c"; fi
  VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$tmp/go$c" "$VITMAE" "$@" > /dev/null 2>&1 &
  pid=$!
  wait_gate "$tmp/go$c" $pid
  kill -TERM $pid; wait $pid; rc=$?
  t "$c: SIGTERM while writing: ended by it ($rc), no temporary file left ($(ls "$tmp/sig$c" | tr "\n" " "))" \
    '[ $rc -eq 143 ] && [ -z "$(ls -A "$tmp/sig$c")" ]'
done
# SIGTERM once the files are published, before the line that says them (held at HOLD_AFTER_PUBLISH):
# the line is said, then the command ends by the signal (it ended between the two, the files on disk
# and their line never said).
for c in embed probe; do
  mkdir -p "$tmp/sl$c"
  if [ $c = embed ]; then set -- embed --ckpt "$ck" --out "$tmp/sl$c/f.npy" "$tmp/train"; said=" -> $tmp/sl$c/f.npy ["
  else set -- probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$tmp/sl$c"; said="confusion matrices in $tmp/sl$c/"; fi
  env --default-signal VITMAE_FAULT_HOLD_AFTER_PUBLISH="$tmp/sl$c.go" "$VITMAE" "$@" > "$tmp/sl$c.out" 2> /dev/null &
  pid=$!
  wait_gate "$tmp/sl$c.go" $pid
  kill -TERM $pid; sleep 0.3; touch "$tmp/sl$c.go"; wait $pid; rc=$?
  t "$c: SIGTERM between its publish and its line: ended by it ($rc), the line said ($(tail -n 1 "$tmp/sl$c.out"))" \
    '[ $rc -eq 143 ] && tail -n 1 "$tmp/sl$c.out" | grep -qF "$said"'
done
# Ctrl-C there, into an --out folder the run made (with the folder above it): both go, as on a failure
# (an empty sigmade/out stayed); the existing --out folder above (sigprobe) stayed.
signal_at_gate BEFORE_PUBLISH "$tmp/gomade" INT probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" \
  --out "$tmp/sigmade/out"
t "probe: SIGINT before its files, into a folder it made: ended by it ($rc), the folders it made gone ($(ls -R "$tmp/sigmade" 2>&1 | tr "\n" " "))" \
  '[ $rc -eq 130 ] && [ ! -e "$tmp/sigmade" ] && [ -d "$tmp/sigprobe" ]'
# Ctrl-C while the --out folder's write test is in it (VITMAE_FAULT_HOLD_IN_WRITE_TEST): its file goes with
# the folders the run made (.vitmae-write-test-<pid> stayed, in a sigw/out kept by it).
signal_at_gate IN_WRITE_TEST "$tmp/gow" INT probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" \
  --out "$tmp/sigw/out"
t "probe: SIGINT during the --out folder's write test: ended by it ($rc), nothing it made left ($(ls -AR "$tmp/sigw" 2>&1 | tr "\n" " "))" \
  '[ $rc -eq 130 ] && [ ! -e "$tmp/sigw" ]'

# The --out folder moved away while probe computed its features (held at HOLD_BEFORE_MATRICES, before
# the matrices are written): one line that says the folder is gone, exit 1, nothing left where it went
# (it said "DIR/confusion-knn.png: No such file or directory", the folder unnamed).
mkdir -p "$tmp/pgone"
VITMAE_FAULT_HOLD_BEFORE_MATRICES="$tmp/pgone.go" "$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" \
  --out "$tmp/pgone/out" > /dev/null 2> "$tmp/pgone.err" &
moved_at_gate "$tmp/pgone.go" $! "$tmp/pgone/out" "$tmp/pgone/moved"; rc=$?
t "probe: --out moved while the features were computed: exit 1, one line naming the folder gone ($rc: $(cat "$tmp/pgone.err"); $(ls -A "$tmp/pgone/moved" | tr "\n" " "))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/pgone.err")" = "vitmae: probe: $tmp/pgone/out: the folder is gone (moved or deleted during the run)" ] &&
   [ -d "$tmp/pgone/moved" ] && [ -z "$(ls -A "$tmp/pgone/moved")" ] && [ ! -e "$tmp/pgone/out" ]'

# --max-pixels, the flag that an image's "exceeds --max-pixels" names (embed and probe had none:
# "unknown flag", exit 2): a 16x16 image over a limit of 100 pixels is refused by name.
"$VITMAE" embed --ckpt "$ck" --out "$tmp/mp.npy" --max-pixels 100 "$tmp/train/circle/00000.png" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "embed --max-pixels 100: exit 1, the image named ($rc: $(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 1 ] && one_line && grep -q "00000.png: image 16x16 exceeds --max-pixels 100$" "$tmp/err" && [ ! -e "$tmp/mp.npy" ]'
"$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --max-pixels 100 >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe --max-pixels 100: the images skipped by name ($rc: $(head -n 1 "$tmp/err"))" \
  '[ $rc -ne 0 ] && grep -q "^vitmae: skipped .*circle/00000.png: image 16x16 exceeds --max-pixels 100$" "$tmp/err"'

# An output folder that does not take files (read-only, as an ordinary user: tests/lib.sh as_user) is
# refused before the features are computed (embed named it after every image's features; probe printed
# its first line and computed both sets first).
chmod 755 "$tmp"; mkdir -p "$tmp/ro"; chmod 555 "$tmp/ro"
if as_user_can "$ck" "$tmp/train/circle/00000.png"; then
  as_user "$VITMAE" embed --ckpt "$ck" --out "$tmp/ro/x.npy" "$tmp/train" >"$tmp/out" 2>"$tmp/err"; rc=$?
  t "embed into a read-only folder: exit 1, one line first ($(head -n 2 "$tmp/err" | tr "\n" "|"))" \
    '[ $rc -eq 1 ] && one_line && grep -qx "vitmae: embed --out: $tmp/ro: cannot write in this folder: Permission denied" "$tmp/err"'
  as_user "$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$tmp/ro/p" >"$tmp/out" 2>"$tmp/err"; rc=$?
  t "probe --out in a read-only folder: exit 1, one line, before the work ($(head -n 2 "$tmp/err" | tr "\n" "|"))" \
    '[ $rc -eq 1 ] && one_line && grep -qx "vitmae: probe --out: cannot create the output folder: $tmp/ro/p: Permission denied" "$tmp/err" && [ ! -s "$tmp/out" ]'
else
  echo "note: read-only output folder checks skipped (no ordinary user can read the test's files)"
fi

# embed --out FEATS.npy that is the checkpoint it reads (a checkpoint named .npy, also given through a
# link; FEATS.txt too): --force replaced the checkpoint with the features. One line, exit 2, kept. (A
# link at --out is replaced itself, docs/interface.md: its target stays, so that is not refused.)
cp "$ck" "$tmp/ck.npy" && ln -s "$tmp/ck.npy" "$tmp/cklink.npy" && cp "$ck" "$tmp/ck2.txt"
for pair in "ck.npy ck.npy" "cklink.npy ck.npy" "ck2.txt ck2.npy"; do
  mc=${pair% *}; mo=${pair#* }
  "$VITMAE" embed --ckpt "$tmp/$mc" --out "$tmp/$mo" --force "$tmp/test" > /dev/null 2> "$tmp/meet.err"; rc=$?
  t "embed --ckpt $mc --out $mo --force: exit 2, one line, the checkpoint kept ($rc: $(head -n 2 "$tmp/meet.err" | tr "\n" "|"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/meet.err")" -eq 1 ] && grep -q "^vitmae: embed --out: $tmp/.* is the checkpoint --ckpt reads" "$tmp/meet.err" && cmp -s "$tmp/$mc" "$ck"'
done

# ... nor an input image at FEATS.txt's or FEATS.npy's name (inputs go by content: a PNG named shot.txt
# is one): --force replaced it by the feature list, exit 0. Without --force the same line: it said
# "already exists (use --force to replace it)", whose --force was then refused.
mkdir -p "$tmp/shot" && cp "$VITMAE_ROOT/tests/fixtures/recon_rgb.png" "$tmp/shot/shot.txt" && cp "$tmp/shot/shot.txt" "$tmp/shot/img.npy"
for pair in "shot.txt shot.npy" "img.npy img.npy"; do
  mi=${pair% *}; mo=${pair#* }
  for fo in --force ""; do
    "$VITMAE" embed --ckpt "$ck" --out "$tmp/shot/$mo" $fo "$tmp/shot/$mi" > /dev/null 2> "$tmp/meet.err"; rc=$?
    t "embed --out $mo ${fo:-(no --force)} of the input $mi: exit 2, one line, the image kept ($rc: $(head -n 2 "$tmp/meet.err" | tr "\n" "|"))" \
      '[ $rc -eq 2 ] && [ "$(cat "$tmp/meet.err")" = "vitmae: embed --out: $tmp/shot/$mi is the input $tmp/shot/$mi: the features would replace it (also with --force): choose another name" ] &&
       cmp -s "$tmp/shot/$mi" "$VITMAE_ROOT/tests/fixtures/recon_rgb.png"'
  done
done

# probe --out's matrices likewise: the checkpoint at confusion-knn.png (written) or confusion-linear.png
# (removed by --force without --linear) was replaced or deleted, exit 0.
mkdir -p "$tmp/pm"
for m in knn linear; do
  cp "$ck" "$tmp/pm/confusion-$m.png"
  "$VITMAE" probe --ckpt "$tmp/pm/confusion-$m.png" --train "$tmp/train" --test "$tmp/test" --out "$tmp/pm" --force > /dev/null 2> "$tmp/meet.err"; rc=$?
  t "probe --force, the checkpoint at confusion-$m.png: exit 2, kept ($rc: $(cat "$tmp/meet.err"))" \
    '[ $rc -eq 2 ] && grep -q "^vitmae: probe --out: $tmp/pm/confusion-$m.png is the checkpoint --ckpt reads: this run would \(replace\|remove\) it (also with --force; another --out)$" "$tmp/meet.err" && cmp -s "$ck" "$tmp/pm/confusion-$m.png"'
  rm -f "$tmp/pm/confusion-$m.png"
done
"$VITMAE" embed --ckpt "$tmp/ck.npy" --out "$tmp/cklink.npy" --force "$tmp/test" > /dev/null 2>&1; rc=$?
t "embed --out on a link to its --ckpt, --force: the link replaced, the checkpoint kept ($rc)" \
  '[ $rc -eq 0 ] && [ ! -L "$tmp/cklink.npy" ] && cmp -s "$tmp/ck.npy" "$ck"'

# probe --out inside --train or --test (docs/interface.md, "Paths that meet"): confusion-knn.png made a
# class folder of its own there, a class more at the next probe. One line, exit 2, nothing made.
for d in train test; do
  "$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$tmp/$d/cm" > /dev/null 2> "$tmp/meet.err"; rc=$?
  t "probe --out inside --$d: exit 2, one line ($rc: $(head -n 2 "$tmp/meet.err" | tr "\n" "|"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/meet.err")" -eq 1 ] && grep -q "^vitmae: probe --out: $tmp/$d/cm is inside the input folder $tmp/$d: " "$tmp/meet.err" && [ ! -e "$tmp/$d/cm" ]'
done
# ... also where a link below --train or --test leads to the --out folder or one holding it: the scan
# follows it (train/lk -> ext), and confusion-knn.png in ext/cm was read as a training image of class
# lk at the next probe (exit 0). Refused as train's and finetune's data folder is (cli_runfolder.sh).
mkdir -p "$tmp/lkext"
for d in train test; do
  ln -s "$tmp/lkext" "$tmp/$d/lk"
  "$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$tmp/lkext/cm" > /dev/null 2> "$tmp/meet.err"; rc=$?
  rm "$tmp/$d/lk"
  t "probe --out reached through a link below --$d: exit 2, one line ($rc: $(head -n 2 "$tmp/meet.err" | tr "\n" "|"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/meet.err")" = "vitmae: probe --out: $tmp/lkext/cm is inside the input folder $tmp/$d through a link (its scan enters $tmp/$d/lk): its images would be read as inputs by the next run (with --force, or once more images are added); choose an --out folder outside it" ] && [ ! -e "$tmp/lkext/cm" ]'
done

# --- the evaluation view: --crop-pct and --interp (docs/interface.md, section 2, "Evaluation views") ----
# A 32 x 32 photo at --crop-pct 0.5 and the 16-pixel model: resized to floor(16 / 0.5) = 32, which it is
# already, so the view is its centre 16 x 16 pixel for pixel: bitwise the features of that centre saved
# as its own PNG (cut by PIL, 8 pixels from each side as torchvision's CenterCrop), seen whole.
python3 - "$tmp/v32.png" "$tmp/v16.png" "$tmp/vin.png" "$tmp/vout.png" <<'PY'
import sys, zlib, struct, random
def png(path, w, h, rows):   # 8-bit RGB, no filter
    raw = b"".join(b"\0" + bytes(r) for r in rows)
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
random.seed(5)
rows = [[random.randrange(256) for _ in range(32 * 3)] for _ in range(32)]
png(sys.argv[1], 32, 32, rows)
centre = [r[8 * 3:24 * 3] for r in rows[8:24]]
png(sys.argv[2], 16, 16, centre)
# the photo's centre in another border (the probe's test image), and that border round another centre
border = [[random.randrange(256) for _ in range(32 * 3)] for _ in range(32)]
inset = lambda outer, inner: [o[:24] + inner[y - 8] + o[72:] if 8 <= y < 24 else o for y, o in enumerate(outer)]
png(sys.argv[3], 32, 32, inset(border, centre))
png(sys.argv[4], 32, 32, inset(border, [[random.randrange(256) for _ in range(16 * 3)] for _ in range(16)]))
PY
"$VITMAE" embed --ckpt "$ck" --out "$tmp/vc.npy" --crop-pct 0.5 "$tmp/v32.png" >"$tmp/vc.out" 2>"$tmp/err"; rc1=$?
"$VITMAE" embed --ckpt "$ck" --out "$tmp/vw.npy" "$tmp/v16.png" >/dev/null 2>&1; rc2=$?
t "embed --crop-pct 0.5 of a 32-pixel photo: bitwise the features of its centre 16 x 16 ($rc1 $rc2: $(cat "$tmp/err"))" \
  '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/vc.npy" "$tmp/vw.npy"'
t "embed --crop-pct 0.5: the summary says the view ($(cat "$tmp/vc.out"))" \
  'grep -qF "(cls token, block 2 of 0..2, view crop-pct 0.5 (shorter side 32, centre 16)) and " "$tmp/vc.out"'
"$VITMAE" embed --ckpt "$ck" --out "$tmp/v1.npy" "$tmp/v32.png" >"$tmp/v1.out" 2>&1
"$VITMAE" embed --ckpt "$ck" --out "$tmp/v3.npy" --interp bicubic "$tmp/v32.png" >"$tmp/v3.out" 2>&1
"$VITMAE" embed --ckpt "$ck" --out "$tmp/v8.npy" --crop-pct 0.875 "$tmp/v32.png" >/dev/null 2>&1
t "embed: the whole view, the bicubic one, the 0.875 crop and the 0.5 crop: four other features" \
  '! cmp -s "$tmp/v1.npy" "$tmp/v3.npy" && ! cmp -s "$tmp/v1.npy" "$tmp/v8.npy" && ! cmp -s "$tmp/v1.npy" "$tmp/vc.npy" && ! cmp -s "$tmp/v3.npy" "$tmp/v8.npy"'
t "embed: the default view is not said; --interp bicubic is ($(cat "$tmp/v3.out"))" \
  '! grep -q "view" "$tmp/v1.out" && grep -qF "block 2 of 0..2, view bicubic) and " "$tmp/v3.out"'
# probe: the view of both folders, said on the first line and in the JSON; --pixels probes that view.
probe --crop-pct 0.875 --interp bicubic; rc=$?
t "probe --crop-pct 0.875 --interp bicubic: the first line says the view ($rc: $(head -n 1 "$tmp/out"))" \
  '[ $rc -eq 0 ] && head -n 1 "$tmp/out" | grep -qF "; view crop-pct 0.875 (shorter side 18, centre 16), bicubic (dim 32); train "'
probe --json --crop-pct 0.9; rc=$?
t "probe --json: crop_pct as typed and interp ($rc)" '[ $rc -eq 0 ] && py "assert (j[\"crop_pct\"], j[\"interp\"]) == (0.9, \"bilinear\"), j"'
probe --json; py "assert (j[\"crop_pct\"], j[\"interp\"]) == (1, \"bilinear\"), j" 2>/dev/null; rc=$?
t "probe --json: the default view, crop_pct 1 and bilinear" '[ $rc -eq 0 ]'
# --pixels probes the view: the test image is the photo's centre in another border. At --crop-pct 0.5
# (its centre seen) its nearest neighbour is the photo (class a); seen whole, the image with its border
# round another centre (class b).
mkdir -p "$tmp/vtr/a" "$tmp/vtr/b" "$tmp/vte/a"
cp "$tmp/v32.png" "$tmp/vtr/a/x.png"; cp "$tmp/vout.png" "$tmp/vtr/b/y.png"; cp "$tmp/vin.png" "$tmp/vte/a/x.png"
"$VITMAE" probe --pixels --img 16 --crop-pct 0.5 --knn 1 --json --train "$tmp/vtr" --test "$tmp/vte" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe --pixels --crop-pct 0.5: the photo's view is its centre, its nearest neighbour ($rc)" \
  '[ $rc -eq 0 ] && py "assert j[\"knn_top1\"] == 1 and j[\"crop_pct\"] == 0.5, j"'
"$VITMAE" probe --pixels --img 16 --knn 1 --json --train "$tmp/vtr" --test "$tmp/vte" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe --pixels, the whole view: the image of the same border is nearer ($rc)" '[ $rc -eq 0 ] && py "assert j[\"knn_top1\"] == 0, j"'
for v in 0.05 1.5 abc; do
  "$VITMAE" embed --ckpt "$ck" --out "$tmp/vbad.npy" --crop-pct $v "$tmp/v32.png" >/dev/null 2>"$tmp/err"; rc=$?
  t "embed --crop-pct $v: a usage error, one line, nothing written ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && one_line && grep -q "^vitmae: embed --crop-pct: " "$tmp/err" && [ ! -e "$tmp/vbad.npy" ]'
done
probe --interp lanczos; rc=$?
t "probe --interp lanczos: a usage error, one line ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && one_line && grep -q "^vitmae: probe --interp: .*bilinear|bicubic" "$tmp/err"'

# --- the defaults (docs/encoder.md): kNN K 20, T 0.07; the linear probe 100 epochs, batch 256, momentum 0.9,
# lr 0.1. The text says the values it ran with; 24 training images, so that K 20 is not cut to the set.
"$VITMAE_TOOLS/synth" "$tmp/k24" --count 24 --size 8 --classes 2 --seed 5 >/dev/null
"$VITMAE" probe --pixels --img 8 --linear --train "$tmp/k24" --test "$tmp/k24" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe's defaults: k 20, T 0.07, 100 epochs of batch 256, momentum 0.9, lr 0.1 ($rc: $(sed -n 2,3p "$tmp/out" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && grep -qx "knn: k 20 (of 24), T 0.07" "$tmp/out" && grep -q "^linear: 100 epochs, batch 256, SGD momentum 0.9, lr 0.1 cosine to 0; " "$tmp/out"'
# One epoch is one ("linear: 1 epochs").
"$VITMAE" probe --pixels --img 8 --linear --linear-epochs 1 --train "$tmp/k24" --test "$tmp/k24" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "probe --linear-epochs 1: 'linear: 1 epoch,' ($rc: $(grep "^linear" "$tmp/out"))" '[ $rc -eq 0 ] && grep -q "^linear: 1 epoch, batch 256, " "$tmp/out"'
rm -rf "$tmp/k24"

# --- a progress line on long folders (docs/encoder.md: 5000 images or more) -----------------------------
# Not a terminal: a line at every tenth of the work on stderr, the last at the total; 4999 images none.
"$VITMAE_TOOLS/synth" "$tmp/long" --count 5000 --size 8 --seed 1 >/dev/null
"$VITMAE" embed --ckpt "$ck" --out "$tmp/long.npy" "$tmp/long" >/dev/null 2>"$tmp/long.err"; rc=$?
t "embed of 5000 images: ten progress lines on stderr, the last 5000/5000 ($rc: $(tr "\n" "|" <"$tmp/long.err" | cut -c1-200))" \
  '[ $rc -eq 0 ] && [ "$(grep -c "^embed: [0-9]*/5000 images$" "$tmp/long.err")" -eq 10 ] && [ "$(tail -n 1 "$tmp/long.err")" = "embed: 5000/5000 images" ] && [ "$(wc -l <"$tmp/long.err")" -eq 10 ]'
rm "$tmp/long/circle/00000.png"
"$VITMAE" embed --ckpt "$ck" --out "$tmp/long.npy" --force "$tmp/long" >/dev/null 2>"$tmp/long.err"; rc=$?
t "embed of 4999 images: no progress line ($rc: $(head -c 200 "$tmp/long.err"))" '[ $rc -eq 0 ] && [ ! -s "$tmp/long.err" ]'
rm -rf "$tmp/long" "$tmp/long.npy" "$tmp/long.txt"

# --- temporary files of an earlier process ---------------------------------------------------------
# A process of this pid before (a pid reused after a kill: pid_max 32768) left files at the names this
# one stages its outputs under ("NAME.tmp.<pid>.<n>", n from 1 in each process; now with the host,
# "NAME.tmp.<host>.<pid>.<n>"): embed failed with `vitmae: embed: g.npy: File exists` (exit 1), and
# probe --out with `... confusion-knn.png: File exists`, though neither file existed. Now a name that
# is taken is passed by for the next serial (io/files.h, file_tmp_create); the leftovers stay (their
# pid is this live process's): those without the host stay; those with it, made by no process now (not
# by this one, which keeps what it makes), are an earlier process's and removed (below).
h=$(tmp_host)
# pid_reused DIR NAME... -- ARGS...: `vitmae ARGS` run in DIR as the process whose pid left files at
# NAME.tmp.<pid>.1 .. 5 and NAME.tmp.<host>.<pid>.1 .. 5 (its own pid: exec).
pid_reused() {
  (cd "$1" && shift && sh -c 'while [ "$1" != -- ]; do for i in 1 2 3 4 5; do echo s > $1.tmp.$$.$i; echo s > $1.tmp.'"$h"'.$$.$i
    done; shift; done; shift; exec "$@"' sh "$@")
}
mkdir -p "$tmp/reuse/pq"
pid_reused "$tmp/reuse" g.npy g.txt -- "$VITMAE" embed --ckpt "$ck" --out g.npy "$tmp/test" > /dev/null 2> "$tmp/reuse.err"; rc=$?
pid_reused "$tmp/reuse" pq/confusion-knn.png -- "$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out pq \
  > /dev/null 2>> "$tmp/reuse.err"; rc2=$?
t "embed, probe --out: files at their temporary names left by an earlier process of their pid are passed by ($rc $rc2: $(head -n 2 "$tmp/reuse.err"))" \
  '[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ ! -s "$tmp/reuse.err" ] && [ "$(npy_shape "$tmp/reuse/g.npy")" = "($n_test, 32)" ] && [ -s "$tmp/reuse/g.txt" ] && [ -s "$tmp/reuse/pq/confusion-knn.png" ] && [ "$(ls "$tmp/reuse" "$tmp/reuse/pq" | grep -c "\.tmp\.")" -eq 15 ] && [ "$(ls "$tmp/reuse" "$tmp/reuse/pq" | grep -c "\.tmp\.$h\.")" -eq 0 ]'
# A killed embed (SIGKILL, a power cut: no stop signal removes anything) left its temporary files beside
# FEATS.npy for ever, past every later run. The next run removes those of the files it writes whose
# process is gone on this host; a user's look-alike, another file's, another host's, a name without the
# host and a live process's stay.
mkdir -p "$tmp/killed"
signal_at_gate BEFORE_PUBLISH "$tmp/killed.gate" KILL embed --ckpt "$ck" --out "$tmp/killed/g.npy" "$tmp/test"
dead=$_pid left=$(ls "$tmp/killed")
for f in g.npy.tmp.notes "f.npy.tmp.$h.$dead.1" "g.npy.tmp.x$h.$dead.1" "g.npy.tmp.$dead.1" "g.txt.tmp.$h.$$.1"; do
  echo s > "$tmp/killed/$f"
done
"$VITMAE" embed --ckpt "$ck" --out "$tmp/killed/g.npy" --force "$tmp/test" > /dev/null 2> "$tmp/killed.err"; rc=$?
t "embed: a killed run's temporary files ($(echo $left)) removed by the next, only they ($rc: $(cat "$tmp/killed.err"))" \
  '[ $rc -eq 0 ] && [ "$left" = "$(printf "g.npy.tmp.%s.%s.1\ng.txt.tmp.%s.%s.2" "$h" $dead "$h" $dead)" ] && [ "$(ls "$tmp/killed" | sort)" = "$(printf "%s\n" f.npy.tmp.$h.$dead.1 g.npy g.npy.tmp.$dead.1 g.npy.tmp.notes g.npy.tmp.x$h.$dead.1 g.txt g.txt.tmp.$h.$$.1 | sort)" ]'
# probe --out alike: its matrices' temporary files.
mkdir -p "$tmp/killedp"
signal_at_gate BEFORE_PUBLISH "$tmp/killedp.gate" KILL probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$tmp/killedp"
dead=$_pid left=$(ls "$tmp/killedp")
"$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$tmp/killedp" > /dev/null 2> "$tmp/killed.err"; rc=$?
t "probe --out: a killed run's temporary file ($(echo $left)) removed by the next ($rc: $(cat "$tmp/killed.err"))" \
  '[ $rc -eq 0 ] && [ "$left" = "confusion-knn.png.tmp.$h.$dead.1" ] && [ "$(ls "$tmp/killedp")" = confusion-knn.png ]'

# A leftover with the new run's own pid (a reused pid) was never removed, its pid being alive (this
# process), and 100 or more of them failed embed with a false `vitmae: embed: e10/f.npy: File exists`
# (FILE_TMP_TRIES). Now a name of this host with this process's pid that it did not make (io/files.c,
# kept_leaf_live) is a dead process's leftover, removed like the others.
mkdir -p "$tmp/own1" "$tmp/own105"
(cd "$tmp/own1" && sh -c 'echo x > f.npy.tmp.$0.$$.1; exec "$1" embed --ckpt "$2" --out f.npy "$3"' "$h" "$VITMAE" "$ck" "$tmp/test" \
  > /dev/null 2> "$tmp/own.err"); rc=$?
(cd "$tmp/own105" && sh -c 'i=1; while [ $i -le 105 ]; do : > f.npy.tmp.$0.$$.$i; i=$((i + 1)); done
  exec "$1" embed --ckpt "$2" --out f.npy "$3"' "$h" "$VITMAE" "$ck" "$tmp/test" > /dev/null 2>> "$tmp/own.err"); rc2=$?
t "embed: leftovers with its own pid (1, 105) removed, the run not failed ($rc $rc2: $(head -n 2 "$tmp/own.err"); $(ls "$tmp/own1" | tr '\n' ' '); $(ls "$tmp/own105" | grep -c "\.tmp\."))" \
  '[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ ! -s "$tmp/own.err" ] && [ "$(ls "$tmp/own1")" = "$(printf "f.npy\nf.txt")" ] && [ "$(ls "$tmp/own105")" = "$(printf "f.npy\nf.txt")" ]'
rm -rf "$tmp/own1" "$tmp/own105"

[ $fail -eq 0 ] && echo "all probe/embed CLI checks passed"
exit $fail
