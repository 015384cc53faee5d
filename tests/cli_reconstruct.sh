#!/bin/sh
# `vitmae reconstruct` and `vitmae eval`: a known answer (a model that predicts a constant), output
# files and their sizes, stem collisions, unreadable inputs, refused masks and checkpoints, usage
# errors, thread-count independence, and eval agreeing with reconstruct on the same images and masks.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch tmp
cd "$tmp" || exit 1   # a command that wrongly writes to the working directory writes here
mk="$VITMAE_TOOLS/mkckpt"
fx="$VITMAE_ROOT/tests/fixtures"
# Width and height of a PNG from its IHDR (bytes 16..23, big-endian).
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{printf "%d %d", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}'; }

# Known answer: pixel mean 0.5, std 0.25, no norm-pix, prediction 0.8 everywhere (model units), so
# every reconstructed pixel is 0.8 * 0.25 + 0.5 = 0.7; the image is flat 0.2 (51/255): the MSE of
# every patch is 0.25, PSNR 10 log10(4) = 6.02 dB; the loss is (0.8 - (0.2 - 0.5) / 0.25)^2 = 4.
"$mk" ckpt "$tmp/const.st" --img 16 --patch 4 --channels 3 --mean 0.5 --std 0.25 --const 0.8 || fail=1
mkdir -p "$tmp/flat"
"$mk" png "$tmp/flat/flat.png" --size 16 --value 0.2 || fail=1
out=$("$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r1" --raw "$tmp/flat/flat.png"); rc=$?
t "known answer exits 0" '[ $rc -eq 0 ]'
t "known answer per image ($out)" 'echo "$out" | grep -qxF "flat masked_mse=2.500000e-01 psnr=6.02dB ($tmp/flat/flat.png -> $tmp/r1/flat.recon.png)"'
t "known answer mean" 'echo "$out" | grep -qx "mean masked_mse=2.500000e-01 psnr=6.02dB over 1 image"'
t "panel written" '[ -s "$tmp/r1/flat.recon.png" ]'
# Each panel's title (drawn above it, and its PNG text chunk Title) gives that image's PSNR over the removed
# patches as its stdout line does (issue 16: the per-image PSNR in the panel): two images of different
# PSNRs. Nothing compared the title with the image's numbers: a title from another MSE passed.
mkdir -p "$tmp/tt" && cp "$fx/recon_rgb.png" "$tmp/tt/rgb.png" && cp "$tmp/flat/flat.png" "$tmp/tt/"
out=$("$VITMAE" reconstruct --ckpt "$fx/torch_small.safetensors" --out "$tmp/rt" "$tmp/tt/flat.png" "$tmp/tt/rgb.png"); rc=$?
titles=$(python3 - "$tmp/rt" "$out" <<'PY'
import re, struct, sys
for line in sys.argv[2].splitlines():
    m = re.fullmatch(r"\S+ masked_mse=\S+ psnr=(\S+)dB \(.* -> (.*/([^/]*)\.recon\.png)\)", line)   # not the note, nor the mean's line
    if not m: continue
    psnr, panel, stem = m.groups()
    b = open(panel, "rb").read(); i = 8; kv = {}
    while i < len(b):
        n, kind = struct.unpack(">I4s", b[i:i + 8]); d = b[i + 8:i + 8 + n]; i += 12 + n
        if kind == b"tEXt": k, v = d.split(b"\0", 1); kv[k.decode("latin-1")] = v.decode("latin-1")
    t = kv.get("Title", "")
    print("%s %s" % (psnr, "ok" if re.fullmatch(r"%s: [0-9.]+%% of the patches removed, PSNR %s dB on them" % (stem, psnr), t) else "title " + repr(t)))
PY
)
t "each panel's title gives its image's PSNR ($rc: $(echo $titles))" \
  '[ $rc -eq 0 ] && [ "$(echo "$titles" | grep -c " ok$")" -eq 2 ] && [ "$(echo "$titles" | cut -d" " -f1 | sort -u | wc -l)" -eq 2 ]'
# An exact reconstruction (a constant model predicting the flat image's own value): MSE 0, PSNR +inf,
# written `psnr=infdB` in the text and null in eval's JSON (docs/interface.md, reconstruct's stdout).
"$mk" ckpt "$tmp/exact.st" --img 16 --patch 4 --channels 3 --mean 0.5019607843137255 --std 1 --const 0 || fail=1
mkdir -p "$tmp/exactimg"
"$mk" png "$tmp/exactimg/grey.png" --size 16 --value 0.5019607843137255 || fail=1
out=$("$VITMAE" reconstruct --ckpt "$tmp/exact.st" --out "$tmp/rx" "$tmp/exactimg/grey.png"); rc=$?
t "exact reconstruction: psnr=infdB ($out)" '[ $rc -eq 0 ] && echo "$out" | grep -qx "grey masked_mse=0.000000e+00 psnr=infdB (.*/grey.png -> .*/grey.recon.png)" && echo "$out" | grep -qx "mean masked_mse=0.000000e+00 psnr=infdB over 1 image"'
out=$("$VITMAE" eval --ckpt "$tmp/exact.st" --data "$tmp/exactimg" --json | tr -d ' \t\n'); rc=$?
t "exact reconstruction: eval --json psnr null ($out)" '[ $rc -eq 0 ] && echo "$out" | grep -q "\"masked_mse\":0,\"psnr\":null,"'
rm -rf "$tmp/rx"
# Finite weights so large that the forward overflows float (pos_embed at +-3e38, within the finite
# check of the reader): eval printed `loss=nan masked_mse=nan psnr=infdB` (PSNR +inf of a NaN error),
# reconstruct drew and wrote such panels, attention drew NaN maps, embed wrote NaN features and probe
# scored them, all with exit 0. Now each names the image and why, exit 1, and writes nothing for it,
# in the same words (eval, embed and probe put their name before the path).
overflowing_ckpt "$tmp/const.st" "$tmp/huge.st"
why="the model's output is NaN or infinite for this image (the checkpoint's weights are finite but overflow float: the checkpoint cannot be used)"
mkdir -p "$tmp/hc/a" "$tmp/hc/b"; cp "$tmp/flat/flat.png" "$tmp/hc/a/x.png"; cp "$tmp/flat/flat.png" "$tmp/hc/b/y.png"
"$VITMAE" eval --ckpt "$tmp/huge.st" --data "$tmp/flat" > "$tmp/h.out" 2> "$tmp/h.err"; rc=$?
t "overflowing weights: eval exit 1, one line naming the image ($(cat "$tmp/h.err"))" \
  '[ $rc -eq 1 ] && [ ! -s "$tmp/h.out" ] && [ "$(cat "$tmp/h.err")" = "vitmae: $tmp/flat/flat.png: $why" ]'
"$VITMAE" reconstruct --ckpt "$tmp/huge.st" --out "$tmp/hr" "$tmp/flat/flat.png" > "$tmp/h.out" 2> "$tmp/h.err"; rc=$?
t "overflowing weights: reconstruct exit 1, the image named, no panel, no figure ($(head -n 1 "$tmp/h.err"))" \
  '[ $rc -eq 1 ] && grep -qxF "vitmae: $tmp/flat/flat.png: $why" "$tmp/h.err" && [ ! -e "$tmp/hr/flat.recon.png" ] && ! grep -q "nan\|inf" "$tmp/h.out"'
"$VITMAE" attention --ckpt "$tmp/huge.st" --out "$tmp/ha" --raw "$tmp/flat/flat.png" > /dev/null 2> "$tmp/h.err"; rc=$?
t "overflowing weights: attention exit 1, the image named, no maps ($(head -n 1 "$tmp/h.err"))" \
  '[ $rc -eq 1 ] && grep -qxF "vitmae: $tmp/flat/flat.png: $why" "$tmp/h.err" && [ ! -e "$tmp/ha/flat.attn.npy" ] && [ ! -e "$tmp/ha/flat.attn.png" ]'
"$VITMAE" embed --ckpt "$tmp/huge.st" --out "$tmp/h.npy" "$tmp/flat/flat.png" > /dev/null 2> "$tmp/h.err"; rc=$?
t "overflowing weights: embed exit 1, the image named, no features ($(cat "$tmp/h.err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/h.err")" = "vitmae: $tmp/flat/flat.png: $why" ] && [ ! -e "$tmp/h.npy" ]'
"$VITMAE" probe --ckpt "$tmp/huge.st" --train "$tmp/hc" --test "$tmp/hc" > "$tmp/h.out" 2> "$tmp/h.err"; rc=$?
t "overflowing weights: probe exit 1, the image named, no accuracy ($(tail -n 1 "$tmp/h.err"))" \
  '[ $rc -eq 1 ] && grep -qxF "vitmae: $tmp/hc/a/x.png: $why" "$tmp/h.err" && ! grep -q top1 "$tmp/h.out"'
# Each image's line in input order: an image whose outputs are not finite was said when its batch was
# done, after the read failures of the inputs after it in the batch (`flat.png junk.png`: junk's line,
# then flat's). embed said its folders' skipped files before its work, so a failing image came after
# those of the folders after it. Now each command says the failing image in its place.
printf 'not an image' > "$tmp/hjunk.png"; mkdir -p "$tmp/hj"; cp "$tmp/flat/flat.png" "$tmp/hjunk.png" "$tmp/hj/"
{ echo "vitmae: $tmp/hj/hjunk.png: not a PNG, JPEG or WebP file"; echo "vitmae: $tmp/flat/flat.png: $why"
  echo "vitmae: $tmp/hjunk.png: not a PNG, JPEG or WebP file"; echo "vitmae: reconstruct: 3 inputs failed"; } > "$tmp/h.want"
"$VITMAE" reconstruct --ckpt "$tmp/huge.st" --out "$tmp/hr" "$tmp/hj/hjunk.png" "$tmp/flat/flat.png" "$tmp/hjunk.png" > "$tmp/h.out" 2> "$tmp/h.err"; rc=$?
t "overflowing weights between unreadable inputs in one batch: reconstruct says the three in input order ($(head -n 1 "$tmp/h.err"))" \
  '[ $rc -eq 1 ] && cmp -s "$tmp/h.want" "$tmp/h.err"'
printf 'vitmae: %s/flat/flat.png: %s\nvitmae: skipped %s/hj/hjunk.png: not a PNG, JPEG or WebP file\n' "$tmp" "$why" "$tmp" > "$tmp/h.want"
"$VITMAE" embed --ckpt "$tmp/huge.st" --out "$tmp/h.npy" "$tmp/flat/flat.png" "$tmp/hj" > /dev/null 2> "$tmp/h.err"; rc=$?
t "overflowing weights, then a folder with a skipped file: embed says the image, then the folder's line ($(head -n 1 "$tmp/h.err"))" \
  '[ $rc -eq 1 ] && cmp -s "$tmp/h.want" "$tmp/h.err" && [ ! -e "$tmp/h.npy" ]'
rm -rf "$tmp/hr" "$tmp/ha" "$tmp/hc" "$tmp/hj"
# Default panels of 256 px: width 5 S + 5 gaps (4) + bar 8 + 3 + label "0.25" + 4 (the label's width
# depends on the font: tests/test_panel_mask.c checks the exact formula); a title and captions above.
size=$(png_size "$tmp/r1/flat.recon.png")
t "panel size 5 x 256 + bar ($size)" 'set -- $size; [ $1 -ge 1325 ] && [ $1 -le 1365 ] && [ $2 -ge 290 ] && [ $2 -le 380 ]'
# .npy: 128-byte header + 16*16*3 float32 / 16 uint8.
t "recon.npy size" '[ "$(wc -c <"$tmp/r1/flat.recon.npy")" -eq $((128 + 16 * 16 * 3 * 4)) ]'
t "mask.npy size" '[ "$(wc -c <"$tmp/r1/flat.mask.npy")" -eq $((128 + 16)) ]'
t "recon.npy header" 'head -c 128 "$tmp/r1/flat.recon.npy" | grep -q "'"'"'shape'"'"': (16, 16, 3)"'
# The checkpoint's mask ratio 0.75: 12 of the 16 mask bytes are 1.
ones=$(tail -c 16 "$tmp/r1/flat.mask.npy" | od -An -tu1 | tr -s ' ' '\n' | grep -c '^1$')
t "12 of 16 patches removed (got $ones)" '[ "$ones" -eq 12 ]'
# stdout's reader gone (`vitmae reconstruct ... | head -1`): SIGPIPE killed the command at its first
# flush of lines (exit 141; with more lines than a pipe's buffer, before its last images). Now the
# lines are dropped, one line on stderr says so, every image is written, exit 0.
mkdir -p "$tmp/three"
for k in 1 2 3; do cp "$tmp/flat/flat.png" "$tmp/three/f$k.png"; done
closed_pipe stdout "$tmp/pipe.err" "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rpipe" "$tmp/three"; rc=$?
t "stdout's reader gone: every image written, exit 0 ($rc: $(cat "$tmp/pipe.err"))" \
  '[ $rc -eq 0 ] && [ $(ls "$tmp/rpipe" | grep -c "^f[123]\.recon\.png$") -eq 3 ] && [ $(ls "$tmp/rpipe" | wc -l) -eq 3 ] && [ "$(cat "$tmp/pipe.err")" = "vitmae: reconstruct: standard output: its reader has gone (a closed pipe, as after | head); its lines are dropped from here on and the command goes on" ]'
# An earlier run's files are replaced only with --force (docs/interface.md, "Earlier results"): the
# same run again is refused before anything is written (exit 2, one line naming the first file that
# exists), --raw's files count too, and --force replaces them.
cp "$tmp/r1/flat.recon.png" "$tmp/flat.before.png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/flat/flat.png/r" "$tmp/flat/flat.png" >/dev/null 2>"$tmp/err"; rc=$?
t "--out under a file: exit 1, the flag and the folder named ($(cat "$tmp/err"))" '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: reconstruct --out: cannot create the output folder: $tmp/flat/flat.png/r: Not a directory" ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/flat/flat.png" "$tmp/flat/flat.png" >/dev/null 2>"$tmp/err"; rc=$?
t "--out a file: exit 1, as docs/interface.md words it ($(cat "$tmp/err"))" '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: reconstruct --out: cannot create the output folder: $tmp/flat/flat.png: not a folder" ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r1" --mask-ratio 0.5 "$tmp/flat/flat.png" >/dev/null 2>"$tmp/err"; rc=$?
t "an earlier panel: exit 2, one line" '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -qx "vitmae: $tmp/r1/flat.recon.png: already exists (use --force to replace it)" "$tmp/err"'
t "an earlier panel: left as it was" 'cmp -s "$tmp/flat.before.png" "$tmp/r1/flat.recon.png"'
# ... also when an INPUT folder holds a file that cannot be read: a refused run is its one line (that
# file's line came first), as is an --out that cannot be made; a run that goes ahead names the file.
mkdir -p "$tmp/flatj" && cp "$tmp/flat/flat.png" "$tmp/flatj/" && printf 'not an image' > "$tmp/flatj/junk.png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r1" --mask-ratio 0.5 "$tmp/flatj" >/dev/null 2>"$tmp/err"; rc=$?
t "an earlier panel, an input folder with an unreadable file: exit 2, one line ($(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/r1/flat.recon.png: already exists (use --force to replace it)" ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/flat/flat.png/r" "$tmp/flatj" >/dev/null 2>"$tmp/err"; rc=$?
t "--out under a file, an input folder with an unreadable file: exit 1, one line ($(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: reconstruct --out: cannot create the output folder: $tmp/flat/flat.png/r: Not a directory" ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rj" "$tmp/flatj" >/dev/null 2>"$tmp/err"; rc=$?
t "a run that goes ahead: exit 1, the unreadable file named, the other written ($(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/flatj/junk.png: not a PNG, JPEG or WebP file" ] && [ -s "$tmp/rj/flat.recon.png" ]'
# 25 inputs that cannot be read, 15 in a folder's scan and 10 given as files: the first 20 named, then
# one line with the count of the rest, as train says a scan's skipped files (a line each, with no cap,
# before); each is still a failed input (exit 1), and the good one is written.
mkdir -p "$tmp/unread" && cp "$tmp/flat/flat.png" "$tmp/unread/"
for k in $(seq 10 24); do printf 'not an image' > "$tmp/unread/bad$k.png"; done
mkdir -p "$tmp/unread2" && for k in $(seq 25 34); do printf 'not an image' > "$tmp/unread2/bad$k.png"; done
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/runread" "$tmp/unread" "$tmp"/unread2/bad*.png >/dev/null 2>"$tmp/err"; rc=$?
t "25 inputs that cannot be read: 20 named, then a count ($rc: $(wc -l < "$tmp/err") lines)" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 22 ] &&
   [ "$(grep -c "^vitmae: $tmp/unread2\{0,1\}/bad[12][0-9].png: not a PNG, JPEG or WebP file$" "$tmp/err")" -eq 20 ] &&
   sed -n 21p "$tmp/err" | grep -qx "vitmae: \.\.\. and 5 more inputs that cannot be read" &&
   sed -n 22p "$tmp/err" | grep -qx "vitmae: reconstruct: 25 inputs failed" && [ -s "$tmp/runread/flat.recon.png" ]'
# The lines come in the order of the inputs (docs/interface.md, "Bad files"), whichever failed as the
# inputs were gathered (a missing path, a folder's scan) and whichever as its image was read (a file
# given directly): the gathered kind came first, and the 20 named were the first 20 of that kind.
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rorder" "$tmp/flat/flat.png" "$tmp/unread2/bad25.png" \
  "$tmp/nosuch.png" "$tmp/flatj" "$tmp/unread2/bad26.png" >/dev/null 2>"$tmp/err"; rc=$?
t "a read failure, a missing path, a folder's file, a read failure: said in input order ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/unread2/bad25.png: not a PNG, JPEG or WebP file
vitmae: $tmp/nosuch.png: No such file or directory
vitmae: $tmp/flatj/junk.png: not a PNG, JPEG or WebP file
vitmae: $tmp/unread2/bad26.png: not a PNG, JPEG or WebP file
vitmae: reconstruct: 4 inputs failed" ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/runread2" "$tmp"/unread2/bad*.png "$tmp/unread" >/dev/null 2>"$tmp/err"; rc=$?
t "25 inputs, the 10 read first, then the folder's 15: the first 20 in input order ($rc: $(wc -l < "$tmp/err") lines)" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 22 ] &&
   [ "$(head -n 20 "$tmp/err" | sed "s|^vitmae: $tmp/||; s|: not a PNG, JPEG or WebP file$||" | tr "\n" " ")" = "$(for k in $(seq 25 34); do printf "unread2/bad$k.png "; done; for k in $(seq 10 19); do printf "unread/bad$k.png "; done)" ] &&
   sed -n 21p "$tmp/err" | grep -qx "vitmae: \.\.\. and 5 more inputs that cannot be read" &&
   sed -n 22p "$tmp/err" | grep -qx "vitmae: reconstruct: 25 inputs failed"'
# A folder copied from a Mac: a ._NAME file (AppleDouble, the header's magic 00 05 16 07) beside every
# image. Its hidden files that do not decode are one warning, as train says them, at the folder's place
# (after its other lines), and no failed input: every image written, exit 0 (each was named as an input
# that cannot be read, exit 1). A visible broken file among them is still a failed input; a hidden file
# given directly is one too (the user named it); a folder of hidden junk only draws nothing: its own line.
mkdir -p "$tmp/mac" "$tmp/macj" && cp "$tmp/flat/flat.png" "$tmp/mac/a.png" && cp "$fx/recon_rgb.png" "$tmp/mac/b.png"
for k in a b c; do printf '\000\005\026\007\000\002\000\000Mac OS X' > "$tmp/mac/._$k.png"; cp "$tmp/mac/._$k.png" "$tmp/macj/"; done
mac_warning="vitmae: warning: skipped 3 hidden files (names starting with '.', as the ._NAME files macOS writes beside copies) that do not decode; the first:"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rmac" "$tmp/mac" >/dev/null 2>"$tmp/err"; rc=$?
t "a Mac copy's folder, 2 images and 3 ._NAME files: exit 0, one warning, both written ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$tmp/err")" = "$mac_warning $tmp/mac/._a.png: not a PNG, JPEG or WebP file" ] &&
   [ -s "$tmp/rmac/a.recon.png" ] && [ -s "$tmp/rmac/b.recon.png" ]'
cp -r "$tmp/mac" "$tmp/mac2" && printf 'not an image' > "$tmp/mac2/broken.png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rmac2" "$tmp/mac2" "$tmp/nosuch.png" >/dev/null 2>"$tmp/err"; rc=$?
t "the same with a visible broken file, then a missing INPUT: exit 1, 2 failed, the warning at the folder's place ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/mac2/broken.png: not a PNG, JPEG or WebP file
$mac_warning $tmp/mac2/._a.png: not a PNG, JPEG or WebP file
vitmae: $tmp/nosuch.png: No such file or directory
vitmae: reconstruct: 2 inputs failed" ] && [ -s "$tmp/rmac2/a.recon.png" ] && [ -s "$tmp/rmac2/b.recon.png" ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rmac3" "$tmp/mac/._a.png" "$tmp/mac/a.png" >/dev/null 2>"$tmp/err"; rc=$?
t "a ._NAME file given as an INPUT: a failed input, named ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/mac/._a.png: not a PNG, JPEG or WebP file" ] && [ -s "$tmp/rmac3/a.recon.png" ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rmacj" "$tmp/macj" >/dev/null 2>"$tmp/err"; rc=$?
t "a folder of ._NAME files only: the warning, then the folder a failed input of its own ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "$mac_warning $tmp/macj/._a.png: not a PNG, JPEG or WebP file
vitmae: $tmp/macj: no usable image (3 skipped, 0 ignored)" ] && [ ! -e "$tmp/rmacj/a.recon.png" ]'
# A file the system refuses is said in strerror's words wherever it is met: an INPUT that does not
# exist (found as the inputs are gathered) and a folder's image deleted after the scan (found as it is
# read, at the gate HOLD_AFTER_SCAN) both say "No such file or directory"; the read said "no such file".
mkdir -p "$tmp/gonef" && cp "$tmp/flat/flat.png" "$tmp/gonef/a.png" && cp "$tmp/flat/flat.png" "$tmp/gonef/b.png"
VITMAE_FAULT_HOLD_AFTER_SCAN="$tmp/gfhold" "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rgonef" \
  "$tmp/gonef" "$tmp/nosuch.png" > /dev/null 2> "$tmp/err" &
pid=$!; wait_gate "$tmp/gfhold" $pid; rm "$tmp/gonef/a.png"; touch "$tmp/gfhold"; wait $pid; rc=$?
t "a missing INPUT and an image deleted after the scan: the same words ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -qx "vitmae: $tmp/nosuch.png: No such file or directory" "$tmp/err" &&
   grep -qx "vitmae: $tmp/gonef/a.png: No such file or directory" "$tmp/err" && [ -s "$tmp/rgonef/b.recon.png" ]'
# Within a folder its lines come in the folder's sorted order too: a.png, deleted after the scan, before
# b.png, which the scan skipped.
mkdir -p "$tmp/gonej" && cp "$tmp/flat/flat.png" "$tmp/gonej/a.png" && printf 'x' > "$tmp/gonej/b.png" && cp "$tmp/flat/flat.png" "$tmp/gonej/c.png"
VITMAE_FAULT_HOLD_AFTER_SCAN="$tmp/gjhold" "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rgonej" \
  "$tmp/gonej" > /dev/null 2> "$tmp/err" &
pid=$!; wait_gate "$tmp/gjhold" $pid; rm "$tmp/gonej/a.png"; touch "$tmp/gjhold"; wait $pid; rc=$?
t "a folder's image deleted after the scan, then one the scan skipped: in the folder's order ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/gonej/a.png: No such file or directory
vitmae: $tmp/gonej/b.png: not a PNG, JPEG or WebP file
vitmae: reconstruct: 2 inputs failed" ] && [ -s "$tmp/rgonej/c.recon.png" ]'
# An INPUT that is a symbolic link to nothing is listed by ls: its line names the link's target, as a
# folder's scan says it (tests/cli_data.sh), not "No such file or directory".
ln -s "$tmp/gone-target.png" "$tmp/dangling-in.png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rdang" "$tmp/dangling-in.png" "$tmp/flat/flat.png" > /dev/null 2> "$tmp/err"; rc=$?
t "an INPUT linking to nothing: its target named ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -qx "vitmae: $tmp/dangling-in.png: a symbolic link to $tmp/gone-target.png, which does not exist" "$tmp/err" &&
   [ -s "$tmp/rdang/flat.recon.png" ]'
"$VITMAE" attention --ckpt "$tmp/const.st" --out "$tmp/adang" "$tmp/dangling-in.png" > /dev/null 2> "$tmp/err"; rc=$?
t "attention: an INPUT linking to nothing names its target ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -qx "vitmae: $tmp/dangling-in.png: a symbolic link to $tmp/gone-target.png, which does not exist" "$tmp/err"'
"$VITMAE" embed --ckpt "$tmp/const.st" --out "$tmp/edang.npy" "$tmp/dangling-in.png" > /dev/null 2> "$tmp/err"; rc=$?
t "embed: an INPUT linking to nothing names its target ($rc: $(tr "\n" "|" < "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -qx "vitmae: $tmp/dangling-in.png: a symbolic link to $tmp/gone-target.png, which does not exist" "$tmp/err" &&
   [ ! -e "$tmp/edang.npy" ]'
rm "$tmp/r1/flat.recon.png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r1" "$tmp/flat/flat.png" >/dev/null 2>"$tmp/err"; rc=$?
t "without --raw the earlier .npy files are not in the way" '[ $rc -eq 0 ] && [ -s "$tmp/r1/flat.recon.png" ]'
rm "$tmp/r1/flat.recon.png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r1" --raw "$tmp/flat/flat.png" >/dev/null 2>"$tmp/err"; rc=$?
t "an earlier --raw file: exit 2, named" '[ $rc -eq 2 ] && grep -qx "vitmae: $tmp/r1/flat.recon.npy: already exists (use --force to replace it)" "$tmp/err" && [ ! -e "$tmp/r1/flat.recon.png" ]'
out=$("$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r1" --raw --force "$tmp/flat/flat.png"); rc=$?
t "--force replaces them" '[ $rc -eq 0 ] && [ -s "$tmp/r1/flat.recon.png" ] && echo "$out" | grep -qx "flat masked_mse=2.500000e-01 psnr=6.02dB (.*/flat.png -> .*/flat.recon.png)"'
# ... and a --force run without --raw removes the earlier --raw run's arrays of the image: they stayed
# beside the new panel, two runs mixed (a user's other file stays).
[ -s "$tmp/r1/flat.recon.npy" ] && [ -s "$tmp/r1/flat.mask.npy" ] && echo mine > "$tmp/r1/flat.notes.npy"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r1" --force "$tmp/flat/flat.png" > /dev/null 2>&1; rc=$?
t "--force without --raw: the earlier run's arrays gone, the panel and the user's file there ($rc: $(ls "$tmp/r1" | tr "\n" " "))" \
  '[ $rc -eq 0 ] && [ "$(ls "$tmp/r1" | tr "\n" " ")" = "flat.notes.npy flat.recon.png " ]'
# Two commands at once into one folder: both find the names free before computing; the one that waits
# before publishing (VITMAE_FAULT_HOLD_BEFORE_PUBLISH, docs/testing.md) while the other writes the same
# image's files exits 1 with one line and leaves the other's three files whole (it used to replace
# them silently, exit 0); an image's files are all one run's, also when only one of them was taken.
racer() {  # go-file, out folder: a waiting reconstruct --raw --mask-ratio 0.5 of flat.png
  VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$1" "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$2" --raw --mask-ratio 0.5 \
    "$tmp/flat/flat.png" >/dev/null 2>"$tmp/race.err" &
  racer=$!
  wait_gate "$1" $racer
}
racer "$tmp/go1" "$tmp/r9"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r9" --raw "$tmp/flat/flat.png" >/dev/null 2>&1; rc1=$?
mkdir "$tmp/r9.first"; cp "$tmp/r9"/flat.* "$tmp/r9.first/"
touch "$tmp/go1"; wait $racer; rc2=$?
t "racing another: the later publisher exits 1, one line ($rc1, $rc2: $(cat "$tmp/race.err"))" \
  '[ $rc1 -eq 0 ] && [ $rc2 -eq 1 ] && [ "$(wc -l < "$tmp/race.err")" -eq 1 ] && grep -qx "vitmae: $tmp/r9/flat.recon.png: exists now (written by another command meanwhile); pass --force to replace it" "$tmp/race.err"'
t "racing another: the other's files whole, no temporary file" \
  'cmp -s "$tmp/r9/flat.recon.png" "$tmp/r9.first/flat.recon.png" && cmp -s "$tmp/r9/flat.recon.npy" "$tmp/r9.first/flat.recon.npy" &&
   cmp -s "$tmp/r9/flat.mask.npy" "$tmp/r9.first/flat.mask.npy" && [ "$(ls "$tmp/r9" | wc -l)" -eq 3 ]'
racer "$tmp/go2" "$tmp/r10"
echo "another command's mask" > "$tmp/r10/flat.mask.npy"
touch "$tmp/go2"; wait $racer; rc=$?
t "only the mask taken meanwhile: exit 1 naming it, none of this run's files left ($(ls "$tmp/r10" | tr "\n" " "))" \
  '[ $rc -eq 1 ] && grep -qx "vitmae: $tmp/r10/flat.mask.npy: exists now (written by another command meanwhile); pass --force to replace it" "$tmp/race.err" && [ "$(ls "$tmp/r10")" = flat.mask.npy ]'
# --scale 2 and the mask ratio 0: every patch is scored, said in a note.
out=$("$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r2" --scale 2 --mask-ratio 0 "$tmp/flat/flat.png"); rc=$?
t "ratio 0 exits 0" '[ $rc -eq 0 ]'
t "ratio 0 note" 'echo "$out" | grep -q "no patch removed"'
t "ratio 0 scores all patches" 'echo "$out" | grep -qx "flat masked_mse=2.500000e-01 psnr=6.02dB (.*/flat.png -> .*/flat.recon.png)"'
# 5 * 32 + 5 * 4 + 8 + 3 + label + 4: about 215; the captions wrap to 32 px, so the head is tall.
size=$(png_size "$tmp/r2/flat.recon.png")
t "--scale 2 panel ($size)" 'set -- $size; [ $1 -ge 205 ] && [ $1 -le 235 ] && [ $2 -ge 80 ]'
# --display N: panels of N pixels (5 * 100 + 5 * 4 + 8 + 3 + label + 4: about 555).
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rd" --display 100 "$tmp/flat/flat.png" >/dev/null; rc=$?
size=$(png_size "$tmp/rd/flat.recon.png")
t "--display 100 panel ($size)" 'set -- $size; [ $rc -eq 0 ] && [ $1 -ge 545 ] && [ $1 -le 575 ] && [ $2 -gt 100 ] && [ $2 -le 180 ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rs" --display 100 --scale 2 "$tmp/flat/flat.png" >/dev/null 2>"$tmp/err"; rc=$?
t "--display with --scale is a usage error" '[ $rc -eq 2 ] && [ $(wc -l <"$tmp/err") -eq 1 ] && grep -q "not both" "$tmp/err" && [ ! -e "$tmp/rs" ]'
# --scale K whose panels a row cannot hold (img_size x K > 10922: five panels and the bar within 65,536
# pixels) is a usage error before the work, with the largest K that fits; it failed every image, exit 1.
"$mk" ckpt "$tmp/big256.st" --img 256 --patch 64 --channels 3 --mean 0.5 --std 0.25 --const 0.8 || fail=1
"$VITMAE" reconstruct --ckpt "$tmp/big256.st" --out "$tmp/rbig" --scale 64 "$tmp/flat/flat.png" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "--scale past a row's width: exit 2, one line ($(cat "$tmp/err"))" '[ $rc -eq 2 ] && [ ! -s "$tmp/out" ] && [ ! -e "$tmp/rbig" ] && [ "$(cat "$tmp/err")" = "vitmae: reconstruct --scale: 64 draws panels of 16384 pixels (img_size 256 x 64), more than the 10922 a row of five panels allows: at most --scale 42 for this checkpoint" ]'
# A checkpoint whose config holds a mask ratio that leaves no visible patch (train writes none: an edited
# file): without --mask-ratio the file is at fault, named, exit 1; the line blamed --mask-ratio, not
# given, as a usage error. The ratio as typed: "%g" wrote 0.99999994 as 1.
"$mk" ckpt "$tmp/r95.st" --img 16 --patch 4 --channels 3 --mean 0.5 --std 0.25 --const 0.8 --mask-ratio 0.95 || fail=1
for cmd in reconstruct eval; do
  if [ $cmd = eval ]; then where="--data $tmp/flat"; else where="--out $tmp/r95 $tmp/flat/flat.png"; fi
  "$VITMAE" $cmd --ckpt "$tmp/r95.st" $where > /dev/null 2> "$tmp/err"; rc=$?
  t "$cmd of a config's mask ratio 0.95 of 16 patches: exit 1, the file named ($(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/r95.st: its config'"'"'s mask_ratio 0.95 leaves no visible patch of 16 (int(L * (1 - R)) = 0); give --mask-ratio R" ]'
  "$VITMAE" $cmd --ckpt "$tmp/r95.st" $where --mask-ratio 0.99999994 > /dev/null 2> "$tmp/err"; rc=$?
  t "$cmd --mask-ratio 0.99999994: exit 2, the ratio as typed ($(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $cmd --mask-ratio: 0.99999994 leaves no visible patch of 16 (int(L * (1 - R)) = 0)" ]'
done
t "no output folder for the refused runs" '[ ! -e "$tmp/r95" ]'
# eval on the same folder: the same numbers, and the loss in model units.
printf 'not an image' > "$tmp/broken.png"; mkdir -p "$tmp/flatb"; cp "$tmp/flat/"* "$tmp/broken.png" "$tmp/flatb/"
"$VITMAE" eval --ckpt "$tmp/const.st" --data "$tmp/flatb" >/dev/null 2>"$tmp/err"; rc=$?
t "eval: a skipped file in train's words, not 'PATH: why (skipped)' ($(cat "$tmp/err"))" '[ $rc -eq 0 ] && [ "$(cat "$tmp/err")" = "vitmae: skipped $tmp/flatb/broken.png: not a PNG, JPEG or WebP file" ]'
# 25 broken files and a macOS copy's ._NAME files: 20 lines, "... and 5 more skipped", the hidden ones
# one warning, as train says them (eval printed a line per file, with no cap).
mkdir -p "$tmp/flatm"; cp "$tmp/flat/"* "$tmp/flatm/"
for k in $(seq 10 34); do cp "$tmp/broken.png" "$tmp/flatm/bad$k.png"; done
for k in 1 2 3; do head -c 4096 /dev/urandom > "$tmp/flatm/._$k.png"; done
"$VITMAE" eval --ckpt "$tmp/const.st" --data "$tmp/flatm" >/dev/null 2>"$tmp/err"; rc=$?
t "eval: 25 skipped files and 3 ._NAME files as train says them ($rc: $(wc -l < "$tmp/err") lines)" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$tmp/err")" -eq 22 ] &&
   [ "$(grep -c "^vitmae: skipped $tmp/flatm/bad[0-9]*.png: not a PNG, JPEG or WebP file$" "$tmp/err")" -eq 20 ] &&
   grep -qx "vitmae: \.\.\. and 5 more skipped (vitmae data lists them)" "$tmp/err" &&
   grep -q "^vitmae: warning: skipped 3 hidden files (names starting with .*; the first: $tmp/flatm/\._1.png: " "$tmp/err"'
# reconstruct of the same folder: the 25 failed inputs as always (20 named, then a count), the hidden
# ones one warning, not one of the 20 nor of the failed inputs (docs/interface.md, "Bad files").
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rflatm" "$tmp/flatm" >/dev/null 2>"$tmp/err"; rc=$?
t "reconstruct: 25 broken files and 3 ._NAME files: 20 named, the warning, the count of the rest ($rc: $(sed -n "21,23p" "$tmp/err" | tr "\n" "|"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 23 ] &&
   [ "$(head -n 20 "$tmp/err" | grep -c "^vitmae: $tmp/flatm/bad[0-9]*.png: not a PNG, JPEG or WebP file$")" -eq 20 ] &&
   sed -n 21p "$tmp/err" | grep -q "^vitmae: warning: skipped 3 hidden files (names starting with .*; the first: $tmp/flatm/\._1.png: " &&
   sed -n 22p "$tmp/err" | grep -qx "vitmae: \.\.\. and 5 more inputs that cannot be read" &&
   sed -n 23p "$tmp/err" | grep -qx "vitmae: reconstruct: 25 inputs failed" && [ -s "$tmp/rflatm/flat.recon.png" ]'
# A file that fails as its batch loads (changed after the scan, at the gate HOLD_AFTER_SCAN) is said as
# every command says a file's failure, `vitmae: PATH: why`: eval put `eval: ` before the path.
mkdir -p "$tmp/flatc"; cp "$tmp/flat/"* "$tmp/flatc/"
VITMAE_FAULT_HOLD_AFTER_SCAN="$tmp/evhold" "$VITMAE" eval --ckpt "$tmp/const.st" --data "$tmp/flatc" > /dev/null 2> "$tmp/err" &
pid=$!; wait_gate "$tmp/evhold" $pid; printf 'not an image' > "$tmp/flatc/flat.png"; touch "$tmp/evhold"; wait $pid; rc=$?
t "eval: a file that fails in its batch, in every command's words ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/flatc/flat.png: not a PNG, JPEG or WebP file" ]'
js=$("$VITMAE" eval --ckpt "$tmp/const.st" --data "$tmp/flat" --json); rc=$?
t "eval exits 0" '[ $rc -eq 0 ]'
for k in images loss masked_mse psnr mask_ratio seed; do
  t "eval JSON has $k" 'echo "$js" | grep -q "\"$k\":"'
done
t "eval images 1" 'echo "$js" | grep -Eq "\"images\":[[:space:]]*1,"'
out=$("$VITMAE" eval --ckpt "$tmp/const.st" --data "$tmp/flat"); rc=$?
t "eval of one image: '1 image, mask_ratio', not '1 images' ($rc: $(echo "$out" | head -n 1))" \
  '[ $rc -eq 0 ] && echo "$out" | grep -q "^1 image, mask_ratio "'
t "eval loss 4" 'echo "$js" | grep -Eq "\"loss\":[[:space:]]*(4|3\.99999[0-9]*|4\.00000[0-9]*),"'
psnr=$(echo "$js" | sed -n 's/.*"psnr":[[:space:]]*\([^,]*\),.*/\1/p')
t "eval psnr $psnr = 10 log10(4)" 'awk -v p="$psnr" "BEGIN { d = p - 6.0205999133; exit !(d < 1e-5 && d > -1e-5) }"'
t "eval mask_ratio 0.75" 'echo "$js" | grep -Eq "\"mask_ratio\":[[:space:]]*0\.75,"'
# ... as the flag was typed, to its last digit ("%g" gave 0.123457 for --mask-ratio 0.1234567).
js=$("$VITMAE" eval --ckpt "$tmp/const.st" --data "$tmp/flat" --mask-ratio 0.1234567 --json); rc=$?
t "eval --mask-ratio 0.1234567: mask_ratio read back as typed ($rc: $(echo "$js" | grep mask_ratio))" \
  '[ $rc -eq 0 ] && echo "$js" | python3 -c "import json, sys; assert json.load(sys.stdin)[\"mask_ratio\"] == 0.1234567"'
# ... and its text line and info's show the float the run uses as --json does (0.71428573), not "%g"'s
# 0.714286 (docs/interface.md, section 3).
out=$("$VITMAE" eval --ckpt "$tmp/const.st" --data "$tmp/flat" --mask-ratio 0.7142857142857143); rc=$?
t "eval --mask-ratio 0.7142857142857143: the text line says 0.71428573 ($rc: $(echo "$out" | head -n 1))" \
  '[ $rc -eq 0 ] && echo "$out" | grep -q "^1 image, mask_ratio 0.71428573 ("'

# Eval agrees with reconstruct's mean on the same images, mask ratio and seed (a random model).
"$mk" ckpt "$tmp/rand.st" --img 16 --patch 4 --channels 3 --norm-pix --mean 0.4 --std 0.3 --seed 5 || fail=1
"$VITMAE_TOOLS/synth" "$tmp/syn" --count 7 --size 20 --seed 4 >/dev/null || fail=1
rec=$("$VITMAE" reconstruct --ckpt "$tmp/rand.st" --out "$tmp/r3" --mask-ratio 0.5 --seed 3 --threads 1 "$tmp/syn"); rc=$?
t "synth reconstruct exits 0" '[ $rc -eq 0 ]'
t "norm-pix note" 'echo "$rec" | grep -q "^note: norm-pix"'
# ... but none where no patch is removed (it said "each removed patch is de-normalised" of none), as eval.
rec0=$("$VITMAE" reconstruct --ckpt "$tmp/rand.st" --out "$tmp/r3z" --mask-ratio 0 --threads 1 "$tmp/syn"); rc=$?
t "reconstruct --mask-ratio 0 of a norm-pix checkpoint: no norm-pix note, the no-patch note ($rc)" \
  '[ $rc -eq 0 ] && ! echo "$rec0" | grep -q "norm-pix" && echo "$rec0" | grep -q "^note: no patch removed"'
t "7 panels" '[ "$(ls "$tmp/r3" | grep -c "\.recon\.png$")" -eq 7 ]'
rmse=$(echo "$rec" | sed -n "s/^mean masked_mse=\([^ ]*\) .* over 7 images$/\1/p")
ev=$("$VITMAE" eval --ckpt "$tmp/rand.st" --data "$tmp/syn" --mask-ratio 0.5 --seed 3 --batch 3 --json)
emse=$(echo "$ev" | sed -n 's/.*"masked_mse":[[:space:]]*\([^,]*\),.*/\1/p')
t "eval images 7" 'echo "$ev" | grep -Eq "\"images\":[[:space:]]*7,"'
t "eval seed 3" 'echo "$ev" | grep -Eq "\"seed\":[[:space:]]*3"'
# Its masked_mse and psnr de-normalise each removed patch with the visible patches' statistics, as
# reconstruct's do: eval's text says so too (it said nothing), but not where no patch is removed, nor for
# a checkpoint trained without norm-pix.
evt=$("$VITMAE" eval --ckpt "$tmp/rand.st" --data "$tmp/syn" --mask-ratio 0.5 --seed 3)
ev0=$("$VITMAE" eval --ckpt "$tmp/rand.st" --data "$tmp/syn" --mask-ratio 0)
evc=$("$VITMAE" eval --ckpt "$tmp/const.st" --data "$tmp/flat")
t "eval of a norm-pix checkpoint: the last line says whose statistics stand in ($(echo "$evt" | tail -n 1))" \
  '[ "$(echo "$evt" | tail -n 1)" = "note: norm-pix checkpoint: masked_mse and psnr de-normalise each removed patch with the mean and variance of the visible patches (its own are unknown)" ]'
t "... no such note at --mask-ratio 0 nor without norm-pix" '! echo "$ev0$evc" | grep -q "norm-pix"'
# eval's line in reconstruct's form, %.6e ("%.6g" printed loss=4 masked_mse=0.25): the known answer.
t "eval's line: loss=4.000000e+00 masked_mse=2.500000e-01 psnr=6.02dB ($(echo "$evc" | tail -n 1))" \
  '[ "$(echo "$evc" | tail -n 1)" = "loss=4.000000e+00 masked_mse=2.500000e-01 psnr=6.02dB" ]'
t "eval masked_mse $emse = reconstruct mean $rmse" \
  'awk -v a="$emse" -v b="$rmse" "BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 1e-5 * b) }"'
# Another seed gives other masks (and other numbers).
ev2=$("$VITMAE" eval --ckpt "$tmp/rand.st" --data "$tmp/syn" --mask-ratio 0.5 --seed 4 --json)
t "seed changes the masks" '[ "$(echo "$ev2" | grep masked_mse)" != "$(echo "$ev" | grep masked_mse)" ]'
# Same lines for any thread count (the panel's name past its folder: each run has its own --out).
panels() { echo "$1" | sed 's| -> .*/\([^/]*\.recon\.png\))$| -> \1)|'; }   # the lines less the --out folder
rec2=$("$VITMAE" reconstruct --ckpt "$tmp/rand.st" --out "$tmp/r4" --mask-ratio 0.5 --seed 3 --threads 2 --batch 2 "$tmp/syn")
t "threads 1 and 2, batch 16 and 2: same output" '[ "$(panels "$rec")" = "$(panels "$rec2")" ]'
t "same panel bytes" 'cmp -s "$tmp/r3/00003.recon.png" "$tmp/r4/00003.recon.png"'
# The files of a batch are written side by side: every file the same at 3 threads as at 1.
rec3=$("$VITMAE" reconstruct --ckpt "$tmp/rand.st" --out "$tmp/r6" --mask-ratio 0.5 --seed 3 --threads 3 --raw "$tmp/syn" 2>/dev/null)
"$VITMAE" reconstruct --ckpt "$tmp/rand.st" --out "$tmp/r7" --mask-ratio 0.5 --seed 3 --threads 1 --raw "$tmp/syn" >/dev/null
t "threads 3: same lines" '[ "$(panels "$rec")" = "$(panels "$rec3")" ]'
t "threads 1 and 3: the same files" '[ "$(ls "$tmp/r6" | wc -l)" -eq 21 ] && diff -r "$tmp/r6" "$tmp/r7" >/dev/null'
# Panels are drawn and written as many images at a time as threads, not a batch at a time: the same
# lines and files at --batch 1 as at --batch 7 (every image at once), at 1 thread and at 2.
for th in 1 2; do
  for bt in 1 7; do
    recb=$("$VITMAE" reconstruct --ckpt "$tmp/rand.st" --out "$tmp/r7-$th-$bt" --mask-ratio 0.5 --seed 3 --threads $th --batch $bt \
      --raw "$tmp/syn")
    t "threads $th, --batch $bt: the lines and files of threads 1, --batch 16" \
      '[ "$(panels "$rec")" = "$(panels "$recb")" ] && [ "$(ls "$tmp/r7-$th-$bt" | wc -l)" -eq 21 ] && diff -r "$tmp/r7-$th-$bt" "$tmp/r7" >/dev/null'
  done
done
# A random mask comes from the seed and the image's stem (docs/interface.md, "vitmae reconstruct",
# "Masks"): the images of a folder get masks of their own (the 7 are not one mask), and an image gets
# the same mask alone as in its folder.
one=$(ls "$tmp/syn"/*/*.png | sed -n 4p); stem=$(basename "$one" .png)
"$VITMAE" reconstruct --ckpt "$tmp/rand.st" --out "$tmp/r7one" --mask-ratio 0.5 --seed 3 --raw "$one" >/dev/null
t "random masks: the 7 images' masks are not one mask ($(cksum "$tmp"/r6/*.mask.npy | cut -d" " -f1 | sort -u | wc -l) different)" \
  '[ "$(cksum "$tmp"/r6/*.mask.npy | cut -d" " -f1 | sort -u | wc -l)" -gt 1 ]'
t "random masks: $stem alone has the mask it has in its folder" 'cmp -s "$tmp/r7one/$stem.mask.npy" "$tmp/r6/$stem.mask.npy"'
# Two panels that cannot be written (a folder in their place, made while the command computes: one
# there at the start is refused before the work, below): both named, in input order, the other five
# written and printed, exit 1.
mkdir -p "$tmp/r8"
VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$tmp/go8" "$VITMAE" reconstruct --ckpt "$tmp/rand.st" --out "$tmp/r8" --mask-ratio 0.5 \
  --seed 3 --threads 3 --force "$tmp/syn" >"$tmp/out8" 2>"$tmp/err8" &
pid=$!; wait_gate "$tmp/go8" $pid; mkdir -p "$tmp/r8/00001.recon.png" "$tmp/r8/00004.recon.png"; touch "$tmp/go8"; wait $pid; rc=$?
drop_threads_warning "$tmp/err8"   # --threads 3 on 2 CPUs
out=$(cat "$tmp/out8")
t "unwritable panels: exit 1 ($rc)" '[ $rc -eq 1 ]'
first=$(echo "$rec" | sed -n "s|^\(0000[14]\) masked_mse=.*|\1|p" | head -n 1)   # the one of the two that comes first in input order
t "both named, $first's first ($(tr '\n' '|' < "$tmp/err8"))" \
  '[ "$(grep -c "^vitmae: .*recon.png: Is a directory$" "$tmp/err8")" -eq 2 ] && [ -n "$first" ] &&
   head -n 1 "$tmp/err8" | grep -q "/$first.recon.png: "'
t "the other five written and printed" '[ "$(echo "$out" | grep -c "^0000[0-9] masked_mse=.*/0000[0-9].png -> ")" -eq 5 ] && [ -s "$tmp/r8/00006.recon.png" ]'
# A folder there at the start: --force cannot replace it; one line (the first in input order), exit 2,
# before any image is read.
"$VITMAE" reconstruct --ckpt "$tmp/rand.st" --out "$tmp/r8" --mask-ratio 0.5 --seed 3 --force "$tmp/syn" >"$tmp/out8" 2>"$tmp/err8"; rc=$?
t "--force onto a folder: exit 2 before the work, one line ($rc: $(head -n 1 "$tmp/err8"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/err8")" = "vitmae: $tmp/r8/$first.recon.png: is a folder: --force replaces files, not folders (choose another name)" ] && [ ! -s "$tmp/out8" ]'

# ... also when an earlier file comes before the folder (flat.recon.png, then flat.recon.npy): the folder is
# said first, not "use --force" for the file, which would only lead to the folder's refusal.
mkdir -p "$tmp/rfd/flat.recon.npy"; : > "$tmp/rfd/flat.recon.png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rfd" --raw "$tmp/flat/flat.png" >"$tmp/outfd" 2>"$tmp/errfd"; rc=$?
t "an earlier panel, a folder at its .recon.npy: exit 2, the folder said ($rc: $(cat "$tmp/errfd"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/errfd")" = "vitmae: $tmp/rfd/flat.recon.npy: is a folder: --force replaces files, not folders (choose another name)" ] && [ ! -s "$tmp/outfd" ] && [ ! -s "$tmp/rfd/flat.recon.png" ]'

# Stem collisions: a/x.png and b/x.png -> x and x-1, in input order.
mkdir -p "$tmp/a" "$tmp/b"
cp "$tmp/flat/flat.png" "$tmp/a/x.png"; cp "$tmp/flat/flat.png" "$tmp/b/x.png"
out=$("$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r5" "$tmp/a/x.png" "$tmp/b"); rc=$?
t "collisions exit 0" '[ $rc -eq 0 ]'
t "x and x-1 written" '[ -s "$tmp/r5/x.recon.png" ] && [ -s "$tmp/r5/x-1.recon.png" ]'
# Each line is "STEM masked_mse=V psnr=VdB", the form docs/interface.md promises to scripts (it printed
# "INPUT: masked_mse=... -> PANEL" for a while, which a script reading the stem first took as "INPUT:"),
# then "(INPUT -> PANEL)": the two x.png told apart without opening the panels (it printed "x
# masked_mse=..." and "x-1 masked_mse=...", neither naming its folder); its numbers in one width ("%.6g"
# printed 0.25).
t "each line names its input and its panel ($(echo "$out" | head -n 2 | tr '\n' '|'))" \
  '[ "$(echo "$out" | head -n 2)" = "$(printf "%s\n%s" "x masked_mse=2.500000e-01 psnr=6.02dB ($tmp/a/x.png -> $tmp/r5/x.recon.png)" "x-1 masked_mse=2.500000e-01 psnr=6.02dB ($tmp/b/x.png -> $tmp/r5/x-1.recon.png)")" ]'

# Unreadable inputs are reported, the others still written, exit 1.
echo "not an image" >"$tmp/broken.png"
out=$("$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r6" "$tmp/broken.png" "$tmp/flat/flat.png" \
      "$tmp/missing.png" 2>"$tmp/err"); rc=$?
t "unreadable input exits 1" '[ $rc -eq 1 ]'
t "the good one is written" '[ -s "$tmp/r6/flat.recon.png" ] && echo "$out" | grep -q "^flat masked_mse=.*/flat.png -> "'
t "broken reported" 'grep -q "^vitmae: .*broken.png: " "$tmp/err"'
t "missing reported" 'grep -q "^vitmae: .*missing.png: " "$tmp/err"'
t "no panel for broken" '[ ! -e "$tmp/r6/broken.recon.png" ]'

# A mask that removes every patch: runtime error 1; a mask ratio leaving none: usage error 2.
"$mk" png "$tmp/white.png" --size 5 --channels 1 --value 1 || fail=1
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r7" --mask "$tmp/white.png" "$tmp/flat/flat.png" \
  >/dev/null 2>"$tmp/err"; rc=$?
t "all-removed mask exits 1" '[ $rc -eq 1 ]'
t "all-removed mask message" 'grep -q "^vitmae: reconstruct --mask: .*white.png: the mask removes all 16 patches" "$tmp/err"'
# A --mask that cannot be read is named as the --mask file ("vitmae: m.png: is a directory" read as an
# INPUT's failure): exit 1, one line.
for m in "$tmp/flat" "$tmp/no-such-mask.png"; do
  "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r7" --mask "$m" "$tmp/flat/flat.png" >/dev/null 2>"$tmp/err"; rc=$?
  t "an unreadable --mask $m: exit 1, named as --mask ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "^vitmae: reconstruct --mask: $m: [A-Za-z]" "$tmp/err"'
done
t "nothing written for it" '[ ! -e "$tmp/r7/flat.recon.png" ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --mask-ratio 0.95 "$tmp/flat/flat.png" >/dev/null 2>&1; rc=$?
t "--mask-ratio 0.95 with 16 patches exits 2" '[ $rc -eq 2 ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --mask-ratio 1 "$tmp/flat/flat.png" >/dev/null 2>&1; rc=$?
t "--mask-ratio 1 exits 2" '[ $rc -eq 2 ]'
# A black mask removes nothing: scored over all patches.
"$mk" png "$tmp/black.png" --size 3 --value 0 || fail=1
out=$("$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r8" --mask "$tmp/black.png" "$tmp/flat/flat.png"); rc=$?
t "black mask exits 0, nothing removed" '[ $rc -eq 0 ] && echo "$out" | grep -q "no patch removed"'
# --mask with --mask-ratio or --seed: the random mask's flags were silently ignored.
for f in "--mask-ratio 0.5" "--seed 3"; do
  "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/r8m" --mask "$tmp/black.png" $f "$tmp/flat/flat.png" >/dev/null 2>"$tmp/err"; rc=$?
  t "--mask with $f: exit 2, one line, nothing written" '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "^vitmae: reconstruct --mask: one mask for every image; --mask-ratio and --seed" "$tmp/err" && [ ! -e "$tmp/r8m" ]'
done
# --seed where nothing is masked (--mask-ratio 0, or a checkpoint's mask_ratio 0): ignored by reconstruct
# and eval, exit 0, where attention refused it; refused alike now, before the work.
"$mk" ckpt "$tmp/r0.st" --img 16 --patch 4 --channels 3 --mask-ratio 0 || fail=1
for c in "reconstruct --ckpt $tmp/const.st --mask-ratio 0 --out $tmp/s0 $tmp/flat/flat.png" "eval --ckpt $tmp/const.st --mask-ratio 0 --data $tmp/flat" \
         "reconstruct --ckpt $tmp/r0.st --out $tmp/s0 $tmp/flat/flat.png" "eval --ckpt $tmp/r0.st --data $tmp/flat"; do
  "$VITMAE" $c --seed 3 > "$tmp/out" 2> "$tmp/err"; rc=$?
  cmd=${c%% *}; note=""; case "$c" in *r0.st*) note=" (the checkpoint's mask_ratio is 0)" ;; esac
  t "$cmd --seed without a ratio above 0: exit 2, attention's words ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "vitmae: $cmd --seed: draws the masks of --mask-ratio R; without a ratio above 0 nothing is masked$note" ] && [ ! -s "$tmp/out" ] && [ ! -e "$tmp/s0" ]'
done

# Encoder-only checkpoints are refused by both commands.
"$VITMAE" reconstruct --ckpt "$fx/torch_small_encoder.safetensors" --out "$tmp/r9" "$tmp/flat/flat.png" 2>"$tmp/err"; rc=$?
t "encoder-only exits 1" '[ $rc -eq 1 ]'
t "encoder-only message" 'grep -q "^vitmae: .*torch_small_encoder.safetensors: encoder-only checkpoint (no decoder tensors): reconstruct needs the decoder$" "$tmp/err"'
"$VITMAE" eval --ckpt "$fx/torch_small_encoder.safetensors" --data "$tmp/flat" 2>/dev/null; rc=$?
t "eval encoder-only exits 1" '[ $rc -eq 1 ]'

# Usage errors and help.
"$VITMAE" reconstruct "$tmp/flat/flat.png" 2>/dev/null; rc=$?
t "missing --ckpt exits 2" '[ $rc -eq 2 ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" 2>/dev/null; rc=$?
t "no INPUT exits 2" '[ $rc -eq 2 ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --scale 0 "$tmp/flat/flat.png" 2>/dev/null; rc=$?
t "--scale 0 exits 2" '[ $rc -eq 2 ]'
"$VITMAE" eval --ckpt "$tmp/const.st" 2>/dev/null; rc=$?
t "eval without --data exits 2" '[ $rc -eq 2 ]'
"$VITMAE" eval --ckpt "$tmp/const.st" --data "$tmp/nowhere" 2>/dev/null; rc=$?
t "eval on a missing folder exits 1" '[ $rc -eq 1 ]'
t "reconstruct --help" '"$VITMAE" reconstruct --help | grep -q -- "--mask-ratio"'
t "eval --help" '"$VITMAE" eval --help | grep -q -- "--json"'
t "listed in vitmae --help" '"$VITMAE" --help | grep -q "reconstruct" && "$VITMAE" --help | grep -q "eval"'

# --force replaces a link at an output's name; it never writes through it to the file it points to.
mkdir -p "$tmp/lnk" "$tmp/lnkout" && "$mk" png "$tmp/lnk/p.png" --size 16 > /dev/null
echo precious > "$tmp/outside.png"
ln -s "$tmp/outside.png" "$tmp/lnkout/p.recon.png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/lnkout" --force "$tmp/lnk/p.png" > /dev/null 2> "$tmp/err"; rc=$?
t "--force over a link: exit 0 ($(head -n 1 "$tmp/err"))" '[ $rc -eq 0 ]'
t "--force over a link: the linked file untouched, the link replaced" '[ "$(cat "$tmp/outside.png")" = precious ] && [ ! -L "$tmp/lnkout/p.recon.png" ] && [ -s "$tmp/lnkout/p.recon.png" ]'

# A file name with a newline and an escape character stays inside its one error line, written out.
mkdir -p "$tmp/nl"
printf 'not an image' > "$tmp/nl/$(printf 'evil\nvitmae: fake\033[2J').png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/nlout" "$tmp/nl" > /dev/null 2> "$tmp/err"
t "control characters written out in messages ($(head -n 1 "$tmp/err"))" \
  '[ "$(grep -c "evil" "$tmp/err")" -eq 1 ] && grep -qF "evil\\nvitmae: fake\\x1b[2J.png: " "$tmp/err" && ! grep -q "^vitmae: fake" "$tmp/err"'
# A C1 control (U+009B, UTF-8 C2 9B: CSI to a terminal, as ESC [ is) went out raw on stderr and stdout;
# now written out as its two bytes, \xc2\x9b, as C0 controls are; other UTF-8 (an e acute) stays as it is.
mkdir -p "$tmp/c1" "$tmp/c1b"
printf 'not an image' > "$tmp/c1/$(printf 'bad\302\2332J').png"
"$mk" png "$tmp/c1b/$(printf 'ok\302\2332J \303\251').png" --size 16 > /dev/null
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/c1out" "$tmp/c1" "$tmp/c1b" > "$tmp/out" 2> "$tmp/err"
t "a C1 control written out on stderr and stdout ($(head -n 1 "$tmp/err"); $(head -n 1 "$tmp/out"))" \
  'grep -qF "bad\\xc2\\x9b2J.png: " "$tmp/err" && grep -qF "$(printf "ok\\\\xc2\\\\x9b2J \303\251 masked_mse=")" "$tmp/out" && ! LC_ALL=C grep -q "$(printf "\302\233")" "$tmp/err" "$tmp/out"'
# ... and in the report on stdout: one line per image, the name written out (it printed the newline).
mkdir -p "$tmp/nl2"
"$mk" png "$tmp/nl2/$(printf 'ok\nfake 0').png" --size 16 > /dev/null
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/nl2out" "$tmp/nl2" > "$tmp/out" 2> "$tmp/err"; rc=$?
t "control characters written out on stdout ($rc: $(head -n 2 "$tmp/out" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$tmp/out")" -eq 2 ] && grep -qF "ok\\nfake 0 masked_mse=" "$tmp/out" && grep -qF "/ok\\nfake 0.recon.png" "$tmp/out"'

# A name near the file system's 255-byte limit: its stem is cut to 200 bytes, so that its outputs and
# their temporary names fit (it wrote nothing: "file name too long"); two cut alike take -1 as usual.
mkdir -p "$tmp/longn"
z200=$(printf "%0200d" 0)
"$mk" png "$tmp/longn/a.png" --size 16 --value 0.2 > /dev/null && cp "$tmp/longn/a.png" "$tmp/longn/${z200}9.png"
mv "$tmp/longn/a.png" "$tmp/longn/${z200}$(printf "%051d" 0).png"   # 255 bytes: mkckpt's own temporary name would not fit
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/longout" --raw "$tmp/longn" > "$tmp/out" 2> "$tmp/err"; rc=$?
t "names of 251 and 201 bytes: stems cut to 200, every file written ($rc: $(cut -c1-80 "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && [ "$(cd "$tmp/longout" && ls "$z200".* "$z200"-1.* | wc -l)" -eq 6 ] && [ "$(ls "$tmp/longout" | wc -l)" -eq 6 ]'
# An --out so long that an input's output names would pass the 4096-byte path limit: that input fails
# alone in one line, as attention says it (DIR/<stem>.*), before it is read (here it is no image), and
# the other is written. Its file once failed after the work, naming a cut-off prefix of --out ("File
# name too long"). The folder is 3900 bytes whatever TMPDIR is: "x" fits, a stem of 200 bytes does not.
long="$tmp/lp"
while [ ${#long} -lt 3650 ]; do long="$long/$(printf "%0200d" 0)"; done   # then a last part of 48 to 249 bytes
long="$long/$(printf "%0$((3900 - ${#long} - 1))d" 0)"
mkdir -p "$tmp/lpin" && printf 'not an image' > "$tmp/lpin/${z200}.png" && "$mk" png "$tmp/lpin/x.png" --size 16 --value 0.2 > /dev/null
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$long" --raw "$tmp/lpin/${z200}.png" "$tmp/lpin/x.png" > "$tmp/out" 2> "$tmp/err"; rc=$?
t "output names past the path limit: that input's one line, the other written (${#long}, $rc: $(head -c 60 "$tmp/err")...$(tail -c 90 "$tmp/err"))" \
  '[ ${#long} -eq 3900 ] && [ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/lpin/${z200}.png: the output names $long/${z200}.* would pass the 4096-byte path limit (a shorter --out)" ] && grep -q "^x masked_mse=" "$tmp/out" && [ "$(ls "$long")" = "$(printf "x.mask.npy\nx.recon.npy\nx.recon.png")" ]'
# A backslash in a name is written \\: "a\nb" (a backslash and n) read as "a<newline>b" (both printed
# a\nb), in the line on stdout and in messages.
mkdir -p "$tmp/bs"
"$mk" png "$tmp/bs/a\\nb.png" --size 16 --value 0.2 > /dev/null
printf 'not an image' > "$tmp/bs/c\\d.png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/bsout" "$tmp/bs" > "$tmp/out" 2> "$tmp/err"; rc=$?
t "a backslash written \\\\ on stdout and stderr ($rc: $(head -n 1 "$tmp/out"); $(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -qxF "a\\\\nb masked_mse=2.500000e-01 psnr=6.02dB ($tmp/bs/a\\\\nb.png -> $tmp/bsout/a\\\\nb.recon.png)" "$tmp/out" && grep -qF "/bs/c\\\\d.png: " "$tmp/err"'

# The panel's Source chunk names the input as a PNG reader (PIL, exiftool) reads it back: a name that
# is not ASCII in an iTXt chunk (UTF-8), not in a tEXt chunk, which readers take as Latin-1 ("é" came
# back as "Ã©"); bytes that are not UTF-8 as U+FFFD. png_texts PNG: "key=value" per text chunk, decoded
# as PIL decodes them.
png_texts() { python3 -c '
import struct, sys, zlib
b = open(sys.argv[1], "rb").read(); i = 8
while i < len(b):
    n, kind = struct.unpack(">I4s", b[i:i + 8]); d = b[i + 8:i + 8 + n]; i += 12 + n
    if kind == b"tEXt": k, v = d.split(b"\0", 1); print(k.decode("latin-1") + "=" + v.decode("latin-1"))
    if kind == b"iTXt":
        k, r = d.split(b"\0", 1); v = r[2:].split(b"\0", 2)[2]
        print(k.decode("latin-1") + "=" + (zlib.decompress(v) if r[0] else v).decode("utf-8"))
' "$1"; }
mkdir -p "$tmp/é日本"
"$mk" png "$tmp/é日本/q\"<&.png" --size 16 > /dev/null
"$mk" png "$tmp/é日本/$(printf 'x\377y').png" --size 16 > /dev/null
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/u8out" "$tmp/é日本" > /dev/null 2> "$tmp/err"; rc=$?
t "a UTF-8 name read back from the panel's Source ($rc: $(png_texts "$tmp/u8out/q\"<&.recon.png" | grep Source))" \
  '[ $rc -eq 0 ] && png_texts "$tmp/u8out/q\"<&.recon.png" | grep -qxF "Source=$tmp/é日本/q\"<&.png"'
t "a name that is not UTF-8: U+FFFD in the panel's Source ($(png_texts "$tmp/u8out/$(printf 'x\377y').recon.png" | grep Source))" \
  'png_texts "$tmp/u8out/$(printf "x\377y").recon.png" | grep -qxF "Source=$tmp/é日本/x�y.png"'
# A name with control characters (a newline, \x01, a C1 control U+009B) and a backslash: PNG allows
# no control character in a text chunk but a linefeed (tEXt is Latin-1 text, iTXt UTF-8 text), and the
# panel's Source and Title held the name's bytes raw. They are written out as on stdout (\n, \xHH,
# \xc2\xHH, \\): no chunk holds a control character, and Source reads back as the stdout line writes it.
# png_controls PNG: the text chunks holding a control character other than a linefeed... or any.
png_controls() { python3 -c '
import struct, sys
b = open(sys.argv[1], "rb").read(); i = 8
while i < len(b):
    n, kind = struct.unpack(">I4s", b[i:i + 8]); d = b[i + 8:i + 8 + n]; i += 12 + n
    if kind in (b"tEXt", b"iTXt"):
        k, v = d.split(b"\0", 1)
        if kind == b"iTXt": v = v[2:].split(b"\0", 2)[2].decode("utf-8")
        else: v = v.decode("latin-1")
        if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in v): print(kind.decode(), k.decode("latin-1"))
' "$1"; }
mkdir -p "$tmp/ctl"
"$mk" png "$tmp/ctl/$(printf 'a\nb\001c\\d')é.png" --size 16 > /dev/null
"$mk" png "$tmp/ctl/$(printf 'e\tf\302\233g').png" --size 16 > /dev/null
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/ctlout" "$tmp/ctl" > "$tmp/out" 2> "$tmp/err"; rc=$?
p1="$tmp/ctlout/$(printf 'a\nb\001c\\d')é.recon.png"; p2="$tmp/ctlout/$(printf 'e\tf\302\233g').recon.png"
t "control characters in a name: no text chunk holds one ($rc: $(png_controls "$p1" | tr '\n' ' ')$(png_controls "$p2" | tr '\n' ' ')), Source as stdout writes it ($(png_texts "$p1" | grep Source | tr '\n' ' '))" \
  '[ $rc -eq 0 ] && [ -s "$p1" ] && [ -s "$p2" ] && [ -z "$(png_controls "$p1")" ] && [ -z "$(png_controls "$p2")" ] &&
   png_texts "$p1" | grep -qxF "Source=$tmp/ctl/a\\nb\\x01c\\\\dé.png" &&
   png_texts "$p2" | grep -qxF "Source=$tmp/ctl/e\\tf\\xc2\\x9bg.png" &&
   [ "$(/usr/bin/python3 -c "import sys; from PIL import Image; print(Image.open(sys.argv[1]).text[\"Source\"])" "$p1")" = "$tmp/ctl/a\\nb\\x01c\\\\dé.png" ]'
# ... and its title line is drawn, the name with U+FFFD (cairo draws nothing of a string that is not
# UTF-8: the panel had no title). title_ink PNG: the spread of the values of its first 12 rows.
title_ink() { "$VITMAE_TOOLS/imgdump" "$1" "$tmp/title.npy" && python3 -c '
import array, ast, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<H", b[8:10])[0]; h, w, c = ast.literal_eval(b[10:10 + n].decode())["shape"]
a = array.array("f"); a.frombytes(b[10 + n:10 + n + 12 * w * c * 4]); print("%.3f" % (max(a) - min(a)))' "$tmp/title.npy"; }
ink=$(title_ink "$tmp/u8out/$(printf 'x\377y').recon.png")
t "a name that is not UTF-8: the panel's title line drawn (spread $ink of its rows)" 'awk -v s="$ink" "BEGIN { exit !(s > 0.3) }"'
# A long name in a narrow panel: the title's first word was one line of its own running past the right
# edge (clipped there); now shortened in its middle ("a_very_lon...mber_0001:") to end before the
# row's last PANEL_GAP (4) columns, blank in the title's first line (rows 0..11).
long=a_very_long_file_name_of_a_photograph_taken_2024-05-01_at_the_beach_number_0001
cp "$tmp/flat/flat.png" "$tmp/$long.png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/longname" --display 16 "$tmp/$long.png" > /dev/null 2> "$tmp/err"; rc=$?
ink=$(ink "$tmp/longname/$long.recon.png" -4 0 0 12 "$tmp/right.npy")
t "a long name in a 16-pixel panel: its title ends inside the picture (exit $rc, spread $ink at the right edge)" '[ $rc -eq 0 ] && [ "$ink" = "0.000" ]'

# A folder renamed between the scan and the reads (VITMAE_FAULT_HOLD_AFTER_SCAN holds the command
# there): one line for the folder (it printed a "no such file" line per image), its images counted in
# the tally, exit 1.
mkdir -p "$tmp/many/a"
"$mk" png "$tmp/many/a/0.png" --size 16 --value 0.3 > /dev/null
python3 -c 'import os, sys; [os.link(sys.argv[1] + "/0.png", sys.argv[1] + "/%d.png" % i) for i in range(1, 50)]' "$tmp/many/a"
VITMAE_FAULT_HOLD_AFTER_SCAN="$tmp/hold" "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/rmany" "$tmp/many" \
  > "$tmp/many.out" 2> "$tmp/many.err" &
moved_at_gate "$tmp/hold" $! "$tmp/many" "$tmp/many2"; rc=$?
t "input folder renamed mid-run: exit 1, one line for the folder and the tally ($(head -n 3 "$tmp/many.err" | tr "\n" "|"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/many.err")" -eq 2 ] && head -n 1 "$tmp/many.err" | grep -q "^vitmae: .*/many: the folder is gone (moved or deleted during the run)$" && tail -n 1 "$tmp/many.err" | grep -q "^vitmae: reconstruct: 50 inputs failed$"'
# The --out folder moved while the run writes in it (VITMAE_FAULT_HOLD_BEFORE_PUBLISH holds the first
# image's files before they are published): one line for the folder, exit 1, nothing left in it where it
# went. It said the folder once, then "DIR/<stem>.recon.png: No such file or directory" for each of the
# 49 images left, "... could not be synced" and "49 inputs failed".
VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$tmp/holdo" "$VITMAE" reconstruct --threads 1 --ckpt "$tmp/const.st" --out "$tmp/rout" \
  "$tmp/many2" > "$tmp/outg.out" 2> "$tmp/outg.err" &
moved_at_gate "$tmp/holdo" $! "$tmp/rout" "$tmp/rout2"; rc=$?
t "--out folder moved mid-run: exit 1, one line for the folder, nothing left in it ($rc, $(wc -l < "$tmp/outg.err") lines: $(head -n 3 "$tmp/outg.err" | tr "\n" "|"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/outg.err")" = "vitmae: reconstruct: $tmp/rout: the folder is gone (moved or deleted during the run)" ] && [ -z "$(ls -A "$tmp/rout2")" ] && [ ! -e "$tmp/rout" ]'

# --max-pixels, the flag that an image's "exceeds --max-pixels" names (reconstruct and eval had none:
# "unknown flag", exit 2): a 16x16 image over a limit of 100 pixels is refused by name.
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/mp" --max-pixels 100 "$tmp/flat/flat.png" > /dev/null 2> "$tmp/err"; rc=$?
t "reconstruct --max-pixels 100: exit 1, the image named ($rc: $(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -q "flat.png: image 16x16 exceeds --max-pixels 100$" "$tmp/err"'
"$VITMAE" eval --ckpt "$tmp/const.st" --data "$tmp/flat" --max-pixels 100 > /dev/null 2> "$tmp/err"; rc=$?
t "eval --max-pixels 100: the image skipped by name, none left, exit 1 ($rc: $(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -q "^vitmae: skipped .*flat.png: image 16x16 exceeds --max-pixels 100$" "$tmp/err"'

# Out of memory (ulimit -v 150 MB; flat 4096x4096 RGB PNGs decode to 200 MB of floats each): the
# command stops at the first image, one line for it and one for the stop, not a line per image (the
# memory does not come back for the next one). ASan cannot run under ulimit -v: skipped there.
if [ "${VITMAE_SANITIZED:-0}" = 1 ]; then
  echo "note: the ulimit -v check is skipped under the sanitizers (ASan cannot run under ulimit -v)"
else
  "$mk" png "$tmp/huge1.png" --size 4096 > /dev/null && cp "$tmp/huge1.png" "$tmp/huge2.png" && cp "$tmp/huge1.png" "$tmp/huge3.png"
  (ulimit -v 150000 && exec "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/oom" --threads 1 \
    "$tmp/huge1.png" "$tmp/huge2.png" "$tmp/huge3.png") > /dev/null 2> "$tmp/err"; rc=$?
  t "out of memory: stopped at the first image, two lines ($rc: $(tr "\n" "|" < "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 2 ] && grep -q "huge1.png: image 4096x4096: out of memory for its pixels (201338880 bytes" "$tmp/err" && tail -n 1 "$tmp/err" | grep -qx "vitmae: reconstruct: stopped: this process is out of memory or open files (0 of 3 images written)"'
  # ... and an image after it in the same batch is not written either (it was: the rest of the batch
  # went on, where attention stops at once): the image before it is, and the tally says 1 of 3.
  mkdir -p "$tmp/oomb"
  "$mk" png "$tmp/oomb/a.png" --size 16 --value 0.3 > /dev/null && cp "$tmp/huge1.png" "$tmp/oomb/b.png" &&
    cp "$tmp/oomb/a.png" "$tmp/oomb/c.png"
  (ulimit -v 150000 && exec "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/oom2" --threads 1 --batch 3 \
    "$tmp/oomb/a.png" "$tmp/oomb/b.png" "$tmp/oomb/c.png") > /dev/null 2> "$tmp/err"; rc=$?
  t "out of memory in a batch: the image before it written, none after ($rc: $(tr "\n" "|" < "$tmp/err"); $(ls "$tmp/oom2" 2>&1 | tr "\n" " "))" \
    '[ $rc -eq 1 ] && [ -e "$tmp/oom2/a.recon.png" ] && [ ! -e "$tmp/oom2/c.recon.png" ] && tail -n 1 "$tmp/err" | grep -qx "vitmae: reconstruct: stopped: this process is out of memory or open files (1 of 3 images written)"'
  rm -f "$tmp"/huge?.png
fi

# A stop signal while an image's files are written under temporary names (held at the publishing
# gate): the command ends by that signal (exit 128 + its number), removes its temporary files (it left
# each PATH.tmp.<pid>.<n> for good) and the --out folders it made, now empty (it left them: the run
# made sig$name/a/b, an empty sig$name/a/b stayed), and the same command then runs without --force. An
# --out folder that was there before stays (sig$name/kept). env
# --default-signal: a background job of sh starts with SIGINT ignored, which vitmae leaves alone.
# SIGUSR1 and SIGXCPU (a batch system's CPU-time warning) alike: they ended the command by their default,
# its temporary files left for good (no core file here: ulimit -c 0).
ulimit -c 0 2>/dev/null
for sig in INT:130 TERM:143 HUP:129 USR1:138 XCPU:152; do
  name=${sig%:*}; want=${sig#*:}
  signal_at_gate BEFORE_PUBLISH "$tmp/go$name" $name reconstruct --ckpt "$tmp/const.st" \
    --out "$tmp/sig$name/a/b" --raw "$tmp/flat/flat.png"
  t "SIG$name while writing: ended by it ($rc), no temporary file nor folder it made left ($(ls -R "$tmp/sig$name" 2>&1 | tr "\n" " "))" \
    '[ $rc -eq $want ] && [ ! -e "$tmp/sig$name" ]'
  mkdir -p "$tmp/sig$name/kept"
  signal_at_gate BEFORE_PUBLISH "$tmp/go$name.2" $name reconstruct --ckpt "$tmp/const.st" \
    --out "$tmp/sig$name/kept" --raw "$tmp/flat/flat.png"
  t "SIG$name, an --out folder that was there: it stays, empty ($rc)" \
    '[ $rc -eq $want ] && [ -d "$tmp/sig$name/kept" ] && [ -z "$(ls -A "$tmp/sig$name/kept")" ]'
  rmdir "$tmp/sig$name/kept"
  "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/sig$name" --raw "$tmp/flat/flat.png" > /dev/null 2>&1; rc=$?
  t "SIG$name: the same command again without --force" '[ $rc -eq 0 ] && [ "$(ls "$tmp/sig$name" | wc -l)" -eq 3 ]'
done

# A stop signal after the user moved the --out folder away while the command ran (held at the
# publishing gate): the temporary files go from the folder where it went, by the folder the command
# holds open, not by their old names (they stayed there, and a file under such a name in a new folder
# at the old path was removed instead: here the user's own, made at the gate). An empty folder made
# at the old path meanwhile is the user's too: it stays (the cleanup removed it as the --out it made).
for kind in mine empty; do
  env --default-signal VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$tmp/gomv$kind" "$VITMAE" reconstruct --ckpt "$tmp/const.st" \
    --out "$tmp/mv$kind/out" --raw "$tmp/flat/flat.png" > /dev/null 2>&1 &
  pid=$!; wait_gate "$tmp/gomv$kind" $pid
  staged=$(ls -A "$tmp/mv$kind/out" | tr "\n" " ")
  mv "$tmp/mv$kind/out" "$tmp/mv$kind/moved"; mkdir "$tmp/mv$kind/out"
  if [ $kind = mine ]; then for f in $staged; do echo mine > "$tmp/mv$kind/out/$f"; done; fi
  kill -INT $pid; wait $pid; rc=$?
  t "SIGINT after --out was moved ($staged; $kind at the old path): ended by it ($rc), no temporary file left where it went ($(ls -A "$tmp/mv$kind/moved" | tr "\n" " ")), the old path's as the user left it ($(ls -A "$tmp/mv$kind/out" | tr "\n" " "))" \
    '[ $rc -eq 130 ] && [ -n "$staged" ] && [ -d "$tmp/mv$kind/moved" ] && [ -z "$(ls -A "$tmp/mv$kind/moved")" ] &&
     if [ $kind = mine ]; then [ "$(ls -A "$tmp/mv$kind/out" | tr "\n" " ")" = "$staged" ]; else [ -d "$tmp/mv$kind/out" ]; fi'
done

# A stop signal once an image's files are published, before its line (held at HOLD_AFTER_PUBLISH, the
# second image written beside it, not yet published): the line is said all the same, then the run ends
# by the signal and the second image's files go. The process ended between the two: the panel on disk,
# its line never said, and a rerun refused as "already exists" what no line had said was written.
mkdir -p "$tmp/sl" && cp "$tmp/flat/flat.png" "$tmp/sl/a.png" && cp "$tmp/flat/flat.png" "$tmp/sl/b.png"
env --default-signal VITMAE_FAULT_HOLD_AFTER_PUBLISH="$tmp/sl.go" "$VITMAE" reconstruct --ckpt "$tmp/const.st" \
  --threads 2 --out "$tmp/sl/out" --raw "$tmp/sl/a.png" "$tmp/sl/b.png" > "$tmp/sl.out" 2> "$tmp/sl.err" &
pid=$!; wait_gate "$tmp/sl.go" $pid
kill -TERM $pid; sleep 0.3; touch "$tmp/sl.go"; wait $pid; rc=$?
t "SIGTERM between an image's publish and its line: the line said ($(cat "$tmp/sl.out")), ended by it ($rc), that image's files alone ($(ls -A "$tmp/sl/out" | tr "\n" " "))" \
  '[ $rc -eq 143 ] && [ "$(cat "$tmp/sl.out")" = "a masked_mse=2.500000e-01 psnr=6.02dB ($tmp/sl/a.png -> $tmp/sl/out/a.recon.png)" ] &&
   [ "$(ls -A "$tmp/sl/out" | tr "\n" " ")" = "a.mask.npy a.recon.npy a.recon.png " ] && [ ! -s "$tmp/sl.err" ]'

# ... and one while that line waits on a stdout nobody reads (a pipe, full, whose reader reads no more):
# the run ends by it at once, the line lost (no one read it). The stop waited for the write without end.
/usr/bin/python3 - "$VITMAE" "$tmp/const.st" "$tmp/bl" "$tmp/sl/a.png" "$tmp/sl/b.png" > "$tmp/bl.log" 2>&1 <<'PY'
import fcntl, os, signal, subprocess, sys, time
vitmae, ckpt, out, *inputs = sys.argv[1:]
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)   # F_SETPIPE_SZ: a small pipe, filled here
fl = fcntl.fcntl(w, fcntl.F_GETFL)
fcntl.fcntl(w, fcntl.F_SETFL, fl | os.O_NONBLOCK)
try:
    while True: os.write(w, b"x" * 512)
except BlockingIOError:
    pass
fcntl.fcntl(w, fcntl.F_SETFL, fl)
p = subprocess.Popen([vitmae, "reconstruct", "--ckpt", ckpt, "--threads", "1", "--out", out] + inputs, stdout=w,
                     stderr=subprocess.DEVNULL)
kept = os.dup(w)   # the pipe's write end as vitmae had it: its flags given back (O_NONBLOCK off) at the end
os.close(w)
t0 = time.time()
while not os.path.exists(os.path.join(out, "a.recon.png")) and p.poll() is None and time.time() - t0 < 60: time.sleep(0.05)
time.sleep(0.5)
blocked = p.poll() is None
p.send_signal(signal.SIGTERM)
t0 = time.time()
while p.poll() is None and time.time() - t0 < 20: time.sleep(0.05)
rc = p.poll()
if rc is None: p.kill(); p.wait()
print(blocked, rc, fcntl.fcntl(kept, fcntl.F_GETFL) & os.O_NONBLOCK, round(time.time() - t0))
PY
t "SIGTERM while the held line waits on a full pipe nobody reads: ended by it after the grace of 2 s ($(cat "$tmp/bl.log"))" \
  '[ "$(cat "$tmp/bl.log")" = "True -15 0 2" ]'
# ... but a reader that still reads, slowly (here once 1 s has passed since the signal), gets the line:
# the stop gave it up at once, and the image's file was on disk without its line.
rm -rf "$tmp/bl"
/usr/bin/python3 - "$VITMAE" "$tmp/const.st" "$tmp/bl" "$tmp/sl/a.png" "$tmp/sl/b.png" > "$tmp/bl2.log" 2>&1 <<'PY'
import fcntl, os, signal, subprocess, sys, time
vitmae, ckpt, out, *inputs = sys.argv[1:]
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)
fl = fcntl.fcntl(w, fcntl.F_GETFL)
fcntl.fcntl(w, fcntl.F_SETFL, fl | os.O_NONBLOCK)
filled = 0
try:
    while True: filled += os.write(w, b"x" * 512)
except BlockingIOError:
    pass
fcntl.fcntl(w, fcntl.F_SETFL, fl)
p = subprocess.Popen([vitmae, "reconstruct", "--ckpt", ckpt, "--threads", "1", "--out", out] + inputs, stdout=w,
                     stderr=subprocess.DEVNULL)
os.close(w)
t0 = time.time()
while not os.path.exists(os.path.join(out, "a.recon.png")) and p.poll() is None and time.time() - t0 < 60: time.sleep(0.05)
time.sleep(0.5)
p.send_signal(signal.SIGTERM)
time.sleep(1.0)
got = b""
while True:
    b = os.read(r, 65536)
    if not b: break
    got += b
p.wait()
lines = got[filled:].decode().splitlines()
print(p.returncode, len(lines), lines[0].split(" ")[0] if lines else "-")
PY
t "SIGTERM while the held line waits on a pipe whose reader reads 1 s later: the line said, ended by it ($(cat "$tmp/bl2.log"))" \
  '[ "$(cat "$tmp/bl2.log")" = "-15 1 a" ]'
# ... and a stdout that fails under a stop (> /dev/full): said as the command's end would (it ended by
# the signal without a word, 98 lines lost on a full disk).
rm -f "$tmp/slf.go" "$tmp/slf.go.held"
env --default-signal VITMAE_FAULT_HOLD_AFTER_PUBLISH="$tmp/slf.go" "$VITMAE" reconstruct --ckpt "$tmp/const.st" \
  --threads 2 --out "$tmp/slf/out" "$tmp/sl/a.png" "$tmp/sl/b.png" > /dev/full 2> "$tmp/slf.err" &
pid=$!; wait_gate "$tmp/slf.go" $pid
kill -TERM $pid; sleep 0.3; touch "$tmp/slf.go"; wait $pid; rc=$?
t "SIGTERM with stdout on /dev/full: ended by it ($rc), standard output's failure said ($(cat "$tmp/slf.err"))" \
  '[ $rc -eq 143 ] && [ "$(cat "$tmp/slf.err")" = "vitmae: reconstruct: standard output: No space left on device" ]'

# The --out folder moved without a signal, the command's own failure paths: each removes its temporary
# file from the folder it was made in, where that went, not by the old name (the file stayed there).
# The write-test probe removed once written (held at HOLD_IN_WRITE_TEST), and embed's FEATS.npy written
# but not yet in its group (held at HOLD_AFTER_WRITE; its .txt then cannot be made): exit 1, one line.
mkdir -p "$tmp/mvp/out" "$tmp/mve/out"
VITMAE_FAULT_HOLD_IN_WRITE_TEST="$tmp/mvp.go" "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/mvp/out" \
  --raw "$tmp/flat/flat.png" > /dev/null 2> "$tmp/mvp.err" &
moved_at_gate "$tmp/mvp.go" $! "$tmp/mvp/out" "$tmp/mvp/moved"; rc=$?
t "--out moved at reconstruct's write test: exit 1, one line, its probe gone from where it went ($rc: $(cat "$tmp/mvp.err"); $(ls -A "$tmp/mvp/moved" | tr "\n" " "))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/mvp.err")" -eq 1 ] && [ -d "$tmp/mvp/moved" ] && [ -z "$(ls -A "$tmp/mvp/moved")" ]'
VITMAE_FAULT_HOLD_AFTER_WRITE="$tmp/mve.go" "$VITMAE" embed --ckpt "$tmp/const.st" --out "$tmp/mve/out/f.npy" \
  "$tmp/flat/flat.png" > /dev/null 2> "$tmp/mve.err" &
moved_at_gate "$tmp/mve.go" $! "$tmp/mve/out" "$tmp/mve/moved"; rc=$?
t "--out's folder moved while embed wrote f.npy: exit 1, one line naming the folder gone, nothing left where it went ($rc: $(cat "$tmp/mve.err"); $(ls -A "$tmp/mve/moved" | tr "\n" " "))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/mve.err")" = "vitmae: embed: $tmp/mve/out: the folder is gone (moved or deleted during the run)" ] && [ -d "$tmp/mve/moved" ] && [ -z "$(ls -A "$tmp/mve/moved")" ]'

# A stop signal while the probe of the --out folder (.vitmae-write-test-<pid>, cmd/output.h) is there:
# it is removed, and so is the --out folder the run made (both stayed: the probe was unknown to the
# cleanup, and embed set the cleanup up only after its probe). embed's folder was there: it stays, empty.
for sig in INT:130 TERM:143; do
  name=${sig%:*}; want=${sig#*:}
  peek="$tmp/wt$name/a"
  signal_at_gate IN_WRITE_TEST "$tmp/wt$name.go" $name reconstruct --ckpt "$tmp/const.st" \
    --out "$tmp/wt$name/a" --raw "$tmp/flat/flat.png"
  t "SIG$name at reconstruct's write test ($held): ended by it ($rc), nothing left ($(ls -AR "$tmp/wt$name" 2>&1 | tr "\n" " "))" \
    '[ $rc -eq $want ] && [ "${held#.vitmae-write-test-}" != "$held" ] && [ ! -e "$tmp/wt$name" ]'
  mkdir -p "$tmp/wte$name"
  peek="$tmp/wte$name"
  signal_at_gate IN_WRITE_TEST "$tmp/wte$name.go" $name embed --ckpt "$tmp/const.st" \
    --out "$tmp/wte$name/f.npy" "$tmp/flat/flat.png"
  t "SIG$name at embed's write test ($held): ended by it ($rc), its folder stays, empty ($(ls -A "$tmp/wte$name" | tr "\n" " "))" \
    '[ $rc -eq $want ] && [ "${held#.vitmae-write-test-}" != "$held" ] && [ -d "$tmp/wte$name" ] && [ -z "$(ls -A "$tmp/wte$name")" ]'
done
peek=
# A file at the probe's old name .vitmae-write-test-<pid>, made while reconstruct held after its scan
# (before its probe): it was unlinked by name, as "a dead run's of our pid"; the probe now has a name of
# its own (io/files.h's file_tmp_create_unique), and that file stays as it is.
mkdir -p "$tmp/wtp"
VITMAE_FAULT_HOLD_AFTER_SCAN="$tmp/wtp.go" "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/wtp" \
  --raw "$tmp/flat/flat.png" > /dev/null 2> "$tmp/wtp.err" &
wtp=$!; wait_gate "$tmp/wtp.go" $wtp
echo mine > "$tmp/wtp/.vitmae-write-test-$wtp" && touch "$tmp/wtp.go"; wait $wtp; rc=$?
t "a file named .vitmae-write-test-<pid> in --out stays as it is ($rc: $(cat "$tmp/wtp.err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$tmp/wtp/.vitmae-write-test-$wtp")" = mine ] && [ -s "$tmp/wtp/flat.recon.png" ]'

# The deepest --out folder the run made deleted by the user mid-run (at the write test): the run fails
# at its first image and still removes the folders it made above it, now empty (output_mkdir_undo
# stopped at the gone folder and left them); the folder that was there before stays, and so does a
# made folder that holds a file by then (with the file).
for kept in "" keep; do
  mkdir -p "$tmp/mid$kept"
  VITMAE_FAULT_HOLD_IN_WRITE_TEST="$tmp/mid$kept.go" "$VITMAE" reconstruct --ckpt "$tmp/const.st" \
    --out "$tmp/mid$kept/a/b/c" "$tmp/flat/flat.png" > /dev/null 2> "$tmp/err" &
  pid=$!
  wait_gate "$tmp/mid$kept.go" $pid
  rm -rf "$tmp/mid$kept/a/b/c"; [ -n "$kept" ] && touch "$tmp/mid$kept/a/$kept"
  touch "$tmp/mid$kept.go"; wait $pid; rc=$?
  left=$(cd "$tmp/mid$kept" && find . | sort | tr "\n" " ")
  if [ -n "$kept" ]; then want=". ./a ./a/keep "; else want=". "; fi
  t "--out's deepest folder deleted mid-run${kept:+, a file put above it}: exit 1, the made folders above it removed while empty ($rc: left $left; $(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$left" = "$want" ]'
done

# An --out folder that does not take files (read-only, as an ordinary user: tests/lib.sh as_user): one
# line before the work, exit 1 (it printed a "permission denied" line per image, each after its work).
chmod 755 "$tmp"
readonly_out reconstruct "$tmp/const.st" "$tmp/many2" "$tmp/many2/a/0.png" "$tmp/ro"
# A folder that takes files but cannot be read (mode 0733, a drop box): the panels are written there,
# exit 0. Its fsync after the renames (io/files.h) cannot open it: the run failed, `vitmae: DIR:
# Permission denied`, and the panel it had written was removed again.
mkdir -p "$tmp/wo" && chmod 733 "$tmp/wo"
if as_user_can "$tmp/const.st" "$tmp/many2/a/0.png"; then
  as_user "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/wo" "$tmp/many2/a/0.png" > /dev/null 2> "$tmp/wo.err"; rc=$?
  t "a write-only --out (mode 0733): exit 0, the panel written ($rc: $(head -n 2 "$tmp/wo.err" | tr "\n" "|"))" \
    '[ $rc -eq 0 ] && [ ! -s "$tmp/wo.err" ] && [ -s "$tmp/wo/0.recon.png" ]'
else
  echo "note: write-only --out check skipped (no ordinary user can read the test's files)"
fi

# Paths that meet (docs/interface.md): --out inside (or equal to) an input folder fed the command its own
# panels as inputs on the next run (--force: 00.recon.recon.png, ...). One line, exit 2, nothing made;
# an input file there is fine (the folder is not scanned).
mkdir -p "$tmp/meet" && cp "$tmp/flat/flat.png" "$tmp/meet/a.png" && ln -s "$tmp/meet" "$tmp/meetlink"
for o in "$tmp/meet/rec" "$tmp/meet" "$tmp/meetlink/rec"; do
  "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$o" "$tmp/meet" > /dev/null 2> "$tmp/meet.err"; rc=$?
  t "reconstruct --out $o of input $tmp/meet: exit 2, one line ($rc: $(head -n 2 "$tmp/meet.err" | tr "\n" "|"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/meet.err")" -eq 1 ] && grep -q "^vitmae: reconstruct --out: $o is \(inside \)\?the input folder $tmp/meet: its images would be read as inputs by the next run" "$tmp/meet.err"'
done
# A hostile --out of 1500 folders still to be made: resolved in a loop (a recursion of 16 KB a level
# overflowed the stack: SIGSEGV).
deep="$tmp/meet/$(awk 'BEGIN { for (i = 0; i < 1500; i++) printf "a/"; print "a" }')"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$deep" "$tmp/meet" > /dev/null 2> "$tmp/meet.err"; rc=$?
t "reconstruct --out 1500 missing folders deep in its input folder: exit 2, one line ($rc)" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/meet.err")" -eq 1 ] && grep -q "is inside the input folder $tmp/meet: " "$tmp/meet.err"'
t "... nothing written there" '[ "$(ls "$tmp/meet")" = a.png ]'
# ... also where a link below the input folder leads to --out, or to a folder holding it (meet/lk ->
# lkext): the scan follows it, and the panels in lkext/rec were inputs of the next run.
mkdir -p "$tmp/lkext" && ln -s "$tmp/lkext" "$tmp/meet/lk"
for o in "$tmp/lkext/rec" "$tmp/lkext"; do
  "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$o" "$tmp/meet" > /dev/null 2> "$tmp/meet.err"; rc=$?
  t "reconstruct --out $o reached through the link $tmp/meet/lk: exit 2, one line ($rc: $(head -n 2 "$tmp/meet.err" | tr "\n" "|"))" \
    '[ $rc -eq 2 ] && [ "$(cat "$tmp/meet.err")" = "vitmae: reconstruct --out: $o is inside the input folder $tmp/meet through a link (its scan enters $tmp/meet/lk): its images would be read as inputs by the next run (with --force, or once more images are added); choose an --out folder outside it" ] && [ -z "$(ls -A "$tmp/lkext")" ]'
done
rm "$tmp/meet/lk"
# The default folder, ./recon, inside the input folder: the line named --out, which was not given.
(cd "$tmp/meet" && "$VITMAE" reconstruct --ckpt "$tmp/const.st" . > /dev/null 2> "$tmp/meet.err"); rc=$?
t "reconstruct . in its input folder without --out: the default folder named so ($rc: $(cat "$tmp/meet.err"))" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/meet.err")" -eq 1 ] && grep -q "^vitmae: reconstruct: the default output folder recon is inside the input folder \.: .*choose an --out folder outside it$" "$tmp/meet.err" && [ "$(ls "$tmp/meet")" = a.png ]'
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/meet" "$tmp/meet/a.png" > /dev/null 2>&1; rc=$?
t "an input file beside --out is fine" '[ $rc -eq 0 ] && [ -s "$tmp/meet/a.recon.png" ]'
# An output that is one of the inputs (a's panel meet/a.recon.png, given as an input too; also
# through a link) is refused before any work, also with --force: it replaced the input.
ln -s "$tmp/meet/a.recon.png" "$tmp/alink.png"
cp "$tmp/meet/a.recon.png" "$tmp/before.png"
for in2 in "$tmp/meet/a.recon.png" "$tmp/alink.png"; do
  "$VITMAE" reconstruct --ckpt "$tmp/const.st" --out "$tmp/meet" --force --batch 1 "$tmp/meet/a.png" "$in2" \
    > /dev/null 2> "$tmp/meet.err"; rc=$?
  t "reconstruct output = input $in2: exit 2, one line ($rc: $(head -n 2 "$tmp/meet.err" | tr "\n" "|"))" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/meet.err")" -eq 1 ] && grep -q "^vitmae: reconstruct --out: $tmp/meet/a.recon.png is the input $in2: " "$tmp/meet.err"'
  t "... the input unchanged, nothing written" 'cmp -s "$tmp/before.png" "$tmp/meet/a.recon.png" && [ ! -e "$tmp/meet/a.recon.recon.png" ]'
done
# Nor the checkpoint or mask it reads, at an output's name: --force replaced them (the --mask file
# with the panel, the --ckpt file destroyed), exit 0. Refused before any work, the file kept.
cp "$tmp/const.st" "$tmp/meet/a.recon.png"
"$VITMAE" reconstruct --ckpt "$tmp/meet/a.recon.png" --out "$tmp/meet" --force "$tmp/meet/a.png" > /dev/null 2> "$tmp/meet.err"; rc=$?
t "reconstruct --force, the --ckpt file at the panel's name: exit 2, one line, the checkpoint kept ($rc: $(cat "$tmp/meet.err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/meet.err")" = "vitmae: reconstruct --out: $tmp/meet/a.recon.png is the file --ckpt reads: the output of $tmp/meet/a.png would replace it (also with --force; another --out)" ] &&
   cmp -s "$tmp/const.st" "$tmp/meet/a.recon.png"'
cp "$tmp/black.png" "$tmp/meet/a.recon.png"
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --mask "$tmp/meet/a.recon.png" --out "$tmp/meet" --force "$tmp/meet/a.png" > /dev/null 2> "$tmp/meet.err"; rc=$?
t "... the --mask file at the panel's name: exit 2, one line, the mask kept ($rc: $(cat "$tmp/meet.err"))" \
  '[ $rc -eq 2 ] && grep -q "^vitmae: reconstruct --out: $tmp/meet/a.recon.png is the file --mask reads: " "$tmp/meet.err" && cmp -s "$tmp/black.png" "$tmp/meet/a.recon.png"'
# ... nor at the names of the arrays a run without --raw removes under --force (an earlier run's): the
# checkpoint there was deleted, exit 0.
cp "$tmp/const.st" "$tmp/meet/a.mask.npy"
"$VITMAE" reconstruct --ckpt "$tmp/meet/a.mask.npy" --out "$tmp/meet" --force "$tmp/meet/a.png" > /dev/null 2> "$tmp/meet.err"; rc=$?
t "... the --ckpt file at a.mask.npy, which --force without --raw removes: exit 2, kept ($rc: $(cat "$tmp/meet.err"))" \
  '[ $rc -eq 2 ] && [ "$(cat "$tmp/meet.err")" = "vitmae: reconstruct --out: $tmp/meet/a.mask.npy is the file --ckpt reads: a run with --force would remove it as an earlier run'"'"'s array (another --out)" ] && cmp -s "$tmp/const.st" "$tmp/meet/a.mask.npy"'
rm -f "$tmp/meet/a.mask.npy"
cp "$tmp/before.png" "$tmp/meet/a.recon.png"

# Temporary files of an earlier process. One of this pid before (a pid reused after a kill) left files
# at the names this one stages an image's files under: `vitmae: rec3/flat.recon.png: File exists`, exit
# 1, though nothing was there. Now the next serial is taken (io/files.h, file_tmp_create). And a killed
# reconstruct (SIGKILL: no stop signal's cleanup) left rec/<stem>.recon.png.tmp.<pid>.1 and the arrays'
# beside the outputs for ever, also past a later clean run with --force; now the next run removes those
# of the files it writes whose process is gone on this host ("NAME.tmp.<host>.<pid>.<n>"), and only
# those: a user's look-alike, a live process's and another image's stay.
h=$(tmp_host)
mkdir -p "$tmp/rec3"
(cd "$tmp" && sh -c 'for i in 1 2 3; do for k in recon.png recon.npy mask.npy; do echo s > rec3/flat.$k.tmp.$$.$i
  echo s > rec3/flat.$k.tmp.$0.$$.$i; done; done; exec "$1" reconstruct --ckpt "$2" --raw --out rec3 flat/flat.png' \
  "$h" "$VITMAE" "$tmp/const.st" > /dev/null 2> "$tmp/rec3.err"); rc=$?
# The ones with the host (its own pid, not made by it: an earlier process's) are removed as a dead
# process's (they stayed, the pid being this live one's); the host-less ones stay.
t "reconstruct: files at its temporary names left by an earlier process of its pid are passed by, those with the host removed ($rc: $(head -n 2 "$tmp/rec3.err"))" \
  '[ $rc -eq 0 ] && [ ! -s "$tmp/rec3.err" ] && [ -s "$tmp/rec3/flat.recon.png" ] && [ -s "$tmp/rec3/flat.mask.npy" ] && [ "$(ls "$tmp/rec3" | grep -c "\.tmp\.")" -eq 9 ] && [ "$(ls "$tmp/rec3" | grep -c "\.tmp\.$h\.")" -eq 0 ]'
signal_at_gate BEFORE_PUBLISH "$tmp/rk.gate" KILL reconstruct --ckpt "$tmp/const.st" --raw --out "$tmp/rk" "$tmp/flat/flat.png"
dead=$_pid left=$(ls "$tmp/rk" | sort)
for f in flat.recon.png.tmp.notes "flat.recon.png.tmp.$h.$$.1" "other.recon.png.tmp.$h.$dead.1"; do echo s > "$tmp/rk/$f"; done
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --raw --force --out "$tmp/rk" "$tmp/flat/flat.png" > /dev/null 2> "$tmp/rk.err"; rc=$?
t "reconstruct: a killed run's temporary files ($(echo $left)) removed by the next, only they ($rc: $(cat "$tmp/rk.err"))" \
  '[ $rc -eq 0 ] && [ "$left" = "$(printf "flat.%s.tmp.%s.%s.%s\n" mask.npy "$h" $dead 3 recon.npy "$h" $dead 2 recon.png "$h" $dead 1 | sort)" ] && [ "$(ls "$tmp/rk" | sort)" = "$(printf "%s\n" flat.mask.npy flat.recon.npy flat.recon.png flat.recon.png.tmp.$h.$$.1 flat.recon.png.tmp.notes other.recon.png.tmp.$h.$dead.1 | sort)" ]'

# A killed run not yet reaped by its parent (a zombie: `timeout -s KILL`'s orphan until PID 1 reaps it,
# for ever under a PID 1 that never does) passed for live (kill(pid, 0) succeeds), so a clean --force
# run kept its leftovers. Now a zombie ('Z' in /proc/PID/stat) is gone (io/files.c, pid_gone). The
# parent here is a sleep that the shell became (exec): it never reaps the killed reconstruct.
rm -f "$tmp/zk.pid" "$tmp/zk.gate" "$tmp/zk.gate.held"
sh -c 'VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$0.gate" "$1" reconstruct --ckpt "$2" --raw --out "$3" "$4" > /dev/null 2>&1 &
  echo $! > "$0.pid"; exec sleep 60' "$tmp/zk" "$VITMAE" "$tmp/const.st" "$tmp/zk" "$tmp/flat/flat.png" &
parent=$!
_i=0; while [ $_i -lt 600 ] && [ ! -e "$tmp/zk.gate.held" ]; do sleep 0.1; _i=$((_i + 1)); done
zpid=$(cat "$tmp/zk.pid"); kill -KILL "$zpid"
_i=0; while [ $_i -lt 100 ] && [ "$(sed 's/.*) //' /proc/$zpid/stat 2>/dev/null | cut -c1)" != Z ]; do sleep 0.1; _i=$((_i + 1)); done
zstate=$(sed 's/.*) //' /proc/$zpid/stat 2>/dev/null | cut -c1) left=$(ls "$tmp/zk" | grep -c "\.tmp\.")
"$VITMAE" reconstruct --ckpt "$tmp/const.st" --raw --force --out "$tmp/zk" "$tmp/flat/flat.png" > /dev/null 2> "$tmp/zk.err"; rc=$?
t "reconstruct: a killed, unreaped run's ($zstate) temporary files ($left) removed by the next ($rc: $(cat "$tmp/zk.err"); $(ls "$tmp/zk" | tr '\n' ' '))" \
  '[ $rc -eq 0 ] && [ "$zstate" = Z ] && [ $left -eq 3 ] && [ "$(ls "$tmp/zk" | sort)" = "$(printf "%s\n" flat.mask.npy flat.recon.npy flat.recon.png)" ]'
kill $parent 2>/dev/null; wait $parent 2>/dev/null

# A host name of other characters than [A-Za-z0-9._-] (büro-pc, "x y", a:b) gave the temporary names an
# empty host, "flat.recon.png.tmp..<pid>.1", which no later run removed. Now such a host is
# "hx-<16 hex digits>" (a hash of its name: io/files.h, file_host_name), its leftovers swept like any
# other. In a UTS namespace of its own (unshare -u: skipped where it is not permitted).
if unshare -u true 2>/dev/null; then
  hostrun='import socket,os,sys; socket.sethostname(sys.argv[1].encode()); os.execv(sys.argv[2],sys.argv[2:])'
  for hn in "büro-pc" "x y" "a:b"; do
    rm -rf "$tmp/hk"; rm -f "$tmp/hk.gate" "$tmp/hk.gate.held"
    unshare -u env --default-signal VITMAE_FAULT_HOLD_BEFORE_PUBLISH="$tmp/hk.gate" python3 -c "$hostrun" "$hn" "$VITMAE" \
      reconstruct --ckpt "$tmp/const.st" --raw --out "$tmp/hk" "$tmp/flat/flat.png" > /dev/null 2>&1 &
    hpid=$!; wait_gate "$tmp/hk.gate" $hpid; kill -KILL $hpid; wait $hpid
    left=$(ls "$tmp/hk" | tr '\n' ' ')
    eh=$(unshare -u python3 -c "$hostrun" "$hn" /bin/sh -c '. "$0/tests/lib.sh"; tmp_host' "$VITMAE_ROOT")
    unshare -u python3 -c "$hostrun" "$hn" "$VITMAE" reconstruct --ckpt "$tmp/const.st" --raw --force --out "$tmp/hk" \
      "$tmp/flat/flat.png" > /dev/null 2> "$tmp/hk.err"; rc=$?
    t "reconstruct on host '$hn': a killed run's temporary files ($left) named by a host hash, removed by the next ($rc: $(cat "$tmp/hk.err"); $(ls "$tmp/hk" | tr '\n' ' '))" \
      '[ $rc -eq 0 ] && [ "$(echo "$left" | grep -cE "^(flat\.(mask\.npy|recon\.npy|recon\.png)\.tmp\.$eh\.[0-9]+\.[0-9]+ ){3}$")" -eq 1 ] && [ "$(echo "$eh" | grep -cE "^hx-[0-9a-f]{16}$")" -eq 1 ] && [ "$(ls "$tmp/hk" | sort)" = "$(printf "%s\n" flat.mask.npy flat.recon.npy flat.recon.png)" ]'
  done
else
  echo "SKIP: reconstruct on a host of other characters: unshare -u is not permitted here"
fi

rm -rf "$tmp"
[ $fail -eq 0 ] && echo "reconstruct/eval CLI ok"
exit $fail
