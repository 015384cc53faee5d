// Images in and out: PNG (libpng), JPEG (libjpeg-turbo) and WebP (libwebp) decoded into float
// pixels in [0, 1],
// 8-bit PNG written with optional tEXt chunks, and the geometry the model needs (resize, crop, flip,
// channel conversion) on float HWC images.
//
// Decoding (docs/interface.md section 2): the format is recognised by its magic bytes, never the file name.
// PNG: every colour type and bit depth (1/2/4/8/16, palette with tRNS, grey+alpha, Adam7). JPEG:
// baseline, progressive, greyscale, CMYK/YCCK (Adobe-inverted CMYK, with or without the Adobe marker,
// as PIL reads it); the EXIF orientation (APP1, parsed by libexif) is applied after decoding, as PIL's
// ImageOps.exif_transpose. WebP: still images, decoded to RGB (alpha dropped), and an animation of
// one frame, read as that frame on its canvas (0 around it, as PIL opens it); one of more frames is
// refused. 16-bit samples scale by 1/65535, 8-bit by 1/255. Alpha and tRNS are dropped, as PIL's
// convert('RGB'): grey and grey+alpha decode to c = 1, everything else to c = 3. CMYK converts as PIL:
// R = (1 - C)(1 - K), rounded to an 8-bit level. A libjpeg warning (corrupt or truncated data) is an
// error. The pixel limit is checked from the header before the pixel buffer is allocated.
#ifndef VITMAE_IMAGE_H
#define VITMAE_IMAGE_H
#include <stddef.h>
#include <stdint.h>
#include "core/rng.h"
#include "io/files.h"

#define VITMAE_DEFAULT_MAX_PIXELS (64L * 1024 * 1024)

typedef struct { int w, h, c; float *px; } Image;   // px: [h][w][c] row-major, values in [0,1]; c = 1 or 3
// A resize's filter (image_resize): PIL's antialiased bilinear or bicubic.
typedef enum { IMAGE_BILINEAR, IMAGE_BICUBIC } ImageFilter;
// How an evaluation view is made (docs/interface.md, section 2, "Evaluation views"): the shorter side
// resized to image_view_scale(size, crop_pct) with the filter, then the centre size x size kept; timm's
// crop_pct and interpolation. VIEW_WHOLE, vitmae's default: crop fraction 1 (the whole centre square),
// bilinear. VIEW_CROP_PCT_MIN..1 is the range the commands take.
typedef struct { double crop_pct; ImageFilter filter; } ViewSpec;
#define VIEW_WHOLE ((ViewSpec){1.0, IMAGE_BILINEAR})
#define VIEW_CROP_PCT_MIN 0.1
// timm's scale_size: floor(size / crop_pct), the shorter side before the centre crop (256 for 224 at
// 0.875); size itself at crop_pct 1.
long image_view_scale(int size, double crop_pct);

// 0 ok, -1 error (err = a short reason without the path, e.g. "truncated PNG data"). On error *out is
// zeroed. max_pixels <= 0 means VITMAE_DEFAULT_MAX_PIXELS.
int  image_load(const char *path, long max_pixels, Image *out, char *err, size_t errlen);
// image_load, and *alpha = 1 when the file had an alpha channel (dropped: c is 1 or 3 still), else 0.
int  image_load_alpha(const char *path, long max_pixels, Image *out, int *alpha, char *err, size_t errlen);
int  image_load_mem(const uint8_t *buf, size_t len, long max_pixels, Image *out, char *err, size_t errlen);
void image_free(Image *im);
// image_load, but a JPEG decodes at the smallest libjpeg-turbo DCT scale num/8 (num 1..8) whose
// shorter side is still >= min_short (before orientation; 0 = full size). Other formats: full size.
// Cheaper by about the square of the scale; the pixels are the scaled decoder's, not a resize's.
int  image_load_reduced(const char *path, long max_pixels, int min_short, Image *out, char *err, size_t errlen);
// A working image (docs/data.md, "Working images: the whole photo, at a working size"): image_load_reduced
// with min_short T, then, when both sides are still larger than T, image_fit. A still WebP or a PNG is
// resized row by row as its rows are converted (a photo turned by its EXIF orientation, from its decoded
// samples kept whole), without its full-size floats: the same bits, a fraction of the memory (docs/data.md,
// "Big photos on huge pages").
int  image_load_working(const char *path, long max_pixels, int T, Image *out, char *err, size_t errlen);
// torchvision's Resize(size) of a w x h image: the shorter side size, the longer int(size * long /
// short), into *nw x *nh (a long: 224 x 13 billion for a 1 x 60,000,000 image).
void image_resize_size(long w, long h, long size, long *nw, long *nh);
// When both sides of im are larger than T: im resized (image_resize_bilinear) to its image_resize_size
// for T; else unchanged. -1 out of memory (im unchanged).
int  image_fit(Image *im, int T);
// 1 when a decode's reason (err of image_load, image_probe) is this process running out of memory or
// of open files (ulimit -v, ulimit -n), which says nothing about the file: a caller stops instead of
// skipping the image as broken (the same file decodes once memory allows). 2 when it is the buffer
// for the pixels of an image that --max-pixels let through ("image WxH: out of memory for its pixels
// (N bytes, ...); a --max-pixels below W*H skips it"): a stop too, since a photo too large for this
// machine and a header that lies about its size cannot be told apart before the pixels are read; the
// reason says what it needed, and a lower --max-pixels skips such a file on any machine. An image of
// at most IMAGE_OOM_ADVICE_PIXELS pixels gets no such advice ("image WxH: out of memory for its pixels
// (N bytes): the process is out of memory, not the image too large"): a limit that low would skip
// nearly every photo. W x H is the upright size (after EXIF orientation; docs/data.md). Hostile files
// give neither at the default --max-pixels (tests/test_hostile.c); sizes beyond it are refused by name.
#define IMAGE_PIXELS_OOM "out of memory for its pixels"
#define IMAGE_OOM_ADVICE_PIXELS (1ull << 20)
int  image_why_is_resource(const char *why);
// The size (after EXIF orientation) and channels (1 or 3, as image_load would give) from the header
// alone, without decoding pixels; the pixel limit is checked. A file whose pixel data is broken
// probes fine and fails later in image_load.
int  image_probe(const char *path, long max_pixels, int *w, int *h, int *c, char *err, size_t errlen);
// Why a file of another image format is not read, by the extension of its name (data's "ignored"
// list: "GIF is not read; convert it to PNG"), or NULL when the name is no such format's. A decode
// names the same formats by their first bytes ("a GIF file: GIF is not read; ..."): one table holds
// both, the advice once.
const char *image_unread_format(const char *name);
// 1 when the file at path begins as a PNG, a JPEG or a WebP does (its first 12 bytes; at least 3): a
// file named as one of the formats above that is one of the three after all (a JPEG saved as x.heic)
// is read by its content, as every image is (docs/interface.md, section 2). 0 otherwise, or unreadable,
// or named .apng (an animated PNG's bytes begin as a PNG's: its name alone says what it is).
int image_file_is_read(const char *path);
// Applies EXIF orientation 2..8 in place (1 and anything else: unchanged), as PIL's exif_transpose:
// 2 mirror, 3 rotate 180, 4 flip vertically, 5 transpose, 6 rotate 90 clockwise, 7 transverse,
// 8 rotate 90 counter-clockwise. 0 ok, -1 out of memory (image unchanged).
int  image_orient(Image *im, int orientation);

// Writes an 8-bit PNG: px [h][w][c], c = 1 (grey), 3 (RGB) or 4 (RGBA). text: NULL or
// {key, value, key, value, ..., NULL} stored as text chunks (keys 1-79 Latin-1 characters), each value
// as io/json.h's text_escape writes it (bytes that are not UTF-8 as U+FFFD; control characters and
// backslashes as \n, \t, \xHH, \\, as on stdout: PNG allows no control character but a linefeed):
// tEXt when that is ASCII, iTXt (UTF-8) else.
// Written under a temporary name, then renamed over path: a failed write leaves no partial file and
// an earlier file as it was; a link at path is replaced, not written through. 0 ok, -1 with the
// reason alone in err (the caller names path), up to PNG_WRITE_WHY_MAX bytes: a folder whose sync
// fails after the rename is named in it, "written, but its folder DIR could not be synced: why", DIR
// up to FILE_NAME_CUT bytes (io/files.h, file_publish_atomic).
enum { PNG_WRITE_WHY_MAX = FILE_NAME_CUT + 200 };
int  png_write(const char *path, const uint8_t *px, int w, int h, int c, const char *const *text,
               char *err, size_t errlen);
// The same PNG written to fd, a file just made for it (closed here, left in place on failure), or
// fd -1 when making it failed: err then says why, from errno (a command's staged output: the caller
// makes the file under io/files.h's temporary name and publishes it with the others).
int  png_write_fd(int fd, const uint8_t *px, int w, int h, int c, const char *const *text, char *err, size_t errlen);

// A file as the model sees it at inference: image_load, the evaluation view (view) in the file's own
// channels, rounded to 8-bit levels (as the dataset's views), then converted to `channels`.
// out [size][size][channels]. 0 ok, -1 with the reason (without the path) in err.
int  image_load_view(const char *path, long max_pixels, int size, ViewSpec view, int channels, float *out,
                     char *err, size_t errlen);
// The same view of an image already decoded (image_load_view is image_load + this).
int  image_view(const Image *im, int size, ViewSpec view, int channels, float *out, char *err, size_t errlen);
// Evaluation view: shorter side resized with view.filter to S = image_view_scale(size, view.crop_pct)
// (torchvision Resize(S): the longer side becomes int(S * long / short)), then centre crop size x size
// with top = round((h - size) / 2) (round half to even, as Python). A side already at its resized
// length is not resized (an image already size x size at crop fraction 1 is copied pixel for pixel).
// Channels converted last (see image_convert_channels). out [size][size][channels]. 0, or -1 out of
// memory for its filter tables or its band of source rows (out untouched: the caller says so, not a
// black view).
int  image_eval_view(const Image *src, int size, ViewSpec view, int channels, float *out);
// The region of a w x h source that image_eval_view shows, in source pixels (fractional):
// box = {x, y, width, height}; the whole image when w == h == size at crop fraction 1.
void image_eval_box(int w, int h, int size, double crop_pct, double box[4]);
// torchvision RandomResizedCrop(size, scale=(scale_lo, 1.0), ratio=(3/4, 4/3)) parameters: 10 attempts of
// area ~ U(scale_lo, 1) * area and log-aspect ~ U(log 3/4, log 4/3), w = round(sqrt(area * ratio)),
// h = round(sqrt(area / ratio)), accepted when 0 < w <= W and 0 < h <= H, offsets uniform; otherwise
// the centre crop with the aspect ratio clamped to [3/4, 4/3]. Returns the box (x, y, w, h).
void image_rrc_params(int w, int h, double scale_lo, Rng *rng, int *cx, int *cy, int *cw, int *ch);
// Random resized crop (image_rrc_params, then the box resized to size x size with the filter, as
// torchvision's resized_crop on a PIL image: crop, then resize) + channel conversion. No flip: call
// image_flip_h for that. out [size][size][channels]. 0, or -1 out of memory (the crop's box, as large
// as the crop; the filter tables), out untouched, as image_eval_view.
int  image_random_resized_crop(const Image *src, int size, int channels, double scale_lo, ImageFilter filter, Rng *rng,
                               float *out);
void image_flip_h(float *px, int w, int h, int c);
// Separable resize with PIL's / torchvision-antialias bilinear: a triangle filter whose support grows
// by the shrink factor when shrinking (so it averages), plain bilinear (align_corners=False, edges
// clamped) when enlarging. src [sh][sw][c] -> dst [dh][dw][c]. 0, or -1 out of memory (its filter
// tables, the pass between the two axes), dst untouched: never a nearest-neighbour stand-in
// (docs/data.md, "out of memory").
int  image_resize_bilinear(const float *src, int sw, int sh, int c, float *dst, int dw, int dh);
// The same resize with either of PIL's filters: IMAGE_BILINEAR (image_resize_bilinear) or IMAGE_BICUBIC
// (Keys' cubic with a = -0.5, support 2, grown by the shrink factor as the triangle's is; PIL's
// Image.resize(BICUBIC) in mode F, so torchvision's InterpolationMode.BICUBIC before its 8-bit
// rounding). Bicubic rings: values may fall a little outside the source's range (the 8-bit rounding
// of a view clamps them, as PIL's 8-bit resize does).
int  image_resize(const float *src, int sw, int sh, int c, float *dst, int dw, int dh, ImageFilter filter);
// n pixels from cin to cout channels: grey -> RGB replicates; RGB -> grey is
// L = 0.299 R + 0.587 G + 0.114 B; same count copies. src and dst must not overlap unless cin == cout.
void image_convert_channels(const float *src, int cin, float *dst, int cout, size_t n);
// Copies the sub-rectangle (x, y, w, h) of src into dst [h][w][src->c].
void image_crop(const Image *src, int x, int y, int w, int h, float *dst);
// Rounds every value to the nearest of the 256 8-bit levels (v = round(255 v) / 255, clamped): what
// an 8-bit pipeline (PIL) would hold after the same geometry.
void image_quantize8(float *px, size_t n);
// 1 when every value is exactly k / 255 for an integer k (the image survives an 8-bit round trip).
int  image_is_8bit(const float *px, size_t n);
#endif
