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
t "--heads 3 refused (128 not divisible)" '[ $rc -ne 0 ] && grep -q "not divisible by 3 heads" "$tmp/err" && [ ! -e "$tmp/bad.safetensors" ]'
"$PY" "$tools/convert_mae.py" "$tmp/nomodel.pth" "$tmp/bad.safetensors" >/dev/null 2>"$tmp/err"; rc=$?
t "no state dict refused" '[ $rc -eq 1 ] && grep -q "no state dict" "$tmp/err"'

rm -rf "$tmp"
[ $fail -eq 0 ] && echo "cli_convert ok"
exit $fail
