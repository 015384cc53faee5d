#!/bin/sh
# Decoding against PIL (python3-pil), within 1 level of 255: EXIF orientations 1-8 (PIL's
# ImageOps.exif_transpose) in JPEG, PNG (eXIf chunk, text chunks, XMP; before and after the image data,
# in files larger than the probe's first read too) and WebP (EXIF chunk; lossy and lossless),
# orientation tags in every type and byte order (those PIL applies and those it ignores), repeated
# tags, IFD0 entries whose values run past the EXIF block's end (PIL reads no entry after them), WebP lossy / lossless / with alpha, CMYK JPEG (with and without the Adobe marker), progressive
# JPEG, greyscale JPEG; each file's decode and its header probe's size. Files are written here by PIL; build/tools/imgdump gives
# vitmae's decode (and, with --probe, image_probe's size).
. "$VITMAE_ROOT/tests/lib.sh"   # t, scratch, data_of, same_weights
set -u
fail=0
if ! /usr/bin/python3 -c 'import PIL, numpy; from PIL import features; assert features.check("webp")' 2>/dev/null; then
  echo "cli formats skipped: python3-pil with WebP (and numpy) not installed"; exit 0
fi
scratch dir
/usr/bin/python3 - "$dir" <<'PY'
import sys, numpy as np
from PIL import Image
d = sys.argv[1]
h, w = 24, 40
y, x = np.mgrid[0:h, 0:w]
rgb = np.stack([(x * 6) % 256, (y * 10) % 256, ((x + y) * 4) % 256], -1).astype(np.uint8)
rgb[:8, :8] = (255, 0, 0)          # a marked corner, so a wrong orientation shows
im = Image.fromarray(rgb)
for k in range(1, 9):
    ex = Image.Exif(); ex[0x0112] = k
    im.save(f"{d}/orient{k}.jpg", quality=95, exif=ex.tobytes())
# Orientation 6 stored as a LONG (type 4) instead of the standard's SHORT, as some writers do.
import struct
tiff = b"II*\0" + struct.pack("<IH", 8, 1) + struct.pack("<HHII", 0x0112, 4, 1, 6) + struct.pack("<I", 0)
im.save(f"{d}/orient6long.jpg", quality=95, exif=b"Exif\0\0" + tiff)
im.save(f"{d}/progressive.jpg", quality=90, progressive=True)
im.convert("L").save(f"{d}/grey.jpg", quality=90)
im.convert("CMYK").save(f"{d}/cmyk.jpg", quality=90)
# CMYK with black ink, and the same file without its Adobe marker (APP14): PIL reads every CMYK JPEG
# with Adobe's inverted inks, marker or not.
import io
b = io.BytesIO(); Image.fromarray(np.dstack([rgb, (x * 3 % 256).astype(np.uint8)]), "CMYK").save(b, "JPEG", quality=90)
j = b.getvalue(); open(f"{d}/cmyk_black.jpg", "wb").write(j)
k = j.index(b"\xff\xee"); n = struct.unpack(">H", j[k + 2:k + 4])[0]
open(f"{d}/cmyk_no_adobe_marker.jpg", "wb").write(j[:k] + j[k + 2 + n:])
im.save(f"{d}/lossy.webp", quality=80)
im.save(f"{d}/lossless.webp", lossless=True)
rgba = np.dstack([rgb, (x * 3 % 256).astype(np.uint8)])
Image.fromarray(rgba, "RGBA").save(f"{d}/alpha.webp", lossless=True)
for k in range(1, 9):
    ex = Image.Exif(); ex[0x0112] = k
    im.save(f"{d}/orient{k}.png", exif=ex.tobytes())
    im.save(f"{d}/orient{k}.webp", quality=80, exif=ex.tobytes())
    im.save(f"{d}/orient{k}lossless.webp", lossless=True, exif=ex.tobytes())
# IFD0 orientation entries written by hand: (tag, type, count, value bytes), in either byte order.
import io, zlib
def tiff(entries, be=False):
    e = ">" if be else "<"
    out, extra = (b"MM\0*" if be else b"II*\0") + struct.pack(e + "IH", 8, len(entries)), b""
    for tag, typ, count, value in entries:
        if len(value) <= 4:
            out += struct.pack(e + "HHI", tag, typ, count) + value.ljust(4, b"\0")
        else:
            out += struct.pack(e + "HHII", tag, typ, count, 8 + 2 + 12 * len(entries) + 4 + len(extra))
            extra += value
    return out + struct.pack(e + "I", 0) + extra
def quirks(e):
    o = lambda offset: struct.pack(e + "I", offset)
    s = lambda k: (0x112, 3, 1, struct.pack(e + "H", k))
    return {
        "byte6": [(0x112, 1, 1, b"\6")],          # PIL reads b'\x06': not applied
        "ascii6": [(0x112, 2, 2, b"6\0")],         # '6': not applied
        "rational6": [(0x112, 5, 1, struct.pack(e + "II", 6, 1))],
        "rational12_2": [(0x112, 5, 1, struct.pack(e + "II", 12, 2))],
        "rational13_2": [(0x112, 5, 1, struct.pack(e + "II", 13, 2))],   # 6.5: not applied
        "rational6_0": [(0x112, 5, 1, struct.pack(e + "II", 6, 0))],     # nan: not applied
        "sbyte6": [(0x112, 6, 1, b"\6")],
        "undefined6": [(0x112, 7, 1, b"\6")],      # bytes: not applied
        "sshort6": [(0x112, 8, 1, struct.pack(e + "h", 6))],
        "sshort-6": [(0x112, 8, 1, struct.pack(e + "h", -6))],
        "slong8": [(0x112, 9, 1, struct.pack(e + "i", 8))],
        "srational-6_-1": [(0x112, 10, 1, struct.pack(e + "ii", -6, -1))],
        "float5": [(0x112, 11, 1, struct.pack(e + "f", 5.0))],
        "double7": [(0x112, 12, 1, struct.pack(e + "d", 7.0))],
        "short6x2": [(0x112, 3, 2, struct.pack(e + "HH", 6, 3))],        # the first value
        "short9": [(0x112, 3, 1, struct.pack(e + "H", 9))],
        "long65542": [(0x112, 4, 1, struct.pack(e + "I", 65536 + 6))],
        "twice6_3": [(0x112, 3, 1, struct.pack(e + "H", 6)), (0x112, 3, 1, struct.pack(e + "H", 3))],
        "twice6_8": [(0x112, 3, 1, struct.pack(e + "H", 6)), (0x112, 4, 1, struct.pack(e + "I", 8))],
        "twice6_byte3": [(0x112, 3, 1, struct.pack(e + "H", 6)), (0x112, 1, 1, b"\3")],
        "twice6_9": [(0x112, 3, 1, struct.pack(e + "H", 6)), (0x112, 3, 1, struct.pack(e + "H", 9))],
        "twice6_type14": [(0x112, 3, 1, struct.pack(e + "H", 6)), (0x112, 14, 1, struct.pack(e + "H", 3))],
        "thrice5_6_type14": [(0x112, 3, 1, struct.pack(e + "H", 5)), (0x112, 3, 1, struct.pack(e + "H", 6)),
                             (0x112, 14, 1, struct.pack(e + "H", 3))],
        # TIFF types IFD (13, read as LONG) and LONG8 (16, 8 bytes at an offset), which libexif drops
        "ifd6": [(0x112, 13, 1, struct.pack(e + "I", 6))],
        "ifd6x2": [(0x112, 13, 2, struct.pack(e + "II", 6, 3))],
        "ifd0values": [(0x112, 13, 0, b"")],                              # no value: no orientation
        "long8_6": [(0x112, 16, 1, struct.pack(e + "Q", 6))],
        "long8_2p32plus6": [(0x112, 16, 1, struct.pack(e + "Q", 2**32 + 6))],   # not 6
        "twice3_ifd6": [(0x112, 3, 1, struct.pack(e + "H", 3)), (0x112, 13, 1, struct.pack(e + "I", 6))],
        "twice_ifd6_3": [(0x112, 13, 1, struct.pack(e + "I", 6)), (0x112, 3, 1, struct.pack(e + "H", 3))],
        "twice_long8_5_type14": [(0x112, 16, 1, struct.pack(e + "Q", 5)), (0x112, 14, 1, struct.pack(e + "H", 3))],
        # An entry of a type PIL knows whose values run past the block's end (ImageFile._safe_read's
        # "Truncated File Read"): PIL reads no IFD0 entry from it on, those before it stay; libexif
        # drops that entry alone. The offsets are written as the value (o); two entries make 38 bytes.
        "make_past_end_6": [(0x10F, 2, 20, o(200)), s(6)],
        "make_count7fffffff_6": [(0x10F, 2, 0x7FFFFFFF, o(8)), s(6)],
        "undefined_past_end_6": [(0x10E, 7, 100, o(1000)), s(6)],
        "make_1_past_end_6": [(0x10F, 2, 8, o(31)), s(6)],           # 31 + 8 = 39 bytes
        "make_to_end_6": [(0x10F, 2, 8, o(30)), s(6)],               # 30 + 8 = 38: read, 6 applied
        "orient_past_end_6": [(0x112, 3, 4, o(1000)), s(6)],
        "long8_past_end_6": [(0x10F, 16, 10, o(1000)), s(6)],
        "type14_past_end_6": [(0x10F, 14, 100, o(1000)), s(6)],      # a type PIL skips unread: 6
        "6_make_past_end": [s(6), (0x10F, 2, 20, o(200))],           # 6
        "6_make_past_end_3": [s(6), (0x10F, 2, 20, o(200)), s(3)],   # 6
    }
for be in (False, True):
    for name, entries in quirks(">" if be else "<").items():
        t = tiff(entries, be)
        tag = f"q{name}{'be' if be else 'le'}"
        im.save(f"{d}/{tag}.jpg", quality=95, exif=b"Exif\0\0" + t)
        if be: continue
        im.save(f"{d}/{tag}.png", exif=b"Exif\0\0" + t)
        im.save(f"{d}/{tag}.webp", lossless=True, exif=t)     # without the "Exif\0\0" PIL writes
# TIFF headers PIL 9.4 takes though invalid, the magic's two bytes swapped ("MM*\0" big-endian, "II\0*"
# little-endian: TiffImagePlugin's PREFIXES), which libexif refuses: their orientation 6 is applied.
for be in (False, True):
    t = tiff([(0x112, 3, 1, struct.pack(">H" if be else "<H", 6))], be)
    t = (b"MM*\0" if be else b"II\0*") + t[4:]
    tag = f"swapped_magic6{'be' if be else 'le'}"
    im.save(f"{d}/{tag}.jpg", quality=95, exif=b"Exif\0\0" + t)
    im.save(f"{d}/{tag}.png", exif=b"Exif\0\0" + t)
    im.save(f"{d}/{tag}.webp", lossless=True, exif=t)
# PNG chunks placed by hand: two eXIf (PIL keeps the last), XMP's tiff:Orientation (read when EXIF has
# no orientation), an eXIf after the image data (read when none came before it, by the decode and by the
# probe).
def chunk(kind, data): return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
b = io.BytesIO(); im.save(b, "PNG"); png = b.getvalue()
i, j = png.index(b"IDAT") - 4, png.index(b"IEND") - 4
ex = lambda k: chunk(b"eXIf", tiff([(0x112, 3, 1, struct.pack("<H", k))]))
xmp = lambda s: chunk(b"iTXt", b"XML:com.adobe.xmp\0\0\0\0\0" + s)
def put(name, data): open(f"{d}/{name}.png", "wb").write(data)
put("png_exif6_exif8", png[:i] + ex(6) + ex(8) + png[i:])
put("png_exif6_after3", png[:i] + ex(6) + png[i:j] + ex(3) + png[j:])
put("png_xmp6", png[:i] + xmp(b'<rdf:Description tiff:Orientation="6"/>') + png[i:])
put("png_xmp8_element", png[:i] + xmp(b"<tiff:Orientation>8</tiff:Orientation>") + png[i:])
put("png_xmp6_exif9", png[:i] + ex(9) + xmp(b'<rdf:Description tiff:Orientation="6"/>') + png[i:])
put("png_xmp_a_then6", png[:i] + xmp(b'tiff:Orientation="a" tiff:Orientation>6<') + png[i:])
put("postidat_exif6", png[:j] + ex(6) + png[j:])
put("postidat_xmp8", png[:j] + xmp(b'tiff:Orientation="8"') + png[j:])
# An orientation of type IFD is one PIL reads: the XMP is not looked at.
put("png_ifd1_xmp8", png[:i] + chunk(b"eXIf", tiff([(0x112, 13, 1, struct.pack("<I", 1))])) + xmp(b'tiff:Orientation="8"') + png[i:])
# What follows the image data damaged or missing (PIL reads the pixels and stops there): no IEND, its
# CRC wrong, bytes that are no chunk; an orientation after the image data with no IEND after it.
put("tail_noiend", png[:j])
put("tail_iend_crc", png[:-1] + bytes([png[-1] ^ 1]))
put("tail_junk", png[:j] + b"junk after the pixels")
put("tail_exif6_noiend", png[:j] + ex(6))
put("tail_exif6_junk", png[:j] + ex(6) + b"\0\0\0\x05IEN")
# EXIF in text chunks: keyword "exif" (the block itself), or "Raw profile type exif" (hex after three
# lines, as ImageMagick writes it; PIL reads no length and takes the block with or without "Exif\0\0").
R = b"Raw profile type exif"
tEXt = lambda key, v: chunk(b"tEXt", key + b"\0" + v)
zTXt = lambda key, v: chunk(b"zTXt", key + b"\0\0" + zlib.compress(v))
iTXt = lambda key, v, z=False: chunk(b"iTXt", key + (b"\0\1\0" if z else b"\0\0\0") + b"en\0\0" + (zlib.compress(v) if z else v))
def hexprofile(block, nl=b"\n"):
    hx = block.hex().encode()
    return nl.join([b"", b"exif", b"%8d" % len(block)] + [hx[k:k + 72] for k in range(0, len(hx), 72)]) + nl
ex6, ex3 = b"Exif\0\0" + tiff([(0x112, 3, 1, struct.pack("<H", 6))]), tiff([(0x112, 3, 1, struct.pack("<H", 3))])
noorient = tiff([(0x131, 2, 4, b"abc\0")])
put("raw6_text", png[:i] + tEXt(R, hexprofile(ex6)) + png[i:])
put("raw3_ztxt", png[:i] + zTXt(R, hexprofile(ex3)) + png[i:])
put("raw6_itxt", png[:i] + iTXt(R, hexprofile(ex6)) + png[i:])
put("raw3_itxt_compressed", png[:i] + iTXt(R, hexprofile(ex3), z=True) + png[i:])
put("raw6_crlf_spaces", png[:i] + tEXt(R, hexprofile(ex6, b"\r\n").replace(b"45", b" 45")) + png[i:])
put("raw6_after", png[:j] + zTXt(R, hexprofile(ex6)) + png[j:])
put("raw6_then_raw3_after", png[:i] + tEXt(R, hexprofile(ex6)) + png[i:j] + tEXt(R, hexprofile(ex3)) + png[j:])
put("raw6_exif3", png[:i] + tEXt(R, hexprofile(ex6)) + ex(3) + png[i:])            # "exif" first
put("raw6_exif3_after", png[:i] + tEXt(R, hexprofile(ex6)) + png[i:j] + ex(3) + png[j:])
put("raw6_exif1_after", png[:i] + ex(1) + png[i:j] + tEXt(R, hexprofile(ex6)) + png[j:])
put("raw6_exif_noorient_xmp8", png[:i] + chunk(b"eXIf", noorient) + tEXt(R, hexprofile(ex6))
    + xmp(b'tiff:Orientation="8"') + png[i:])                                      # the XMP counts
put("raw_noorient_xmp8", png[:i] + tEXt(R, hexprofile(noorient)) + xmp(b'tiff:Orientation="8"') + png[i:])
put("raw6_two_lines", png[:i] + tEXt(R, b"exif\n 20\n" + ex6.hex().encode()) + png[i:])  # its hex is line 3
put("raw6_itxt_invalid_utf8", png[:i] + iTXt(R, hexprofile(ex6) + b"\xff") + png[i:])  # PIL drops the chunk
put("raw6_ztxt_corrupt", png[:i] + chunk(b"zTXt", R + b"\0\0not zlib") + png[i:])
put("exif6_text", png[:i] + tEXt(b"exif", ex6[6:]) + png[i:])
put("exif6_text_after", png[:j] + tEXt(b"exif", ex6) + png[j:])
put("exif3_text_exif6", png[:i] + tEXt(b"exif", ex3) + ex(6) + png[i:])            # the last "exif"
put("exif6_exif3_text", png[:i] + ex(6) + tEXt(b"exif", ex3) + png[i:])
put("exif_empty_text_raw6", png[:i] + tEXt(b"exif", b"") + tEXt(R, hexprofile(ex6)) + png[i:])
# Where PIL raises (a profile that is not hex; "exif" in a zTXt, which PIL holds as text), the image
# stays as decoded.
put("pilraises_raw6_nothex", png[:i] + tEXt(R, hexprofile(ex6) + b"zz") + png[i:])
put("pilraises_exif6_ztxt", png[:i] + zTXt(b"exif", ex6) + png[i:])
# Larger than the probe's first read (1 MiB), with what follows the image data found from the file's
# end (8 KiB IDAT chunks, as libpng writes them) or chunk by chunk (one large IDAT; bytes after IEND; a
# chunk larger than the 256 KiB looked at from the end).
noise = np.random.default_rng(1).integers(0, 256, (620, 600, 3), dtype=np.uint8)
noise[:64, :64] = (255, 0, 0)
b = io.BytesIO(); Image.fromarray(noise).save(b, "PNG", compress_level=1); big = b.getvalue()
i, j = big.index(b"IDAT") - 4, big.index(b"IEND") - 4
pos, idat = i, b""
while big[pos + 4:pos + 8] == b"IDAT":
    n = struct.unpack(">I", big[pos:pos + 4])[0]
    idat += big[pos + 8:pos + 8 + n]
    pos += 12 + n
head, iend = big[:i], big[pos:]
small_idat = b"".join(chunk(b"IDAT", idat[k:k + 8192]) for k in range(0, len(idat), 8192))
one_idat = chunk(b"IDAT", idat)
assert len(head) + len(one_idat) > (1 << 20)
put("big_idat8k_exif6_after", head + small_idat + ex(6) + iend)
put("big_idat8k_none", head + small_idat + iend)
put("big_idat8k_xmp8_after", head + small_idat + chunk(b"tEXt", b"Comment\0hi") + xmp(b'tiff:Orientation="8"') + iend)
put("big_idat8k_raw5_after", head + small_idat + zTXt(R, hexprofile(tiff([(0x112, 3, 1, struct.pack("<H", 5))]))) + iend)
put("big_idat8k_exif6_exif3_after", head[:8 + 25] + ex(6) + head[8 + 25:] + small_idat + ex(3) + iend)
put("big_idat8k_exif7_trailing", head + small_idat + ex(7) + iend + b"trailing bytes")
put("big_idat8k_exif6_bigtext", head + small_idat + ex(6) + tEXt(b"Comment", b"x" * 300000) + iend)
put("big_idat1_exif6_after", head + one_idat + ex(6) + iend)
put("big_idat1_none", head + one_idat + iend)
# Animated WebPs written by hand (PIL saves one frame as a still image): one frame is a still image to
# PIL, decoded as that frame on its canvas (transparent black, RGB 0, around a frame that does not
# cover it); lossless, lossy, with alpha, offset on a larger canvas, with an EXIF orientation. Two
# frames are skipped with their reason (below; not compared).
import os
def rchunk(tag, data): return tag + struct.pack("<I", len(data)) + data + (b"\0" if len(data) & 1 else b"")
u24 = lambda v: struct.pack("<I", v)[:3]
def bits(frame, **kw):
    b = io.BytesIO(); frame.save(b, "WEBP", **kw); v = b.getvalue()
    k = 12 + (18 if v[12:16] == b"VP8X" else 0)   # the bitstream's chunks (ALPH, VP8 or VP8L), after any VP8X
    return v[k:]
def anim(frames, canvas, exif=None):   # frames: (bitstream, width, height, x, y)
    flags = 0x02 | 0x10 | (0x08 if exif else 0)
    body = b"WEBP" + rchunk(b"VP8X", bytes([flags, 0, 0, 0]) + u24(canvas[0] - 1) + u24(canvas[1] - 1))
    body += rchunk(b"ANIM", bytes([255, 255, 255, 255]) + struct.pack("<H", 0))
    for data, fw, fh, fx, fy in frames:
        body += rchunk(b"ANMF", u24(fx // 2) + u24(fy // 2) + u24(fw - 1) + u24(fh - 1) + u24(100) + b"\0" + data)
    if exif: body += rchunk(b"EXIF", exif)
    return b"RIFF" + struct.pack("<I", len(body)) + body
ex6 = Image.Exif(); ex6[0x0112] = 6
def put_anim(name, data): open(f"{d}/{name}.webp", "wb").write(data)
put_anim("anim1lossless", anim([(bits(im, lossless=True), w, h, 0, 0)], (w, h)))
put_anim("anim1lossy", anim([(bits(im, quality=80), w, h, 0, 0)], (w, h)))
put_anim("anim1alpha", anim([(bits(Image.fromarray(rgba, "RGBA"), lossless=True), w, h, 0, 0)], (w, h)))
put_anim("anim1offset", anim([(bits(im, lossless=True), w, h, 6, 4)], (w + 10, h + 8)))
put_anim("anim1orient6", anim([(bits(im, lossless=True), w, h, 0, 0)], (w, h), ex6.tobytes()))
os.makedirs(f"{d}/multi")
open(f"{d}/multi/anim2.webp", "wb").write(anim([(bits(im, lossless=True), w, h, 0, 0),
                                                 (bits(im.transpose(Image.FLIP_LEFT_RIGHT), lossless=True), w, h, 0, 0)], (w, h)))
# Frames past the header probe's first MiB (noise does not compress: 1.5 MB a frame): one is a still
# image, compared with PIL below; three are skipped (below).
noise = Image.fromarray(np.random.default_rng(1).integers(0, 256, (720, 720, 3), dtype=np.uint8))
big = bits(noise, lossless=True, quality=0, method=0)
put_anim("anim1big", anim([(big, 720, 720, 0, 0)], (720, 720)))
os.makedirs(f"{d}/bigmulti")
open(f"{d}/bigmulti/anim3.webp", "wb").write(anim([(big, 720, 720, 0, 0)] * 3, (720, 720)))
PY
t "PIL wrote the files" '[ -f "$dir/alpha.webp" ] && [ -f "$dir/postidat_exif6.png" ]'
nfiles=0
for src in "$dir"/*.jpg "$dir"/*.png "$dir"/*.webp; do
  f=$(basename "$src")
  "$VITMAE_TOOLS/imgdump" "$src" "$dir/$f.npy" 2>"$dir/err"; rc=$?
  t "$f decodes ($(cat "$dir/err"))" '[ $rc -eq 0 ]'
  probe=$("$VITMAE_TOOLS/imgdump" "$src" --probe 2>"$dir/err"); rc=$?
  t "$f probes ($(cat "$dir/err"))" '[ $rc -eq 0 ]'
  echo "$f $probe" >> "$dir/probes"
  nfiles=$((nfiles + 1))
done
out=$(/usr/bin/python3 - "$dir" <<'PY'
import sys, glob, os, warnings, numpy as np
from PIL import Image, ImageOps
warnings.simplefilter("ignore")   # "tag 274 had too many entries": a case here
d = sys.argv[1]
probes = dict(line.split() for line in open(f"{d}/probes"))
for npy in sorted(glob.glob(d + "/*.npy")):
    name = os.path.basename(npy)[:-4]
    try:
        im = ImageOps.exif_transpose(Image.open(f"{d}/{name}"))
    except (ValueError, TypeError):
        assert name.startswith("pilraises_"), name
        im = Image.open(f"{d}/{name}")
    ref = np.asarray(im.convert("L" if im.mode in ("L", "LA") else "RGB"), dtype=np.float64)
    if ref.ndim == 2: ref = ref[:, :, None]
    got = np.load(npy).astype(np.float64) * 255
    if got.shape != ref.shape:
        print(f"{name}: shape {got.shape} != PIL {ref.shape}"); continue
    h, w = ref.shape[:2]
    if probes[name] != f"{w}x{h}x{ref.shape[2]}":
        print(f"{name}: probe {probes[name]} != PIL {w}x{h}x{ref.shape[2]}"); continue
    worst = np.abs(got - ref).max()
    print(f"{name}: {'ok' if worst <= 1.0 else 'bad'} worst {worst:.3f} levels")
PY
)
echo "$out"
t "$nfiles files compared with PIL" '[ $(echo "$out" | grep -c ": ok worst") -eq $nfiles ] && [ $nfiles -ge 120 ]'
t "no mismatch" '! echo "$out" | grep -q "bad\|shape\|probe"'
# Two frames: skipped with the reason, by the decoder every command reads with and by the scan.
"$VITMAE_TOOLS/imgdump" "$dir/multi/anim2.webp" "$dir/anim2.npy" 2>"$dir/err"; rc=$?
t "a two-frame animated WebP is refused with its reason ($rc: $(cat "$dir/err"))" \
  '[ $rc -ne 0 ] && grep -q "animated WebP of more than one frame is not supported" "$dir/err"'
cp "$dir/anim1lossless.webp" "$dir/multi/"
"$VITMAE" data "$dir/multi" > "$dir/data.out" 2>&1; rc=$?
t "vitmae data: the one-frame animation counted, the two-frame one skipped with its reason ($rc: $(tr "\n" "|" < "$dir/data.out"))" \
  '[ $rc -eq 0 ] && grep -q "anim2.webp: animated WebP of more than one frame is not supported" "$dir/data.out" && ! grep -q "anim1lossless" "$dir/data.out"'
# Three frames of 1.5 MB: the header probe's first MiB ends inside the first, and the second is found
# from the chunk headers read after it, not by reading the whole file into memory to count its frames
# (train's scan did, for any animation larger than that MiB). The fault shim (tests/fault_shim.c)
# counts the allocations of the file's size: none.
big="$dir/bigmulti/anim3.webp"; size=$(wc -c < "$big")
ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" GOMP_SPINCOUNT=1000 FAULT_OWN=1 FAULT_MIN=$size FAULT_MAX=$size \
  FAULT_COUNT="$dir/big.count" LD_PRELOAD="$VITMAE_TOOLS/fault.so" "$VITMAE" train --data "$dir/bigmulti" --out "$dir/bigrun" \
  > "$dir/big.out" 2>&1; rc=$?
t "train: a three-frame animated WebP of $size bytes skipped with its reason, not read whole ($rc: $(grep malloc "$dir/big.count"): $(tr "\n" "|" < "$dir/big.out"))" \
  '[ $rc -eq 1 ] && grep -qx "vitmae: skipped $big: animated WebP of more than one frame is not supported" "$dir/big.out" &&
   grep -qx "malloc 0" "$dir/big.count" && [ $size -gt 3000000 ] && [ ! -e "$dir/bigrun" ]'
# Reduced-size JPEG decode (DCT scaling): 40x24 with shorter side >= 12 decodes at 4/8 = 20x12.
"$VITMAE_TOOLS/imgdump" "$dir/progressive.jpg" "$dir/half.npy" --reduced 12
shape=$(/usr/bin/python3 -c 'import numpy, sys; print(numpy.load(sys.argv[1]).shape)' "$dir/half.npy")
t "reduced decode is 12x20 ($shape)" '[ "$shape" = "(12, 20, 3)" ]'
# Reduced decodes keep the orientation: a JPEG at 4/8 (against PIL's draft, the same DCT scaling), a
# PNG and a WebP at full size.
for f in orient6.jpg orient8.png orient5lossless.webp; do
  "$VITMAE_TOOLS/imgdump" "$dir/$f" "$dir/reduced-$f.npy" --reduced 12 2>"$dir/err"; rc=$?
  t "$f reduced decode ($(cat "$dir/err"))" '[ $rc -eq 0 ]'
done
out=$(/usr/bin/python3 - "$dir" <<'PY'
import sys, numpy as np
from PIL import Image, ImageOps
d = sys.argv[1]
for f in ("orient6.jpg", "orient8.png", "orient5lossless.webp"):
    im = Image.open(f"{d}/{f}")
    if f.endswith(".jpg"): im.draft("RGB", (20, 12))
    ref = np.asarray(ImageOps.exif_transpose(im).convert("RGB"), dtype=np.float64)
    got = np.load(f"{d}/reduced-{f}.npy").astype(np.float64) * 255
    ok = got.shape == ref.shape and np.abs(got - ref).max() <= 1.0
    print(f"{f}: {'ok' if ok else 'bad'} {got.shape} PIL {ref.shape}")
PY
)
echo "$out"
t "reduced decodes oriented as PIL" '[ $(echo "$out" | grep -c ": ok") -eq 3 ]'

# The evaluation view (image_load_view, what every command feeds the model) against the Python that
# docs/encoder.md ("The same view in Python") gives PyTorch users, run as written: equal levels (a
# tie at an exact half may round the other way), for RGB and grey files shrunk, enlarged, non-square,
# EXIF-rotated, with alpha, CMYK, into RGB and grey models. And why the doc gives it: PIL's 8-bit resize,
# which docs/interface.md once called the same, is a level off in far more values.
awk '/^\*\*The same view in Python\.\*\*/ { on = 1 } on && /^```python/ { grab = 1; next } grab && /^```/ { exit } grab' \
  "$VITMAE_ROOT/docs/encoder.md" > "$dir/view_doc.py"
/usr/bin/python3 - "$dir" <<'PY'
import sys, numpy as np
from PIL import Image
d = sys.argv[1]
rng = np.random.default_rng(5)
def photo(h, w, c):   # smooth shapes plus noise: values between the levels after a resize
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([128 + 100 * np.sin(x / (3 + k) + y / (5 + k)) for k in range(c)], -1)
    return np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
Image.fromarray(photo(48, 64, 3)).save(f"{d}/v_wide.png")
Image.fromarray(photo(91, 37, 3)).save(f"{d}/v_tall.png")
Image.fromarray(photo(33, 120, 3)).save(f"{d}/v_strip.jpg", quality=92)
Image.fromarray(photo(13, 20, 3)).save(f"{d}/v_small.png")
Image.fromarray(photo(77, 50, 1)[:, :, 0], "L").save(f"{d}/v_grey.png")
Image.fromarray(np.dstack([photo(40, 70, 3), photo(40, 70, 1)]), "RGBA").save(f"{d}/v_alpha.png")
Image.fromarray(photo(32, 32, 3)).save(f"{d}/v_exact.png")
ex = Image.Exif(); ex[0x0112] = 6
Image.fromarray(photo(60, 90, 3)).save(f"{d}/v_rot6.jpg", quality=92, exif=ex.tobytes())
# CMYK with black ink (PIL converts to RGB in 8-bit levels: a float conversion is between them), one
# shrunk and one used pixel for pixel.
Image.fromarray(photo(50, 70, 4), "CMYK").save(f"{d}/v_cmyk.jpg", quality=92)
Image.fromarray(photo(32, 32, 4), "CMYK").save(f"{d}/v_cmyk_exact.jpg", quality=92)
PY
views=""
for f in v_wide.png v_tall.png v_strip.jpg v_small.png v_grey.png v_alpha.png v_exact.png v_rot6.jpg \
    v_cmyk.jpg v_cmyk_exact.jpg; do
  for c in 3 1; do
    "$VITMAE_TOOLS/imgdump" "$dir/$f" "$dir/$f.$c.npy" --view 32 $c || fail=1
    "$VITMAE_TOOLS/imgdump" "$dir/$f" "$dir/$f.$c.timm.npy" --view 32 $c 0.875 bicubic || fail=1
    views="$views $f:$c"
  done
done
out=$(/usr/bin/python3 - "$dir" $views <<'PY' 2>&1
import sys, numpy as np
from PIL import Image, ImageOps
d = sys.argv[1]
exec(open(d + "/view_doc.py").read())
n = far = off = pil_off = 0
tn = tfar = toff = tsame = 0
for arg in sys.argv[2:]:
    f, c = arg.split(":")
    c = int(c)
    got = np.load(f"{d}/{f}.{c}.npy")
    doc = eval_view(f"{d}/{f}", 32, [0.0] * c, [1.0] * c).transpose(1, 2, 0)
    diff = np.abs(got - doc) * 255
    n += diff.size; far += int((diff > 1.0001).sum()); off += int((diff > 1e-3).sum())
    # timm's view (--crop-pct 0.875 --interp bicubic): resized to 36, the centre 32
    tg = np.load(f"{d}/{f}.{c}.timm.npy")
    td = eval_view(f"{d}/{f}", 32, [0.0] * c, [1.0] * c, 0.875, Image.BICUBIC).transpose(1, 2, 0)
    diff = np.abs(tg - td) * 255
    tn += diff.size; tfar += int((diff > 1.0001).sum()); toff += int((diff > 1e-3).sum())
    tsame += int(np.array_equal(tg, got))
    im = ImageOps.exif_transpose(Image.open(f"{d}/{f}")).convert("RGB")
    w, h = im.size
    if c == 3 and (w, h) != (32, 32):   # the 8-bit PIL pipeline: resize, crop
        nw, nh = (32, 32 * h // w) if w <= h else (32 * w // h, 32)
        t, l = round((nh - 32) / 2), round((nw - 32) / 2)
        pil = np.asarray(im.resize((nw, nh), Image.BILINEAR), dtype=np.float32)[t:t + 32, l:l + 32] / 255
        pil_off += int((np.abs(pil - got) * 255 > 1e-3).sum())
print(f"values {n}, off by one level {off}, off by more {far}, PIL 8-bit resize off {pil_off}")
print("doc view:", "same" if far == 0 and off * 500 <= n else "differs")
print(f"timm view: values {tn}, off by one level {toff}, off by more {tfar}, the same as the whole view {tsame}")
print("doc timm view:", "same" if tfar == 0 and toff * 500 <= tn and tn > 0 and tsame == 0 else "differs")
print("PIL 8-bit:", "differs" if pil_off * 20 > n else "same")
PY
)
echo "view: $out"
t "the view equals docs/encoder.md's Python (ties apart: $(echo "$out" | head -n 3 | tr "\n" " "))" 'echo "$out" | grep -q "^doc view: same$"'
t "PIL's 8-bit resize is not that view (why the doc gives the Python)" 'echo "$out" | grep -q "^PIL 8-bit: differs$"'
t "--crop-pct 0.875 --interp bicubic: the view equals the doc's Python at crop_pct 0.875, bicubic ($(echo "$out" | grep "^timm view"))" \
  'echo "$out" | grep -q "^doc timm view: same$"'

# JPEG's other names, as PIL registers them: a web browser saves many sites' JPEGs as `.jfif`, and
# `.jpe` is older. They were counted as ignored, named nowhere: a scraped folder of them trained on
# nothing but its .jpg files.
mkdir -p "$dir/web"
/usr/bin/python3 - "$dir/web" <<'PY2'
import sys, numpy as np
from PIL import Image
y, x = np.mgrid[0:20, 0:30]
im = Image.fromarray(np.stack([x * 8, y * 12, (x + y) * 5], -1).astype(np.uint8))
for name in ("saved.jfif", "old.JPE", "plain.jpg"):
    im.save(f"{sys.argv[1]}/{name}", "JPEG", quality=90)
PY2
out=$("$VITMAE" data "$dir/web" 2>&1); rc=$?
t "a .jfif and a .JPE are JPEG candidates ($(echo "$out" | head -n 1))" \
  '[ $rc -eq 0 ] && echo "$out" | grep -q ": 3 ok, 0 skipped, 0 ignored$"'

# The sizes said of a rotated photo are the upright ones, as a viewer shows it and the header probe
# reports it, with the stored size beside: a portrait 24x40 stored as 40x24 with EXIF orientation 6
# was refused as "image 40x24 exceeds --max-pixels 100" (the stored size).
mkdir -p "$dir/rot/a"
for f in orient6.jpg orient6.png orient6.webp orient3.jpg; do cp "$dir/$f" "$dir/rot/a/$f"; done
out=$("$VITMAE" data --max-pixels 100 "$dir/rot" 2>&1)
t "--max-pixels on EXIF-rotated photos: the upright size, the stored one beside ($(echo "$out" | grep orient6.jpg))" \
  '[ "$(echo "$out" | grep -c "orient6\.[a-z]*: image 24x40 (stored 40x24, EXIF orientation 6) exceeds --max-pixels 100$")" -eq 3 ] &&
   echo "$out" | grep -q "orient3\.jpg: image 40x24 exceeds --max-pixels 100$"'

[ $fail -eq 0 ] && echo "cli formats ok"
exit $fail
