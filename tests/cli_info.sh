#!/bin/sh
# `vitmae info`: a checkpoint written by PyTorch code (tools/torch_checkpoint.py) reports its
# config and parameter counts; the encoder-only variant has no decoder; bad files exit 1.
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch tmp
cd "$tmp" || exit 1   # a command that wrongly writes to the working directory writes here
fx="$VITMAE_ROOT/tests/fixtures"

# The report's first line names the file with its control characters written out, as every name in a
# report: a newline in the name split it in two.
cp "$fx/torch_small.safetensors" "$tmp/$(printf 'a\nb').safetensors"
"$VITMAE" info "$tmp/$(printf 'a\nb').safetensors" > "$tmp/nl.out"; rc=$?
t "info of a name with a newline: the name written out on one line" '[ $rc -eq 0 ] && [ "$(head -n 1 "$tmp/nl.out")" = "$tmp/a\\nb.safetensors" ] && [ "$(sed -n 2p "$tmp/nl.out" | cut -c1-9)" = "  encoder" ]'

# A hostile file's tensor name (a newline, a terminal escape and 300 bytes) is shown clipped to 96
# bytes, then "...", its control characters written out, in one line; the file's own name in full, its
# newline written out too (it read 'h?k', control characters turned into '?' there).
python3 -c 'import json, struct, sys
name = "enc\n\x1b[2J" + "x" * 300
h = json.dumps({name: {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + b"\0\0")' "$tmp/$(printf 'h\nk').safetensors"
"$VITMAE" info "$tmp/$(printf 'h\nk').safetensors" > /dev/null 2> "$tmp/hostile.err"; rc=$?
x88=$(printf "%88s" "" | tr " " x)
t "a hostile tensor name: exit 1, one line, clipped and written out ($rc: $(head -c 200 "$tmp/hostile.err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/hostile.err")" -eq 1 ] && ! grep -q "$(printf "\033")" "$tmp/hostile.err" &&
   grep -qxF "vitmae: $tmp/h\\nk.safetensors: tensor '"'"'enc\\n\\x1b[2J$x88...'"'"' has dtype '"'"'F16'"'"' (only F32 is supported: convert the file with tools/convert_mae.py, which reads any float dtype, or save the tensors with .float())" "$tmp/hostile.err"'

out=$("$VITMAE" info "$fx/torch_small.safetensors" --json); rc=$?
t "info --json exits 0" '[ $rc -eq 0 ]'
echo "$out" >"$tmp/info.json"
# Parsed with python's json when there is one; the checks themselves are plain greps otherwise.
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/info.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
want = {"img_size": 16, "patch_size": 4, "in_chans": 3, "embed_dim": 16, "depth": 1, "num_heads": 2,
        "decoder_embed_dim": 8, "decoder_depth": 1, "decoder_num_heads": 2, "mlp_ratio": 4,
        "norm_pix_loss": True, "mask_ratio": 0.75, "pos_embed": "learned",
        "pixel_mean": [0.485, 0.456, 0.406], "pixel_std": [0.229, 0.224, 0.225], "layer_norm_eps": 1e-6}
ok = True
for k, v in want.items():
    if d["config"].get(k) != v:
        print("FAILED: config %s = %r, want %r" % (k, d["config"].get(k), v)); ok = False
for k, v in {"params": 5984, "encoder_params": 4384, "decoder_params": 1600, "has_decoder": True,
             "train_state": None}.items():
    if d.get(k) != v:
        print("FAILED: %s = %r, want %r" % (k, d.get(k), v)); ok = False
if "moments_removed" not in d or d["moments_removed"] is not None:   # no train state: null
    print("FAILED: moments_removed = %r, want null" % d.get("moments_removed", "(absent)")); ok = False
if not d["file"].endswith("torch_small.safetensors"):
    print("FAILED: file"); ok = False
sys.exit(0 if ok else 1)
PY
fi
t "params 5984" 'grep -q "\"params\":[[:space:]]*5984," "$tmp/info.json"'
t "has decoder" 'grep -q "\"has_decoder\":[[:space:]]*true" "$tmp/info.json"'
t "embed_dim" 'grep -q "\"embed_dim\":[[:space:]]*16," "$tmp/info.json"'

out=$("$VITMAE" info "$fx/torch_small_encoder.safetensors" --json); rc=$?
t "encoder-only exits 0" '[ $rc -eq 0 ]'
t "encoder-only has no decoder" 'echo "$out" | grep -q "\"has_decoder\":[[:space:]]*false"'
t "encoder-only params" 'echo "$out" | grep -q "\"params\":[[:space:]]*4384,"'
t "encoder-only, as text: what it serves (docs/encoder.md)" \
  '"$VITMAE" info "$fx/torch_small_encoder.safetensors" | grep -q "not in this file: encoder-only: for attention, embed, probe, finetune --ckpt"'

out=$("$VITMAE" info "$fx/torch_small.safetensors"); rc=$?
t "text form exits 0" '[ $rc -eq 0 ]'
t "text form params" 'echo "$out" | grep -q "params *5,984 (encoder 4,384, decoder 1,600)"'
t "text form crc absent" 'echo "$out" | grep -q "crc32 *absent"'
t "text form input: 16 px of 4 px patches are 16 patches" 'echo "$out" | grep -q "input *16x16, 3 channels, patch 4 (16 patches)$"'
# One patch (img = patch): "1 patch", not "1 patches".
"$VITMAE_TOOLS/mkckpt" ckpt "$tmp/one.safetensors" --img 4 --patch 4 --channels 1 --mask-ratio 0 || fail=1
t "one patch: the input line says 1 patch" '"$VITMAE" info "$tmp/one.safetensors" | grep -q "input *4x4, 1 channel, patch 4 (1 patch)$"'

# A damaged copy: one byte of the JSON header changed, then truncated data.
cp "$fx/torch_small.safetensors" "$tmp/bad.safetensors"
printf 'X' | dd of="$tmp/bad.safetensors" bs=1 seek=8 conv=notrunc 2>/dev/null
"$VITMAE" info "$tmp/bad.safetensors" 2>"$tmp/err"; rc=$?
t "malformed header exits 1" '[ $rc -eq 1 ]'
t "malformed header message" 'grep -q "^vitmae: $tmp/bad.safetensors: malformed JSON header" "$tmp/err"'
head -c 20000 "$fx/torch_small.safetensors" >"$tmp/short.safetensors"
"$VITMAE" info "$tmp/short.safetensors" 2>"$tmp/err"; rc=$?
t "truncated exits 1" '[ $rc -eq 1 ]'
t "truncated message" 'grep -q "^vitmae: $tmp/short.safetensors: truncated data" "$tmp/err"'
# A file of another kind, given as a checkpoint, is named by its first bytes: each said "header length
# 727905341920923785 is too large (limit 100000000; not a safetensors file?)", which tells a user little.
printf 'step,loss\n1,0.5\n' >"$tmp/metrics.csv"
printf 'RIFF\044\000\000\000WEBPVP8 ' >"$tmp/img.webp"
printf '\223NUMPY\001\000v\000{' >"$tmp/arr.npy"
printf 'PK\003\004\024\000\000\000' >"$tmp/model.pth"
printf '{"lr": 1}\n' >"$tmp/config.json"
printf 'hi\n' >"$tmp/notes.txt"                       # shorter than the 8-byte header length
printf '\000\000\000\000\000\000\000\377\001' >"$tmp/bin.dat"   # neither text nor a kind it knows
printf '\001\002\003' >"$tmp/tiny.dat"
: >"$tmp/empty.safetensors"
for kf in "$fx/attn_input.png:a PNG image, not a safetensors checkpoint" \
          "$tmp/img.webp:a WebP image, not a safetensors checkpoint" \
          "$tmp/arr.npy:a NumPy .npy array, not a safetensors checkpoint" \
          "$tmp/model.pth:a zip file, not a safetensors checkpoint (a PyTorch .pth? convert it with tools/convert_mae.py)" \
          "$tmp/config.json:JSON text, not a safetensors checkpoint" \
          "$tmp/empty.safetensors:an empty file, not a safetensors checkpoint" \
          "$tmp/metrics.csv:a text file, not a safetensors checkpoint" \
          "$tmp/notes.txt:a text file, not a safetensors checkpoint" \
          "$tmp/bin.dat:not a safetensors checkpoint (header length 18374686479671623680 is too large: the limit is 100000000)" \
          "$tmp/tiny.dat:not a safetensors checkpoint (file too short: 3 bytes; a safetensors file starts with an 8-byte header length)"; do
  f=${kf%%:*}
  "$VITMAE" info "$f" 2>"$tmp/err"; rc=$?
  t "info of $(basename "$f"): named by its first bytes, exit 1" '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $f: ${kf#*:}" ]'
done
"$VITMAE" embed --ckpt "$fx/attn_input.png" --out "$tmp/e.npy" "$fx/attn_input.png" >/dev/null 2>"$tmp/err"; rc=$?
t "embed --ckpt of a PNG: named so, exit 1, no file" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $fx/attn_input.png: a PNG image, not a safetensors checkpoint" ] && [ ! -e "$tmp/e.npy" ]'
"$VITMAE" reconstruct --ckpt "$tmp/metrics.csv" --out "$tmp/r" "$fx/attn_input.png" >/dev/null 2>"$tmp/err"; rc=$?
t "reconstruct --ckpt of a CSV: a text file, exit 1, no file" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/metrics.csv: a text file, not a safetensors checkpoint" ] && [ ! -e "$tmp/r" ]'
"$VITMAE" info "$tmp/missing.safetensors" 2>"$tmp/err"; rc=$?
t "missing file exits 1" '[ $rc -eq 1 ] && grep -q "No such file" "$tmp/err"'
"$VITMAE" info 2>/dev/null; rc=$?
t "no FILE is a usage error" '[ $rc -eq 2 ]'
"$VITMAE" info --frob x 2>/dev/null; rc=$?
t "unknown flag is a usage error" '[ $rc -eq 2 ]'

# A resumable file written by tools/safetensors_io.py (with its crc32, train_state and moments):
# the Python writer and the C reader agree on the format and the checksum.
if command -v python3 >/dev/null 2>&1; then
  python3 - "$fx/torch_small.safetensors" "$tmp/resume.safetensors" "$tmp/oddkey.safetensors" "$tmp/nomoments.safetensors" \
    "$tmp/statenan.safetensors" "$tmp/statelist.safetensors" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["VITMAE_ROOT"], "tools"))
import safetensors_io as st
tensors, meta = st.read(sys.argv[1])
for name in list(tensors):
    shape, data = tensors[name]
    tensors["optimizer.exp_avg." + name] = (shape, [0.5] * len(data))
    tensors["optimizer.exp_avg_sq." + name] = (shape, [0.25] * len(data))
meta["train_state"] = '{"step": 42, "epoch": 3, "rng": [1, 2], "data": "/d' + 'x' * 300 + '/end"}'
st.write(sys.argv[2], tensors, meta)
meta["train_state"] = '{"step": 42, "a\\nb\\u001b[31m": "c\\nd\\u001b[0m"}'   # an edited key and value
st.write(sys.argv[3], tensors, meta)
st.write(sys.argv[4], {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}, meta)
meta["train_state"] = '{"step": NaN}'   # an edit that left a train_state that is not JSON
st.write(sys.argv[5], tensors, meta)
meta["train_state"] = '[42, 3]'         # JSON, but not an object
st.write(sys.argv[6], tensors, meta)
PY
  out=$("$VITMAE" info "$tmp/resume.safetensors" --json); rc=$?
  t "resumable file exits 0" '[ $rc -eq 0 ]'
  t "crc32 verified" 'echo "$out" | grep -q "\"crc32\":[[:space:]]*\"ok\""'
  t "train_state step" 'echo "$out" | grep -q "\"step\":[[:space:]]*42"'
  # Whether the AdamW moments were removed, as the text's "AdamW moments removed: cannot resume" says
  # (--json had no field for it).
  t "--json: moments present (moments_removed false)" 'echo "$out" | grep -q "\"moments_removed\":[[:space:]]*false"'
  out=$("$VITMAE" info "$tmp/nomoments.safetensors" --json); rc=$?
  text=$("$VITMAE" info "$tmp/nomoments.safetensors")
  t "--json: moments removed (moments_removed true, exit $rc), as the text says" \
    '[ $rc -eq 0 ] && echo "$out" | grep -q "\"moments_removed\":[[:space:]]*true" && echo "$text" | grep -q "AdamW moments removed: cannot resume"'
  # A train_state that is not a JSON object (not JSON at all, or a list), moments present: it cannot
  # resume, and the text shows it as it is with no word of the moments; --json said
  # "moments_removed": false all the same. It is null, as the text says nothing (docs/interface.md, info).
  for f in statenan statelist; do
    out=$("$VITMAE" info "$tmp/$f.safetensors" --json); rc=$?
    text=$("$VITMAE" info "$tmp/$f.safetensors"); rc2=$?
    t "a train_state that is not a JSON object ($f): --json moments_removed null ($rc $rc2: $(echo "$out" | grep moments_removed)), the text no moments line ($(echo "$text" | grep "train state"))" \
      '[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && echo "$out" | grep -q "\"moments_removed\":[[:space:]]*null" && ! echo "$text" | grep -q "AdamW moments" && echo "$text" | grep -q "^  train state  [[{]"'
  done
  out=$("$VITMAE" info "$tmp/resume.safetensors"); rc=$?
  t "text train state" 'echo "$out" | grep -q "step *42" && echo "$out" | grep -q "crc32 .*verified"'
  # A value is written whole (a long --data path was cut at 100 bytes, "...").
  t "text train state: a 306-byte data path whole" 'echo "$out" | grep -q "data *\"/dx*/end\"$"'
  # A key is written as its value is, JSON-escaped (it was written raw: a newline split the line, an
  # escape sequence reached the terminal).
  "$VITMAE" info "$tmp/oddkey.safetensors" > "$tmp/oddkey.out"; rc=$?
  t "text train state: a key with a newline and an escape written out (exit $rc; its last line: $(tail -n 1 "$tmp/oddkey.out" | od -An -c | tr -s " \n" " "))" \
    '[ $rc -eq 0 ] && tail -n 1 "$tmp/oddkey.out" | grep -qxF "    a\\nb\\u001b[31m \"c\\nd\\u001b[0m\"" && ! grep -q "$(printf "\033")" "$tmp/oddkey.out"'
  # One data byte changed: refused by the crc32.
  size=$(wc -c <"$tmp/resume.safetensors")
  printf 'Z' | dd of="$tmp/resume.safetensors" bs=1 seek=$((size - 5)) conv=notrunc 2>/dev/null
  "$VITMAE" info "$tmp/resume.safetensors" 2>"$tmp/err"; rc=$?
  t "damaged data exits 1" '[ $rc -eq 1 ] && grep -q "crc32 mismatch (file damaged)" "$tmp/err"'
fi
# A FIFO named as a checkpoint is refused at once, not waited on for a writer.
mkfifo "$tmp/fifo.safetensors"
timeout 20 "$VITMAE" info "$tmp/fifo.safetensors" > /dev/null 2> "$tmp/err"; rc=$?
t "a FIFO: exit 1, one line, no wait (got $rc: $(head -n 1 "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "fifo.safetensors: not a regular file" "$tmp/err"'
# A header of 200,000 tensors (13 MB of the 100 MB a header may hold): answered at once (here refused,
# no config), not after minutes of comparing every key with every other for repeats.
python3 -c '
import struct, sys
n = 200000
h = "{" + ",".join("\"k%d\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%d,%d]}" % (i, 4 * i, 4 * i + 4) for i in range(n)) + "}"
h = h.encode(); h += b" " * ((8 - len(h) % 8) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(4 * n))' "$tmp/many.safetensors"
timeout 60 "$VITMAE" info "$tmp/many.safetensors" > /dev/null 2> "$tmp/err"; rc=$?
t "200,000 tensors in a header: answered, not a hang (got $rc: $(head -c 200 "$tmp/err"))" \
  '[ $rc -eq 1 ] && grep -q "many.safetensors: no .config." "$tmp/err"'

# The version that wrote a file (docs/interface.md, sections 1 and 4): train's checkpoints and
# config.json and finetune's classifier record "vitmae_version", info shows it (text and --json); a file
# without it (PyTorch's, older vitmae's) loads and says "unknown" / null; it lives in the header alone
# (another value there leaves the data and its crc32 as they are).
ver=$("$VITMAE" --version | head -n 1 | cut -d' ' -f2)
"$VITMAE_TOOLS/synth" "$tmp/vimgs" --count 8 --size 16 --classes 2 > /dev/null || fail=1
"$VITMAE" train --data "$tmp/vimgs" --img 16 --patch 8 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 \
  --dec-heads 1 --steps 2 --batch 4 --val-frac 0 --threads 1 --out "$tmp/vrun" > /dev/null 2>&1; rc=$?
"$VITMAE" finetune --ckpt "$tmp/vrun/checkpoint.safetensors" --data "$tmp/vimgs" --steps 1 --batch 4 --val-frac 0 \
  --threads 1 --out "$tmp/vft" > /dev/null 2>&1 || rc=1
meta_version() { python3 -c 'import json, struct, sys; b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; print(json.loads(b[8:8 + n])["__metadata__"].get("vitmae_version"))' "$1"; }
t "train and finetune ran ($rc)" '[ $rc -eq 0 ] && [ -n "$ver" ]'
t "checkpoint metadata vitmae_version is --version's ($ver)" '[ "$(meta_version "$tmp/vrun/checkpoint.safetensors")" = "$ver" ]'
t "config.json vitmae_version" 'python3 -c "import json, sys; assert json.load(open(sys.argv[1]))[\"vitmae_version\"] == sys.argv[2]" "$tmp/vrun/config.json" "$ver"'
t "classifier checkpoint vitmae_version" '[ "$(meta_version "$tmp/vft/checkpoint.safetensors")" = "$ver" ]'
t "info: written by vitmae $ver" '"$VITMAE" info "$tmp/vrun/checkpoint.safetensors" | grep -qx "  written by   vitmae $ver"'
t "info of a classifier: written by" '"$VITMAE" info "$tmp/vft/checkpoint.safetensors" | grep -qx "  written by   vitmae $ver"'
# A classifier's --json config holds what the classifier has, as the text shows it (docs/interface.md,
# info): no decoder and no pretraining loss (it showed decoder_embed_dim, mask_ratio, norm_pix_loss... that
# the text's "has decoder  no" leaves out); its layer_norm_eps in both.
t "info --json of a classifier: config without the decoder's and the pretraining loss's fields" \
  '"$VITMAE" info --json "$tmp/vft/checkpoint.safetensors" | python3 -c "import json, sys; c = json.load(sys.stdin)[\"config\"]; assert sorted(c) == sorted([\"img_size\", \"patch_size\", \"in_chans\", \"embed_dim\", \"depth\", \"num_heads\", \"mlp_ratio\", \"pos_embed\", \"pixel_mean\", \"pixel_std\", \"layer_norm_eps\"]) and c[\"embed_dim\"] == 8, c"'
t "info of a classifier, text: layer_norm_eps on the encoder line" \
  '"$VITMAE" info "$tmp/vft/checkpoint.safetensors" | grep -qx "  encoder      dim 8, depth 1, heads 1, mlp ratio 4, layer_norm_eps 1e-06"'
# A run's config.json whose train state differs from its checkpoint's at the same step (a setting edited
# by hand) is no run stopped between the two writes: info said "describes step 2 of 2, not this
# checkpoint's step 2 of 2 (the run stopped between writing the checkpoint and config.json)". It names
# the setting that differs, in one warning; the report is the checkpoint's.
cp -R "$tmp/vrun" "$tmp/vedit"
python3 -c 'import json, sys
c = json.load(open(sys.argv[1])); c["train"]["lr"] = 1; open(sys.argv[1], "w").write(json.dumps(c))' "$tmp/vedit/config.json"
"$VITMAE" info "$tmp/vedit" > "$tmp/vedit.out" 2> "$tmp/vedit.err"; rc=$?
t "a config.json edited at the checkpoint's step: one warning naming the setting, not a stopped run ($rc: $(cat "$tmp/vedit.err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$tmp/vedit.err")" = "vitmae: warning: $tmp/vedit/config.json differs from this checkpoint'"'"'s train state at the same step 2 of 2 ('"'"'lr'"'"' is not the checkpoint'"'"'s: the file was changed after it was written): the checkpoint is the run'"'"'s state; the run has reached its last step, so config.json stays as it is until train --resume $tmp/vedit --steps N extends it" ] &&
   grep -q "^    step  *2$" "$tmp/vedit.out"'
# A finished run's plain --resume has nothing to train and writes nothing: the warning said "train
# --resume RUN goes on from it and rewrites config.json" of it (above: it now says extending does). A
# run short of its last step (its checkpoint's and config.json's total_steps made 4) goes on and
# rewrites it: so said.
cp -R "$tmp/vrun" "$tmp/vmid"
python3 - "$tmp/vmid/checkpoint.safetensors" "$tmp/vmid/config.json" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
st = json.loads(h["__metadata__"]["train_state"]); st["total_steps"] = 4; h["__metadata__"]["train_state"] = json.dumps(st)
hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
c = json.load(open(sys.argv[2])); c["train"]["total_steps"] = 4; c["train"]["lr"] = 1; open(sys.argv[2], "w").write(json.dumps(c))
PY
"$VITMAE" info "$tmp/vmid" > /dev/null 2> "$tmp/vmid.err"; rc=$?
# A roll back (checkpoint-1 put at checkpoint.safetensors, as docs/interface.md advises: a new name
# renamed over it) leaves config.json ahead of the checkpoint: the warning said "the run stopped between
# writing the checkpoint and config.json", which can only leave it behind.
cp -R "$tmp/vrun" "$tmp/vback" && cp "$tmp/vback/checkpoint-1.safetensors" "$tmp/vback/new" && mv "$tmp/vback/new" "$tmp/vback/checkpoint.safetensors"
"$VITMAE" info "$tmp/vback" > /dev/null 2> "$tmp/vback.err"; rc=$?
t "config.json ahead of a rolled-back checkpoint: the roll back said ($rc: $(cat "$tmp/vback.err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$tmp/vback.err")" = "vitmae: warning: $tmp/vback/config.json describes step 2 of 2, not this checkpoint'"'"'s step 1 of 2 (checkpoint.safetensors was put back to an earlier state after config.json was written): the checkpoint is the run'"'"'s state; train --resume $tmp/vback goes on from it and rewrites config.json" ]'
# A resume from an earlier snapshot stopped before its first checkpoint leaves both metrics.csv ending
# before the checkpoint (a gap) and config.json behind it (here: cut to step 1, config.json given
# checkpoint-1's train state, as that resume writes it as it starts): info named the gap alone, and the
# user learnt of config.json only after resuming the snapshot. It names each, one line each, in the
# wording each has alone; config.json's way on is then the snapshot's resume (train --resume RUN, its
# advice alone, is refused while rows are missing). Each alone, as before; exit 0 all three times.
cut_rows() { python3 -c 'import sys
p = sys.argv[1]; rows = open(p).read().splitlines(True)
open(p, "w").write("".join(r for r in rows if r.startswith("step") or int(r.split(",")[0]) <= 1))' "$1"; }
behind() { python3 -c 'import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]
c = json.load(open(sys.argv[2])); c["train"] = json.loads(json.loads(b[8:8 + n])["__metadata__"]["train_state"])
open(sys.argv[2], "w").write(json.dumps(c))' "$1/checkpoint-1.safetensors" "$1/config.json"; }
cp -R "$tmp/vrun" "$tmp/vboth" && cut_rows "$tmp/vboth/metrics.csv" && behind "$tmp/vboth"
cp -R "$tmp/vrun" "$tmp/vgap" && cut_rows "$tmp/vgap/metrics.csv"
cp -R "$tmp/vrun" "$tmp/vbehind" && behind "$tmp/vbehind"
"$VITMAE" info "$tmp/vboth" > "$tmp/vboth.out" 2> "$tmp/vboth.err"; rc=$?
"$VITMAE" info "$tmp/vgap/checkpoint.safetensors" > /dev/null 2> "$tmp/vgap.err"; rcg=$?
"$VITMAE" info "$tmp/vbehind" > /dev/null 2> "$tmp/vbehind.err"; rcb=$?
gapw="metrics.csv ends at step 1, before this checkpoint's step 2 (a resume from an earlier snapshot stopped before it got back here); train --resume"
cfgw="config.json describes step 1 of 2, not this checkpoint's step 2 of 2 (the run stopped between writing the checkpoint and config.json, or a resume from an earlier snapshot stopped before its first checkpoint): the checkpoint is the run's state;"
t "metrics.csv cut and config.json behind the checkpoint: info names both, one line each ($rc: $(cat "$tmp/vboth.err" | tr "\n" "|"))" \
  '[ $rc -eq 0 ] && [ "$(wc -l < "$tmp/vboth.err")" -eq 2 ] && grep -q "^    step  *2$" "$tmp/vboth.out" &&
   [ "$(sed -n 1p "$tmp/vboth.err")" = "vitmae: warning: $tmp/vboth/$gapw $tmp/vboth/checkpoint-1.safetensors writes the rows between again" ] &&
   [ "$(sed -n 2p "$tmp/vboth.err")" = "vitmae: warning: $tmp/vboth/$cfgw train --resume $tmp/vboth/checkpoint-1.safetensors, the resume that writes metrics.csv'"'"'s rows between again, rewrites config.json" ]'
t "each alone: the gap's one warning, config.json's one warning, as before ($rcg $rcb: $(cat "$tmp/vgap.err" "$tmp/vbehind.err" | tr "\n" "|"))" \
  '[ $rcg -eq 0 ] && [ "$(cat "$tmp/vgap.err")" = "vitmae: warning: $tmp/vgap/$gapw $tmp/vgap/checkpoint-1.safetensors writes the rows between again" ] &&
   [ $rcb -eq 0 ] && [ "$(cat "$tmp/vbehind.err")" = "vitmae: warning: $tmp/vbehind/$cfgw the run has reached its last step, so config.json stays as it is until train --resume $tmp/vbehind --steps N extends it" ]'
# Read while a run trains in the folder, the two can differ by a checkpoint with nothing wrong (the run
# writes config.json just after each checkpoint): info warned "put back to an earlier state" or "the
# run stopped between writing the checkpoint and config.json" of a live run, whose --resume the advice
# named was then refused as the folder in use. The folder's lock held (a resume of it held at its write
# check, VITMAE_FAULT_HOLD_IN_WRITE_TEST), it says nothing of it; once the run is over, it warns again.
cp -R "$tmp/vback" "$tmp/vlive"
VITMAE_FAULT_HOLD_IN_WRITE_TEST="$tmp/vlive.go" "$VITMAE" train --resume "$tmp/vlive" --threads 1 \
  > /dev/null 2> "$tmp/vlive.run.err" & livepid=$!
for i in $(seq 1 300); do [ -e "$tmp/vlive.go.held" ] && break; sleep 0.1; done
"$VITMAE" info "$tmp/vlive" > /dev/null 2> "$tmp/vlive.err"; rc=$?
held=$([ -e "$tmp/vlive.go.held" ] && echo held)
touch "$tmp/vlive.go"; wait $livepid; lrc=$?
t "a run training in the folder: info says nothing of config.json against the checkpoint ($held $rc $lrc: $(cat "$tmp/vlive.err"))" \
  '[ "$held" = held ] && [ $rc -eq 0 ] && [ ! -s "$tmp/vlive.err" ] && [ $lrc -eq 0 ]'
# ... and a run live as info read the checkpoint, over by the time it compared (the run's end between the
# two; here held there, VITMAE_FAULT_HOLD_INFO_COMPARE): the warning came back, config.json then the
# finished run's against the checkpoint read before. The lock looked at before the read too: nothing.
cp -R "$tmp/vback" "$tmp/vend"
VITMAE_FAULT_HOLD_IN_WRITE_TEST="$tmp/vend.go" "$VITMAE" train --resume "$tmp/vend" --threads 1 > /dev/null 2>&1 & endpid=$!
for i in $(seq 1 300); do [ -e "$tmp/vend.go.held" ] && break; sleep 0.1; done
VITMAE_FAULT_HOLD_INFO_COMPARE="$tmp/vend.cmp" "$VITMAE" info "$tmp/vend" > /dev/null 2> "$tmp/vend.err" & infopid=$!
for i in $(seq 1 300); do [ -e "$tmp/vend.cmp.held" ] && break; sleep 0.1; done
touch "$tmp/vend.go"; wait $endpid; erc=$?
touch "$tmp/vend.cmp"; wait $infopid; rc=$?
t "a run live as info read, ended before it compared: nothing said ($erc $rc: $(cat "$tmp/vend.err"))" \
  '[ -e "$tmp/vend.cmp.held" ] && [ $erc -eq 0 ] && [ $rc -eq 0 ] && [ ! -s "$tmp/vend.err" ]'
# ... and the other way round: no run as info reads, one started in the folder (a resume, held at its
# write check) by the time it compares: said nothing either (the lock looked at again then).
cp -R "$tmp/vback" "$tmp/vstart"
VITMAE_FAULT_HOLD_INFO_COMPARE="$tmp/vstart.cmp" "$VITMAE" info "$tmp/vstart" > /dev/null 2> "$tmp/vstart.err" & infopid=$!
for i in $(seq 1 300); do [ -e "$tmp/vstart.cmp.held" ] && break; sleep 0.1; done
VITMAE_FAULT_HOLD_IN_WRITE_TEST="$tmp/vstart.go" "$VITMAE" train --resume "$tmp/vstart" --threads 1 > /dev/null 2>&1 & startpid=$!
for i in $(seq 1 300); do [ -e "$tmp/vstart.go.held" ] && break; sleep 0.1; done
touch "$tmp/vstart.cmp"; wait $infopid; rc=$?
touch "$tmp/vstart.go"; wait $startpid; src=$?
t "no run as info read, one started before it compared: nothing said ($rc $src: $(cat "$tmp/vstart.err"))" \
  '[ -e "$tmp/vstart.go.held" ] && [ $rc -eq 0 ] && [ $src -eq 0 ] && [ ! -s "$tmp/vstart.err" ]'
# A train_state the resume refuses (a step past total_steps, a cadence of 0, an empty object) was
# "AdamW moments present; can resume": it says the resume's reason, --json's resume_refused too; the
# run's own file still can (resume_refused null). A classifier's: cli_finetune.sh.
# (grad_groups 16 of a batch of 4: the resume refuses the count too, as a train_state field; info said "can resume".)
for edit in 'st["step"] = 50' 'st["eval_every"] = 0' 'st = {}' 'st["grad_groups"] = 16'; do
  python3 - "$tmp/vrun/checkpoint.safetensors" "$tmp/vref.safetensors" "$edit" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
st = json.loads(h["__metadata__"]["train_state"]); exec(sys.argv[3]); h["__metadata__"]["train_state"] = json.dumps(st)
hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
  text=$("$VITMAE" info "$tmp/vref.safetensors"); rc=$?
  js=$("$VITMAE" info --json "$tmp/vref.safetensors"); rc2=$?
  t "a train_state the resume refuses ($edit): cannot resume, its reason, in text and --json ($rc $rc2: $(echo "$text" | grep "train state"))" \
    '[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && echo "$text" | grep -q "^  train state  (AdamW moments present; cannot resume: train_state: .\(step. out of range: 50 is past .total_steps. 2\|eval_every. missing or out of range\|step. missing or out of range\|grad_groups. out of range: 16 is not a power of two that divides .batch. 4\))$" &&
     echo "$js" | python3 -c "import json, sys; r = json.load(sys.stdin)[\"resume_refused\"]; sys.exit(0 if r and r.startswith(\"train_state: \") else 1)"'
done
text=$("$VITMAE" info "$tmp/vrun/checkpoint.safetensors"); js=$("$VITMAE" info --json "$tmp/vrun/checkpoint.safetensors")
t "the run's own checkpoint: can resume, resume_refused null" \
  'echo "$text" | grep -q "^  train state  (AdamW moments present; can resume)$" && echo "$js" | grep -q "\"resume_refused\":[[:space:]]*null"' 
t "... of a run short of its last step: a resume goes on and rewrites config.json ($rc: $(cat "$tmp/vmid.err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$tmp/vmid.err")" = "vitmae: warning: $tmp/vmid/config.json differs from this checkpoint'"'"'s train state at the same step 2 of 4 ('"'"'lr'"'"' is not the checkpoint'"'"'s: the file was changed after it was written): the checkpoint is the run'"'"'s state; train --resume $tmp/vmid goes on from it and rewrites config.json" ]'
# --json's train_state is what the text shows, for both kinds of file (docs/interface.md, info): none is
# null (the text: none), one that is not JSON its text as a string (the text: as it is). A classifier's
# that was not JSON read null, as if the file had none.
python3 - "$tmp/vrun/checkpoint.safetensors" "$tmp/vft/checkpoint.safetensors" "$tmp" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["VITMAE_ROOT"], "tools"))
import safetensors_io as st
for src, kind in ((sys.argv[1], "mae"), (sys.argv[2], "classifier")):
    tensors, meta = st.read(src)
    meta["train_state"] = '{"step": NaN}'   # an edit that left a train_state that is not JSON
    st.write(os.path.join(sys.argv[3], kind + "_nan.safetensors"), tensors, meta)
    del meta["train_state"]
    st.write(os.path.join(sys.argv[3], kind + "_none.safetensors"), tensors, meta)
PY
json_train_state() { python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["train_state"]))' "$1" 2>&1; }
for kind in mae classifier; do
  for state in nan none; do
    "$VITMAE" info --json "$tmp/${kind}_$state.safetensors" > "$tmp/json" 2>&1; rc=$?
    "$VITMAE" info "$tmp/${kind}_$state.safetensors" > "$tmp/text" 2>&1; rc2=$?
    if [ $state = nan ]; then want_json='"{\"step\": NaN}"'; want_text='  train state  {"step": NaN}'
    else want_json=null; want_text='  train state  none (inference only; cannot resume)'; fi
    t "info of a $kind with train_state $state: --json $want_json, the text '$want_text' ($rc $rc2: $(json_train_state "$tmp/json"); $(grep "train state" "$tmp/text"))" \
      '[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ "$(json_train_state "$tmp/json")" = "$want_json" ] && grep -qxF "$want_text" "$tmp/text"'
  done
done
# A run folder where a checkpoint file is wanted (every --ckpt, train --init, info RUN) stands for its
# checkpoint.safetensors, read through one rule (io/safetensors.h, st_checkpoint_arg); each command was
# refused with `RUN: a folder, not a checkpoint file`. Each command family reads the folder as the
# file: the same output, the file named where a file is named.
"$VITMAE" embed --ckpt "$tmp/vrun/" --out "$tmp/run.npy" "$tmp/vimgs" > /dev/null 2> "$tmp/err"; rc=$?
"$VITMAE" embed --ckpt "$tmp/vrun/checkpoint.safetensors" --out "$tmp/file.npy" "$tmp/vimgs" > /dev/null 2>&1
t "embed --ckpt of a run folder: its checkpoint's features ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && cmp -s "$tmp/run.npy" "$tmp/file.npy"'
for cmd in eval reconstruct attention probe classify; do
  case $cmd in
    eval) set -- --data "$tmp/vimgs" --json; ckpt=vrun ;;
    reconstruct) set -- --out "$tmp/rec_WHICH" "$tmp/vimgs/circle/00000.png"; ckpt=vrun ;;
    attention) set -- --out "$tmp/att_WHICH" "$tmp/vimgs/circle/00000.png"; ckpt=vrun ;;
    probe) set -- --train "$tmp/vimgs" --test "$tmp/vimgs" --threads 1; ckpt=vrun ;;
    classify) set -- --json "$tmp/vimgs"; ckpt=vft ;;
  esac
  for which in run file; do
    if [ $which = run ]; then c="$tmp/$ckpt"; else c="$tmp/$ckpt/checkpoint.safetensors"; fi
    # the output folder's name (in reconstruct's and attention's lines) differs by WHICH alone
    "$VITMAE" $cmd --ckpt "$c" $(printf '%s\n' "$@" | sed "s/WHICH/$which/") > "$tmp/$cmd.out" 2>&1
    echo "rc $?" >> "$tmp/$cmd.out"
    # the same words but for the output folder's name and attention's timing
    sed 's/rec_file/rec_run/; s/att_file/att_run/; s/ in [0-9.]* s ([0-9.]* images\/s)//' "$tmp/$cmd.out" > "$tmp/$cmd.$which"
  done
  t "$cmd --ckpt of a run folder: as of its checkpoint.safetensors ($(tail -2 "$tmp/$cmd.run" | tr '\n' ' '))" \
    'grep -qx "rc 0" "$tmp/$cmd.run" && cmp -s "$tmp/$cmd.run" "$tmp/$cmd.file"'
done
t "attention --ckpt RUN: the index names the file read" \
  'grep -qF "$tmp/vrun/checkpoint.safetensors" "$tmp/att_run/index.html"'
# A mask ratio of more digits than a float keeps is shown as the float the run uses, as the start line and
# --json show it (docs/interface.md, section 3): info's summary said "%g"'s 0.714286.
"$VITMAE" train --data "$tmp/vimgs" --img 16 --patch 4 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 \
  --dec-heads 1 --steps 1 --batch 4 --val-frac 0 --threads 1 --mask-ratio 0.7142857142857143 --out "$tmp/vmr" > /dev/null 2>&1; rc=$?
t "info: mask ratio 0.71428573 in the summary line ($rc: $("$VITMAE" info "$tmp/vmr" 2>&1 | grep "mask ratio"))" \
  '[ $rc -eq 0 ] && "$VITMAE" info "$tmp/vmr" | grep -q "^  training     mask ratio 0.71428573, "'
# finetune records the file it started from, as resolved, so that a resume finds the same one.
"$VITMAE" finetune --ckpt "$tmp/vrun/" --data "$tmp/vimgs" --steps 1 --batch 4 --val-frac 0 --threads 1 \
  --out "$tmp/vft2" > "$tmp/ft.out" 2>&1; rc=$?
t "finetune --ckpt of a run folder: starts from its checkpoint.safetensors, recorded as init ($rc: $(head -1 "$tmp/ft.out"))" \
  '[ $rc -eq 0 ] && head -1 "$tmp/ft.out" | grep -qF "from $tmp/vrun/checkpoint.safetensors;" &&
   [ "$("$VITMAE" info --json "$tmp/vft2" | python3 -c "import json, sys; print(json.load(sys.stdin)[\"train_state\"][\"init\"])")" = "$tmp/vrun/checkpoint.safetensors" ]'
"$VITMAE" train --init "$tmp/vrun" --data "$tmp/vimgs" --steps 1 --batch 4 --val-frac 0 --threads 1 \
  --out "$tmp/vrun2" > "$tmp/init.out" 2>&1; rc=$?
t "train --init of a run folder: starts from its checkpoint.safetensors ($rc: $(head -1 "$tmp/init.out"))" \
  '[ $rc -eq 0 ] && head -1 "$tmp/init.out" | grep -qF "; model $tmp/vrun/checkpoint.safetensors 16x16x3"'
# A classifier whose "classifier" metadata is not JSON (a ';' for a ',') is refused as such, with where
# (as train_state's), by info and classify alike: it said "needs num_classes and as many class names".
python3 - "$tmp/vft/checkpoint.safetensors" "$tmp/clf_syntax.safetensors" <<'PY' || fail=1
import os, sys
sys.path.insert(0, os.path.join(os.environ["VITMAE_ROOT"], "tools"))
import safetensors_io as st
tensors, meta = st.read(sys.argv[1])
assert meta["classifier"].startswith('{"num_classes":2,'), meta["classifier"]
meta["classifier"] = meta["classifier"].replace(",", ";", 1)
st.write(sys.argv[2], tensors, meta)
PY
for cmd in info classify; do
  set -- info "$tmp/clf_syntax.safetensors"; [ $cmd = classify ] && set -- classify --ckpt "$tmp/clf_syntax.safetensors" "$tmp/vimgs"
  "$VITMAE" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
  t "$cmd of a classifier whose metadata is not JSON: exit 1, said so and where ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/clf_syntax.safetensors: metadata '"'"'classifier'"'"' is not valid JSON (at byte 16)" ]'
done
# The encoder's users of a classifier (embed, attention, probe) read it through the same checks as info
# and classify: a file they refuse is refused with the same line, exit 1 (docs/interface.md, section 4).
# They took each of these with exit 0 and the undamaged file's features.
python3 - "$tmp/vft/checkpoint.safetensors" "$tmp" <<'PY' || fail=1
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["VITMAE_ROOT"], "tools"))
import safetensors_io as st
tensors, meta = st.read(sys.argv[1])
clf = json.loads(meta["classifier"])
assert clf["num_classes"] == 2, clf
def write(name, classifier=None, head=None):
    m = dict(meta)
    if classifier is not None: m["classifier"] = classifier if isinstance(classifier, str) else json.dumps(classifier)
    t = dict(tensors)
    if head: t["head.weight"] = (head, tensors["head.weight"][1])
    st.write(os.path.join(sys.argv[2], "clf_" + name + ".safetensors"), t, m)
write("count", dict(clf, num_classes=3))
write("string", dict(clf, num_classes="2"))
write("list", [1, 2])
write("twice", dict(clf, classes=[clf["classes"][0]] * 2))
write("pool", dict(clf, global_pool="token"))
shape = tensors["head.weight"][0]
write("head", head=shape[::-1])
PY
for bad in syntax count string list twice pool head; do
  case $bad in
    syntax) want="metadata 'classifier' is not valid JSON (at byte 16)" ;;
    count|string|list) want="metadata 'classifier' needs num_classes and as many class names" ;;
    twice) want="metadata 'classifier': class 'circle' is named twice" ;;
    pool) want="metadata 'classifier': global_pool token is not supported (vitmae's heads pool the patch tokens: \"avg\")" ;;
    head) want="tensor 'head.weight' has shape [8, 2], the config needs [2, 8]" ;;
  esac
  f="$tmp/clf_$bad.safetensors"
  said=""
  for cmd in info classify embed attention probe; do
    case $cmd in
      info) set -- info "$f" ;;
      classify) set -- classify --ckpt "$f" "$tmp/vimgs" ;;
      embed) set -- embed --ckpt "$f" --out "$tmp/bad_$bad.npy" --threads 1 "$tmp/vimgs" ;;
      attention) set -- attention --ckpt "$f" --out "$tmp/bad_att_$bad" --threads 1 "$tmp/vimgs/circle/00000.png" ;;
      probe) set -- probe --ckpt "$f" --train "$tmp/vimgs" --test "$tmp/vimgs" --threads 1 ;;
    esac
    "$VITMAE" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
    [ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $f: $want" ] || said="$said $cmd ($rc: $(head -c 300 "$tmp/err"))"
  done
  t "a classifier whose $bad is wrong: info, classify, embed, attention and probe each exit 1 with one line, the same ($want):$said" \
    '[ -z "$said" ] && [ ! -e "$tmp/bad_$bad.npy" ] && [ ! -e "$tmp/bad_att_$bad" ]'
done
# A head without the metadata 'classifier' (a pretraining checkpoint given a head.weight, a classifier
# whose metadata was removed) is not said to have "no head" by classify.
python3 - "$tmp/vrun/checkpoint.safetensors" "$tmp/vft/checkpoint.safetensors" "$tmp" <<'PY' || fail=1
import os, sys
sys.path.insert(0, os.path.join(os.environ["VITMAE_ROOT"], "tools"))
import safetensors_io as st
tensors, meta = st.read(sys.argv[1])
clf_tensors, clf_meta = st.read(sys.argv[2])
st.write(os.path.join(sys.argv[3], "mae_head.safetensors"), dict(tensors, **{"head.weight": clf_tensors["head.weight"]}), meta)
del clf_meta["classifier"]
st.write(os.path.join(sys.argv[3], "clf_nometa.safetensors"), clf_tensors, clf_meta)
PY
for f in mae_head clf_nometa; do
  "$VITMAE" classify --ckpt "$tmp/$f.safetensors" "$tmp/vimgs" > "$tmp/out" 2> "$tmp/err"; rc=$?
  t "classify of $f (head tensors, no metadata 'classifier'): exit 1, the metadata said missing, not 'no head' ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/$f.safetensors: not a classifier checkpoint (it holds head tensors, but its metadata '"'"'classifier'"'"', the classes they score, is missing)" ]'
done
# `info RUN` describes the run's latest checkpoint, RUN/checkpoint.safetensors, named on its first line.
"$VITMAE" info "$tmp/vrun/" > "$tmp/run.out" 2> "$tmp/err"; rc=$?
"$VITMAE" info "$tmp/vrun/checkpoint.safetensors" > "$tmp/file.out" 2>&1
t "info of a run folder: exit 0, the report of its checkpoint.safetensors ($rc: $(head -1 "$tmp/run.out")$(cat "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && [ "$(head -1 "$tmp/run.out")" = "$tmp/vrun/checkpoint.safetensors" ] && cmp -s "$tmp/run.out" "$tmp/file.out"'
t "info --json of a run folder: file is its checkpoint.safetensors" \
  '"$VITMAE" info --json "$tmp/vrun" | python3 -c "import json, sys; d = json.load(sys.stdin); assert d[\"file\"] == sys.argv[1] and d[\"train_state\"][\"step\"] == 2, d" "$tmp/vrun/checkpoint.safetensors"'
# A folder without a checkpoint.safetensors: one line that says what was looked for, exit 1.
"$VITMAE" info "$tmp/vimgs" > "$tmp/out" 2> "$tmp/err"; rc=$?
t "info of a folder without a checkpoint: exit 1, one line ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/vimgs: a folder with no checkpoint.safetensors" ] && [ ! -s "$tmp/out" ]'
# info and --ckpt find a run's checkpoint by one rule (io/safetensors.h, st_checkpoint_arg): a
# checkpoint.safetensors that is not a file (here a folder, then a link to nothing) is named with why,
# as --resume RUN names it. info took it and was refused by its name where embed --ckpt RUN said the
# folder has none; then both said "RUN: a folder with no checkpoint.safetensors", denying the name the
# user sees in it.
mkdir -p "$tmp/oddrun/checkpoint.safetensors"
"$VITMAE" info "$tmp/oddrun" > /dev/null 2> "$tmp/err"; rc=$?
"$VITMAE" embed --ckpt "$tmp/oddrun" --out "$tmp/never.npy" "$tmp/vimgs" > /dev/null 2> "$tmp/err2"
t "info and --ckpt of a run folder whose checkpoint.safetensors is a folder: the same line, naming it ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/oddrun/checkpoint.safetensors: a folder, not a checkpoint file" ] && cmp -s "$tmp/err" "$tmp/err2"'
mkdir -p "$tmp/lnkrun"; ln -s "$tmp/gone.safetensors" "$tmp/lnkrun/checkpoint.safetensors"
"$VITMAE" info "$tmp/lnkrun" > /dev/null 2> "$tmp/err"; rc=$?
"$VITMAE" embed --ckpt "$tmp/lnkrun" --out "$tmp/never.npy" "$tmp/vimgs" > /dev/null 2> "$tmp/err2"
t "info and --ckpt of a run folder whose checkpoint.safetensors is a link to nothing: the link named ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/lnkrun/checkpoint.safetensors: a symbolic link to $tmp/gone.safetensors, which does not exist" ] && cmp -s "$tmp/err" "$tmp/err2" && [ ! -e "$tmp/never.npy" ]'
rm -rf "$tmp/lnkrun"
# That folder itself, as --resume RUN reaches it (and --ckpt or info name it), is no folder to look in:
# "RUN/checkpoint.safetensors: a folder with no checkpoint.safetensors" read as if a checkpoint were
# sought inside it. A folder named NAME.safetensors is "a folder, not a checkpoint file", exit 1.
for way in "train --resume" "finetune --resume" "embed --ckpt" info; do
  arg=$tmp/oddrun/checkpoint.safetensors; case $way in *--resume) arg=$tmp/oddrun ;; esac
  case $way in embed*) set -- --out "$tmp/never.npy" "$tmp/vimgs" ;; *) set -- ;; esac
  "$VITMAE" $way "$arg" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
  t "$way of a run whose checkpoint.safetensors is a folder: exit 1, a folder, not a checkpoint file ($rc: $(cat "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/oddrun/checkpoint.safetensors: a folder, not a checkpoint file" ] && [ ! -s "$tmp/out" ] && [ ! -e "$tmp/never.npy" ]'
done
t "... and nothing was written into that run" '[ "$(ls -A "$tmp/oddrun")" = checkpoint.safetensors ] && [ -z "$(ls -A "$tmp/oddrun/checkpoint.safetensors")" ]'
rm -rf "$tmp/oddrun"
"$VITMAE" embed --ckpt "$tmp/vimgs" --out "$tmp/never.npy" "$tmp/vimgs" > /dev/null 2> "$tmp/err"; rc=$?
t "embed --ckpt of a folder without a checkpoint: exit 1, one line ($rc: $(cat "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "vitmae: $tmp/vimgs: a folder with no checkpoint.safetensors" ] && [ ! -e "$tmp/never.npy" ]'
t "info --json: vitmae_version" '"$VITMAE" info --json "$tmp/vrun/checkpoint.safetensors" | python3 -c "import json, sys; assert json.load(sys.stdin)[\"vitmae_version\"] == sys.argv[1]" "$ver"'
t "info of PyTorch's file: written by unknown" \
  '"$VITMAE" info "$fx/torch_small.safetensors" | grep -qx "  written by   unknown (no vitmae_version: an older vitmae, or another program)"'
t "info --json of PyTorch's file: vitmae_version null" \
  '"$VITMAE" info --json "$fx/torch_small.safetensors" | python3 -c "import json, sys; d = json.load(sys.stdin); assert \"vitmae_version\" in d and d[\"vitmae_version\"] is None"'
python3 - "$tmp/vrun/checkpoint.safetensors" "$tmp/other.safetensors" <<'PY' || fail=1
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
h["__metadata__"]["vitmae_version"] = "other\n1"
t = json.dumps(h).encode(); t += b" " * (-len(t) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
"$VITMAE" info "$tmp/other.safetensors" > "$tmp/other.out"; rc=$?
t "another vitmae_version: the same data loads, crc32 verified, the value written out on one line" \
  '[ $rc -eq 0 ] && grep -q "(verified)" "$tmp/other.out" && grep -qx "  written by   vitmae other\\\\n1" "$tmp/other.out" && same_weights "$tmp/other.safetensors" "$tmp/vrun/checkpoint.safetensors"'
# The helper itself (tests/lib.sh): a comparison that cannot be made fails the test with its own line
# (fail=1), also where the caller expects a difference (`! same_weights`); two files whose header runs
# past their end are not two empty data sections that match. It needs no scratch folder: it wrote
# "$dir/a.bin", /a.bin in a test without $dir, shared by every test on the machine.
printf '\100\000\000\000\000\000\000\000{}' > "$tmp/cut1.safetensors"; cp "$tmp/cut1.safetensors" "$tmp/cut2.safetensors"
sw=$(fail=0; ! same_weights "$tmp/missing.safetensors" "$fx/torch_small.safetensors" > "$tmp/sw.out" 2>&1; echo "$fail")
t "same_weights: a missing file fails the test, also under ! ($sw: $(head -n 2 "$tmp/sw.out" | tr "\n" "|"))" \
  '[ "$sw" = 1 ] && grep -q "^FAILED: same_weights .*: the comparison itself failed (exit 2)" "$tmp/sw.out" && grep -q "No such file" "$tmp/sw.out"'
sw=$(fail=0; same_weights "$tmp/cut1.safetensors" "$tmp/cut2.safetensors" > "$tmp/sw.out" 2>&1; echo "$? $fail")
t "same_weights: two files cut inside their header do not match as empty data ($sw: $(head -n 2 "$tmp/sw.out" | tr "\n" "|"))" \
  '[ "$sw" = "2 1" ] && grep -q "cut1.safetensors: no safetensors header (10 bytes)" "$tmp/sw.out"'
sw=$(unset dir; same_weights "$fx/torch_small.safetensors" "$fx/torch_small.safetensors"; echo $?)
t "same_weights: a file matches itself without a scratch folder ($sw)" '[ "$sw" = 0 ]'
rm -rf "$tmp"
[ $fail -eq 0 ] && echo "cli info ok"
exit $fail
