#!/usr/bin/python3
"""Convert a facebookresearch/mae PyTorch checkpoint (.pth) into a vitmae safetensors checkpoint.

    /usr/bin/python3 tools/convert_mae.py IN.pth|IN.safetensors OUT.safetensors [--heads N] [--dec-heads N]
        [--norm-pix | --no-norm-pix] [--pixel-norm imagenet|none] [--mask-ratio R]
        [--classifier [--classes FILE]]

IN.pth is what MAE's scripts save: a dict whose 'model' entry is the state dict; also a dict whose
'state_dict' entry is (timm's train.py, PyTorch Lightning), a bare state dict, or a whole pickled model
(torch.save(model), when its class can be imported here), or a safetensors file (told by its content)
with MAE's / timm's names in any float dtype (F16, BF16, F64, F32), which vitmae reads only in F32; when
it holds a vitmae config (a vitmae checkpoint saved in half precision), that config is kept, less what
a flag gives, and its optimizer moments and train state are dropped. Names may carry one prefix ('module.' of a
DistributedDataParallel model, Lightning's 'model.'): it is stripped and said. Tensors of any floating
dtype (fp16, bf16, fp64) are written as float32. Accepted:
  - a pretrain checkpoint with the decoder (e.g. mae_visualize_vit_base.pth): everything converts;
  - an encoder-only checkpoint (e.g. mae_pretrain_vit_base.pth, or a fine-tuned ViT from
    main_finetune.py): serves `vitmae attention`, `embed`, `probe` and `finetune`; `reconstruct` and
    `eval` need the decoder. Keys that are not MAE's encoder/decoder
    (head.*, fc_norm.*, ...) are dropped and listed. A fine-tune trained with global pooling has
    fc_norm but no final `norm`: the converter says so and writes an identity norm (weight 1,
    bias 0), which does not change any attention map (the final norm comes after every block).
  - with --classifier, a fine-tuned classifier trained with global pooling (MAE's main_finetune.py,
    timm's VisionTransformer(global_pool='avg')): cls_token, pos_embed, patch_embed, blocks, fc_norm
    and head, no final norm, and nothing else. The output is a vitmae classifier checkpoint, for
    `classify`, `embed` and `info` (docs/encoder.md, "Other commands on a fine-tuned checkpoint"); its class
    names are the lines of --classes FILE (one per class, in the head's order), else "0" .. "K-1".
    A CLS-token fine-tune (norm, no fc_norm), a file with both norm and fc_norm, or any other tensor
    is refused: vitmae's classifier pools the patch tokens through fc_norm alone.

The config is inferred from the shapes: patch size, channels and width from patch_embed.proj.weight
[D, C, P, P]; depth by counting blocks.N; img_size from pos_embed [1, 1 + (img/P)^2, D]; mlp_ratio
from blocks.0.mlp.fc1.weight. Head counts are not in the shapes: the default is MAE/ViT's
convention of 64-wide heads for the encoder (ViT-B 768 -> 12, ViT-L 1024 -> 16, ViT-H 1280 -> 16
with --heads 16) and 32-wide heads for the decoder (MAE's 512-wide decoder -> 16); --heads and
--dec-heads override. A wrong head count gives wrong attention maps, so check the model card.

norm_pix_loss (used by `reconstruct`, not by `attention`): --norm-pix / --no-norm-pix when given;
else the checkpoint's own norm_pix_loss when it stored its training args (MAE's argparse Namespace,
or a dict); else false, as
MAE's released visualisation checkpoints (mae_visualize_vit_*.pth) were trained with pixel targets
(norm_pix_loss off; MAE's released pretrain checkpoints used norm_pix_loss but have no decoder).
Position tables are MAE's fixed 2D sin-cos (pos_embed "fixed"); pixels are normalised with
ImageNet's mean/std, as MAE was trained (--pixel-norm none for 0/1); a 1-channel model gets their grey
equivalents, by the luminance weights 0.299 / 0.587 / 0.114 as vitmae's own `--pixel-norm imagenet`
(docs/interface.md, section 2). --mask-ratio (the default of `reconstruct` and `eval`) is checked as
vitmae checks it: in [0, 1) and leaving at least one visible patch, int(L * (1 - R)) >= 1.
The output is written to a temporary file of this process beside it (OUT.tmp.<pid>.<n>), synced, then
renamed over OUT: two conversions to one output do not write into each other's file.
"""
import argparse
import json
import math
import os
import pickle
import re
import struct
import sys
import zlib

# PyTorch is imported once the arguments are checked (import_torch, from main): its import alone takes
# some 1.6 s, which --help and a usage error no longer wait for.
torch = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]
BLOCK_PARTS = ["norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
               "attn.proj.bias", "norm2.weight", "norm2.bias", "mlp.fc1.weight", "mlp.fc1.bias",
               "mlp.fc2.weight", "mlp.fc2.bias"]


class ConvertError(Exception):
    pass


class UsageError(ConvertError):
    """A flag's value that cannot serve this checkpoint: exit 2, as vitmae's usage errors."""


def f32(x):
    """x rounded to float32, the precision vitmae holds the config in."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def grey_imagenet():
    """ImageNet's mean and std for one channel: L = 0.299 R + 0.587 G + 0.114 B of each, in float32 and
    in vitmae's order of operations, so the file holds what `--pixel-norm imagenet` writes
    (docs/interface.md, section 2)."""
    w = [f32(0.299), f32(0.587), f32(0.114)]
    def lum(v):
        v = [f32(x) for x in v]
        return f32(f32(f32(w[0] * v[0]) + f32(w[1] * v[1])) + f32(w[2] * v[2]))
    return [lum(IMAGENET_MEAN)], [lum(IMAGENET_STD)]


def mask_ratio_checked(r, L=None):
    """r as vitmae takes it (src/core/masking.c): in [0, 1) as a float32 and, for L patches, leaving a
    visible one."""
    if not (0.0 <= f32(r) < 1.0):
        raise UsageError("--mask-ratio %g is out of range [0, 1)" % r)
    if L is not None and int(L * (1.0 - r)) < 1:
        raise UsageError("--mask-ratio %g leaves no visible patch of %d (int(L * (1 - R)) = 0)" % (r, L))
    return r


def count_blocks(sd, prefix):
    n = 0
    while "%s.%d.norm1.weight" % (prefix, n) in sd:
        n += 1
    return n


def block_shapes(prefix, i, D, hidden):
    p = "%s.%d." % (prefix, i)
    s = {"norm1.weight": [D], "norm1.bias": [D], "attn.qkv.weight": [3 * D, D], "attn.qkv.bias": [3 * D],
         "attn.proj.weight": [D, D], "attn.proj.bias": [D], "norm2.weight": [D], "norm2.bias": [D],
         "mlp.fc1.weight": [hidden, D], "mlp.fc1.bias": [hidden], "mlp.fc2.weight": [D, hidden],
         "mlp.fc2.bias": [D]}
    return [(p + k, s[k]) for k in BLOCK_PARTS]


def heads_for(width, head_dim, flag, stored, what):
    """The head count: the flag's, else the one a vitmae config stored, else width / head_dim. A count
    the flag gives or asks for is a usage error (exit 2), as vitmae's `--dim 16 --heads 3`; a stored
    one that does not divide is the file's."""
    override = flag or stored
    if override:
        if width % override:
            err = UsageError if flag else ConvertError
            raise err("%s: width %d is not divisible by %d heads" % (what, width, override))
        return override
    if width % head_dim:
        raise UsageError("%s: width %d is not a multiple of %d; give the head count (%s)" % (
            what, width, head_dim, "--heads" if what == "encoder" else "--dec-heads"))
    return width // head_dim


def state_dict_of(obj):
    if isinstance(obj, SafetensorsInput):
        return obj.tensors, None
    if isinstance(obj, torch.nn.Module):   # torch.save(model)
        return obj.state_dict(), None
    for key in ("model", "state_dict"):   # MAE's scripts; timm's train.py and PyTorch Lightning
        if isinstance(obj, dict) and key in obj and isinstance(obj[key], dict):
            return obj[key], obj.get("args")
    if isinstance(obj, dict) and all(torch.is_tensor(v) for v in obj.values()):
        return obj, None
    raise ConvertError("no state dict: want a dict with 'model' (MAE's checkpoints) or 'state_dict' (timm, "
                       "Lightning), a bare state dict or a pickled model")


SAFETENSORS_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64"}   # torch's names


class SafetensorsInput:
    def __init__(self, tensors, config):
        self.tensors, self.config = tensors, config


def is_safetensors(path):
    """A safetensors file by its content: an 8-byte little-endian header length, then a JSON object."""
    with open(path, "rb") as f:
        head = f.read(9)
    return len(head) == 9 and head[8:9] == b"{" and 2 <= struct.unpack("<Q", head[:8])[0] <= 100_000_000


def read_safetensors(path):
    """Tensors of any float dtype, as torch tensors, and the vitmae config when the file holds one."""
    if sys.byteorder != "little":
        raise ConvertError("reading a safetensors file needs a little-endian machine (its data is little-endian)")
    with open(path, "rb") as f:
        buf = f.read()
    (hlen,) = struct.unpack("<Q", buf[:8])
    if hlen > len(buf) - 8:
        raise ConvertError("not a safetensors file: its header runs past the end")
    try:
        header = json.loads(buf[8:8 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ConvertError("not a safetensors file: its header is not JSON (%s)" % e)
    data = buf[8 + hlen:]
    meta = header.pop("__metadata__", None) or {}
    if "crc32" in meta and meta["crc32"] != "%08x" % (zlib.crc32(data) & 0xFFFFFFFF):
        raise ConvertError("crc32 mismatch (file damaged)")
    tensors = {}
    for name, e in header.items():
        kind = SAFETENSORS_DTYPES.get(e.get("dtype") if isinstance(e, dict) else None)
        dtype = getattr(torch, kind) if kind else None
        if dtype is None:
            raise ConvertError("tensor %r has dtype %s: not a float tensor" % (name, e.get("dtype") if isinstance(e, dict) else "?"))
        shape = [int(d) for d in e["shape"]]
        b, en = e["data_offsets"]
        if not 0 <= b <= en <= len(data) or en - b != math.prod(shape) * torch.tensor([], dtype=dtype).element_size():
            raise ConvertError("tensor %r has bad data_offsets" % name)
        raw = bytearray(data[b:en])
        t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(shape)
    config = None
    if meta.get("format") == "vitmae" and "config" in meta:
        try:
            config = json.loads(meta["config"])
        except ValueError as e:
            raise ConvertError("its vitmae config is not JSON (%s)" % e)
    return SafetensorsInput(tensors, config)


def load_checkpoint(path):
    """torch.load (or, for a safetensors file, read_safetensors), every failure as a ConvertError of one line."""
    if is_safetensors(path):
        return read_safetensors(path)
    try:
        return torch.load(path, map_location="cpu")
    except (ModuleNotFoundError, AttributeError) as e:   # a pickled model whose class is not importable here
        raise ConvertError("a pickled model object whose code is not importable here (%s): save its state_dict "
                           "instead, torch.save({'model': model.state_dict()}, PATH), or run with that code on "
                           "PYTHONPATH" % e)
    except (pickle.UnpicklingError, EOFError, UnicodeDecodeError, ValueError) as e:
        raise ConvertError("not a PyTorch checkpoint (torch.load: %s)" % e)


def strip_prefix(sd, log):
    """Names under one wrapper prefix ('module.', 'model.', ...) lose it: MAE's names are wanted."""
    if "patch_embed.proj.weight" in sd:
        return sd
    hits = [k[:-len("patch_embed.proj.weight")] for k in sd if k.endswith(".patch_embed.proj.weight")]
    if len(hits) != 1:
        return sd
    prefix = hits[0]
    log("names carry the prefix '%s' (a wrapped model's state_dict): stripped" % prefix)
    return {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)}


def convert(sd, args_in_ckpt, opt, log, known=None):
    """known: the vitmae config a safetensors input holds; its values stand where no flag is given."""
    known = known or {}
    sd = strip_prefix(sd, log)
    for need in ("patch_embed.proj.weight", "pos_embed", "cls_token"):
        if need not in sd:
            raise ConvertError("missing %s: not an MAE / ViT checkpoint" % need)
    D, C, P, P2 = sd["patch_embed.proj.weight"].shape
    if P != P2:
        raise ConvertError("patch_embed.proj.weight %s: patches are not square" % list(sd["patch_embed.proj.weight"].shape))
    T = sd["pos_embed"].shape[1]
    grid = int(round(math.sqrt(T - 1)))
    if grid * grid != T - 1:
        raise ConvertError("pos_embed has %d rows: not 1 + a square number of patches" % T)
    depth = count_blocks(sd, "blocks")
    if depth == 0:
        raise ConvertError("no blocks.0.*: not an MAE / ViT checkpoint")
    hidden = sd["blocks.0.mlp.fc1.weight"].shape[0]
    if hidden % D:
        raise ConvertError("mlp hidden width %d is not a multiple of %d" % (hidden, D))
    heads = heads_for(D, 64, opt.heads, known.get("num_heads", 0), "encoder")
    mask_ratio = mask_ratio_checked(opt.mask_ratio if opt.mask_ratio is not None else known.get("mask_ratio", 0.75),
                                    grid * grid)

    has_decoder = "decoder_embed.weight" in sd
    if has_decoder:
        Dd = sd["decoder_embed.weight"].shape[0]
        dec_depth = count_blocks(sd, "decoder_blocks")
        dec_heads = heads_for(Dd, 32, opt.dec_heads, known.get("decoder_num_heads", 0), "decoder")
    elif known or opt.classifier:   # a classifier has no decoder: the config's are MAE's, unused
        Dd, dec_depth = known.get("decoder_embed_dim", 512), known.get("decoder_depth", 8)
        dec_heads = opt.dec_heads or known.get("decoder_num_heads", 16)
        if not opt.classifier:
            log("no decoder in this checkpoint: an encoder-only file, for attention, embed, probe and finetune "
                "(reconstruct and eval need the decoder)")
    else:
        Dd, dec_depth, dec_heads = 512, 8, opt.dec_heads or 16   # MAE's decoder; not in the file
        log("no decoder in this checkpoint: an encoder-only file, for attention, embed, probe and finetune "
            "(reconstruct and eval need the decoder)")

    if opt.norm_pix is not None:
        norm_pix = opt.norm_pix
    elif "norm_pix_loss" in known:
        norm_pix = bool(known["norm_pix_loss"])
    elif isinstance(args_in_ckpt, dict) and "norm_pix_loss" in args_in_ckpt:   # args saved as vars(args)
        norm_pix = bool(args_in_ckpt["norm_pix_loss"])
        log("norm_pix_loss %s, from the checkpoint's training args" % str(norm_pix).lower())
    elif args_in_ckpt is not None and hasattr(args_in_ckpt, "norm_pix_loss"):   # MAE's argparse Namespace
        norm_pix = bool(args_in_ckpt.norm_pix_loss)
        log("norm_pix_loss %s, from the checkpoint's training args" % str(norm_pix).lower())
    else:
        norm_pix = False
    if opt.pixel_norm is None and "pixel_mean" in known and "pixel_std" in known:
        mean, std = known["pixel_mean"], known["pixel_std"]
    elif opt.pixel_norm in (None, "imagenet"):
        mean, std = (IMAGENET_MEAN, IMAGENET_STD) if C == 3 else grey_imagenet()
    else:
        mean, std = [0.0] * C, [1.0] * C

    cfg = {"img_size": grid * P, "patch_size": P, "in_chans": C, "embed_dim": D, "depth": depth,
           "num_heads": heads, "decoder_embed_dim": Dd, "decoder_depth": dec_depth,
           "decoder_num_heads": dec_heads, "mlp_ratio": hidden // D, "norm_pix_loss": norm_pix,
           "mask_ratio": mask_ratio, "pos_embed": known.get("pos_embed", "fixed"), "pixel_mean": mean,
           "pixel_std": std, "layer_norm_eps": known.get("layer_norm_eps", 1e-6)}
    want = [("cls_token", [1, 1, D]), ("pos_embed", [1, T, D]), ("patch_embed.proj.weight", [D, C, P, P]),
            ("patch_embed.proj.bias", [D])]
    for i in range(depth):
        want += block_shapes("blocks", i, D, hidden)
    if opt.classifier:
        return classifier_tensors(sd, want, D, opt, log), cfg
    want += [("norm.weight", [D]), ("norm.bias", [D])]
    if has_decoder:
        want += [("decoder_embed.weight", [Dd, D]), ("decoder_embed.bias", [Dd]), ("mask_token", [1, 1, Dd]),
                 ("decoder_pos_embed", [1, T, Dd])]
        for i in range(dec_depth):
            want += block_shapes("decoder_blocks", i, Dd, hidden // D * Dd)
        want += [("decoder_norm.weight", [Dd]), ("decoder_norm.bias", [Dd]),
                 ("decoder_pred.weight", [P * P * C, Dd]), ("decoder_pred.bias", [P * P * C])]

    if "norm.weight" not in sd and "fc_norm.weight" in sd:
        log("fc_norm but no norm (a global-pool fine-tune): fc_norm dropped, norm written as identity "
            "(weight 1, bias 0); attention maps do not depend on it")
        sd["norm.weight"] = torch.ones(D)
        sd["norm.bias"] = torch.zeros(D)
    tensors = checked_tensors(sd, want)
    dropped = sorted(k for k in sd if k not in tensors and k not in ("norm.weight", "norm.bias"))
    if dropped:
        groups = sorted(set(re.sub(r"\..*", ".*", k) for k in dropped))
        log("dropped %d tensors that are not MAE's encoder/decoder: %s" % (len(dropped), ", ".join(groups)))

    return tensors, cfg


def checked_tensors(sd, want):
    """The tensors of want ([(name, shape)]) from sd, as float32 of exactly those shapes."""
    tensors = {}
    for name, shape in want:
        if name not in sd:
            raise ConvertError("missing tensor %s" % name)
        t = sd[name].detach().to(torch.float32).contiguous()
        if list(t.shape) != shape:
            raise ConvertError("%s has shape %s, want %s" % (name, list(t.shape), shape))
        tensors[name] = (shape, t)
    return tensors


def classifier_tensors(sd, want, D, opt, log):
    """--classifier: the encoder (want, without the final norm), fc_norm and head, as vitmae's classifier
    holds them (docs/encoder.md); anything else would change the logits, so it is refused."""
    if "head.weight" not in sd:
        raise ConvertError("--classifier: no head.weight: not a fine-tuned classifier (without --classifier "
                           "the encoder converts)")
    if "fc_norm.weight" not in sd:
        raise ConvertError("--classifier: no fc_norm (a CLS-token fine-tune, whose head reads the normed CLS "
                           "token): vitmae's classifier pools the patch tokens through fc_norm "
                           "(timm's global_pool='avg')")
    if "norm.weight" in sd or "norm.bias" in sd:
        raise ConvertError("--classifier: both norm and fc_norm: vitmae's classifier has no final norm before "
                           "its pooling (timm's global_pool='avg' with fc_norm)")
    K = sd["head.weight"].shape[0] if sd["head.weight"].dim() == 2 else 0
    want = want + [("fc_norm.weight", [D]), ("fc_norm.bias", [D]), ("head.weight", [K, D]), ("head.bias", [K])]
    tensors = checked_tensors(sd, want)
    extra = sorted(k for k in sd if k not in tensors)
    if extra:
        raise ConvertError("--classifier: %d tensors that vitmae's classifier does not have (%s): they would "
                           "change its outputs" % (len(extra), ", ".join(sorted(set(re.sub(r"\..*", ".*", k) for k in extra)))))
    if opt.classes is None:
        names = [str(i) for i in range(K)]
        log("class names 0 .. %d (--classes FILE names them, one line each in the head's order)" % (K - 1))
    else:
        names = read_class_names(opt.classes, K)
    opt.class_names = names
    return tensors


def read_class_names(path, K):
    """--classes FILE: one name a line (UTF-8; a trailing CR dropped, and the byte-order mark that
    Windows' Notepad writes first), K lines, none empty or repeated."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise UsageError("--classes %s: %s" % (path, e.strerror or e))
    try:
        text = raw.decode("utf-8-sig")   # a leading U+FEFF is no part of the first name
    except UnicodeDecodeError:
        raise UsageError("--classes %s: not UTF-8 text" % path)
    names = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
    if names and names[-1] == "":
        names.pop()
    # An empty line is named before the count, which it would make wrong (a blank line at the end).
    for i, n in enumerate(names):
        if n == "":
            raise UsageError("--classes %s: line %d is empty" % (path, i + 1))
    if len(names) != K:
        raise UsageError("--classes %s: %d names for a head of %d classes" % (path, len(names), K))
    seen = set()
    for n in names:
        if n in seen:
            raise UsageError("--classes %s: class '%s' is named twice" % (path, n))
        seen.add(n)
    return names


def temporary_beside(path):
    """A new file OUT.tmp.<pid>.<n> in OUT's folder, made here (O_EXCL) and so this process's own, as
    vitmae names its temporary files: a second conversion to the same output writes its own."""
    for n in range(1000):
        name = "%s.tmp.%d.%d" % (path, os.getpid(), n)
        try:
            os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return name
        except FileExistsError:
            continue
    raise OSError("no free temporary name beside %s" % path)


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def import_torch():
    """PyTorch, once; without it, one line and exit 1 (not a traceback)."""
    global torch
    try:
        import torch as t
    except ImportError as e:
        raise SystemExit("convert_mae: PyTorch cannot be imported (%s): install python3-torch" % e)
    torch = t


def main(argv=None):
    ap = argparse.ArgumentParser(description="facebookresearch/mae .pth -> vitmae .safetensors")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--heads", type=int, default=None, help="encoder heads (default embed_dim / 64)")
    ap.add_argument("--dec-heads", type=int, default=None, help="decoder heads (default decoder width / 32)")
    ap.add_argument("--norm-pix", dest="norm_pix", action="store_true", default=None,
                    help="the model was trained with norm_pix_loss")
    ap.add_argument("--no-norm-pix", dest="norm_pix", action="store_false")
    ap.add_argument("--pixel-norm", choices=["imagenet", "none"], default=None,
                    help="pixel statistics (default imagenet, or those of a vitmae config the input holds)")
    ap.add_argument("--mask-ratio", type=float, default=None,
                    help="the default of reconstruct and eval (0.75, or that of a vitmae config the input holds)")
    ap.add_argument("--classifier", action="store_true",
                    help="a global-pool fine-tuned classifier (fc_norm and head kept): a vitmae classifier checkpoint")
    ap.add_argument("--classes", default=None, metavar="FILE",
                    help="with --classifier: class names, one line each in the head's order (default 0 .. K-1)")
    opt = ap.parse_args(argv)
    if opt.classes is not None and not opt.classifier:
        ap.error("--classes names a classifier's classes: give it with --classifier")
    if (opt.heads is not None and opt.heads < 1) or (opt.dec_heads is not None and opt.dec_heads < 1):
        ap.error("head counts must be positive")   # --heads 0 was taken for "not given"
    try:
        if opt.mask_ratio is not None:
            mask_ratio_checked(opt.mask_ratio)   # the range now; the patches it leaves once L is known
    except UsageError as e:
        ap.error(str(e))

    def log(msg):
        print("convert_mae: %s" % msg, file=sys.stderr)
    import_torch()
    try:
        obj = load_checkpoint(opt.input)
        sd, args_in_ckpt = state_dict_of(obj)
        known = obj.config if isinstance(obj, SafetensorsInput) else None
        if known is not None:
            flagged = opt.heads or opt.dec_heads or any(v is not None for v in (opt.norm_pix, opt.pixel_norm, opt.mask_ratio))
            log("a vitmae checkpoint: its config kept%s" % (", less what the flags give" if flagged else ""))
        tensors, cfg = convert(sd, args_in_ckpt, opt, log, known)
    except UsageError as e:
        print("convert_mae: %s: %s" % (opt.input, e), file=sys.stderr)
        return 2
    except (ConvertError, OSError, RuntimeError, EOFError) as e:
        print("convert_mae: %s: %s" % (opt.input, e), file=sys.stderr)
        return 1
    tmp = None
    try:
        tmp = temporary_beside(opt.output)
        meta = {"format": "vitmae", "config": json.dumps(cfg)}
        if opt.classifier:
            meta["classifier"] = json.dumps({"num_classes": len(opt.class_names), "classes": opt.class_names,
                                             "global_pool": "avg"}, ensure_ascii=False)
        safetensors_io.write(tmp, tensors, meta)
        fsync_path(tmp)
        os.replace(tmp, opt.output)
        tmp = None
        fsync_path(os.path.dirname(os.path.abspath(opt.output)))
    except OSError as e:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        print("convert_mae: %s: %s" % (opt.output, e.strerror or e), file=sys.stderr)
        return 1
    n = sum(t.numel() for _, t in tensors.values())
    print("%s: %d tensors, %d parameters; img %d, patch %d, dim %d, depth %d, heads %d%s" % (
        opt.output, len(tensors), n, cfg["img_size"], cfg["patch_size"], cfg["embed_dim"], cfg["depth"],
        cfg["num_heads"], ", decoder %d x %d" % (cfg["decoder_embed_dim"], cfg["decoder_depth"])
        if "decoder_embed.weight" in tensors else
        ", classifier of %d classes" % len(opt.class_names) if opt.classifier else ", encoder only"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
