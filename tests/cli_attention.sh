#!/bin/sh
# `vitmae attention`: PyTorch parity of --raw, maps against direct computations from the raw
# attention, overlay pixels, the files of every mode and selection, masking, index.html, bad
# inputs, and usage errors (exit 2 with the valid range).
# Fixtures from tools/reference_attention.py: an encoder-only checkpoint (3 layers x 4 heads,
# 16 px, patch 4), a 16 x 16 input and PyTorch's attention for it.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch tmp
cd "$tmp" || exit 1   # a command that wrongly writes to the working directory writes here
fx="$VITMAE_ROOT/tests/fixtures"
ck="$fx/attn_model.safetensors"
img="$fx/attn_input.png"
chk="$VITMAE_TOOLS/attn_check"
run() { "$VITMAE" attention --ckpt "$ck" "$@" >"$tmp/out" 2>"$tmp/err"; }

# --- parity with PyTorch and rows summing to 1 --------------------------------------------------
run --out "$tmp/a" --raw --layer all "$img"; rc=$?
t "raw run exits 0" '[ $rc -eq 0 ]'
t "parity <= 1e-5" '"$chk" parity "$tmp/a/attn_input.attn.npy" "$fx/attn_expected.safetensors" 1e-5'
# Every cls map equals row 0 of its layer's (fused) attention.
for l in 0 1 2; do
  for h in 0 3; do
    t "cls L$l H$h = raw row" '"$chk" map "$tmp/a/attn_input.attn.npy" row $l $h 0 "$tmp/a/attn_input/layer0$l-head0$h.npy"'
  done
  t "cls L$l mean = raw row" '"$chk" map "$tmp/a/attn_input.attn.npy" row $l mean 0 "$tmp/a/attn_input/layer0$l-mean.npy"'
done

# The checker's own .npy reader (tools/attn_check.c) took any shape: a dimension of -1, or one whose
# product wraps past 2^64 bytes (2^62 floats), sized its buffer by the wrapped count (only fread's own
# wrapped size * count kept the read inside it) and said "short data". An edited header is now refused
# as such, and data of another length than the shape's said so.
python3 - "$tmp/a/attn_input.attn.npy" "$tmp" <<'PY'
import re, sys
b = open(sys.argv[1], "rb").read(); n = b[8] | b[9] << 8; head = b[10:10 + n].decode("latin-1")
for name, shape in (("neg", "(-1, 4, 17, 17)"), ("wrap", "(4611686018427387904, 1, 1, 1)"), ("short", "(3, 4, 17, 18)")):
    h = re.sub(r"'shape': \([^)]*\)", "'shape': " + shape, head).rstrip("\n ")
    h = h + " " * (n - 1 - len(h)) + "\n"
    assert len(h) == n
    open("%s/%s.npy" % (sys.argv[2], name), "wb").write(b[:10] + h.encode("latin-1") + b[10 + n:])
PY
for bad in neg wrap short; do
  "$chk" rows "$tmp/$bad.npy" 3 4 17 > /dev/null 2> "$tmp/err"; rc=$?
  t "attn_check of an .npy with a $bad shape: exit 1, said ($(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && grep -q "^$tmp/$bad.npy: \(bad shape in header\|the data are not the [0-9]* items of the shape\)" "$tmp/err"'
done

# --- threads: the maps are drawn and written side by side, the same files at any thread count -----
for n in 1 3; do
  "$VITMAE" attention --ckpt "$ck" --out "$tmp/th$n" --threads $n --raw --layer all --mask-ratio 0.25 "$img" >/dev/null 2>&1
done
t "15 maps at 1 thread" '[ $(ls "$tmp/th1/attn_input" | grep -c "png$") -eq 15 ]'
t "the same files at 1 and 3 threads" 'diff -r "$tmp/th1" "$tmp/th3" >/dev/null'
# Folders at two maps' names in the image's folder of maps: refused before the work, with or without
# --force, the first in byte order named (it failed after the work, exit 1, at publishing the map), and
# nothing written for that image.
mkdir -p "$tmp/bad/attn_input/layer02-head03.png" "$tmp/bad/attn_input/layer02-head01.png"
"$VITMAE" attention --ckpt "$ck" --out "$tmp/bad" --threads 3 --force "$img" >/dev/null 2>"$tmp/err"; rc=$?
t "folders at maps' names: exit 2, the first named ($rc: $(grep -v warning "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: .*/bad/attn_input/layer02-head01.png: is a folder at a map.s name: " "$tmp/err"'
t "no montage for that image" '[ ! -e "$tmp/bad/attn_input.attn.png" ]'
# A map that cannot be written at all (over a file-size limit; its montage, about 30 KB, would fit,
# the 512 px map is about 39 KB): exit 1, named, and nothing of the image left, no montage either.
(ulimit -f 66 && exec "$VITMAE" attention --ckpt "$ck" --out "$tmp/lim" --head 0 "$img") >/dev/null 2>"$tmp/err"; rc=$?
t "a map over the file-size limit: exit 1, named ($(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: .*attn_input.png: .*/lim/attn_input/layer02-head00.png: File too large$" "$tmp/err"'
t "a map over the file-size limit: nothing of the image left ($(ls "$tmp/lim" | tr "\n" " "))" '[ -z "$(ls "$tmp/lim")" ]'
# Of the layer's five maps (about 23.6, 25.8, 23.5, 37.7 and 25.3 KB: heads 0-3, then the mean) three are
# over a 24 KB limit: the first of them in order, head 1's, is named, whichever thread met its limit first.
(ulimit -f 48 && exec "$VITMAE" attention --ckpt "$ck" --out "$tmp/lim2" --threads 3 "$img") >/dev/null 2>"$tmp/err"; rc=$?
t "three maps over the file-size limit: the first in order named ($(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: .*attn_input.png: .*/lim2/attn_input/layer02-head01.png: File too large$" "$tmp/err" && [ -z "$(ls "$tmp/lim2")" ]'

# An earlier run's files are replaced only with --force (docs/interface.md, "Earlier results"): a
# second run into a folder is refused before anything is written (exit 2, one line naming index.html,
# or, the index gone, the first of the image's files); --force replaces them.
run --out "$tmp/e" --head mean "$img"; rc=$?
cp "$tmp/e/attn_input.attn.png" "$tmp/e.before.png"
run --out "$tmp/e" --head 0 "$img"; rc=$?
t "a second run into a folder: exit 2, one line naming its index" '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -qx "vitmae: $tmp/e/index.html: already exists (use --force to replace it)" "$tmp/err"'
t "... the earlier files left as they were" 'cmp -s "$tmp/e.before.png" "$tmp/e/attn_input.attn.png" && [ ! -e "$tmp/e/attn_input/layer02-head00.png" ]'
rm "$tmp/e/index.html"
run --out "$tmp/e" --head 0 "$img"; rc=$?
t "the index gone: the image's montage is named" '[ $rc -eq 2 ] && grep -qx "vitmae: $tmp/e/attn_input.attn.png: already exists (use --force to replace it)" "$tmp/err"'
rm "$tmp/e/attn_input.attn.png"
run --out "$tmp/e" --head 0 "$img"; rc=$?
t "then its folder of maps" '[ $rc -eq 2 ] && grep -qx "vitmae: $tmp/e/attn_input: already exists (use --force to replace it)" "$tmp/err"'
run --out "$tmp/e" --head 0 --force "$img"; rc=$?
t "--force replaces them" '[ $rc -eq 0 ] && [ -s "$tmp/e/attn_input.attn.png" ] && [ -s "$tmp/e/index.html" ] && [ -s "$tmp/e/attn_input/layer02-head00.png" ]'
# The files a run would write are looked for (section 1): an earlier --raw run's arrays are not in the
# way of a run without --raw, as reconstruct's (docs/interface.md, attention's --force), and stay.
mkdir -p "$tmp/en" && echo earlier > "$tmp/en/attn_input.attn.npy" && echo earlier > "$tmp/en/attn_input.attn-mask.npy"
run --out "$tmp/en" --head 0 "$img"; rc=$?
t "earlier --raw arrays, a run without --raw: exit 0, they stay ($rc: $(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ -s "$tmp/en/attn_input.attn.png" ] && [ "$(cat "$tmp/en/attn_input.attn.npy" "$tmp/en/attn_input.attn-mask.npy")" = "earlier
earlier" ]'
# --force over a run of another selection: the image's folder of maps ends up holding the new run's
# maps only (the earlier run's, of another --layer or --mode, stayed beside them: two runs mixed in
# one folder, and a --raw run's arrays beside maps drawn without --raw), and a file of the user's in
# it stays (only names attention writes go). A run that fails, or is stopped by a signal, before its
# image is published leaves the earlier files as they were.
run --out "$tmp/fm" --raw --mask-ratio 0.25 "$img"
echo mine > "$tmp/fm/attn_input/notes.txt"; echo mine > "$tmp/fm/attn_input/layer02-mean.jpg"
cp -r "$tmp/fm" "$tmp/fm.before"
(ulimit -f 66 && exec "$VITMAE" attention --ckpt "$ck" --out "$tmp/fm" --force --layer 0 --head 0 "$img") >/dev/null 2>"$tmp/err"; rc=$?
t "--force, a map over the file-size limit: exit 1, the earlier files as they were ($rc: $(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -q "/fm/attn_input/layer00-head00.png: File too large$" "$tmp/err" && diff -r "$tmp/fm.before" "$tmp/fm" >/dev/null'
VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$tmp/fm.go" env --default-signal "$VITMAE" attention --ckpt "$ck" --out "$tmp/fm" \
  --force --layer 0 --head 0 "$img" >/dev/null 2>&1 &
pid=$!; wait_gate "$tmp/fm.go" $pid; kill -TERM $pid; wait $pid; rc=$?
t "--force, SIGTERM before publishing: the earlier files as they were ($rc)" '[ $rc -eq 143 ] && diff -r "$tmp/fm.before" "$tmp/fm" >/dev/null'
run --out "$tmp/fm" --force --layer 0 --head mean "$img"; rc=$?
t "--force with another --layer: the new run's maps only, the user's file kept ($rc: $(LC_ALL=C ls "$tmp/fm/attn_input" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ "$(LC_ALL=C ls "$tmp/fm/attn_input" | tr "\n" " ")" = "layer00-mean.png layer02-mean.jpg notes.txt " ]'
t "... and none of the earlier run's arrays ($(LC_ALL=C ls "$tmp/fm" | tr "\n" " "))" \
  '[ "$(LC_ALL=C ls "$tmp/fm" | tr "\n" " ")" = "attn_input attn_input.attn.png index.html " ]'
run --out "$tmp/fm" --force --mode patch --query 1,1 --head 0 "$img"; rc=$?
t "--force, patch maps after cls maps: the patch maps only ($rc: $(LC_ALL=C ls "$tmp/fm/attn_input" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ "$(LC_ALL=C ls "$tmp/fm/attn_input" | tr "\n" " ")" = "layer02-mean.jpg notes.txt patch01x01-layer02-head00.png " ]'
run --out "$tmp/fm" --force --mode rollout --query 0,0 --head 1 "$img"; rc=$?
t "--force, rollout maps after patch maps: the rollout maps only ($rc: $(LC_ALL=C ls "$tmp/fm/attn_input" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ "$(LC_ALL=C ls "$tmp/fm/attn_input" | tr "\n" " ")" = "layer02-mean.jpg notes.txt rollout-patch00x00-layer02-head01.png " ]'
# reconstruct and attention in one --out: each --force replaces and removes its own files only
# (docs/interface.md, attention's --force). Both wrote DIR/<stem>.mask.npy: attention --force removed
# reconstruct's mask, reconstruct --force replaced attention's (whose .attn.npy then had 1 + 8 tokens
# beside a mask of reconstruct's 4 visible) or removed it. attention's is now <stem>.attn-mask.npy.
ts="$fx/torch_small.safetensors"
rec() { "$VITMAE" reconstruct --ckpt "$ts" --out "$tmp/both" --threads 1 "$@" "$img" >"$tmp/out" 2>"$tmp/err"; }
att() { "$VITMAE" attention --ckpt "$ts" --out "$tmp/both" --threads 1 --head mean "$@" "$img" >"$tmp/out" 2>"$tmp/err"; }
same_as() { for f in "$@"; do cmp -s "$tmp/both.keep/$f" "$tmp/both/$f" || return 1; done; }
rec --raw; rc=$?; att; rc2=$?
t "reconstruct --raw then attention into one --out: both exit 0 ($rc $rc2: $(head -n 1 "$tmp/err"))" '[ $rc -eq 0 ] && [ $rc2 -eq 0 ]'
rm -rf "$tmp/both.keep"; cp -r "$tmp/both" "$tmp/both.keep"
att --mode rollout --force; rc=$?
t "attention --force beside reconstruct's files: they stay byte for byte ($rc: $(LC_ALL=C ls "$tmp/both" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && same_as attn_input.recon.png attn_input.recon.npy attn_input.mask.npy'
att --force --raw --mask-ratio 0.5 --seed 3; rc=$?
t "attention --force --raw, masked: its mask as attn-mask.npy, reconstruct's files kept ($rc: $(LC_ALL=C ls "$tmp/both" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ -s "$tmp/both/attn_input.attn-mask.npy" ] && same_as attn_input.recon.png attn_input.recon.npy attn_input.mask.npy'
rm -rf "$tmp/both.keep"; cp -r "$tmp/both" "$tmp/both.keep"
rec --raw --force; rc=$?
t "reconstruct --raw --force beside attention's files: they stay byte for byte ($rc: $(LC_ALL=C ls "$tmp/both" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ -s "$tmp/both/attn_input.mask.npy" ] && same_as attn_input.attn.png attn_input.attn.npy attn_input.attn-mask.npy'
rec --force; rc=$?
t "reconstruct --force without --raw: its own arrays go, attention's stay ($rc: $(LC_ALL=C ls "$tmp/both" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ ! -e "$tmp/both/attn_input.mask.npy" ] && [ ! -e "$tmp/both/attn_input.recon.npy" ] && same_as attn_input.attn.png attn_input.attn.npy attn_input.attn-mask.npy'
rec --raw --force; rm -rf "$tmp/both.keep"; cp -r "$tmp/both" "$tmp/both.keep"
att --force; rc=$?
t "attention --force without --raw: its own arrays go, reconstruct's stay ($rc: $(LC_ALL=C ls "$tmp/both" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ ! -e "$tmp/both/attn_input.attn-mask.npy" ] && [ ! -e "$tmp/both/attn_input.attn.npy" ] && same_as attn_input.recon.png attn_input.recon.npy attn_input.mask.npy'
# A folder where a file goes (index.html, a montage): --force cannot replace it; refused before any
# map is computed, exit 2, one line (each failed after the work, exit 1).
for f in index.html attn_input.attn.png; do
  rm -rf "$tmp/fd"; mkdir -p "$tmp/fd/$f"
  run --out "$tmp/fd" --force "$img"; rc=$?
  t "--force onto a folder $f: exit 2, one line ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/fd/$f: is a folder: --force replaces files, not folders (choose another name)" ] && [ ! -e "$tmp/fd/attn_input" ]'
  # Without --force it said "already exists (use --force to replace it)": advice refused in turn.
  run --out "$tmp/fd" "$img"; rc=$?
  t "a folder $f, no --force: exit 2, says it is a folder ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/fd/$f: is a folder: --force replaces files, not folders (choose another name)" ] && [ ! -e "$tmp/fd/attn_input" ]'
done
# ... and a file where the image's folder of maps goes: refused before the work, exit 2, one line (it
# failed at the image, exit 1, "not a folder").
rm -rf "$tmp/fd"; mkdir -p "$tmp/fd"; echo mine > "$tmp/fd/attn_input"
run --out "$tmp/fd" --force "$img"; rc=$?
t "--force onto a file where the folder of maps goes: exit 2, one line ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/fd/attn_input: is not a folder: the image'"'"'s maps go into a folder of this name, and --force replaces files, not a file with a folder (choose another --out)" ] && [ "$(ls "$tmp/fd")" = attn_input ] && [ "$(cat "$tmp/fd/attn_input")" = mine ]'
run --out "$tmp/fd" "$img"; rc=$?
t "a file where the folder of maps goes, no --force: exit 2, says it is not a folder ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/fd/attn_input: is not a folder: the image'"'"'s maps go into a folder of this name, and --force replaces files, not a file with a folder (choose another --out)" ] && [ "$(ls "$tmp/fd")" = attn_input ] && [ "$(cat "$tmp/fd/attn_input")" = mine ]'
# ... also when an earlier run's index.html comes before them: the folder (or the file where the folder of
# maps goes) is said first, not "use --force" for index.html, which would only lead to that refusal.
for f in attn_input.attn.png attn_input; do
  rm -rf "$tmp/fd"; mkdir -p "$tmp/fd"; echo mine > "$tmp/fd/index.html"
  if [ $f = attn_input ]; then echo mine > "$tmp/fd/$f"; why="is not a folder: the image's maps go into a folder of this name, and --force replaces files, not a file with a folder (choose another --out)"
  else mkdir "$tmp/fd/$f"; why="is a folder: --force replaces files, not folders (choose another name)"; fi
  run --out "$tmp/fd" "$img"; rc=$?
  t "an earlier index.html, then $f in the way, no --force: exit 2, $f said ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/fd/$f: $why" ] && [ "$(cat "$tmp/fd/index.html")" = mine ]'
done
# ... and a folder at a map's name inside the image's folder of maps (an earlier run's folder there, an
# index.html beside it): "already exists (use --force)" of the page, then --force did the work and failed
# at that map, exit 1. Refused before the work, with or without --force, the folder said.
rm -rf "$tmp/fd"; mkdir -p "$tmp/fd/attn_input/layer02-mean.png"; echo mine > "$tmp/fd/index.html"
for force in "" --force; do
  run --out "$tmp/fd" --head mean $force "$img"; rc=$?
  t "a folder at a map's name in the folder of maps ${force:-no --force}: exit 2, the folder said ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/fd/attn_input/layer02-mean.png: is a folder at a map'"'"'s name: --force replaces files, not folders (move it away, or choose another --out)" ] &&
     [ "$(cat "$tmp/fd/index.html")" = mine ] && [ "$(ls "$tmp/fd/attn_input")" = layer02-mean.png ]'
done
# A folder at a map-like name this run does not write (another layer's) is left as --force leaves one:
# the run goes on (it was refused as in the way).
rm -rf "$tmp/fd"; mkdir -p "$tmp/fd/attn_input/layer00-head00.png"
run --out "$tmp/fd" --head mean --force "$img"; rc=$?
t "a folder at another selection's map name: left, the run goes on ($rc: $(ls "$tmp/fd/attn_input" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ -d "$tmp/fd/attn_input/layer00-head00.png" ] && [ -s "$tmp/fd/attn_input/layer02-mean.png" ]'
# Two commands at once into one folder: both find the names free; the one that waits before it writes
# (VITMAE_FAULT_HOLD_BEFORE_PUBLISH, docs/testing.md) while the other draws the same image exits 1 with
# one line, and the other's files stay whole, none of the first's among them (it used to replace the
# montage and the page silently and add its maps, exit 0).
racer() {  # go-file, out folder, flags...: a waiting attention run of the fixture image
  go=$1; race_out=$2; shift 2   # not dir: tests/lib.sh's helpers take $dir for the test's folder
  VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$go" "$VITMAE" attention --ckpt "$ck" --out "$race_out" "$@" "$img" >/dev/null 2>"$tmp/race.err" &
  racer=$!
  wait_gate "$go" $racer   # its check passed, its folder made
}
racer "$tmp/go1" "$tmp/race" --head mean
run --out "$tmp/race" --head 0 "$img"; rc1=$?
cp "$tmp/race/attn_input.attn.png" "$tmp/race.montage"; cp "$tmp/race/index.html" "$tmp/race.index"
touch "$tmp/go1"; wait $racer; rc2=$?
t "racing another: the later one exits 1, one line ($rc1, $rc2: $(cat "$tmp/race.err"))" \
  '[ $rc1 -eq 0 ] && [ $rc2 -eq 1 ] && [ "$(wc -l < "$tmp/race.err")" -eq 1 ] && grep -qx "vitmae: $tmp/race/attn_input: exists now (made by another command meanwhile); pass --force to replace it" "$tmp/race.err"'
t "racing another: the other's files whole, none of this run's ($(ls "$tmp/race/attn_input" | tr "\n" " "))" \
  'cmp -s "$tmp/race/attn_input.attn.png" "$tmp/race.montage" && cmp -s "$tmp/race/index.html" "$tmp/race.index" && [ "$(ls "$tmp/race/attn_input")" = layer02-head00.png ] && [ "$(ls "$tmp/race" | wc -l)" -eq 3 ]'
# A folder of maps, or a link, made at the image's name meanwhile (by hand): the run stops there, as above,
# the user's file in it untouched and nothing of this run's written into it or through the link (the
# maps went into the folder silently, exit 0; the link was "already exists" and the run went on).
for kind in folder link; do
  rm -rf "$tmp/race3" "$tmp/race3t"; mkdir -p "$tmp/race3t"; echo mine > "$tmp/race3t/user.txt"
  racer "$tmp/go3$kind" "$tmp/race3" --head mean
  if [ $kind = folder ]; then mkdir "$tmp/race3/attn_input" && echo mine > "$tmp/race3/attn_input/user.txt"
  else ln -s ../race3t "$tmp/race3/attn_input"; fi
  touch "$tmp/go3$kind"; wait $racer; rc=$?
  t "a $kind made meanwhile at the image's folder of maps: exit 1, one line, nothing written into it ($rc: $(cat "$tmp/race.err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/race.err")" -eq 1 ] &&
     grep -qx "vitmae: $tmp/race3/attn_input: exists now (made by another command meanwhile); pass --force to replace it" "$tmp/race.err" &&
     [ "$(ls "$tmp/race3/attn_input/")" = user.txt ] && [ "$(ls "$tmp/race3t")" = user.txt ]'
done
rm -rf "$tmp/race3" "$tmp/race3t"
# Only the page written meanwhile: the image's files are this run's, the page the other's, exit 1.
racer "$tmp/go2" "$tmp/race2" --head mean
echo "another page" > "$tmp/race2/index.html"
touch "$tmp/go2"; wait $racer; rc=$?
t "the page taken meanwhile: exit 1, one line naming it, the page untouched ($(cat "$tmp/race.err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/race.err")" -eq 1 ] && grep -qx "vitmae: $tmp/race2/index.html: exists now (written by another command meanwhile); pass --force to replace it" "$tmp/race.err" && [ "$(cat "$tmp/race2/index.html")" = "another page" ] && [ -s "$tmp/race2/attn_input/layer02-mean.png" ] && ! ls "$tmp/race2" | grep -q "\.tmp\."'

# --- rollout and patch maps against a direct computation from the raw attention -----------------
run --out "$tmp/r" --raw --layer all --mode rollout "$img"
for l in 0 1 2; do
  t "rollout L$l mean" '"$chk" map "$tmp/r/attn_input.attn.npy" rollout $l mean 0 "$tmp/r/attn_input/rollout-layer0$l-mean.npy"'
done
run --out "$tmp/r" --raw --layer 1 --mode rollout --head max --query 2,1 --force "$img"
# patch (2, 1) is grid index 1 * 4 + 2 = 6, token 7
t "rollout max query" '"$chk" map "$tmp/r/attn_input.attn.npy" rollout 1 max 7 "$tmp/r/attn_input/rollout-patch02x01-layer01-max.npy"'
# index.html says whose row a rollout is (it said "attention rollout" alone; the query only in a file name)
t "rollout of a query: index.html names the patch" \
  'grep -q "mode rollout: attention rollout of patch (2,1) (outlined in red" "$tmp/r/index.html"'
run --out "$tmp/r" --raw --layer 2 --mode rollout --head 3 --force "$img"
t "rollout one head" '"$chk" map "$tmp/r/attn_input.attn.npy" rollout 2 3 0 "$tmp/r/attn_input/rollout-layer02-head03.npy"'
t "one map: the summary says 1 map, not 1 maps ($(tail -n 1 "$tmp/out"))" 'grep -q "^attention: 1 image, 1 map in " "$tmp/out"'
run --out "$tmp/p" --raw --layer 0 --mode patch --query 3,2 --head max "$img"
t "patch mode row of token 12" '"$chk" map "$tmp/p/attn_input.attn.npy" row 0 max 12 "$tmp/p/attn_input/patch03x02-layer00-max.npy"'
# The encoder stops after the last layer drawn, but not with --raw, whose file holds every layer: the
# same bytes as the --layer all run's, which PyTorch's attention checked above.
t "--raw --layer 0 writes every layer (the --layer all run's .attn.npy)" 'cmp -s "$tmp/p/attn_input.attn.npy" "$tmp/a/attn_input.attn.npy"'
# The query patch is outlined in red on its overlay (docs/interface.md, "Modes"): at --scale 8 the
# 16 px photo is 128 px and patch (2, 1) the square x 64..95, y 32..63, ringed 2 px thick in
# (255, 40, 40), and that colour nowhere else. Nothing checked it: a run without the ring passed.
run --out "$tmp/q" --mode patch --query 2,1 --head 0 --scale 8 --upsample nearest "$img"; rc=$?
"$VITMAE_TOOLS/imgdump" "$tmp/q/attn_input/patch02x01-layer02-head00.png" "$tmp/q.npy" >/dev/null 2>&1
ring=$(python3 -c '
import array, ast, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<H", b[8:10])[0]; h, w, c = ast.literal_eval(b[10:10 + n].decode())["shape"]
a = array.array("f"); a.frombytes(b[10 + n:])
red = lambda x, y: [round(a[(y * w + x) * c + k] * 255) for k in range(3)] == [255, 40, 40]
ring = [(x, y) for y in range(32, 64) for x in range(64, 96) if x < 66 or x >= 94 or y < 34 or y >= 62]
print("%dx%d, %d of %d ring pixels red, %d red in all" % (w, h, sum(red(x, y) for x, y in ring), len(ring),
      sum(red(x, y) for y in range(h) for x in range(w))))' "$tmp/q.npy" 2>&1)
t "patch mode: the query patch outlined in red ($rc: $ring)" '[ $rc -eq 0 ] && [ "$ring" = "128x128, 240 of 240 ring pixels red, 240 red in all" ]'
# ... and named in the map's text chunk query (docs/interface.md, "Files"); a cls map's says cls.
t "patch mode: the query in the PNG text (query=2,1; cls maps query=cls)" \
  'tr "\000" "=" < "$tmp/q/attn_input/patch02x01-layer02-head00.png" | grep -aq "query=2,1" && tr "\000" "=" < "$tmp/a/attn_input/layer02-mean.png" | grep -aq "query=cls"'
# A wrong reference must fail (the checker can fail).
t "checker catches a wrong map" '! "$chk" map "$tmp/p/attn_input.attn.npy" row 0 max 11 "$tmp/p/attn_input/patch03x02-layer00-max.npy" >/dev/null'

# --- the default --upsample is bilinear (docs/interface.md, "Drawing"): a run without the flag draws
# the pixels of --upsample bilinear, and not those of nearest, at --scale and at --display sizes.
for size in "--scale 3" "--display 48"; do
  for u in default bilinear nearest; do
    up=; [ $u = default ] || up="--upsample $u"
    run --out "$tmp/up-$u" --head 1 $size $up "$img"
    "$VITMAE_TOOLS/imgdump" "$tmp/up-$u/attn_input/layer02-head01.png" "$tmp/up-$u.npy" >/dev/null 2>&1
  done
  t "no --upsample ($size): the pixels of --upsample bilinear" \
    '[ -s "$tmp/up-default.npy" ] && cmp -s "$tmp/up-default.npy" "$tmp/up-bilinear.npy"'
  t "no --upsample ($size): not the pixels of --upsample nearest" \
    '[ -s "$tmp/up-nearest.npy" ] && ! cmp -s "$tmp/up-default.npy" "$tmp/up-nearest.npy"'
  rm -rf "$tmp"/up-*
done

# --- overlay pixels on a known case ---------------------------------------------------------------
run --out "$tmp/o" --raw --head 1 --upsample nearest --scale 3 --normalize map "$img"
t "overlay pixels alpha 0.6 viridis" '"$chk" overlay "$tmp/o/attn_input/layer02-head01.png" "$img" "$tmp/o/attn_input/layer02-head01.npy" 0.6 3 viridis'
run --out "$tmp/o2" --raw --head mean --upsample nearest --scale 2 --alpha 1 --colormap magma --normalize map "$img"
t "overlay pixels alpha 1 magma" '"$chk" overlay "$tmp/o2/attn_input/layer02-mean.png" "$img" "$tmp/o2/attn_input/layer02-mean.npy" 1 2 magma'
t "overlay checker catches a wrong alpha" '! "$chk" overlay "$tmp/o2/attn_input/layer02-mean.png" "$img" "$tmp/o2/attn_input/layer02-mean.npy" 0.5 2 magma >/dev/null'
# The default scale (--normalize layer): 0 .. the largest value of the layer's maps, shared by them,
# written in each overlay's text and used for its colours.
run --out "$tmp/n" --raw --upsample nearest --scale 3 "$img"
l2="$tmp/n/attn_input/layer02"
t "layer scale = 0..max of the layer's maps" '"$chk" scale "$l2-head01.png" "$l2-head00.npy" "$l2-head01.npy" "$l2-head02.npy" "$l2-head03.npy" "$l2-mean.npy"'
t "every map of the layer shares it" '"$chk" scale "$l2-mean.png" "$l2-head00.npy" "$l2-head01.npy" "$l2-head02.npy" "$l2-head03.npy" "$l2-mean.npy"'
t "scale checker catches a wrong max" '! "$chk" scale "$l2-head01.png" "$l2-mean.npy" >/dev/null'
vmax=$(png_text "$l2-head01.png" colour_scale | cut -d' ' -f2)   # "0 MAX" (a grep could run into the CRC)
t "overlay colours on the layer scale 0..$vmax" '"$chk" overlay "$l2-head01.png" "$img" "$l2-head01.npy" 0.6 3 viridis 0 "$vmax"'
t "overlay checker catches the map's own scale" '! "$chk" overlay "$l2-head01.png" "$img" "$l2-head01.npy" 0.6 3 viridis >/dev/null'
run --out "$tmp/n1" --raw --upsample nearest --scale 2 --normalize none --head 2 "$img"
t "--normalize none: colours on 0..1" '"$chk" overlay "$tmp/n1/attn_input/layer02-head02.png" "$img" "$tmp/n1/attn_input/layer02-head02.npy" 0.6 2 viridis 0 1'

# tEXt chunks: mode, layer, head, min, max.
tr '\000' '=' <"$tmp/o/attn_input/layer02-head01.png" >"$tmp/text"
t "png text mode" 'grep -aq "mode=cls" "$tmp/text"'
t "png text layer/head" 'grep -aq "layer=2" "$tmp/text" && grep -aq "head=1" "$tmp/text"'
t "png text min/max" 'grep -aq "min=[0-9]" "$tmp/text" && grep -aq "max=[0-9]" "$tmp/text"'
# Default --display 512: the 16 px photo enlarged by whole pixels, 32 times.
t "default display 512 = 16 x 32" '[ "$(od -An -tu1 -j16 -N8 "$tmp/a/attn_input/layer02-mean.png" | tr -s " ")" = " 0 0 2 0 0 0 2 0" ]'
# A photo of 1 x 400 pixels: its montage tiles are 1 px wide, but each cell keeps room for its label and
# bar (120 px here) and the header wraps at 360 px: the montage was 45 px wide, the labels over one
# another and the header a word a line, cut off.
python3 -c 'import struct, sys, zlib
w, h = 1, 400
raw = b"".join(b"\0" + bytes((y % 256, 90, 200)) for y in range(h))
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                              + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))' "$tmp/thin.png"
run --out "$tmp/thin" "$tmp/thin.png"; rc=$?
mw=$(od -An -tu1 -j16 -N8 "$tmp/thin/thin.attn.png" | awk '{print $3*256+$4}')
mh=$(od -An -tu1 -j16 -N8 "$tmp/thin/thin.attn.png" | awk '{print $7*256+$8}')
t "a 1 x 400 photo: the montage holds its labels and header ($rc: ${mw}x$mh)" \
  '[ $rc -eq 0 ] && [ "$mw" -eq $((10 + 5 * (120 + 10))) ] && [ "$mh" -lt 600 ]'

# --- every mode and selection writes the documented files, and only those ----------------------
files() { (cd "$1" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | tr '\n' ' '); }
check_files() {  # name, args..., then "--" and the expected list
  name=$1; shift
  args=""; while [ "$1" != "--" ]; do args="$args $1"; shift; done; shift
  rm -rf "$tmp/f"
  # shellcheck disable=SC2086
  "$VITMAE" attention --ckpt "$ck" --out "$tmp/f" $args "$img" >/dev/null 2>&1; rc=$?
  want=$(printf '%s\n' "$@" | LC_ALL=C sort | tr '\n' ' ')
  got=$(files "$tmp/f")
  if [ $rc -ne 0 ] || [ "$got" != "$want" ]; then echo "FAILED: files of $name (rc $rc)"; echo "  got:  $got"; echo "  want: $want"; fail=1; fi
}
check_files "default" -- index.html attn_input.attn.png attn_input/layer02-head00.png attn_input/layer02-head01.png \
  attn_input/layer02-head02.png attn_input/layer02-head03.png attn_input/layer02-mean.png
check_files "layer 1 head 2" --layer 1 --head 2 -- index.html attn_input.attn.png attn_input/layer01-head02.png
check_files "all layers, mean" --layer all --head mean -- index.html attn_input.attn.png \
  attn_input/layer00-mean.png attn_input/layer01-mean.png attn_input/layer02-mean.png
check_files "max" --layer 0 --head max -- index.html attn_input.attn.png attn_input/layer00-max.png
check_files "patch" --mode patch --query 1,3 --layer 0 --head 3 -- index.html attn_input.attn.png \
  attn_input/patch01x03-layer00-head03.png
check_files "rollout" --mode rollout -- index.html attn_input.attn.png attn_input/rollout-layer02-mean.png
check_files "rollout all max" --mode rollout --layer all --head max -- index.html attn_input.attn.png \
  attn_input/rollout-layer00-max.png attn_input/rollout-layer01-max.png attn_input/rollout-layer02-max.png
check_files "rollout query" --mode rollout --query 0,0 --head 1 -- index.html attn_input.attn.png \
  attn_input/rollout-patch00x00-layer02-head01.png
check_files "raw" --raw --head mean -- index.html attn_input.attn.png attn_input.attn.npy \
  attn_input/layer02-mean.png attn_input/layer02-mean.npy
check_files "masked raw" --raw --head 0 --mask-ratio 0.5 --seed 1 -- index.html attn_input.attn.png attn_input.attn.npy \
  attn_input.attn-mask.npy attn_input/layer02-head00.png attn_input/layer02-head00.npy

# --- masking: T = 1 + K, removed patches grey -----------------------------------------------------
run --out "$tmp/m" --raw --mask-ratio 0.75 --seed 5 --scale 2 "$img"; rc=$?
t "masked exits 0" '[ $rc -eq 0 ]'
# ... and of a masked run, what the grey is (it never said the maps were of a masked encoder)
t "masked: index.html says the patches seen and the mask's flags" \
  'grep -q "; the encoder saw 4 of the 16 patches (--mask-ratio 0.75, --seed 5: one random mask for every image), the removed ones grey in the maps" "$tmp/m/index.html"'
t "masked attention [3, 4, 5, 5], rows sum to 1" '"$chk" rows "$tmp/m/attn_input.attn.npy" 3 4 5'
t "masked patches grey, visible not" '"$chk" masked "$tmp/m/attn_input/layer02-mean.png" "$tmp/m/attn_input.attn-mask.npy" 8'
# A removed patch lends no value to its visible neighbours (docs/interface.md, "Masked runs"): it
# was filled with the map's minimum, so bilinear faded an isolated visible patch toward that minimum
# at its edges, colours its weight never had. Seed 5 leaves patches (0,0) and (3,2) without visible
# neighbours, neither the map's minimum.
run --out "$tmp/mi" --mask-ratio 0.75 --seed 5 --head mean --alpha 1 --normalize map --display 512 --raw "$img"
t "masked, bilinear: an isolated visible patch is one flat colour ($("$chk" isolated "$tmp/mi/attn_input/layer02-mean.png" "$tmp/mi/attn_input.attn-mask.npy" 128 2>&1))" \
  '"$chk" isolated "$tmp/mi/attn_input/layer02-mean.png" "$tmp/mi/attn_input.attn-mask.npy" 128'
t "unmasked run has no grey patch" '! "$chk" masked "$tmp/a/attn_input/layer02-mean.png" "$tmp/m/attn_input.attn-mask.npy" 64 >/dev/null'
# The PNG text chunks as a reader takes them: mask_ratio a number (a map's held "0.75 seed 5", which
# float() refuses), the seed its own chunk, in the maps and the montage alike.
png_text() { python3 -c '
import struct, sys
b = open(sys.argv[1], "rb").read(); i = 8; kv = {}
while i < len(b):
    n, kind = struct.unpack(">I4s", b[i:i + 8]); d = b[i + 8:i + 8 + n]; i += 12 + n
    if kind == b"tEXt": k, v = d.split(b"\0", 1); kv[k.decode("latin-1")] = v.decode("latin-1")
print(float(kv["mask_ratio"]), int(kv["seed"]))' "$1"; }
t "masked: mask_ratio and seed chunks read as numbers ($(png_text "$tmp/m/attn_input/layer02-mean.png" 2>&1 | tail -n 1))" \
  '[ "$(png_text "$tmp/m/attn_input/layer02-mean.png")" = "0.75 5" ] && [ "$(png_text "$tmp/m/attn_input.attn.png")" = "0.75 5" ]'

# A long name in a one-tile montage (380 px wide): the caption's first word was a line of its own
# running past the right edge; now shortened in its middle to end inside the 10-pixel margin, blank in
# the caption's first line (rows 10..21).
long=a_very_long_file_name_of_a_photograph_taken_2024-05-01_at_the_beach_number_0001_and_more
cp "$img" "$tmp/$long.png"
run --out "$tmp/long" --head 0 "$tmp/$long.png"; rc=$?
ink=$(ink "$tmp/long/$long.attn.png" -10 0 10 22 "$tmp/right.npy")
t "a long name in a one-tile montage: its caption ends inside the picture (exit $rc, spread $ink at the right edge)" '[ $rc -eq 0 ] && [ "$ink" = "0.000" ]'

# --- folders, any size, grey images, duplicate stems, a bad file, index.html ----------------------
mkdir -p "$tmp/in/x" "$tmp/in/y"
"$VITMAE_TOOLS/synth" "$tmp/in/x" --count 2 --size 37 >/dev/null
"$VITMAE_TOOLS/synth" "$tmp/in/y" --count 1 --size 23 --grey >/dev/null
cp "$img" "$tmp/in/a b&c.png"
cp "$tmp/in/a b&c.png" "$tmp/in/y/a b&c.png"
printf 'not a png' >"$tmp/in/broken.png"
"$VITMAE" attention --ckpt "$ck" --out "$tmp/d" --head mean "$tmp/in" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "bad input exits 1" '[ $rc -eq 1 ]'
t "bad input reported" 'grep -q "^vitmae: $tmp/in/broken.png: " "$tmp/err"'
t "others written" '[ $(find "$tmp/d" -name "*.attn.png" | wc -l) -eq 5 ]'
# Counted from 1 as reconstruct's (docs/interface.md, "Stems"): attention's own count from 2 had no reason.
t "duplicate stem gets -1, as in reconstruct" '[ -f "$tmp/d/a b&c.attn.png" ] && [ -f "$tmp/d/a b&c-1.attn.png" ] && [ ! -e "$tmp/d/a b&c-2.attn.png" ]'
t "index escapes names" 'grep -q "href=\"a%20b%26c.attn.png\"" "$tmp/d/index.html" && grep -q "a b&amp;c" "$tmp/d/index.html"'
# 25 inputs that cannot be read, 15 in a folder's scan and 10 given as files: the first 20 named, then
# one line with the count of the rest, as train says a scan's skipped files (a line each, with no cap,
# before); each is still a failed input (exit 1), and the good one is drawn. The run ends as
# reconstruct's does, with how many inputs failed (docs/interface.md, section 2).
mkdir -p "$tmp/unread" "$tmp/unread2" && cp "$img" "$tmp/unread/good.png"
for k in $(seq 10 24); do printf 'not a png' > "$tmp/unread/bad$k.png"; done
for k in $(seq 25 34); do printf 'not a png' > "$tmp/unread2/bad$k.png"; done
run --out "$tmp/dunread" --head mean "$tmp/unread" "$tmp"/unread2/bad*.png; rc=$?
t "25 inputs that cannot be read: 20 named, then a count ($rc: $(wc -l < "$tmp/err") lines)" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 22 ] &&
   [ "$(grep -c "^vitmae: $tmp/unread2\{0,1\}/bad[12][0-9].png: not a PNG, JPEG or WebP file$" "$tmp/err")" -eq 20 ] &&
   sed -n 21p "$tmp/err" | grep -qx "vitmae: \.\.\. and 5 more inputs that cannot be read" &&
   sed -n 22p "$tmp/err" | grep -qx "vitmae: attention: 25 inputs failed" && [ -s "$tmp/dunread/good.attn.png" ]'
# The page names every one of them, past the terminal's 20 too.
t "25 inputs that cannot be read: index.html lists all 25 ($(grep -c "^<li>.*/bad[123][0-9].png: " "$tmp/dunread/index.html"))" \
  'grep -q "Not drawn by this run (25)" "$tmp/dunread/index.html" &&
   [ "$(grep -c "^<li>.*/bad[123][0-9].png: not a PNG, JPEG or WebP file</li>$" "$tmp/dunread/index.html")" -eq 25 ]'
# The lines come in the order of the inputs (docs/interface.md, "Bad files"), whichever failed as the
# inputs were gathered (a missing path, a folder's scan) and whichever as its image was read (a file
# given directly): the gathered kind came first, and the 20 named were the first 20 of that kind.
mkdir -p "$tmp/unread3" && cp "$img" "$tmp/unread3/a.png" && printf 'not a png' > "$tmp/unread3/b.png"
run --out "$tmp/dorder" --head mean "$img" "$tmp/unread2/bad25.png" "$tmp/nosuch.png" "$tmp/unread3" "$tmp/unread2/bad26.png"; rc=$?
t "a read failure, a missing path, a folder's file, a read failure: said in input order ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/unread2/bad25.png: not a PNG, JPEG or WebP file
vitmae: $tmp/nosuch.png: No such file or directory
vitmae: $tmp/unread3/b.png: not a PNG, JPEG or WebP file
vitmae: $tmp/unread2/bad26.png: not a PNG, JPEG or WebP file
vitmae: attention: 4 inputs failed" ]'
# index.html lists them in the same order as stderr said them, the inputs' order: a scanned line
# (a missing path, a folder's skipped file) between the read failures of the files given around it.
t "index.html lists what it did not draw in the order stderr said it ($(grep "^<li>" "$tmp/dorder/index.html" | tr "\n" "|"))" \
  'grep -q "Not drawn by this run (4)" "$tmp/dorder/index.html" &&
   [ "$(grep "^<li>" "$tmp/dorder/index.html" | sed "s|^<li>|vitmae: |; s|</li>$||")" = "$(sed \$d "$tmp/err")" ]'
run --out "$tmp/dunread2" --head mean "$tmp"/unread2/bad*.png "$tmp/unread"; rc=$?
t "25 inputs, the 10 read first, then the folder's 15: the first 20 in input order ($rc: $(wc -l < "$tmp/err") lines)" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 22 ] &&
   [ "$(head -n 20 "$tmp/err" | sed "s|^vitmae: $tmp/||; s|: not a PNG, JPEG or WebP file$||" | tr "\n" " ")" = "$(for k in $(seq 25 34); do printf "unread2/bad$k.png "; done; for k in $(seq 10 19); do printf "unread/bad$k.png "; done)" ] &&
   sed -n 21p "$tmp/err" | grep -qx "vitmae: \.\.\. and 5 more inputs that cannot be read" &&
   sed -n 22p "$tmp/err" | grep -qx "vitmae: attention: 25 inputs failed"'
# A folder copied from a Mac: a ._NAME file (AppleDouble, the header's magic 00 05 16 07) beside every
# image. Its hidden files that do not decode are one warning, as train says them, at the folder's place
# (after its other lines), no failed input and not on the page's "Not drawn" list (no image of the run):
# both images drawn, exit 0 (each was named as an input that cannot be read, exit 1, as reconstruct's).
# A visible broken file among them is still a failed input, said and listed; a ._NAME file given
# directly is one too (the user named it).
mkdir -p "$tmp/mac" && cp "$img" "$tmp/mac/a.png" && cp "$img" "$tmp/mac/b.png"
for k in a b c; do printf '\000\005\026\007\000\002\000\000Mac OS X' > "$tmp/mac/._$k.png"; done
mac_warning="vitmae: warning: skipped 3 hidden files (names starting with '.', as the ._NAME files macOS writes beside copies) that do not decode; the first:"
run --out "$tmp/dmac" --head mean "$tmp/mac"; rc=$?
t "a Mac copy's folder, 2 images and 3 ._NAME files: exit 0, one warning, both drawn, nothing under Not drawn ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$tmp/err")" = "$mac_warning $tmp/mac/._a.png: not a PNG, JPEG or WebP file" ] &&
   [ -s "$tmp/dmac/a.attn.png" ] && [ -s "$tmp/dmac/b.attn.png" ] && ! grep -q "not-drawn\|\._" "$tmp/dmac/index.html"'
cp -r "$tmp/mac" "$tmp/mac2" && printf 'not a png' > "$tmp/mac2/broken.png"
run --out "$tmp/dmac2" --head mean "$tmp/mac2" "$tmp/nosuch.png"; rc=$?
t "the same with a visible broken file, then a missing INPUT: exit 1, 2 failed, the warning at the folder's place ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/mac2/broken.png: not a PNG, JPEG or WebP file
$mac_warning $tmp/mac2/._a.png: not a PNG, JPEG or WebP file
vitmae: $tmp/nosuch.png: No such file or directory
vitmae: attention: 2 inputs failed" ] && [ -s "$tmp/dmac2/a.attn.png" ] && [ -s "$tmp/dmac2/b.attn.png" ] &&
   grep -q "Not drawn by this run (2)" "$tmp/dmac2/index.html" && ! grep -q "\._" "$tmp/dmac2/index.html"'
run --out "$tmp/dmac3" --head mean "$tmp/mac/._a.png" "$tmp/mac/a.png"; rc=$?
t "a ._NAME file given as an INPUT: a failed input, named ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/mac/._a.png: not a PNG, JPEG or WebP file" ] && [ -s "$tmp/dmac3/a.attn.png" ]'
# The same run again is refused in its one line: the bad input's line waits until the outputs pass
# their checks (docs/interface.md, "Earlier results"; it came first).
"$VITMAE" attention --ckpt "$ck" --out "$tmp/d" --head mean "$tmp/in" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "the same run again, a bad input among them: exit 2, one line ($(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/d/index.html: already exists (use --force to replace it)" ]'
# Every PNG written is linked from index.html (percent-encoded relative path).
enc() { printf '%s' "$1" | sed 's/%/%25/g; s/ /%20/g; s/&/%26/g'; }
missing=0
for f in $(cd "$tmp/d" && find . -name '*.png' | sed 's|^\./||; s/ /@SP@/g'); do
  f=$(printf '%s' "$f" | sed 's/@SP@/ /g')
  grep -qF "href=\"$(enc "$f")\"" "$tmp/d/index.html" || { echo "  not linked: $f"; missing=1; }
done
t "index links every PNG" '[ $missing -eq 0 ]'
t "index link count" '[ $(grep -o "<figure><a href=" "$tmp/d/index.html" | wc -l) -eq 5 ]'
# Each map on the page has its colour scale: a bar of the colour map used (turbo ends in dark red, so
# "brighter colours = more attention", all the page said before, was false for it), with uniform
# attention (1/17 here: 16 patches and CLS) marked where it lies on the scale.
"$VITMAE" attention --ckpt "$ck" --out "$tmp/turbo" --colormap turbo --layer 0 "$img" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "index: each map's colour bar, of the colour map named ($rc)" '[ $rc -eq 0 ] && python3 - "$tmp/turbo/index.html" <<PY
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
assert "turbo colour map" in page and "brighter" not in page, "colour map not named"
figs = re.findall(r"<figure>.*?</figure>", page)
assert len(figs) == 5, len(figs)
for f in figs:
    lo, hi = map(float, re.search(r"colours ([0-9.e-]+) to ([0-9.e-]+)", f).groups())
    bar = re.search(r"linear-gradient\\(to right,(#[0-9a-f]{6})(?:,#[0-9a-f]{6})*,(#[0-9a-f]{6})\\)", f)
    assert bar and bar.groups() == ("#30123b", "#7a0403"), f
    mark = re.search(r"class=\"mark\" style=\"left:([0-9.]+)%", f)
    want = 100 * (1 / 17 - lo) / (hi - lo)
    assert mark and abs(float(mark.group(1)) - want) < 1.5, (f, want)
PY'
# index.html read back as a browser or Python reads it: UTF-8 (its <meta charset>; a name that is not
# UTF-8 was written as its bytes, and the page did not decode), every link and picture an existing
# file, and each name as its text (U+FFFD for the bytes that are not UTF-8).
mkdir -p "$tmp/hn"
for n in "$(printf 'bad\377x')" "é日本" "<b>\"q'&amp;" "h#q?p%20"; do cp "$img" "$tmp/hn/$n.png"; done
"$VITMAE" attention --ckpt "$ck" --out "$tmp/hnout" --head mean "$tmp/hn" >/dev/null 2>&1; rc=$?
t "index.html of odd names: UTF-8, links resolve, names read back ($rc)" '[ $rc -eq 0 ] && python3 - "$tmp/hnout" <<PY
import os, sys, urllib.parse
from html.parser import HTMLParser
d = sys.argv[1]
page = open(os.path.join(d, "index.html"), "rb").read().decode("utf-8")
class P(HTMLParser):
    def __init__(s): super().__init__(); s.links, s.h2, s.tag = [], [], None
    def handle_starttag(s, tag, attrs):
        s.tag = tag; s.links += [v for k, v in attrs if k in ("href", "src")]
    def handle_data(s, x):
        if s.tag == "h2" and x.strip(): s.h2.append(x)
p = P(); p.feed(page)
assert len(p.links) == 16, p.links
for l in p.links:
    u = urllib.parse.urlsplit(l)
    assert not (u.scheme or u.query or u.fragment) and os.path.exists(os.fsencode(os.path.join(d, urllib.parse.unquote(u.path, errors="surrogateescape")))), l
assert sorted(p.h2) == sorted(["bad\ufffdx", "é日本", "<b>\"q\x27&amp;", "h#q?p%20"]), p.h2
PY'
# ... and a name with control characters (an escape sequence, a tab, a newline, a C1 control U+009B)
# and a backslash: its text as the command's stdout line writes it (\x1b, \t, \n, \xc2\x9b, \\), no
# control byte in the page (they
# were written raw: a browser shows nothing or a box for them, a newline as a space).
mkdir -p "$tmp/cn"
cn="$(printf 'e\033[31mx\ty\nz\\w\302\233q')"
cp "$img" "$tmp/cn/$cn.png"
"$VITMAE" attention --ckpt "$ck" --out "$tmp/cnout" --head mean "$tmp/cn" >"$tmp/out" 2>&1; rc=$?
t "index.html of a name with control characters: written out as on stdout ($rc: $(grep "<h2>" "$tmp/cnout/index.html"))" \
  '[ $rc -eq 0 ] && grep -qxF "<h2>e\\x1b[31mx\\ty\\nz\\\\w\\xc2\\x9bq</h2>" "$tmp/cnout/index.html" && ! LC_ALL=C grep -q "$(printf "\302\233")" "$tmp/cnout/index.html" && [ "$(tr -d "\001-\010\013-\037\177" < "$tmp/cnout/index.html" | wc -c)" -eq "$(wc -c < "$tmp/cnout/index.html")" ] && [ "$(grep -c "$(printf "\t")" "$tmp/cnout/index.html")" -eq 0 ]'

# A name near the 255-byte limit: the stem cut to 200 bytes, before a character, and every file
# written (it wrote nothing: "file name too long").
mkdir -p "$tmp/longn"
e120=$(python3 -c 'print("\u00e9" * 120)'); e100=$(python3 -c 'print("\u00e9" * 100)')
cp "$img" "$tmp/longn/$e120.png"
run --out "$tmp/longout" --raw --head mean "$tmp/longn"; rc=$?
t "a 244-byte name: stem cut to 100 characters, files written ($rc: $(head -c 80 "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ -s "$tmp/longout/$e100.attn.png" ] && [ -s "$tmp/longout/$e100.attn.npy" ] && [ -s "$tmp/longout/$e100/layer02-mean.png" ]'

# Stems that would name a file outside --out or another image's file (docs/interface.md, "Stems"):
# "...png" (stem "..") and "..png" (".") write as image, image-1; x.attn.png.png's folder of maps and
# x.png's montage cannot both be x.attn.png; index.html.png's folder cannot be the index.
mkdir -p "$tmp/odd" "$tmp/up/sub"
cp "$img" "$tmp/odd/...png"; cp "$img" "$tmp/odd/..png"
cp "$img" "$tmp/odd/x.attn.png.png"; cp "$img" "$tmp/odd/x.png"; cp "$img" "$tmp/odd/index.html.png"
echo precious >"$tmp/up/layer02-head00.png"
"$VITMAE" attention --ckpt "$ck" --out "$tmp/up/sub" --force "$tmp/odd/...png" "$tmp/odd/..png" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "stems . and ..: exit 0 (got $rc)" '[ $rc -eq 0 ]'
t "stems . and ..: nothing written outside --out" '[ "$(cat "$tmp/up/layer02-head00.png")" = precious ] && [ $(ls "$tmp/up" | wc -l) -eq 2 ] && [ -d "$tmp/up/sub" ]'
t "stems . and ..: image and image-1" '[ -f "$tmp/up/sub/image.attn.png" ] && [ -f "$tmp/up/sub/image-1/layer02-head00.png" ]'
"$VITMAE" attention --ckpt "$ck" --out "$tmp/clash" "$tmp/odd/x.attn.png.png" "$tmp/odd/x.png" "$tmp/odd/index.html.png" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "clashing stems: exit 0 (got $rc: $(head -n 1 "$tmp/err"))" '[ $rc -eq 0 ]'
t "clashing stems: a folder and a montage apart" '[ -d "$tmp/clash/x.attn.png" ] && [ -f "$tmp/clash/x-1.attn.png" ] && [ -d "$tmp/clash/x-1" ]'
t "clashing stems: the index is a file" '[ -f "$tmp/clash/index.html" ] && [ -f "$tmp/clash/index.html-1.attn.png" ]'
# ... and x.attn-mask.npy.png's folder of maps and a masked --raw run's mask of x.png (x.attn-mask.npy)
cp "$img" "$tmp/odd/x.attn-mask.npy.png"
"$VITMAE" attention --ckpt "$ck" --out "$tmp/clash2" --raw --mask-ratio 0.5 --head mean "$tmp/odd/x.attn-mask.npy.png" "$tmp/odd/x.png" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "clashing stems, masked --raw: a folder and a mask apart ($rc: $(LC_ALL=C ls "$tmp/clash2" 2>&1 | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ -d "$tmp/clash2/x.attn-mask.npy" ] && [ -f "$tmp/clash2/x-1.attn-mask.npy" ] && [ -d "$tmp/clash2/x-1" ]'

# An --out so long that the maps' names would pass the 4096-byte path limit: the image is refused in one
# line, and no map is written under a name cut short. The folder is 4040 bytes whatever TMPDIR is: its
# probe (.vitmae-write-test-XXXXXX, cmd/output.h; once -<pid>, up to 7 digits) must still fit. Grown past
# 4000 in steps of 201 bytes it came to 4066-4266 by TMPDIR's length, and --out's probe then passed the
# limit (TMPDIR on /dev/shm, or a 6-digit pid: "cannot write in this folder"), not the maps' names.
long="$tmp/long"
while [ ${#long} -lt 3800 ]; do long="$long/$(printf "%0200d" 0)"; done
long="$long/$(printf "%0$((4040 - ${#long} - 1))d" 0)"
mkdir -p "$long"
t "the long --out's folder is 4040 bytes (${#long})" '[ ${#long} -eq 4040 ]'
"$VITMAE" attention --ckpt "$ck" --out "$long/out" "$img" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "output names past the path limit: exit 1, one line ($(head -c 60 "$tmp/err"))" '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "attn_input.png: the output names .* would pass the 4096-byte path limit" "$tmp/err"'
t "output names past the path limit: no map written, no index" '[ ! -e "$long/out/attn_input" ] && [ ! -e "$long/out/index.html" ]'

# Selections are written as numbers: a leading space or hexadecimal is refused, as for every number flag;
# a sign is taken, as every integer flag takes it (below).
for sel in "--layer= 1" "--layer=0x1" "--head= 1" "--query=1, 2" "--query= 1,2"; do
  mode=cls; case "$sel" in --query*) mode=patch ;; esac
  "$VITMAE" attention --ckpt "$ck" --out "$tmp/sel" --mode $mode "$sel" "$img" > /dev/null 2> "$tmp/err"; rc=$?
  t "selection '$sel': exit 2, one line naming it ($(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q -- "${sel%%=*}: .* is not" "$tmp/err"'
done
"$VITMAE" attention --ckpt "$ck" --out "$tmp/sel" --mode patch --query=1,2 --layer=1 --head=1 "$img" > /dev/null 2>&1; rc=$?
t "the same selections written plainly run" '[ $rc -eq 0 ]'
"$VITMAE" attention --ckpt "$ck" --out "$tmp/selp" --mode patch --query=+1,+2 --layer=+1 --head=+1 "$img" > /dev/null 2> "$tmp/err"; rc=$?
t "... and with a plus sign: the same maps ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ "$(ls "$tmp/sel/attn_input")" = "$(ls "$tmp/selp/attn_input")" ] &&
   cmp -s "$tmp/sel/attn_input/$(ls "$tmp/sel/attn_input" | head -n 1)" "$tmp/selp/attn_input/$(ls "$tmp/sel/attn_input" | head -n 1)"'


# The montage holds its tiles and nothing else: rollout of 3 layers is one row of 3 tiles of 256 px
# (16 px photo enlarged 16 times), 10 px apart and around: 10 + 3 * (256 + 10) = 808.
"$VITMAE" attention --ckpt "$ck" --out "$tmp/mr" --mode rollout --layer all "$img" >/dev/null 2>&1
t "rollout montage: one row of 3 tiles" '[ "$(od -An -tu1 -j16 -N4 "$tmp/mr/attn_input.attn.png" | tr -s " ")" = " 0 0 3 40" ]'
"$VITMAE" attention --ckpt "$ck" --out "$tmp/mh" --layer all --head all "$img" >/dev/null 2>&1
# 3 layers x (4 heads + mean): 5 columns = 10 + 5 * 266 = 1340.
t "layers x heads montage: 5 columns" '[ "$(od -An -tu1 -j16 -N4 "$tmp/mh/attn_input.attn.png" | tr -s " ")" = " 0 0 5 60" ]'

# An --out that cannot be made: "attention --out: cannot create the output folder: ...", as reconstruct
# and probe say it (it said "attention: DIR: Not a directory").
"$VITMAE" attention --ckpt "$ck" --out "$img/a" "$img" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "--out under a file: exit 1, reconstruct's words ($(cat "$tmp/err"))" '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: attention --out: cannot create the output folder: $img/a: Not a directory" ]'

# Messages only for files written: index.html that cannot be written is an error, never announced.
# (A folder that is not empty in its place, which even --force cannot replace, made while the command
# computes: one there at the start is refused before the work, above; temporary files have names of
# their own, so a folder at index.html.tmp no longer stands in the way.)
mkdir -p "$tmp/ro/index.html.tmp"
VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$tmp/ro.go" "$VITMAE" attention --ckpt "$ck" --out "$tmp/ro" --head mean --force "$img" >"$tmp/out" 2>"$tmp/err" &
pid=$!; wait_gate "$tmp/ro.go" $pid; mkdir -p "$tmp/ro/index.html/kept"; touch "$tmp/ro.go"; wait $pid; rc=$?
t "unwritable index exits 1" '[ $rc -eq 1 ] && grep -q "^vitmae: attention: .*index.html" "$tmp/err"'
t "unwritable index not announced" '! grep -q "index.html" "$tmp/out" && [ -d "$tmp/ro/index.html/kept" ] && ! ls "$tmp/ro" | grep -q "\.tmp\."'
t "the written montage is announced" 'grep -q "attn_input.attn.png" "$tmp/out" && [ -f "$tmp/ro/attn_input.attn.png" ]'

# A photo too large to draw at --scale K is refused with a reason (no crash, no huge allocation).
"$VITMAE_TOOLS/synth" "$tmp/bigp" --count 1 --size 1700 >/dev/null
"$VITMAE" attention --ckpt "$ck" --out "$tmp/big" --scale 40 --head 0 "$tmp/bigp" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "too large to draw: exit 1 with a reason" '[ $rc -eq 1 ] && grep -q "too large to draw" "$tmp/err" && ! grep -q " -> " "$tmp/out"'
t "too large to draw: the documented line (docs/interface.md, Drawing)" 'grep -qx "vitmae: $tmp/bigp/[^ ]*: a 1700x1700 photo at --scale 40 is too large to draw (65536 pixels per side at most)" "$tmp/err"'

# A checkpoint with a decoder works the same (the decoder is not used).
"$VITMAE" attention --ckpt "$fx/torch_small.safetensors" --out "$tmp/ts" "$img" >/dev/null 2>&1; rc=$?
t "full checkpoint exits 0" '[ $rc -eq 0 ] && [ -f "$tmp/ts/attn_input/layer00-mean.png" ]'
# Of a full checkpoint only the encoder's weights are read (io/checkpoint.h, ckpt_load_encoder): the
# maps, raw attention and features of torch_small (PyTorch's order: its mask_token and
# decoder_pos_embed lie between the encoder's tensors) are byte for byte those of its encoder-only
# twin. The decoder, read past, is still checked: a NaN in it, or a damaged byte, is refused with the
# line reconstruct (which loads every weight) gives.
for f in torch_small torch_small_encoder; do
  "$VITMAE" attention --ckpt "$fx/$f.safetensors" --out "$tmp/tw-$f" --raw --layer all --head all "$img" >/dev/null 2>&1
  "$VITMAE" embed --ckpt "$fx/$f.safetensors" --pool mean --out "$tmp/tw-$f.npy" "$img" >/dev/null 2>&1
done
t "full checkpoint and its encoder-only twin: the same maps, raw attention and features" \
  '[ -s "$tmp/tw-torch_small.npy" ] && cmp -s "$tmp/tw-torch_small.npy" "$tmp/tw-torch_small_encoder.npy" &&
   [ -s "$tmp/tw-torch_small/attn_input.attn.npy" ] && diff -r "$tmp/tw-torch_small/attn_input" "$tmp/tw-torch_small_encoder/attn_input" >/dev/null &&
   cmp -s "$tmp/tw-torch_small/attn_input.attn.npy" "$tmp/tw-torch_small_encoder/attn_input.attn.npy"'
/usr/bin/python3 - "$VITMAE_ROOT/tools" "$fx/torch_small.safetensors" "$tmp" <<'PY'
import array, json, struct, sys
sys.path.insert(0, sys.argv[1])
import safetensors_io as st
ts, meta = st.read(sys.argv[2])
shape, a = ts["decoder_pred.weight"]
a = array.array("f", a); a[len(a) - 1] = float("nan")
ts["decoder_pred.weight"] = (shape, a)
st.write(sys.argv[3] + "/dec-nan.safetensors", ts, meta)
a[len(a) - 1] = 0.5
st.write(sys.argv[3] + "/dec-dmg.safetensors", ts, meta)   # with a crc32 (the fixture has none)
b = bytearray(open(sys.argv[3] + "/dec-dmg.safetensors", "rb").read())
n = struct.unpack("<Q", b[:8])[0]
at = 8 + n + json.loads(b[8:8 + n])["decoder_blocks.0.mlp.fc1.weight"]["data_offsets"][0] + 5
b[at] ^= 0x10
open(sys.argv[3] + "/dec-dmg.safetensors", "wb").write(b)
PY
for bad in dec-nan dec-dmg; do
  "$VITMAE" reconstruct --ckpt "$tmp/$bad.safetensors" --out "$tmp/r-$bad" "$img" >/dev/null 2>"$tmp/err.r"
  "$VITMAE" attention --ckpt "$tmp/$bad.safetensors" --out "$tmp/a-$bad" "$img" >/dev/null 2>"$tmp/err.a"; rca=$?
  "$VITMAE" embed --ckpt "$tmp/$bad.safetensors" --out "$tmp/e-$bad.npy" "$img" >/dev/null 2>"$tmp/err.e"; rce=$?
  t "$bad: attention and embed exit 1 with reconstruct's line ($rca, $rce: $(cat "$tmp/err.a"))" \
    '[ $rca -eq 1 ] && [ $rce -eq 1 ] && [ "$(wc -l <"$tmp/err.r")" -eq 1 ] && grep -q "holds NaN or infinite values\|crc32 mismatch (file damaged)" "$tmp/err.r" &&
     cmp -s "$tmp/err.r" "$tmp/err.a" && cmp -s "$tmp/err.r" "$tmp/err.e" && [ ! -e "$tmp/a-$bad" ] && [ ! -e "$tmp/e-$bad.npy" ]'
done
"$VITMAE" attention --ckpt "$tmp/none.safetensors" "$img" 2>"$tmp/err" >/dev/null; rc=$?
t "missing checkpoint exits 1" '[ $rc -eq 1 ] && grep -q "^vitmae: " "$tmp/err"'

# --- usage errors: exit 2, one line naming the valid range ---------------------------------------
usage() {  # expected message, args...
  msg=$1; shift
  "$VITMAE" attention --ckpt "$ck" --out "$tmp/u" "$@" "$img" >/dev/null 2>"$tmp/err"; rc=$?
  if [ $rc -ne 2 ] || ! grep -qF "$msg" "$tmp/err" || [ $(wc -l <"$tmp/err") -ne 1 ]; then
    echo "FAILED: usage $* (rc $rc): $(cat "$tmp/err")"; fail=1
  fi
}
usage "vitmae: attention --layer: 9 is out of range [0, 2] (or last|all)" --layer 9
usage "vitmae: attention --layer: -1 is out of range [0, 2] (or last|all)" --layer -1
usage "vitmae: attention --layer: 'x' is not a layer" --layer x
usage "vitmae: attention --head: 4 is out of range [0, 3] (or mean|max|all)" --head 4
usage "vitmae: attention --head: 'avg' is not a head" --head avg
usage "vitmae: attention --query: (4,0) is outside the 4x4 patch grid (X and Y in [0, 3])" --mode patch --query 4,0
usage "vitmae: attention --query: '1' is not X,Y" --mode patch --query 1
usage "vitmae: attention --query: --mode patch needs --query X,Y" --mode patch
usage "vitmae: attention --query: not used by --mode cls" --query 1,1
usage "vitmae: attention --scale: give --scale K or --display N, not both" --scale 2 --display 100
usage "vitmae: attention --seed: draws the mask of --mask-ratio R; without a ratio above 0 nothing is masked" --seed 5
usage "vitmae: attention --mode: 'foo' is not one of cls|patch|rollout" --mode foo
usage "vitmae: attention --colormap: 'jet' is not one of viridis|inferno|magma|cividis|turbo|gray" --colormap jet
usage "vitmae: attention --alpha: 1.5 is out of range [0, 1]" --alpha 1.5
usage "vitmae: attention --alpha: 1.0000001 is out of range [0, 1]" --alpha 1.0000001
usage "vitmae: attention --upsample: 'cubic' is not one of bilinear|nearest" --upsample cubic
usage "is masked out by --mask-ratio 0.75 --seed 5" --mode patch --query $(
  # a removed patch of the seed-5 mask above
  od -An -tu1 -j128 "$tmp/m/attn_input.attn-mask.npy" | tr -s ' ' '\n' | grep -n '^1$' | head -n 1 |
  awk -F: '{ i = $1 - 1; printf "%d,%d", i % 4, int(i / 4) }') --mask-ratio 0.75 --seed 5
t "no output for usage errors" '[ ! -e "$tmp/u" ]'
"$VITMAE" attention --help >"$tmp/out"; rc=$?
t "help exits 0" '[ $rc -eq 0 ] && grep -q -- "--mode cls|patch|rollout" "$tmp/out"'
# A file name with a newline stays inside its one line of the report on stdout, written out.
mkdir -p "$tmp/nl"
cp "$img" "$tmp/nl/$(printf 'ok\nfake').png"
"$VITMAE" attention --ckpt "$ck" --out "$tmp/nlout" "$tmp/nl" > "$tmp/nl.out" 2> /dev/null; rc=$?
t "control characters written out on stdout ($rc: $(head -n 2 "$tmp/nl.out" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && [ "$(grep -c " -> " "$tmp/nl.out")" -eq 1 ] && grep -qF "ok\\nfake.png: " "$tmp/nl.out"'

# A folder renamed between the scan and the reads (VITMAE_FAULT_HOLD_AFTER_SCAN holds the command
# there): one line for the folder (it printed a "no such file" line per image), its images counted in
# the tally as reconstruct's, exit 1.
mkdir -p "$tmp/many/a"
cp "$img" "$tmp/many/a/0.png"
python3 -c 'import os, sys; [os.link(sys.argv[1] + "/0.png", sys.argv[1] + "/%d.png" % i) for i in range(1, 20)]' "$tmp/many/a"
VITMAE_FAULT_HOLD_AFTER_SCAN="$tmp/hold" "$VITMAE" attention --ckpt "$ck" --out "$tmp/amany" "$tmp/many" \
  > "$tmp/many.out" 2> "$tmp/many.err" &
moved_at_gate "$tmp/hold" $! "$tmp/many" "$tmp/many2"; rc=$?
t "input folder renamed mid-run: exit 1, one line for the folder and the tally ($(head -n 3 "$tmp/many.err" | tr "\n" "|"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/many.err")" -eq 2 ] && head -n 1 "$tmp/many.err" | grep -q "^vitmae: .*/many: the folder is gone (moved or deleted during the run)$" && tail -n 1 "$tmp/many.err" | grep -q "^vitmae: attention: 20 inputs failed$"'
# The --out folder moved while the run writes in it (VITMAE_FAULT_HOLD_AFTER_WRITE holds the first
# image after its folder of maps is made and its maps and first array written): one line for the
# folder, exit 1, no index.html, and nothing left where it went, not the image's folder of maps. It
# said "INPUT: DIR/<stem>: No such file or directory" for each image, then index.html's and the
# sync's lines and "20 inputs failed", never the folder, and left an empty DIR/<stem> where it went,
# which a later run refused as "exists".
VITMAE_FAULT_HOLD_AFTER_WRITE="$tmp/holdo" "$VITMAE" attention --threads 1 --raw --mask-ratio 0.5 --ckpt "$ck" \
  --out "$tmp/aout" "$tmp/many2" > "$tmp/outg.out" 2> "$tmp/outg.err" &
moved_at_gate "$tmp/holdo" $! "$tmp/aout" "$tmp/aout2"; rc=$?
t "--out folder moved mid-run: exit 1, one line for the folder ($rc, $(wc -l < "$tmp/outg.err") lines: $(head -n 3 "$tmp/outg.err" | tr "\n" "|"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/outg.err")" = "vitmae: attention: $tmp/aout: the folder is gone (moved or deleted during the run)" ] && [ ! -e "$tmp/aout" ]'
t "--out folder moved mid-run: nothing left where it went, no half-made folder of maps ($(find "$tmp/aout2" -mindepth 1 | head -n 3 | tr "\n" " "))" \
  '[ -d "$tmp/aout2" ] && [ -z "$(find "$tmp/aout2" -mindepth 1)" ]'
# Within a folder its lines come in the folder's sorted order too: a.png, deleted after the scan, before
# b.png, which the scan skipped.
mkdir -p "$tmp/gonej" && cp "$img" "$tmp/gonej/a.png" && printf 'x' > "$tmp/gonej/b.png" && cp "$img" "$tmp/gonej/c.png"
VITMAE_FAULT_HOLD_AFTER_SCAN="$tmp/gjhold" "$VITMAE" attention --ckpt "$ck" --out "$tmp/agonej" "$tmp/gonej" \
  > /dev/null 2> "$tmp/err" &
pid=$!; wait_gate "$tmp/gjhold" $pid; rm "$tmp/gonej/a.png"; touch "$tmp/gjhold"; wait $pid; rc=$?
t "a folder's image deleted after the scan, then one the scan skipped: in the folder's order ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/gonej/a.png: No such file or directory
vitmae: $tmp/gonej/b.png: not a PNG, JPEG or WebP file
vitmae: attention: 2 inputs failed" ] && [ -s "$tmp/agonej/c.attn.png" ]'

# SIGTERM in the middle of a run (once an image's maps are out): every image's files are there whole
# or not at all, with no temporary file and no folder of maps left empty (it left the temporary files
# of the image it was writing, and that image's folder). env --default-signal: see cli_reconstruct.sh.
env --default-signal "$VITMAE" attention --ckpt "$ck" --out "$tmp/sigterm" --raw --threads 2 "$tmp/many2" > /dev/null 2>&1 &
pid=$!
i=0; while [ $i -lt 1200 ] && [ -z "$(ls "$tmp/sigterm" 2>/dev/null | grep 'attn.npy$')" ] && kill -0 $pid 2>/dev/null; do
  sleep 0.05; i=$((i + 1)); done
kill -TERM $pid; wait $pid; rc=$?
left=$(find "$tmp/sigterm" -name "*.tmp.*" -o -type d -empty | head -n 3 | tr "\n" " ")
counts=$(for d in "$tmp/sigterm"/*/; do [ -d "$d" ] && ls "$d" | wc -l; done | sort -u | tr "\n" " ")
t "SIGTERM mid-run: ended by it ($rc), nothing half-written (left: $left; files per folder of maps: $counts)" \
  '[ $rc -eq 143 ] && [ -z "$left" ] && [ "$(echo $counts)" = "$(ls "$tmp/sigterm/0" | wc -l)" ]'
# An image's line is on stdout as soon as its files are out, not held in stdio's buffer until the run
# ends: a log of a run that a signal stopped names the images whose maps stayed (stdout to a file kept
# every line until exit, and a SIGTERM lost them all). The second image, drawn at --display 2048, takes
# a second or more: the first line is there while it is drawn, before index.html.
env --default-signal "$VITMAE" attention --ckpt "$ck" --out "$tmp/flush" --threads 1 --display 2048 "$img" \
  "$tmp/many2/a/1.png" > "$tmp/flush.out" 2>/dev/null &
pid=$!
i=0; while [ $i -lt 1200 ] && [ ! -s "$tmp/flush.out" ] && kill -0 $pid 2>/dev/null; do sleep 0.05; i=$((i + 1)); done
index_then=$([ -e "$tmp/flush/index.html" ] && echo written || echo absent)
kill -TERM $pid 2>/dev/null; wait $pid
t "the first image's line out while the second is drawn (index.html $index_then: $(head -n 1 "$tmp/flush.out"))" \
  '[ $index_then = absent ] && grep -q "^$img: 5 maps -> $tmp/flush/attn_input.attn.png$" "$tmp/flush.out"'
# Ctrl-C before the first image's files (held at the gate before its folder of maps), into an --out
# folder the run made with the folder above it: both go, as on a failure (an empty sigmade/out stayed);
# an --out folder that was there (sigterm, with the other run's files) stays as it was.
signal_at_gate BEFORE_PUBLISH "$tmp/gomade" INT attention --ckpt "$ck" --out "$tmp/sigmade/out" --layer 0 --head 0 "$img"
t "SIGINT before the first image, into a folder it made: ended by it ($rc), the folders it made gone ($(ls -R "$tmp/sigmade" 2>&1 | tr "\n" " "))" \
  '[ $rc -eq 130 ] && [ ! -e "$tmp/sigmade" ]'
ls -R "$tmp/sigterm" > "$tmp/sigterm.before"
signal_at_gate BEFORE_PUBLISH "$tmp/gokept" INT attention --ckpt "$ck" --out "$tmp/sigterm" --layer 0 --head 0 "$img"
t "SIGINT before the first image, an --out folder that was there: as it was ($rc)" \
  '[ $rc -eq 130 ] && ls -R "$tmp/sigterm" | cmp -s - "$tmp/sigterm.before"'
# SIGTERM once the image's maps are published, before its line (held at HOLD_AFTER_PUBLISH): the line
# is said, then the run ends by the signal, no page (it ended between the two, the maps on disk and
# their line never said).
env --default-signal VITMAE_FAULT_HOLD_AFTER_PUBLISH="$tmp/goslin" "$VITMAE" attention --ckpt "$ck" --out "$tmp/slin" \
  --layer 0 --head 0 "$img" > "$tmp/slin.out" 2> /dev/null &
pid=$!; wait_gate "$tmp/goslin" $pid
kill -TERM $pid; sleep 0.3; touch "$tmp/goslin"; wait $pid; rc=$?
t "SIGTERM between the image's publish and its line: the line said ($(cat "$tmp/slin.out")), ended by it ($rc), no page" \
  '[ $rc -eq 143 ] && grep -qx "$img: 1 map -> $tmp/slin/attn_input.attn.png" "$tmp/slin.out" && [ ! -e "$tmp/slin/index.html" ]'
# A --force run stopped once its image replaced an earlier run's (held as its page is written whole under
# its temporary name: HOLD_AFTER_WRITE) left the earlier index.html, linking the maps of layers 0 and 1
# that the run had removed. That page goes with the first image published.
"$VITMAE" attention --ckpt "$ck" --out "$tmp/sigpage" --layer all --head mean "$img" > /dev/null 2>&1
t "an earlier run's page links its layer 0 map" 'grep -q "attn_input/layer00-mean.png" "$tmp/sigpage/index.html"'
signal_at_gate AFTER_WRITE "$tmp/gopage" INT attention --ckpt "$ck" --out "$tmp/sigpage" --force --head mean "$img"
t "--force stopped after its image replaced the earlier run's: ended by it ($rc), no earlier page left ($(ls "$tmp/sigpage" | tr "\n" " "))" \
  '[ $rc -eq 130 ] && [ ! -e "$tmp/sigpage/index.html" ] && [ "$(ls "$tmp/sigpage/attn_input")" = layer02-mean.png ]'
# Ctrl-C while the --out folder's write test is in it (held there: VITMAE_FAULT_HOLD_IN_WRITE_TEST): the
# test's file goes, and with it the folders the run made (.vitmae-write-test-<pid> stayed, and so did
# sigw/out holding it).
signal_at_gate IN_WRITE_TEST "$tmp/gow" INT attention --ckpt "$ck" --out "$tmp/sigw/out" --layer 0 --head 0 "$img"
t "SIGINT during the --out folder's write test: ended by it ($rc), nothing it made left ($(ls -AR "$tmp/sigw" 2>&1 | tr "\n" " "))" \
  '[ $rc -eq 130 ] && [ ! -e "$tmp/sigw" ]'

# An --out folder that does not take files (read-only, as an ordinary user: tests/lib.sh as_user): one
# line before the work, exit 1 (it printed a "permission denied" line per image).
chmod 755 "$tmp"
readonly_out attention "$ck" "$tmp/many2" "$tmp/many2/a/0.png" "$tmp/rofolder"

# --out inside an input folder (docs/interface.md, "Paths that meet"): its montages and maps would be
# inputs of the next run. One line, exit 2.
mkdir -p "$tmp/meet" && cp "$img" "$tmp/meet/"
run --out "$tmp/meet/att" "$tmp/meet"; rc=$?
t "attention --out inside its input folder: exit 2, one line ($rc: $(head -n 2 "$tmp/err" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "^vitmae: attention --out: $tmp/meet/att is inside the input folder $tmp/meet: " "$tmp/err" && [ ! -e "$tmp/meet/att" ]'
# ... also where a link below the input folder leads to --out (meet/lk -> lkext): the scan follows it.
mkdir -p "$tmp/lkext" && ln -s "$tmp/lkext" "$tmp/meet/lk"
run --out "$tmp/lkext/att" "$tmp/meet"; rc=$?
rm "$tmp/meet/lk"
t "attention --out reached through a link below its input folder: exit 2, one line ($rc: $(head -n 2 "$tmp/err" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: attention --out: $tmp/lkext/att is inside the input folder $tmp/meet through a link (its scan enters $tmp/meet/lk): its images would be read as inputs by the next run (with --force, or once more images are added); choose an --out folder outside it" ] && [ ! -e "$tmp/lkext/att" ]'
# An output that is an input (b's montage meet/b.attn.png given as an input; an input in the folder
# of a's maps) is refused before any work, also with --force: it was replaced.
cp "$img" "$tmp/meet/b.png" && cp "$img" "$tmp/meet/b.attn.png" && mkdir -p "$tmp/meet/c" && cp "$img" "$tmp/meet/c/x.png"
cp "$img" "$tmp/meet/c.png"
run --out "$tmp/meet" --force "$tmp/meet/b.png" "$tmp/meet/b.attn.png"; rc=$?
t "attention output = input: exit 2, one line ($rc: $(head -n 2 "$tmp/err" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "^vitmae: attention --out: $tmp/meet/b.attn.png is the input $tmp/meet/b.attn.png: " "$tmp/err" && cmp -s "$img" "$tmp/meet/b.attn.png"'
# Nor the checkpoint it reads at the montage's name (--force destroyed it, exit 0), nor in a folder of
# maps: refused before any work, the file kept.
cp "$ck" "$tmp/meet/b.attn.png"
"$VITMAE" attention --ckpt "$tmp/meet/b.attn.png" --out "$tmp/meet" --force "$tmp/meet/b.png" > /dev/null 2> "$tmp/err"; rc=$?
t "attention --force, the --ckpt file at the montage's name: exit 2, one line, the checkpoint kept ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: attention --out: $tmp/meet/b.attn.png is the checkpoint --ckpt reads: this run'"'"'s output would replace it (also with --force; another --out)" ] && cmp -s "$ck" "$tmp/meet/b.attn.png"'
mkdir -p "$tmp/meet/b" && cp "$ck" "$tmp/meet/b/model.safetensors"
"$VITMAE" attention --ckpt "$tmp/meet/b/model.safetensors" --out "$tmp/meet" --force "$tmp/meet/b.png" > /dev/null 2> "$tmp/err"; rc=$?
t "... in the folder of its maps: exit 2, one line ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: attention --out: $tmp/meet/b holds the checkpoint --ckpt reads: " "$tmp/err" && [ "$(ls "$tmp/meet/b")" = model.safetensors ]'
rm -rf "$tmp/meet/b"
# ... but a link at the folder's name to the checkpoint's folder is never written through: --force puts
# a folder in the link's place, the target and its checkpoint as they were (it was refused as "holds
# the checkpoint --ckpt reads", a run that would not touch it).
mkdir -p "$tmp/meetck" && cp "$ck" "$tmp/meetck/model.safetensors" && ln -s ../meetck "$tmp/meet/b"
"$VITMAE" attention --ckpt "$tmp/meetck/model.safetensors" --out "$tmp/meet" --force "$tmp/meet/b.png" > /dev/null 2> "$tmp/err"; rc=$?
t "... a link there to the checkpoint's folder, --force: drawn, the link replaced, the target as it was ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ -d "$tmp/meet/b" ] && [ ! -L "$tmp/meet/b" ] && [ "$(ls "$tmp/meetck")" = model.safetensors ] && cmp -s "$ck" "$tmp/meetck/model.safetensors"'
rm -rf "$tmp/meet/b" "$tmp/meetck"; cp "$img" "$tmp/meet/b.attn.png"
# ... nor at b.attn.npy, which --force without --raw removes (an earlier run's array): deleted, exit 0.
cp "$ck" "$tmp/meet/b.attn.npy"
"$VITMAE" attention --ckpt "$tmp/meet/b.attn.npy" --out "$tmp/meet" --force "$tmp/meet/b.png" > /dev/null 2> "$tmp/err"; rc=$?
t "... at b.attn.npy, which --force without --raw removes: exit 2, kept ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: attention --out: $tmp/meet/b.attn.npy is the checkpoint --ckpt reads: a run with --force would remove it as an earlier run'"'"'s array (another --out)" ] && cmp -s "$ck" "$tmp/meet/b.attn.npy"'
rm -f "$tmp/meet/b.attn.npy"
run --out "$tmp/meet" --force "$tmp/meet/c.png" "$tmp/meet/c/x.png"; rc=$?
t "attention folder of maps holds an input: exit 2, one line ($rc: $(head -n 2 "$tmp/err" | tr "\n" "|"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "^vitmae: attention --out: $tmp/meet/c holds the input $tmp/meet/c/x.png: " "$tmp/err" && [ "$(ls "$tmp/meet/c")" = x.png ]'

# A model with more than 64 heads (train makes any count that divides the width): attention refused
# it whole, even for --head 3 or --head mean ("72 heads (at most 64 are drawn)", exit 1). Every
# selection now draws: --head all a tile per head and the mean (73 maps, layer00-head71.png last).
mkdir -p "$tmp/h72d" && cp "$img" "$tmp/h72d/"
"$VITMAE" train --data "$tmp/h72d" --img 16 --patch 8 --dim 72 --heads 72 --depth 1 --dec-dim 8 --dec-depth 1 \
  --dec-heads 1 --steps 1 --val-frac 0 --threads 1 --out "$tmp/h72" >/dev/null 2>&1
for h in 3 mean all; do
  "$VITMAE" attention --ckpt "$tmp/h72/checkpoint.safetensors" --out "$tmp/h72-$h" --head $h "$img" >"$tmp/out" 2>"$tmp/err"; rc=$?
  t "attention of a 72-head model, --head $h: exit 0 ($rc: $(head -n 1 "$tmp/err"))" '[ $rc -eq 0 ] && [ -s "$tmp/h72-$h/attn_input.attn.png" ]'
done
t "72 heads, --head all: 73 maps, head 71 drawn ($(ls "$tmp/h72-all/attn_input" 2>/dev/null | wc -l))" \
  '[ "$(ls "$tmp/h72-all/attn_input" | wc -l)" -eq 73 ] && [ -s "$tmp/h72-all/attn_input/layer00-head71.png" ]'

# A flat map under --normalize map: the fixture with every qkv weight and bias zeroed attends
# uniformly (every logit 0, every weight 1/17), so each map's own scale is 1/17 .. 1/17. Its bars were
# the whole gradient with no mark; now one colour, the lowest, and uniform attention in the middle.
/usr/bin/python3 - "$VITMAE_ROOT/tools" "$ck" "$tmp/uni.safetensors" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import safetensors_io as st
ts, meta = st.read(sys.argv[2])
for k, (shape, a) in ts.items():
    if ".attn.qkv." in k:
        ts[k] = (shape, [0.0] * len(a))
st.write(sys.argv[3], ts, meta)
PY
"$VITMAE" attention --ckpt "$tmp/uni.safetensors" --normalize map --head mean --out "$tmp/uni" "$img" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "a flat map (uniform attention, --normalize map): its bars one colour, the mark in the middle ($rc)" '[ $rc -eq 0 ] && /usr/bin/python3 - "$tmp/uni/index.html" <<PY
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
figs = re.findall(r"<figure>.*?</figure>", page)
assert len(figs) == 1, len(figs)   # --head mean of the last layer
for f in figs:
    cols = re.search(r"linear-gradient\\(to right,([^)]*)\\)", f).group(1).split(",")
    assert len(cols) == 17 and set(cols) == {"#440154"}, cols
    mark = re.search(r"class=\"mark\" style=\"left:([0-9.]+)%", f)
    assert mark and float(mark.group(1)) == 50.0, f
    assert "lies above" not in f and "lies below" not in f, f
PY'

# Rollout's uniform level: uniform attention in every layer leaves (1 - 2^-(l+1))/T on a patch after
# layer l (half of each layer stays on the token itself), not 1/T. The bars marked 1/T, so on the
# uniform fixture every rollout map was said to lie below uniform attention ("uniform (0.0588) lies
# above this scale", 0.0294 at layer 0); now the mark is the maps' own value, and each map's
# `uniform` tEXt chunk gives it.
for n in map layer; do
  "$VITMAE" attention --ckpt "$tmp/uni.safetensors" --mode rollout --layer all --normalize $n --out "$tmp/uro-$n" \
    "$img" >"$tmp/out" 2>"$tmp/err"; rc=$?
  t "rollout of uniform attention, --normalize $n: every bar marked where the maps lie ($rc: $(grep -o 'uniform ([^<]*' "$tmp/uro-$n/index.html" | head -n 1))" \
    '[ $rc -eq 0 ] && /usr/bin/python3 - "$tmp/uro-$n" $n <<PY
import re, sys
from PIL import Image
page = open(sys.argv[1] + "/index.html", encoding="utf-8").read()
figs = re.findall(r"<figure>.*?</figure>", page)
assert len(figs) == 3, len(figs)
for f in figs:
    assert "lies above" not in f and "lies below" not in f, f
    mark = re.search(r"class=\"mark\" style=\"left:([0-9.]+)%", f)
    assert mark and float(mark.group(1)) == (50.0 if sys.argv[2] == "map" else 100.0), f
for l in range(3):
    text = Image.open("%s/attn_input/rollout-layer%02d-mean.png" % (sys.argv[1], l)).text
    assert text["uniform"] == "%.9g" % ((1 - 2.0 ** -(l + 1)) / 17), (l, text["uniform"])
PY'
done
# The montage's bars alike: under --normalize map each is the lowest colour with the white mark across
# its middle (it was an arrow at the bar's right end, "every value below uniform attention").
t "rollout of uniform attention: the montage's three bars marked in their middle" \
  '/usr/bin/python3 - "$tmp/uro-map/attn_input.attn.png" <<PY
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB"); w, h = im.size; px = im.load()
low = (68, 1, 84)   # viridis at 0: a flat bar
r = max(range(h), key=lambda y: sum(px[x, y] == low for x in range(w)))
bars = []
for x in range(w):
    if px[x, r] != low: continue
    if bars and x - bars[-1][1] <= 4: bars[-1][1] = x
    else: bars.append([x, x])
mid = [any(px[x, r] == (255, 255, 255) for x in range((a + b) // 2 - 3, (a + b) // 2 + 4)) for a, b in bars]
assert len(bars) == 3 and all(mid), (r, bars, mid)
PY'
t "a query row's uniform tEXt is 1/T" \
  '[ "$(/usr/bin/python3 -c "import sys; from PIL import Image; print(Image.open(sys.argv[1]).text[\"uniform\"])" "$tmp/uni/attn_input/layer02-mean.png")" = "$(/usr/bin/python3 -c "print(\"%.9g\" % (1 / 17))")" ]'
t "rollout's index.html says where its bars mark uniform attention" \
  'grep -qF "would leave the rollout at (1 - 2^-(l+1))/(number of tokens) on a patch after layer l" "$tmp/uro-map/index.html"'

# --max-pixels refuses a larger image from its header (docs/interface.md, section 2), in attention too
# (the flag had no effect on a file given by name: image_load took the default limit, 64M, there).
run --max-pixels 255 --out "$tmp/mp" "$img"; rc=$?
t "attention --max-pixels 255 of a 16x16 image: exit 1, the image named, nothing written ($rc: $(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -q "attn_input.png: image 16x16 exceeds --max-pixels 255$" "$tmp/err" && [ -z "$(ls -A "$tmp/mp" 2>/dev/null)" ]'
run --max-pixels 256 --out "$tmp/mp256" "$img"; rc=$?
t "attention --max-pixels 256 (its pixel count): drawn, exit 0 ($rc)" '[ $rc -eq 0 ] && [ -s "$tmp/mp256/attn_input.attn.png" ]'

# --force over an earlier run with a bad image among good ones: the new index.html shows this run's
# files only and names the image it drew nothing of, with why; that image's earlier files stay as the
# earlier run left them, not linked. The page said nothing of the failed image.
mkdir "$tmp/fin" && for k in 1 2 3; do cp "$img" "$tmp/fin/g$k.png"; done
run --out "$tmp/fo" "$tmp/fin"; rc1=$?
printf 'not a picture' > "$tmp/fin/g2.png"
run --out "$tmp/fo" --force --head mean "$tmp/fin"; rc=$?
links=$(grep -o 'href="[^"]*"' "$tmp/fo/index.html" | sed 's/^href="//; s/"$//' | tr '\n' ' ')
t "attention --force with a bad image: the index links this run's files ($links) and names the bad one (exit $rc1, $rc)" \
  '[ $rc1 -eq 0 ] && [ $rc -eq 1 ] && [ "$links" = "g1.attn.png g1/layer02-mean.png g3.attn.png g3/layer02-mean.png " ] &&
   grep -q "<h2 id=\"not-drawn\">Not drawn by this run (1)</h2>" "$tmp/fo/index.html" &&
   grep -q "<li>$tmp/fin/g2.png: .*</li>" "$tmp/fo/index.html" && [ -s "$tmp/fo/g2/layer02-head00.png" ] &&
   [ ! -e "$tmp/fo/g1/layer02-head00.png" ]'
rm -rf "$tmp/fin" "$tmp/fo"

# A montage wider than 65,536 pixels (256 heads and their mean in one row) is refused for each image
# with the flags that draw fewer or smaller tiles (the line said only its size, the same for every
# image); --head mean draws it.
"$VITMAE_TOOLS/synth" "$tmp/mh" --count 4 --size 16 --seed 4 >/dev/null
"$VITMAE" train --data "$tmp/mh" --img 16 --patch 4 --dim 256 --depth 1 --heads 256 --dec-dim 32 --dec-depth 1 \
  --dec-heads 2 --batch 4 --steps 1 --val-frac 0 --threads 1 --out "$tmp/mhr" >/dev/null 2>&1
one=$(ls "$tmp"/mh/*/*.png | head -n 1)
"$VITMAE" attention --ckpt "$tmp/mhr" --out "$tmp/mha" --threads 1 "$one" >/dev/null 2>"$tmp/err"; rc=$?
"$VITMAE" attention --ckpt "$tmp/mhr" --out "$tmp/mhb" --threads 1 --head mean "$one" >/dev/null 2>&1; rc2=$?
t "256 heads: the montage too wide, refused with the flags that help; --head mean draws it ($rc, $rc2: $(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ $rc2 -eq 0 ] && head -n 1 "$tmp/err" | grep -q "^vitmae: $one: montage of 257 x 1 tiles too large ([0-9]* x [0-9]* pixels): --head mean, max or N draws one tile a layer, a smaller --display smaller tiles$" &&
   [ -s "$tmp/mhb/$(basename "$one" .png).attn.png" ]'
# With --scale the tiles are the --scale drawing itself, so the advice names --scale: "a smaller
# --display" named a flag --scale rules out (a 400 x 1 photo at --scale 2: 257 tiles of 800 pixels);
# at --scale 1, the smallest, the heads alone are offered.
python3 -c 'import struct, sys, zlib
w, h = 400, 1
raw = b"\0" + bytes(v for x in range(w) for v in (x % 256, 90, 200))
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                              + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))' "$tmp/wide.png"
"$VITMAE" attention --ckpt "$tmp/mhr" --out "$tmp/mhc" --threads 1 --scale 2 "$tmp/wide.png" >/dev/null 2>"$tmp/err"; rc=$?
"$VITMAE" attention --ckpt "$tmp/mhr" --out "$tmp/mhc" --threads 1 --scale 1 "$tmp/wide.png" >/dev/null 2>"$tmp/err1"; rc1=$?
t "256 heads at --scale 2: the advice names --scale, not --display; at --scale 1, the smallest, no size advice ($rc $rc1: $(head -n 1 "$tmp/err"); $(head -n 1 "$tmp/err1"))" \
  '[ $rc -eq 1 ] && head -n 1 "$tmp/err" | grep -q "^vitmae: $tmp/wide.png: montage of 257 x 1 tiles too large ([0-9]* x [0-9]* pixels): --head mean, max or N draws one tile a layer, a smaller --scale smaller tiles$" &&
   [ $rc1 -eq 1 ] && head -n 1 "$tmp/err1" | grep -q "^vitmae: $tmp/wide.png: montage of 257 x 1 tiles too large ([0-9]* x [0-9]* pixels): --head mean, max or N draws one tile a layer$"'
rm -rf "$tmp/mh" "$tmp/mhr" "$tmp/mha" "$tmp/mhb" "$tmp/mhc" "$tmp/wide.png"
# A montage too large is refused before anything of its image is drawn or allocated: a 1400 x 1400 photo
# at --scale 10 has displays of 14000 x 14000 pixels (2.3 GB of floats each) and a montage of 5 x 1 tiles
# 70060 pixels wide. The displays came first: under ulimit -v 1 GB the line was "out of memory for a
# 14000x14000 picture", the run stopped and the next image was not drawn; now the refusal with its advice,
# the next image drawn, exit 1 (docs/interface.md, attention's "Selection"). Under the sanitizers, which
# cannot run under ulimit -v, without the limit.
"$VITMAE_TOOLS/synth" "$tmp/mbig" --count 1 --size 1400 >/dev/null
bigp=$(ls "$tmp"/mbig/*/*.png)
in_1g() { if [ "${VITMAE_SANITIZED:-0}" = 1 ]; then "$@"; else (ulimit -v 1000000 && exec "$@"); fi; }
in_1g "$VITMAE" attention --ckpt "$ck" --out "$tmp/mbo" --threads 1 --scale 10 "$bigp" "$img" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "a montage too large is refused before its image is drawn, the next image drawn ($rc: $(head -n 2 "$tmp/err" | tr "\n" " "))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && [ -s "$tmp/mbo/attn_input.attn.png" ] && [ ! -e "$tmp/mbo/00000" ] &&
   grep -qx "vitmae: $bigp: montage of 5 x 1 tiles too large (70060 x [0-9]* pixels): --head mean, max or N draws one tile a layer, a smaller --scale smaller tiles" "$tmp/err"'
# ... with one tile a layer already (--head mean) over every layer: --head is not offered again (it was,
# and the run given it was refused alike); one layer is.
in_1g "$VITMAE" attention --ckpt "$ck" --out "$tmp/mbo2" --threads 1 --scale 30 --head mean --layer all "$bigp" >/dev/null 2>"$tmp/err"; rc=$?
t "... --head mean --layer all: the advice names --layer and --scale, not --head ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -qx "vitmae: $bigp: montage of [0-9]* x [0-9]* tiles too large ([0-9]* x [0-9]* pixels): --layer N draws one layer, a smaller --scale smaller tiles" "$tmp/err"'
rm -rf "$tmp/mbig" "$tmp/mbo" "$tmp/mbo2"
# One map a layer (--layer all --head mean) goes in a grid whose column count divides the layers; the
# nearest square (2 x 2 of 4 layers) too large is not the end: fewer columns for a grid too wide, more
# for one too tall. A 1 x 550 photo at --scale 60 (tiles 60 x 33000) was refused,
# "montage of 2 x 2 tiles too large (380 x 66114 pixels)", where 4 x 1 fits, and a 550 x 1 photo (2 x 2
# 66030 wide) where 1 x 4 fits; now drawn so. Both too large for any grid: refused with the 2 x 2 size.
"$VITMAE_TOOLS/synth" "$tmp/d4" --count 4 --size 16 --seed 4 >/dev/null
"$VITMAE" train --data "$tmp/d4" --img 16 --patch 4 --dim 32 --depth 4 --heads 2 --dec-dim 32 --dec-depth 1 \
  --dec-heads 2 --batch 4 --steps 1 --val-frac 0 --threads 1 --out "$tmp/d4r" >/dev/null 2>&1
python3 -c 'import struct, sys, zlib
def png(path, w, h):
    raw = b"".join(b"\0" + bytes(v for x in range(w) for v in ((x + y) % 256, 90, 200)) for y in range(h))
    def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
png(sys.argv[1] + "/tall.png", 1, 550); png(sys.argv[1] + "/broad.png", 550, 1); png(sys.argv[1] + "/big.png", 550, 550)' "$tmp"
"$VITMAE" attention --ckpt "$tmp/d4r" --out "$tmp/d4o" --threads 1 --layer all --head mean --scale 60 \
  "$tmp/tall.png" "$tmp/broad.png" "$tmp/big.png" >/dev/null 2>"$tmp/err"; rc=$?
png_size() { python3 -c 'import struct, sys; b = open(sys.argv[1], "rb").read(24); print("%d x %d" % struct.unpack(">II", b[16:24]))' "$1" 2>/dev/null; }
tall_size=$(png_size "$tmp/d4o/tall.attn.png"); broad_size=$(png_size "$tmp/d4o/broad.attn.png")
t "4 layers a map each: a 1 x 550 photo in 4 x 1 tiles ($tall_size), a 550 x 1 in 1 x 4 ($broad_size), one too large for any grid refused ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] &&
   grep -qx "vitmae: $tmp/big.png: montage of 2 x 2 tiles too large (66030 x 66[0-9]* pixels): --layer N draws one layer, a smaller --scale smaller tiles" "$tmp/err" &&
   [ "${tall_size% x *}" -lt 1000 ] && [ "${tall_size#* x }" -lt 34000 ] && [ "${broad_size% x *}" -lt 34000 ] && [ "${broad_size#* x }" -lt 1000 ]'
rm -rf "$tmp/d4" "$tmp/d4r" "$tmp/d4o" "$tmp/tall.png" "$tmp/broad.png" "$tmp/big.png"

# An image's folder of maps that is a symbolic link (to a user's folder, to a file, to nothing): refused
# without --force, replaced by a folder with it, never written through; the user's files at the link's
# target stay, an earlier run's map there among them (the sweep of earlier maps went through the link).
mkdir -p "$tmp/sl" "$tmp/victim"
echo mine > "$tmp/victim/layer03-head00.png"; echo notes > "$tmp/victim/notes.txt"; echo x > "$tmp/afile"
ln -s ../victim "$tmp/sl/attn_input"
"$VITMAE" attention --ckpt "$ck" --out "$tmp/sl" --threads 1 --head 0 "$img" >/dev/null 2>"$tmp/err"; rc=$?
t "a link at the folder of maps: refused without --force, exit 2 ($(cat "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -qx "vitmae: $tmp/sl/attn_input: already exists (use --force to replace it)" "$tmp/err"'
"$VITMAE" attention --ckpt "$ck" --out "$tmp/sl" --threads 1 --head 0 --force "$img" >/dev/null 2>"$tmp/err"; rc=$?
t "a link to a folder at the folder of maps, --force: a folder of this run's in its place, the target untouched (exit $rc; $(ls "$tmp/victim" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ -d "$tmp/sl/attn_input" ] && [ ! -L "$tmp/sl/attn_input" ] && [ -s "$tmp/sl/attn_input/layer02-head00.png" ] &&
   [ "$(ls "$tmp/victim" | tr "\n" " ")" = "layer03-head00.png notes.txt " ] && [ "$(cat "$tmp/victim/layer03-head00.png")" = mine ]'
rm -rf "$tmp/sl"; mkdir -p "$tmp/sl"; ln -s ../nowhere "$tmp/sl/attn_input"
"$VITMAE" attention --ckpt "$ck" --out "$tmp/sl" --threads 1 --head 0 "$img" >/dev/null 2>"$tmp/err"; rc=$?
"$VITMAE" attention --ckpt "$ck" --out "$tmp/sl" --threads 1 --head 0 --force "$img" >/dev/null 2>>"$tmp/err"; rc2=$?
t "a link to nothing at the folder of maps: refused with the advice, which works ($rc, $rc2: $(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ $rc2 -eq 0 ] && [ $(wc -l < "$tmp/err") -eq 1 ] && [ -d "$tmp/sl/attn_input" ] && [ ! -L "$tmp/sl/attn_input" ] &&
   grep -qx "vitmae: $tmp/sl/attn_input: already exists, a symbolic link to ../nowhere, which does not exist (use --force to replace the link with the folder)" "$tmp/err"'
rm -rf "$tmp/sl"; mkdir -p "$tmp/sl"; ln -s ../afile "$tmp/sl/attn_input"
"$VITMAE" attention --ckpt "$ck" --out "$tmp/sl" --threads 1 --head 0 --force "$img" >/dev/null 2>"$tmp/err"; rc=$?
t "a link to a file at the folder of maps, --force: replaced by a folder, the file as it was (exit $rc $(cat "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ -d "$tmp/sl/attn_input" ] && [ ! -L "$tmp/sl/attn_input" ] && [ "$(cat "$tmp/afile")" = x ]'
rm -rf "$tmp/sl" "$tmp/victim" "$tmp/afile"
# A folder without an image: its one line, exit 1, and nothing on stdout (it said "attention: 0 images, 0
# maps in 0.00 s" there, a success's summary, where reconstruct, embed and classify say nothing).
mkdir -p "$tmp/noimg"
"$VITMAE" attention --ckpt "$ck" --out "$tmp/noimgout" --threads 1 "$tmp/noimg" > "$tmp/out" 2> "$tmp/err"; rc=$?
t "an empty folder: exit 1, its one line, no summary on stdout ($rc: $(cat "$tmp/out" "$tmp/err" | tr "\n" "|"))" \
  '[ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/noimg: no usable image (0 skipped, 0 ignored)" ]'

# Temporary files of an earlier process. A killed attention (SIGKILL: no stop signal's cleanup) left its
# maps' DIR/<stem>/<map>.png.tmp.<pid>.<n> (and the montage's, the arrays', index.html's in DIR) for ever,
# also past a later clean run with --force. Now the next run removes those of the files it writes whose
# process is gone on this host ("NAME.tmp.<host>.<pid>.<n>"), and only those: a user's look-alike, a
# map of another selection, a live process's stay. And one of this pid before (a pid reused) leaves
# files at the names it stages under: the next serial is taken (io/files.h, file_tmp_create), where
# `vitmae: DIR/<stem>.attn.png: File exists` failed the image. Those with the host (this pid's, not
# made by this process: an earlier one's) are removed with the dead process's; those without it stay.
h=$(tmp_host)
signal_at_gate AFTER_WRITE "$tmp/ak.gate" KILL attention --ckpt "$ck" --raw --out "$tmp/ak" "$img"
dead=$_pid left=$(ls "$tmp/ak/attn_input" | grep -c "^layer02-head0[01]\.\(png\|npy\)\.tmp\.$h\.$dead\.[0-9]*$")
keep="layer02-head00.png.tmp.notes layer00-head00.png.tmp.$h.$dead.9 layer02-head00.npy.tmp.$h.$$.9"
for f in $keep; do echo s > "$tmp/ak/attn_input/$f"; done
for f in attn_input.attn.png attn_input.attn.npy index.html; do echo s > "$tmp/ak/$f.tmp.$h.$dead.7"; done
sh -c 'for i in 1 2 3 4; do for f in attn_input.attn.png attn_input.attn.npy index.html attn_input/layer02-head00.png; do
  echo s > "$0/$f.tmp.$1.$$.$i"; echo s > "$0/$f.tmp.$$.$i"; done; done; shift; exec "$@"' "$tmp/ak" "$h" \
  "$VITMAE" attention --ckpt "$ck" --raw --force --out "$tmp/ak" "$img" > /dev/null 2> "$tmp/ak.err"; rc=$?
t "attention: a killed run's temporary files ($left) removed by the next, only they; those of its own pid passed by, those with the host removed ($rc: $(head -n 2 "$tmp/ak.err"))" \
  '[ $rc -eq 0 ] && [ ! -s "$tmp/ak.err" ] && [ $left -ge 2 ] && [ -s "$tmp/ak/index.html" ] && [ -s "$tmp/ak/attn_input.attn.png" ] &&
   [ "$(ls "$tmp/ak/attn_input" | grep "\.tmp\." | grep -v "\.tmp\.$h\.[0-9]*\.[1-4]$\|\.tmp\.[0-9]*\.[1-4]$" | sort)" = "$(printf "%s\n" $keep | sort)" ] &&
   [ "$(ls "$tmp/ak" | grep -c "\.tmp\.")" -eq 12 ] && [ "$(ls "$tmp/ak/attn_input" | grep -c "\.tmp\.")" -eq 7 ] &&
   [ "$(ls "$tmp/ak" "$tmp/ak/attn_input" | grep -c "\.tmp\.$h\.[0-9]*\.[1-4]$")" -eq 0 ]'

rm -rf "$tmp"
[ $fail -eq 0 ] && echo "cli_attention ok"
exit $fail
