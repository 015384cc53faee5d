#!/bin/sh
# tools/gallery_page.sh, the page `make demo` writes (demo/index.html; docs/pictures.md, "Checking the
# pages in a browser"): on a demo-shaped folder made here (a 2-step run, reconstructions, attention,
# probe confusion matrices) it shows each kind of picture under its heading with how to read it, and
# every picture it names exists. `make gallery-check` opens such pages in Chromium; this runs without.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch
scratch tmp
cd "$tmp" || exit 1   # a command that wrongly writes to the working directory writes here
d="$tmp/demo"
mkdir -p "$tmp/train" "$tmp/test" "$d"
"$VITMAE_TOOLS/synth" "$tmp/train" --count 16 --size 16 --seed 1 >/dev/null
"$VITMAE_TOOLS/synth" "$tmp/test" --count 8 --size 16 --seed 2 >/dev/null
"$VITMAE" train --data "$tmp/train" --img 16 --patch 4 --depth 1 --dec-depth 1 --batch 4 --steps 2 --threads 1 \
  --out "$d/run" >/dev/null 2>&1; rc=$?
ck="$d/run/checkpoint.safetensors"
set -- $(find "$tmp/test" -name '*.png' | LC_ALL=C sort | head -n 2)
"$VITMAE" reconstruct --ckpt "$ck" --out "$d/recon" --threads 1 "$@" >/dev/null 2>&1 &&
  "$VITMAE" attention --ckpt "$ck" --out "$d/attention" --layer all --threads 1 "$@" >/dev/null 2>&1 &&
  "$VITMAE" probe --ckpt "$ck" --train "$tmp/train" --test "$tmp/test" --out "$d/probe-encoder" --threads 1 >/dev/null 2>&1
rc2=$?
t "the demo-shaped folder is made ($rc, $rc2)" '[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ -s "$d/run/samples/step-2.png" ]'
sh "$VITMAE_ROOT/tools/gallery_page.sh" "$d" "a demo" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "gallery_page.sh: exit 0, the page announced ($rc: $(cat "$tmp/out" "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$tmp/out")" = "gallery page $d/index.html" ] && [ ! -s "$tmp/err" ]'
# Every picture on the page exists, and each kind is there: the curves, the last step's samples, every
# reconstruction panel, both confusion matrices, every montage, and the link to attention's own page.
python3 - "$d" > "$tmp/check" 2>&1 <<'PY'
import os, re, sys, urllib.parse
d = sys.argv[1]
page = open(os.path.join(d, "index.html"), encoding="utf-8").read()
srcs = [urllib.parse.unquote(s) for s in re.findall(r'<img src="([^"]*)"', page)]
missing = [s for s in srcs if not os.path.isfile(os.path.join(d, s))]
want = ["run/curves.png", "run/samples/step-2.png"]
for sub, ext in (("recon", ".recon.png"), ("attention", ".attn.png"), ("probe-encoder", ".png")):
    want += sorted(sub + "/" + f for f in os.listdir(os.path.join(d, sub)) if f.endswith(ext))
heads = re.findall(r"<h2>(.*?)</h2>", page)
print("missing %s; not shown %s; headings %s; attention page linked %s" % (
    missing, [w for w in want if w not in srcs], heads, 'href="attention/index.html"' in page))
PY
t "every picture named exists, each kind shown ($(cat "$tmp/check"))" \
  '[ "$(cat "$tmp/check")" = "missing []; not shown []; headings ['"'"'Training (run)'"'"', '"'"'Reconstructions'"'"', '"'"'Probes'"'"', '"'"'Attention: <a href=\"attention/index.html\">attention</a>'"'"']; attention page linked True" ]'
# How to read a reconstruction, as the panels draw it (docs/interface.md, reconstruct): the raw
# prediction's visible patches are untrained, and the error panel colours the removed patches only (the
# page said "the squared error of each patch" after the panel had greyed the visible ones).
t "the reconstructions' text: the visible patches untrained, the error of the hidden ones only" \
  'grep -q "patches of this panel are not trained" "$d/index.html" && grep -q "the squared error of each hidden patch (the visible ones grey" "$d/index.html"'

rm -rf "$tmp"
[ $fail -eq 0 ] && echo "cli_gallery ok"
exit $fail
