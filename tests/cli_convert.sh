#!/bin/sh
# tools/convert_mae.py: a facebookresearch/mae-style .pth (torch.save({'model': state_dict})) from
# the PyTorch reference model converts to a checkpoint `vitmae info` reads with the inferred config,
# and `vitmae attention --raw` on it equals PyTorch's attention. Also an encoder-only fine-tune
# (head.*, fc_norm.*, no norm), the --heads override and refused inputs.
# Needs Debian's python3-torch at /usr/bin/python3: skipped (with a note) when it is not there.
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "skipped: $PY has no torch (tools/convert_mae.py needs python3-torch)"
  exit 0
fi
set -u
fail=0
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
scratch tmp
cd "$tmp" || exit 1   # a command that wrongly writes to the working directory writes here
tools="$VITMAE_ROOT/tools"

# A small MAE (32 px, patch 8, width 128 -> 2 heads of 64; decoder 64 -> 2 heads of 32), saved the
# way MAE saves checkpoints, its fine-tune-style encoder-only twin, an image and PyTorch's attention.
"$PY" - "$tools" "$tmp" <<'PY' || fail=1
import sys, os, torch
sys.path.insert(0, sys.argv[1])
import reference, reference_attention as ra, safetensors_io
out = sys.argv[2]
cfg = reference.config(img_size=32, patch_size=8, in_chans=3, embed_dim=128, depth=2, num_heads=2,
                       decoder_embed_dim=64, decoder_depth=1, decoder_num_heads=2,
                       pixel_mean=ra.IMAGENET_MEAN, pixel_std=ra.IMAGENET_STD)
model = ra.fixture_model(cfg, seed=11, qkv_noise=0.1)
sd = {k: v.detach().float() for k, v in model.state_dict().items()}
torch.save({"model": sd}, os.path.join(out, "full.pth"))
ft = {k: v for k, v in sd.items() if not (k.startswith("decoder") or k == "mask_token" or k.startswith("norm."))}
ft["fc_norm.weight"], ft["fc_norm.bias"] = torch.ones(128), torch.zeros(128)
ft["head.weight"], ft["head.bias"] = torch.randn(10, 128), torch.zeros(10)
torch.save({"model": ft, "epoch": 3}, os.path.join(out, "finetune.pth"))
img = ra.fixture_image(32, seed=12)
ra.png_rgb8(os.path.join(out, "img.png"), 32, 32, bytes(img.reshape(-1).tolist()))
att = ra.expected_attention(model, img, ra.IMAGENET_MEAN, ra.IMAGENET_STD)
safetensors_io.write(os.path.join(out, "expected.safetensors"), {"attention": (list(att.shape), att)})
torch.save({"optimizer": {}}, os.path.join(out, "nomodel.pth"))
PY

"$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/full.safetensors" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "convert full exits 0" '[ $rc -eq 0 ]'
"$VITMAE" info "$tmp/full.safetensors" --json >"$tmp/info.json"; rc=$?
t "info on converted exits 0" '[ $rc -eq 0 ]'
for kv in '"img_size":[[:space:]]*32' '"patch_size":[[:space:]]*8' '"embed_dim":[[:space:]]*128' \
          '"depth":[[:space:]]*2' '"num_heads":[[:space:]]*2' '"decoder_embed_dim":[[:space:]]*64' \
          '"decoder_num_heads":[[:space:]]*2' '"mlp_ratio":[[:space:]]*4' '"pos_embed":[[:space:]]*"fixed"' \
          '"norm_pix_loss":[[:space:]]*false' '"has_decoder":[[:space:]]*true' '0\.485'; do
  t "info shows $kv" 'grep -q "$kv" "$tmp/info.json"'
done
"$VITMAE" attention --ckpt "$tmp/full.safetensors" --out "$tmp/a" --raw "$tmp/img.png" >/dev/null; rc=$?
t "attention on converted exits 0" '[ $rc -eq 0 ]'
t "converted attention = PyTorch (<= 1e-5)" '"$VITMAE_TOOLS/attn_check" parity "$tmp/a/img.attn.npy" "$tmp/expected.safetensors" 1e-5'

# Run as docs/interface.md writes it, `tools/convert_mae.py IN.pth OUT.safetensors`: the file itself runs
# under /usr/bin/python3 (it had no #! line and no x bit: "Permission denied", exit 126).
"$tools/convert_mae.py" "$tmp/full.pth" "$tmp/direct.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
t "tools/convert_mae.py runs as a command ($rc: $(head -c 200 "$tmp/err"))" \
  '[ $rc -eq 0 ] && cmp -s "$tmp/direct.safetensors" "$tmp/full.safetensors"'

"$PY" "$tools/convert_mae.py" "$tmp/finetune.pth" "$tmp/ft.safetensors" >"$tmp/out" 2>"$tmp/err"; rc=$?
t "convert fine-tune exits 0" '[ $rc -eq 0 ]'
t "fine-tune: fc_norm without norm is reported" 'grep -q "fc_norm but no norm" "$tmp/err"'
t "fine-tune: head.* and fc_norm.* dropped and listed" 'grep -q "dropped 4 tensors.*: fc_norm\.\*, head\.\*" "$tmp/err"'
t "fine-tune: encoder only" 'grep -q "encoder only" "$tmp/out"'
"$VITMAE" info "$tmp/ft.safetensors" --json >"$tmp/info.json"
t "fine-tune info: no decoder" 'grep -q "\"has_decoder\":[[:space:]]*false" "$tmp/info.json"'
"$VITMAE" attention --ckpt "$tmp/ft.safetensors" --out "$tmp/b" --raw "$tmp/img.png" >/dev/null; rc=$?
t "fine-tune attention = PyTorch (norm does not matter)" '[ $rc -eq 0 ] && "$VITMAE_TOOLS/attn_check" parity "$tmp/b/img.attn.npy" "$tmp/expected.safetensors" 1e-5'

# Head count override: 4 heads of 32 give other maps (the parity check must fail on them).
"$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/h4.safetensors" --heads 4 --norm-pix >/dev/null 2>&1; rc=$?
t "--heads 4 exits 0" '[ $rc -eq 0 ]'
"$VITMAE" info "$tmp/h4.safetensors" --json >"$tmp/info.json"
t "--heads 4 in config" 'grep -q "\"num_heads\":[[:space:]]*4" "$tmp/info.json" && grep -q "\"norm_pix_loss\":[[:space:]]*true" "$tmp/info.json"'
"$VITMAE" attention --ckpt "$tmp/h4.safetensors" --out "$tmp/c" --raw "$tmp/img.png" >/dev/null
t "4-head attention differs from the 2-head reference" '! "$VITMAE_TOOLS/attn_check" parity "$tmp/c/img.attn.npy" "$tmp/expected.safetensors" 1e-5 >/dev/null 2>&1'
"$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/bad.safetensors" --heads 3 >/dev/null 2>"$tmp/err"; rc=$?
# A head count the flag gives that the width does not divide is a usage error, exit 2, as vitmae's
# `--dim 16 --heads 3` (it was exit 1, a damaged file's); --heads 0 was taken for "not given".
t "--heads 3 refused (128 not divisible): exit 2 ($rc)" '[ $rc -eq 2 ] && grep -q "not divisible by 3 heads" "$tmp/err" && [ ! -e "$tmp/bad.safetensors" ]'
for h in "--heads 0" "--dec-heads 0"; do
  "$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/bad.safetensors" $h >/dev/null 2>"$tmp/err"; rc=$?
  t "$h refused: exit 2, no file ($rc: $(tail -n 1 "$tmp/err"))" '[ $rc -eq 2 ] && grep -q "head counts must be positive" "$tmp/err" && [ ! -e "$tmp/bad.safetensors" ]'
done
"$PY" "$tools/convert_mae.py" "$tmp/nomodel.pth" "$tmp/bad.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
t "no state dict refused" '[ $rc -eq 1 ] && grep -q "no state dict" "$tmp/err"'

"$PY" "$tools/convert_mae.py" "$tmp/finetune.pth" "$tmp/ft.safetensors" >/dev/null 2>"$tmp/err"
t "fine-tune: the converter says what an encoder-only file serves (not attention only)" \
  'grep -q "for attention, embed, probe and finetune" "$tmp/err" && ! grep -q "attention. only" "$tmp/err"'
"$VITMAE" embed --ckpt "$tmp/ft.safetensors" --out "$tmp/ft.npy" "$tmp/img.png" >/dev/null 2>"$tmp/err2"; rc=$?
t "fine-tune: embed runs on the encoder-only file ($rc: $(head -c 300 "$tmp/err2"))" '[ $rc -eq 0 ]'

# What a PyTorch user saves besides MAE's {'model': ...}: timm's train.py and Lightning's
# {'state_dict': ...}, DDP's module. names, Lightning's model. names, fp16 / bf16 tensors, a whole
# pickled model; each converts to the same file as the plain state dict (fp16 and bf16 to their
# float32 values). Files that are not checkpoints, a pickled model whose class is not importable
# and an output that cannot be written are one line each, never a Python traceback.
mkdir -p "$tmp/code"
cat > "$tmp/code/mymae.py" <<'PY'
import torch
class Holder(torch.nn.Module):
    def __init__(self, sd):
        super().__init__()
        self.params = {k: v.clone() for k, v in sd.items()}
    def state_dict(self, *a, **k):
        return dict(self.params)
PY
"$PY" - "$tmp" <<'PY' || fail=1
import sys, torch
out = sys.argv[1]
sys.path.insert(0, out + "/code")
import mymae
sd = torch.load(out + "/full.pth")["model"]
torch.save(sd, out + "/v_bare.pth")
torch.save({"state_dict": sd, "epoch": 3, "arch": "mae", "optimizer": {}}, out + "/v_timm.pth")
torch.save({"model": {"module." + k: v for k, v in sd.items()}}, out + "/v_ddp.pth")
torch.save({"state_dict": {"model." + k: v for k, v in sd.items()}}, out + "/v_lightning.pth")
torch.save({"model": {k: v.half() for k, v in sd.items()}}, out + "/v_fp16.pth")
torch.save({"model": {k: v.half().float() for k, v in sd.items()}}, out + "/v_fp16_as32.pth")
torch.save({"model": {k: v.bfloat16() for k, v in sd.items()}}, out + "/v_bf16.pth")
torch.save({"model": {k: v.bfloat16().float() for k, v in sd.items()}}, out + "/v_bf16_as32.pth")
torch.save(mymae.Holder(sd), out + "/v_pickled.pth")
open(out + "/v_text.pth", "w").write("not a checkpoint\n")
PY
"$PY" "$tools/convert_mae.py" "$tmp/v_bare.pth" "$tmp/v_bare.safetensors" >/dev/null 2>&1
for v in timm ddp lightning; do
  "$PY" "$tools/convert_mae.py" "$tmp/v_$v.pth" "$tmp/v_$v.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
  t "convert {$v}: the plain state dict's file ($rc: $(head -c 300 "$tmp/err"))" '[ $rc -eq 0 ] && cmp -s "$tmp/v_$v.safetensors" "$tmp/v_bare.safetensors"'
done
t "convert: a prefix stripped is said" 'grep -q "prefix .model\.. (a wrapped model" "$tmp/err"'
for v in fp16 bf16; do
  "$PY" "$tools/convert_mae.py" "$tmp/v_$v.pth" "$tmp/v_$v.safetensors" >/dev/null 2>&1
  "$PY" "$tools/convert_mae.py" "$tmp/v_${v}_as32.pth" "$tmp/v_${v}_as32.safetensors" >/dev/null 2>&1
  t "convert $v tensors: their float32 values" 'cmp -s "$tmp/v_$v.safetensors" "$tmp/v_${v}_as32.safetensors"'
done
PYTHONPATH="$tmp/code" "$PY" "$tools/convert_mae.py" "$tmp/v_pickled.pth" "$tmp/v_pickled.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
t "convert a whole pickled model (its class importable): the plain state dict's file ($rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && cmp -s "$tmp/v_pickled.safetensors" "$tmp/v_bare.safetensors"'
one_line() { [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "^convert_mae: $1" "$tmp/err" && ! grep -q Traceback "$tmp/err"; }
"$PY" "$tools/convert_mae.py" "$tmp/v_pickled.pth" "$tmp/bad.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
t "convert a pickled model whose class is not importable: one line ($rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 1 ] && one_line "$tmp/v_pickled.pth: a pickled model object whose code is not importable here" && [ ! -e "$tmp/bad.safetensors" ]'
"$PY" "$tools/convert_mae.py" "$tmp/v_text.pth" "$tmp/bad.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
t "convert a file that is not a checkpoint: one line ($rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 1 ] && one_line "$tmp/v_text.pth: not a PyTorch checkpoint" && [ ! -e "$tmp/bad.safetensors" ]'
"$PY" "$tools/convert_mae.py" "$tmp/v_bare.pth" "$tmp/no/such/out.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
t "convert into a folder that does not exist: one line ($rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 1 ] && one_line "$tmp/no/such/out.safetensors: No such file or directory"'

# One rule for a 1-channel model's ImageNet statistics: the converter writes the grey equivalents that
# `vitmae train --pixel-norm imagenet` writes (luminance weights 0.299 / 0.587 / 0.114, docs/interface.md
# section 2), to the float (it wrote the plain average of the three channels, 0.449 / 0.226). A
# checkpoint's training args saved as a dict (vars(args)) give norm_pix_loss as MAE's Namespace does.
"$PY" - "$tools" "$tmp" <<'PY' || fail=1
import sys, os, argparse, torch
from PIL import Image
sys.path.insert(0, sys.argv[1])
import reference, reference_attention as ra
out = sys.argv[2]
cfg = reference.config(img_size=32, patch_size=8, in_chans=1, embed_dim=128, depth=1, num_heads=2,
                       decoder_embed_dim=64, decoder_depth=1, decoder_num_heads=2, pixel_mean=[0.5], pixel_std=[0.25])
sd = {k: v.detach().float() for k, v in ra.fixture_model(cfg, seed=13).state_dict().items()}
torch.save({"model": sd}, os.path.join(out, "grey.pth"))
full = torch.load(os.path.join(out, "full.pth"))["model"]
torch.save({"model": full, "args": {"norm_pix_loss": True, "mask_ratio": 0.75}}, os.path.join(out, "argsdict.pth"))
torch.save({"model": full, "args": argparse.Namespace(norm_pix_loss=True)}, os.path.join(out, "argsns.pth"))
os.makedirs(os.path.join(out, "greyimgs"))
for i in range(4):
    Image.new("L", (8, 8), 40 * i).save(os.path.join(out, "greyimgs", "%d.png" % i))
PY
"$PY" "$tools/convert_mae.py" "$tmp/grey.pth" "$tmp/grey.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
"$VITMAE" train --data "$tmp/greyimgs" --img 8 --patch 4 --dim 8 --depth 1 --heads 1 --dec-dim 8 --dec-depth 1 \
  --dec-heads 1 --batch 2 --steps 1 --val-frac 0 --pixel-norm imagenet --threads 1 --out "$tmp/greyrun" >/dev/null 2>&1
stats() { "$PY" -c 'import sys, json, struct; sys.path.insert(0, sys.argv[1]); import safetensors_io
c = json.loads(safetensors_io.read(sys.argv[2])[1]["config"])
print(" ".join("%.9g" % struct.unpack("f", struct.pack("f", v))[0] for v in c["pixel_mean"] + c["pixel_std"]))' "$tools" "$1"; }
t "convert a 1-channel model: ImageNet's grey statistics as vitmae's --pixel-norm imagenet ($(stats "$tmp/grey.safetensors") against $(stats "$tmp/greyrun/checkpoint.safetensors"))" \
  '[ $rc -eq 0 ] && [ -n "$(stats "$tmp/greyrun/checkpoint.safetensors")" ] && [ "$(stats "$tmp/grey.safetensors")" = "$(stats "$tmp/greyrun/checkpoint.safetensors")" ]'
for a in argsdict argsns; do
  "$PY" "$tools/convert_mae.py" "$tmp/$a.pth" "$tmp/$a.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
  "$VITMAE" info "$tmp/$a.safetensors" --json >"$tmp/info.json" 2>/dev/null
  t "convert with training args ($a): norm_pix_loss from them ($rc: $(head -c 300 "$tmp/err"))" \
    '[ $rc -eq 0 ] && grep -q "\"norm_pix_loss\":[[:space:]]*true" "$tmp/info.json" && grep -q "norm_pix_loss true, from the checkpoint" "$tmp/err"'
done

# --mask-ratio as vitmae takes it: in [0, 1) and leaving a visible patch of the file's 16 (int(16 * 0.1) = 1,
# int(16 * 0.01) = 0); it was written as given, and vitmae then refused the file or every command on it.
for r in 1.5 -0.1 0.99; do
  "$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/bad.safetensors" --mask-ratio $r >/dev/null 2>"$tmp/err"; rc=$?
  t "convert --mask-ratio $r: exit 2, said, nothing written ($rc: $(tail -n 1 "$tmp/err"))" \
    '[ $rc -eq 2 ] && tail -n 1 "$tmp/err" | grep -q "mask-ratio $r \(is out of range \[0, 1)\|leaves no visible patch of 16\)" && [ ! -e "$tmp/bad.safetensors" ] && ! grep -q Traceback "$tmp/err"'
done
# --help and a usage error answer before PyTorch is imported (its import alone takes some 1.6 s): with a
# stand-in torch module first on the path that ends the process when imported, they still answer.
mkdir -p "$tmp/faketorch" && printf 'import sys\nsys.stderr.write("torch imported\\n")\nsys.exit(9)\n' > "$tmp/faketorch/torch.py"
PYTHONPATH="$tmp/faketorch" "$PY" "$tools/convert_mae.py" --help > "$tmp/out" 2> "$tmp/err"; rc=$?
t "convert --help without importing torch ($rc: $(head -c 200 "$tmp/err"))" '[ $rc -eq 0 ] && grep -q "^usage: convert_mae.py" "$tmp/out"'
PYTHONPATH="$tmp/faketorch" "$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/bad.safetensors" --mask-ratio 1.5 > /dev/null 2> "$tmp/err"; rc=$?
t "convert --mask-ratio 1.5 refused without importing torch ($rc: $(tail -n 1 "$tmp/err"))" \
  '[ $rc -eq 2 ] && tail -n 1 "$tmp/err" | grep -q "mask-ratio 1.5 is out of range" && [ ! -e "$tmp/bad.safetensors" ]'
PYTHONPATH="$tmp/faketorch" "$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/bad.safetensors" > /dev/null 2> "$tmp/err"; rc=$?
t "... while a conversion imports it (the stand-in seen: $rc)" '[ $rc -eq 9 ] && grep -q "^torch imported$" "$tmp/err"'
mkdir -p "$tmp/notorch" && printf 'raise ImportError("no torch here")\n' > "$tmp/notorch/torch.py"
PYTHONPATH="$tmp/notorch" "$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/bad.safetensors" > /dev/null 2> "$tmp/err"; rc=$?
t "convert without PyTorch: exit 1, one line ($rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/err")" = "convert_mae: PyTorch cannot be imported (no torch here): install python3-torch" ] && [ ! -e "$tmp/bad.safetensors" ]'
"$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/m09.safetensors" --mask-ratio 0.9 >/dev/null 2>&1; rc=$?
"$VITMAE" info "$tmp/m09.safetensors" --json >"$tmp/info.json" 2>/dev/null
t "convert --mask-ratio 0.9 (1 of 16 visible): written" '[ $rc -eq 0 ] && grep -q "\"mask_ratio\":[[:space:]]*0\.9" "$tmp/info.json"'

# Its temporary file is its own: another conversion's OUT.tmp (here a file standing for it) is neither
# overwritten nor renamed away (the converter wrote OUT.tmp, so of two conversions to one output one
# renamed the other's half-written file or failed), and none of its own is left.
echo "another conversion's file" > "$tmp/race.safetensors.tmp"
"$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/race.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
t "convert: another writer's OUT.tmp untouched, the output whole, no temporary left ($rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && [ "$(cat "$tmp/race.safetensors.tmp")" = "another conversion'"'"'s file" ] &&
   cmp -s "$tmp/race.safetensors" "$tmp/full.safetensors" && [ -z "$(ls "$tmp" | grep "^race.safetensors.tmp.")" ]'
rm -f "$tmp/race.safetensors" "$tmp/race.safetensors.tmp"
"$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/race.safetensors" >/dev/null 2>"$tmp/err1" & p1=$!
"$PY" "$tools/convert_mae.py" "$tmp/full.pth" "$tmp/race.safetensors" >/dev/null 2>"$tmp/err2" & p2=$!
wait $p1; rc1=$?; wait $p2; rc2=$?
t "convert: two conversions to one output at once both succeed ($rc1 $rc2: $(cat "$tmp/err1" "$tmp/err2" | head -c 300))" \
  '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/race.safetensors" "$tmp/full.safetensors" && [ "$(ls "$tmp" | grep -c "^race")" -eq 1 ]'

# A safetensors file in half precision (an export with MAE's / timm's names, or a vitmae checkpoint saved
# with .half()): vitmae refuses it in one line that names the way out, and the converter takes it, told by
# its content: to the float32 file of the same tensors, keeping the vitmae config the file holds (the
# 4-head, norm-pix one here).
"$PY" - "$tools" "$tmp" <<'PY' || fail=1
import sys, json, struct, torch
sys.path.insert(0, sys.argv[1])
import safetensors_io
out = sys.argv[2]
def write(path, sd, meta, dtype, name):
    header, chunks, off = {}, [], 0
    for k, v in sd.items():
        raw = v.to(dtype).contiguous().view(torch.uint8).numpy().tobytes() if v.numel() else b""
        header[k] = {"dtype": name, "shape": list(v.shape), "data_offsets": [off, off + len(raw)]}
        chunks.append(raw); off += len(raw)
    if meta:
        header["__metadata__"] = meta
    js = json.dumps(header).encode()
    open(path, "wb").write(struct.pack("<Q", len(js)) + js + b"".join(chunks))
sd = torch.load(out + "/full.pth")["model"]
write(out + "/half_plain.safetensors", sd, None, torch.float16, "F16")
ts, meta = safetensors_io.read(out + "/h4.safetensors")
write(out + "/half_vitmae.safetensors", sd, {"format": "vitmae", "config": meta["config"]}, torch.bfloat16, "BF16")
PY
"$VITMAE" info "$tmp/half_plain.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
t "vitmae on an F16 safetensors: exit 1, one line naming the way out ($(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "has dtype .F16. (only F32 is supported: convert the file with tools/convert_mae.py" "$tmp/err"'
"$PY" "$tools/convert_mae.py" "$tmp/half_plain.safetensors" "$tmp/half_plain.out.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
t "convert an F16 safetensors with MAE's names: the fp16 .pth's file ($rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && cmp -s "$tmp/half_plain.out.safetensors" "$tmp/v_fp16.safetensors"'
"$PY" "$tools/convert_mae.py" "$tmp/half_vitmae.safetensors" "$tmp/half_vitmae.out.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
cfg_of() { "$PY" -c 'import sys, json; sys.path.insert(0, sys.argv[1]); import safetensors_io; print(json.loads(safetensors_io.read(sys.argv[2])[1]["config"]))' "$tools" "$1"; }
t "convert a BF16 vitmae checkpoint: its config kept, the bf16 tensors' float32 values ($rc: $(head -c 300 "$tmp/err"))" \
  '[ $rc -eq 0 ] && grep -q "its config kept" "$tmp/err" && [ "$(cfg_of "$tmp/half_vitmae.out.safetensors")" = "$(cfg_of "$tmp/h4.safetensors")" ] &&
   data_of "$tmp/half_vitmae.out.safetensors" > "$tmp/a.bin" && data_of "$tmp/v_bf16.safetensors" > "$tmp/b.bin" && cmp -s "$tmp/a.bin" "$tmp/b.bin"'

# tools/safetensors_io.py: the config given as a dict (not JSON text) is written as JSON, which
# vitmae reads (str(dict) wrote Python's repr, refused as malformed JSON).
"$PY" - "$tools" "$tmp" <<'PY' || fail=1
import sys, json
sys.path.insert(0, sys.argv[1])
import safetensors_io
ts, meta = safetensors_io.read(sys.argv[2] + "/v_bare.safetensors")
safetensors_io.write(sys.argv[2] + "/dictcfg.safetensors", ts, {"format": "vitmae", "config": json.loads(meta["config"])})
PY
"$VITMAE" info "$tmp/dictcfg.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
t "safetensors_io.write with the config as a dict: vitmae reads it ($rc: $(head -c 300 "$tmp/err"))" '[ $rc -eq 0 ]'

# --classifier: a global-pool fine-tuned classifier (MAE's main_finetune.py, timm's
# VisionTransformer(global_pool='avg'): fc_norm and head, no norm; its pos_embed learned, not sin-cos)
# becomes a vitmae classifier whose `classify` probabilities are PyTorch's softmax (6 significant
# digits); --classes names the classes; what vitmae's classifier cannot run is refused.
"$PY" - "$tools" "$tmp" <<'PY' || fail=1
import sys, os, json, torch
import numpy as np
from PIL import Image
sys.path.insert(0, sys.argv[1])
import reference, reference_attention as ra, reference_classifier as rc
out = sys.argv[2]
cfg = reference.config(img_size=32, patch_size=8, in_chans=3, embed_dim=128, depth=2, num_heads=2,
                       pixel_mean=ra.IMAGENET_MEAN, pixel_std=ra.IMAGENET_STD)
torch.manual_seed(5)
m = rc.VisionTransformer(cfg, 5)   # float64 (reference_classifier's default dtype)
with torch.no_grad():
    for prm in m.parameters():
        prm.copy_(torch.randn(prm.shape) * 0.2)
        prm.copy_(prm.float().double())   # the float32 weights the file holds
sd = {k: v.detach().float() for k, v in m.state_dict().items()}
torch.save({"model": sd, "epoch": 99}, os.path.join(out, "clf.pth"))
cls = {k: v for k, v in sd.items() if not k.startswith("fc_norm.")}
cls["norm.weight"], cls["norm.bias"] = torch.ones(128), torch.zeros(128)
torch.save({"model": cls}, os.path.join(out, "clf_cls.pth"))          # a CLS-token fine-tune
both = dict(sd, **{"norm.weight": torch.ones(128), "norm.bias": torch.zeros(128)})
torch.save({"model": both}, os.path.join(out, "clf_both.pth"))
extra = dict(sd, **{"norm_pre.weight": torch.ones(128)})
torch.save({"model": extra}, os.path.join(out, "clf_extra.pth"))
rng = np.random.default_rng(3)
ims = [rng.integers(0, 256, (32, 32, 3), dtype=np.uint8) for _ in range(3)]
for i, a in enumerate(ims):
    Image.fromarray(a).save(os.path.join(out, "cim%d.png" % i))
x = torch.tensor(np.stack(ims) / 255.0)
x = (x - torch.tensor(ra.IMAGENET_MEAN)) / torch.tensor(ra.IMAGENET_STD)
with torch.no_grad():
    p = torch.softmax(m(x), dim=1)
json.dump(p.tolist(), open(os.path.join(out, "clf_probs.json"), "w"))
open(os.path.join(out, "names.txt"), "w").write("cat\ndog\nbird\nfish\nfrog\n")
open(os.path.join(out, "names4.txt"), "w").write("cat\ndog\nbird\nfish\n")
open(os.path.join(out, "names_bom.txt"), "wb").write(b"\xef\xbb\xbfcat\r\ndog\r\nbird\r\nfish\r\nfrog\r\n")
open(os.path.join(out, "names_blank.txt"), "w").write("cat\ndog\nbird\nfish\nfrog\n\n")
PY
"$PY" "$tools/convert_mae.py" "$tmp/clf.pth" "$tmp/clf.safetensors" --classifier >"$tmp/out" 2>"$tmp/err"; rc=$?
t "--classifier exits 0 ($rc: $(head -c 300 "$tmp/err"))" '[ $rc -eq 0 ] && grep -q "classifier of 5 classes" "$tmp/out"'
"$VITMAE" classify --ckpt "$tmp/clf.safetensors" --top 5 --json "$tmp"/cim0.png "$tmp"/cim1.png "$tmp"/cim2.png >"$tmp/cls.json" 2>"$tmp/err"; rc=$?
t "classify on the converted classifier exits 0 ($rc: $(head -c 300 "$tmp/err"))" '[ $rc -eq 0 ]'
"$PY" - "$tmp/cls.json" "$tmp/clf_probs.json" >"$tmp/cmp" 2>&1 <<'PY'; rc=$?
import sys, json
got = json.load(open(sys.argv[1]))["images"]
want = json.load(open(sys.argv[2]))
worst = 0.0
for g, w in zip(got, want):
    probs = {name: p for name, p in g["top"]}
    assert sorted(probs) == [str(k) for k in range(5)], probs
    for k in range(5):
        worst = max(worst, abs(probs[str(k)] - w[k]) / (1e-6 + abs(w[k])))
print("largest relative difference %.3g" % worst)
sys.exit(0 if len(got) == 3 and worst <= 1e-5 else 1)
PY
t "converted classifier: classify's probabilities = PyTorch's softmax ($(cat "$tmp/cmp" | tail -1))" '[ $rc -eq 0 ]'
"$PY" "$tools/convert_mae.py" "$tmp/clf.pth" "$tmp/clfn.safetensors" --classifier --classes "$tmp/names.txt" >/dev/null 2>&1
"$VITMAE" classify --ckpt "$tmp/clfn.safetensors" --top 5 "$tmp/cim0.png" >"$tmp/cls.txt" 2>&1; rc=$?
t "--classes names the head's classes in order ($rc: $(head -c 200 "$tmp/cls.txt"))" \
  '[ $rc -eq 0 ] && grep -q "frog" "$tmp/cls.txt" && "$VITMAE" info "$tmp/clfn.safetensors" | grep -q "5: cat, dog, bird, fish, frog"'
"$PY" "$tools/convert_mae.py" "$tmp/clf.pth" "$tmp/bad.safetensors" --classifier --classes "$tmp/names4.txt" >/dev/null 2>"$tmp/err"; rc=$?
t "--classes with 4 names for 5 classes: exit 2, no file" '[ $rc -eq 2 ] && grep -q "4 names for a head of 5 classes" "$tmp/err" && [ ! -e "$tmp/bad.safetensors" ]'
# As Windows' Notepad saves it (a byte-order mark first, CRLF lines): the same five names. The mark was
# kept as the start of the first name, '\ufeffcat', which no class folder 'cat' matched.
"$PY" "$tools/convert_mae.py" "$tmp/clf.pth" "$tmp/clfb.safetensors" --classifier --classes "$tmp/names_bom.txt" >/dev/null 2>"$tmp/err"; rc=$?
t "--classes saved by Notepad (BOM, CRLF): the same names, the same file ($rc: $(head -c 200 "$tmp/err"))" \
  '[ $rc -eq 0 ] && cmp -s "$tmp/clfb.safetensors" "$tmp/clfn.safetensors"'
# A blank line at the end is an empty name, and said so (it was counted: "6 names for a head of 5").
"$PY" "$tools/convert_mae.py" "$tmp/clf.pth" "$tmp/bad.safetensors" --classifier --classes "$tmp/names_blank.txt" >/dev/null 2>"$tmp/err"; rc=$?
t "--classes with a blank last line: exit 2, the empty line named, no file ($rc: $(head -c 200 "$tmp/err"))" \
  '[ $rc -eq 2 ] && grep -q "names_blank.txt: line 6 is empty$" "$tmp/err" && [ ! -e "$tmp/bad.safetensors" ]'
"$PY" "$tools/convert_mae.py" "$tmp/clf.pth" "$tmp/bad.safetensors" --classes "$tmp/names.txt" >/dev/null 2>"$tmp/err"; rc=$?
t "--classes without --classifier: exit 2" '[ $rc -eq 2 ] && grep -q "give it with --classifier" "$tmp/err" && [ ! -e "$tmp/bad.safetensors" ]'
for c in "clf_cls:no fc_norm" "clf_both:both norm and fc_norm" "clf_extra:norm_pre" "full:no head.weight"; do
  "$PY" "$tools/convert_mae.py" "$tmp/${c%%:*}.pth" "$tmp/bad.safetensors" --classifier >/dev/null 2>"$tmp/err"; rc=$?
  t "--classifier refuses ${c%%:*} (${c#*:}): exit 1, one line, no file ($rc: $(head -c 300 "$tmp/err"))" \
    '[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "^convert_mae: .*${c#*:}" "$tmp/err" && [ ! -e "$tmp/bad.safetensors" ]'
done

rm -rf "$tmp"
[ $fail -eq 0 ] && echo "cli_convert ok"
exit $fail
