// Image decode (libpng, libjpeg-turbo, libwebp and its demux API; libexif and zlib for the EXIF orientation),
// PNG encode, and geometry on float HWC images.
//
// Error handling with the two C libraries: both report errors through a callback that must not
// return, so the callback longjmps back to the decoder function that called setjmp. Everything the
// decoder owns (library structs, row buffers, the pixel buffer) lives in a context struct outside
// that frame, so the code after setjmp can free it; no local variable is read after a longjmp.
#include "data/image.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <jpeglib.h>
#include <jerror.h>
#include <libdeflate.h>
#include <libexif/exif-data.h>
#include <webp/decode.h>
#include <webp/demux.h>
#include <zlib.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/files.h"
#include "io/json.h"
#include "kernels/cpu.h"

static void set_err(char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
}

// errno's strerror text as the C library gives it ("Permission denied", "No such file or directory",
// "No space left on device"): the wording of every file's failed open, read or write (io/files.h,
// file_reason), as cat or Python's OSError says it, whether the file is an image or a checkpoint,
// found by a folder's scan or given as an INPUT (docs/interface.md, section 2, "Bad files"). The
// decoders' own reasons stay lowercase ("not a PNG, JPEG or WebP file").
static void errno_reason(int e, char *err, size_t errlen) {
    char buf[128];
    set_err(err, errlen, file_reason(e, buf, sizeof buf));
}

static long effective_limit(long max_pixels) { return max_pixels > 0 ? max_pixels : VITMAE_DEFAULT_MAX_PIXELS; }

// The size of a w x h image (as its header stores it) as a user sees it in a viewer: upright, after
// its EXIF orientation (1..8; anything else: none), with the stored size too when the two differ
// ("3000x4000 (stored 4000x3000, EXIF orientation 6)"; docs/data.md, "Files").
static void upright_size(unsigned long w, unsigned long h, int orientation, char *buf, size_t len) {
    if (orientation >= 5 && orientation <= 8)
        snprintf(buf, len, "%lux%lu (stored %lux%lu, EXIF orientation %d)", h, w, w, h, orientation);
    else
        snprintf(buf, len, "%lux%lu", w, h);
}

static int pixel_limit_exceeded(unsigned long w, unsigned long h, int orientation, long max_pixels, char *err, size_t errlen) {
    long limit = effective_limit(max_pixels);
    if ((unsigned long long)w * h <= (unsigned long long)limit) return 0;
    char size[96];
    upright_size(w, h, orientation, size, sizeof size);
    if (err && errlen) snprintf(err, errlen, "image %s exceeds --max-pixels %ld", size, limit);
    return 1;
}

// The reason when the buffers for the pixels of a w x h image (bytes in all; w, h as the header
// stores them, said upright as upright_size does) cannot be allocated: the size and the bytes, the
// process's memory limit when it has one, and, for an image of more than IMAGE_OOM_ADVICE_PIXELS
// pixels, the --max-pixels that refuses it by name on any machine (a broken header may claim a size
// its data cannot hold). A smaller image failing means the process itself is out of memory: a
// --max-pixels low enough to skip it would skip nearly every photo, so none is advised.
// image_why_is_resource: 2.
static void pixels_oom(unsigned long w, unsigned long h, int orientation, size_t bytes, char *err, size_t errlen) {
    char limit[64] = "", size[96];
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(limit, sizeof limit, ", under ulimit -v %llu KB", (unsigned long long)rl.rlim_cur / 1024);
    else if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(limit, sizeof limit, ", under ulimit -d %llu KB", (unsigned long long)rl.rlim_cur / 1024);
    upright_size(w, h, orientation, size, sizeof size);
    if (!err || !errlen) return;
    // Below a GiB in MiB: "0.0 GiB" was said of 48 MiB (docs/interface.md, section 2).
    char amount[48];
    if (bytes >= 1073741824.0) snprintf(amount, sizeof amount, "%.1f GiB", bytes / 1073741824.0);
    else snprintf(amount, sizeof amount, "%.0f MiB", bytes / 1048576.0);
    if ((unsigned long long)w * h > IMAGE_OOM_ADVICE_PIXELS)
        snprintf(err, errlen, "image %s: " IMAGE_PIXELS_OOM " (%zu bytes, %s%s); a --max-pixels below %llu skips it",
                 size, bytes, amount, limit, (unsigned long long)w * h);
    else
        snprintf(err, errlen, "image %s: " IMAGE_PIXELS_OOM " (%zu bytes%s): the process is out of memory, not the image too large",
                 size, bytes, limit);
}

// The bytes a decode holds at once, for the out-of-memory line (docs/data.md): first, the buffers held
// together as the first allocation is made, or, for an image turned by its EXIF orientation (2..8)
// outside the row fits, its pixels and their turned copy (image_orient) when that is more. A line that
// said the first alone sent a user who raised the limit past it into the second.
static size_t decode_peak(int orientation, size_t first, size_t px) {
    size_t both = orientation >= 2 && orientation <= 8 ? 2 * px : 0;
    return both > first ? both : first;
}

// What a decode is asked for: the pixel limit, a shorter side the result may shrink to (JPEG DCT
// scaling; 0 = full size), or only the header (size and channels, no pixels). A probe given only the
// first bytes of a file also has the file open (fd, file_size bytes; else fd is -1): a PNG's metadata
// chunks after the image data are read from it. alpha, when not NULL, is set to whether the file had an
// alpha channel (PNG's, tRNS included, or WebP's), which the decode drops.
typedef struct {
    long max_pixels;
    int min_short;
    int fit;           // image_load_working's T: a still WebP or a PNG, of any EXIF orientation, is resized row by row
    int header_only;
    int fd;
    uint64_t file_size;
    int *alpha;
} DecodeOpts;

// A decoded image's pixels (and a libpng or libwebp buffer of its size): malloc'ed and, when large,
// advised to be 2 MB huge pages before the first touch (kernels/cpu.h). A 4096 x 4096 photo's floats
// are 201 MB: 49,152 small pages, each a fault on first touch (docs/data.md, "Big photos on huge pages").
static void *pixels_alloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (p) cpu_advise_huge_pages(p, bytes);
    return p;
}

void image_free(Image *im) {
    if (!im) return;
    free(im->px);
    im->px = NULL;
    im->w = im->h = im->c = 0;
}

// ---------------------------------------------------------------------------------------------
// EXIF orientation, as PIL 9.4's ImageOps.exif_transpose reads it (docs/data.md, "Files")

// The orientation PIL applies for one IFD0 entry: the first value when it equals a whole number 2..8.
// PIL turns SHORT, LONG, SBYTE, SSHORT, SLONG, RATIONAL, SRATIONAL, FLOAT and DOUBLE into numbers
// (6/1 and 6.0 equal 6; 13/2 and n/0 match nothing); BYTE, ASCII and UNDEFINED it keeps as bytes or
// text, which exif_transpose ignores. 1 means "leave as decoded".
static int exif_entry_orientation(const ExifEntry *e, ExifByteOrder bo) {
    unsigned unit = exif_format_get_size(e->format);
    if (e->components < 1 || unit == 0 || e->size < unit) return 1;
    const unsigned char *d = e->data;
    double v;
    switch (e->format) {
    case EXIF_FORMAT_SHORT: v = exif_get_short(d, bo); break;
    case EXIF_FORMAT_LONG: v = exif_get_long(d, bo); break;
    case EXIF_FORMAT_SBYTE: v = (int8_t)d[0]; break;
    case EXIF_FORMAT_SSHORT: v = exif_get_sshort(d, bo); break;
    case EXIF_FORMAT_SLONG: v = exif_get_slong(d, bo); break;
    case EXIF_FORMAT_RATIONAL: {
        ExifRational q = exif_get_rational(d, bo);
        if (q.denominator == 0 || q.numerator % q.denominator) return 1;
        v = q.numerator / q.denominator;
        break;
    }
    case EXIF_FORMAT_SRATIONAL: {
        ExifSRational q = exif_get_srational(d, bo);
        long long n = q.numerator, m = q.denominator;
        if (m == 0 || n % m) return 1;
        v = (double)(n / m);
        break;
    }
    case EXIF_FORMAT_FLOAT: {
        uint32_t bits = exif_get_long(d, bo);
        float f;
        memcpy(&f, &bits, sizeof f);
        v = f;
        break;
    }
    case EXIF_FORMAT_DOUBLE: {
        uint64_t hi = exif_get_long(d + (bo == EXIF_BYTE_ORDER_MOTOROLA ? 0 : 4), bo);
        uint64_t lo = exif_get_long(d + (bo == EXIF_BYTE_ORDER_MOTOROLA ? 4 : 0), bo);
        uint64_t bits = hi << 32 | lo;
        memcpy(&v, &bits, sizeof v);
        break;
    }
    default: return 1;
    }
    return v >= 2 && v <= 8 && v == (int)v ? (int)v : 1;
}

// Loads block ("Exif\0\0" + a TIFF header and IFDs) with libexif: 0 when IFD0 has no orientation
// entry libexif could read, else the orientation PIL applies (1..8); -1 out of memory.
static int exif_load_orientation(const uint8_t *block, size_t len) {
    ExifData *ed = exif_data_new();
    if (!ed) return -1;   // out of memory
    exif_data_unset_option(ed, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
    exif_data_unset_option(ed, EXIF_DATA_OPTION_IGNORE_UNKNOWN_TAGS);
    exif_data_load_data(ed, block, (unsigned)len);
    ExifEntry *e = exif_content_get_entry(ed->ifd[EXIF_IFD_0], EXIF_TAG_ORIENTATION);
    int orientation = e ? exif_entry_orientation(e, exif_data_get_byte_order(ed)) : 0;
    exif_data_unref(ed);
    return orientation;
}

#define EXIF_HIDDEN_TAG 0xffff   // a tag nothing reads, written over the orientation copies set aside
#define EXIF_FORMAT_IFD 13       // TIFF types PIL reads (as LONG and as an 8-byte LONG8) and libexif drops
#define EXIF_FORMAT_LONG8 16

// The orientation PIL applies for an IFD0 entry of type IFD or LONG8 at entry (a 12-byte entry of
// the TIFF at tiff): 0 when PIL cannot read its values (none, or past the end), else 1..8 as above.
static int exif_wide_orientation(const uint8_t *tiff, size_t len, size_t entry, ExifByteOrder bo) {
    int format = exif_get_short(tiff + entry + 2, bo);
    uint64_t count = exif_get_long(tiff + entry + 4, bo), unit = format == EXIF_FORMAT_IFD ? 4 : 8;
    size_t at = entry + 8;
    if (count == 0) return 0;
    if (count * unit > 4) {
        at = exif_get_long(tiff + entry + 8, bo);
        if (at > len || count * unit > len - at) return 0;
    }
    uint64_t v = exif_get_long(tiff + at, bo);
    if (format == EXIF_FORMAT_LONG8) {
        uint64_t second = exif_get_long(tiff + at + 4, bo);
        v = bo == EXIF_BYTE_ORDER_MOTOROLA ? v << 32 | second : second << 32 | v;
    }
    return v >= 2 && v <= 8 ? (int)v : 1;
}

// Whether PIL cannot read the values of the IFD0 entry at entry, so that it reads no entry from there
// on: PIL 9.4's ImageFileDirectory_v2.load (PIL/TiffImagePlugin.py) skips a type it does not know,
// and for one it knows reads count * unit bytes, at the entry's offset when over 4, with
// ImageFile._safe_read, whose "Truncated File Read" when they run past the block's end is caught
// around the whole loop: that entry and every one after it are dropped (the ones before stay).
// libexif drops that entry alone and reads on.
static int exif_entry_cuts_ifd(const uint8_t *tiff, size_t len, size_t entry, ExifByteOrder bo) {
    // PIL's unit size per TIFF type 1..16 (0: a type it skips)
    static const uint8_t unit[17] = {0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4, 0, 0, 8};
    unsigned format = exif_get_short(tiff + entry + 2, bo);
    if (format >= sizeof unit || unit[format] == 0) return 0;
    uint64_t size = (uint64_t)exif_get_long(tiff + entry + 4, bo) * unit[format];
    return size > 4 && (uint64_t)exif_get_long(tiff + entry + 8, bo) + size > len;
}

// Renames the orientation entry at entry of the TIFF in block (after its "Exif\0\0") to tag.
static void exif_set_tag(uint8_t *block, size_t entry, uint16_t tag, ExifByteOrder bo) {
    block[6 + entry] = (uint8_t)(bo == EXIF_BYTE_ORDER_INTEL ? tag & 0xff : tag >> 8);
    block[6 + entry + 1] = (uint8_t)(bo == EXIF_BYTE_ORDER_INTEL ? tag >> 8 : tag & 0xff);
}

// The orientation of an EXIF block, tiff pointing at its TIFF header ("II*\0" or "MM\0*"): 0 when
// IFD0 has no orientation entry, else 1..8 as above. libexif keeps the first of two entries with the
// same tag, PIL the last one it can read: so when IFD0 names the orientation more than once, the
// block is loaded once per copy, from the last back, with the other copies' tags renamed, until one
// loads. Copies at or after an entry whose values run past the block's end are renamed too: PIL reads
// no entry from there on (exif_entry_cuts_ifd). Only IFD0's table of tags is looked at here; libexif
// reads the values, except those of types IFD and LONG8, which it drops and PIL reads
// (exif_wide_orientation). -1 out of memory: the caller fails the image rather than give it unturned
// (docs/data.md, "out of memory").
static int exif_orientation(const uint8_t *tiff, size_t len) {
    if (len > UINT_MAX - 6) return 0;
    uint8_t *block = malloc(len + 6);
    if (!block) return -1;   // out of memory: not "no orientation" (docs/data.md, "out of memory")
    memcpy(block, "Exif\0\0", 6);
    memcpy(block + 6, tiff, len);
    // PIL 9.4 also takes the TIFF headers "MM*\0" and "II\0*" (the magic's two bytes swapped), in the
    // byte order their letters name (PIL/TiffImagePlugin.py's PREFIXES), which libexif refuses: they
    // are given the valid magic (docs/data.md, "Files").
    if (len >= 4 && !memcmp(tiff, "MM\x2a\x00", 4)) memcpy(block + 6, "MM\x00\x2a", 4);
    if (len >= 4 && !memcmp(tiff, "II\x00\x2a", 4)) memcpy(block + 6, "II\x2a\x00", 4);
    size_t at[64];   // the offsets in tiff of IFD0's orientation entries
    int n = 0;
    ExifByteOrder bo = len >= 1 && tiff[0] == 'I' ? EXIF_BYTE_ORDER_INTEL : EXIF_BYTE_ORDER_MOTOROLA;
    if (len >= 8 && (!memcmp(tiff, "II", 2) || !memcmp(tiff, "MM", 2))) {
        size_t ifd0 = exif_get_long(tiff + 4, bo);
        size_t count = ifd0 <= len - 2 ? exif_get_short(tiff + ifd0, bo) : 0;
        int cut = 0;   // PIL has stopped reading IFD0 at an earlier entry or this one
        for (size_t i = 0; i < count && ifd0 + 2 + 12 * (i + 1) <= len; i++) {
            size_t entry = ifd0 + 2 + 12 * i;
            cut = cut || exif_entry_cuts_ifd(tiff, len, entry, bo);
            if (exif_get_short(tiff + entry, bo) != EXIF_TAG_ORIENTATION) continue;
            if (cut) exif_set_tag(block, entry, EXIF_HIDDEN_TAG, bo);
            else if (n < 64) at[n++] = entry;
        }
    }
    int orientation = 0;
    if (n == 0) orientation = exif_load_orientation(block, len + 6);
    for (int k = n - 1; k >= 0 && orientation == 0; k--) {
        int format = exif_get_short(tiff + at[k] + 2, bo);
        if (format == EXIF_FORMAT_IFD || format == EXIF_FORMAT_LONG8) {
            orientation = exif_wide_orientation(tiff, len, at[k], bo);
            continue;
        }
        for (int i = 0; n > 1 && i < n; i++)
            exif_set_tag(block, at[i], i == k ? EXIF_TAG_ORIENTATION : EXIF_HIDDEN_TAG, bo);
        orientation = exif_load_orientation(block, len + 6);
    }
    free(block);
    return orientation;
}

// The stored pixel (*sx, *sy) of a W x H image that EXIF orientation (2..8) shows at (x, y) of the
// upright one, as PIL's Image.transpose methods place it (image_orient; the row fits of rotated photos).
static void orient_source(int orientation, int W, int H, int x, int y, int *sx, int *sy) {
    switch (orientation) {
    case 2: *sx = W - 1 - x; *sy = y; break;               // FLIP_LEFT_RIGHT
    case 3: *sx = W - 1 - x; *sy = H - 1 - y; break;       // ROTATE_180
    case 4: *sx = x; *sy = H - 1 - y; break;               // FLIP_TOP_BOTTOM
    case 5: *sx = y; *sy = x; break;                       // TRANSPOSE
    case 6: *sx = y; *sy = H - 1 - x; break;               // ROTATE_270 (90 degrees clockwise)
    case 7: *sx = W - 1 - y; *sy = H - 1 - x; break;       // TRANSVERSE
    default: *sx = W - 1 - y; *sy = x; break;              // 8: ROTATE_90 (counter-clockwise)
    }
}

// Sample s of a decoded row of depth 8 or 16 (big-endian) as a float in [0, 1].
static float sample_at(const uint8_t *row, size_t s, int depth) {
    return depth == 16 ? (float)((row[2 * s] << 8) | row[2 * s + 1]) / 65535.0f : (float)row[s] / 255.0f;
}

// Row y of the upright image as c floats a pixel into dst, from the stored w x h samples (rows stride
// bytes apart, in_c samples a pixel of depth 8 or 16, the first c of them taken; alpha dropped) that
// EXIF orientation turns (1: as stored, where h may be 1: one row as it comes). The decoders' rows,
// the right way up or read across the stored ones (the row fits of image_load_working).
static void upright_row(float *dst, const uint8_t *samples, size_t stride, int w, int h, int in_c, int c, int depth,
                        int orientation, int y) {
    int swap = orientation >= 5 && orientation <= 8, uw = swap ? h : w;
    if (orientation < 2 || orientation > 8) {
        const uint8_t *row = samples + (size_t)y * stride;
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c; k++) dst[(size_t)x * c + k] = sample_at(row, (size_t)x * in_c + k, depth);
        return;
    }
    for (int x = 0; x < uw; x++) {
        int sx, sy;
        orient_source(orientation, w, h, x, y, &sx, &sy);
        const uint8_t *row = samples + (size_t)sy * stride;
        for (int k = 0; k < c; k++) dst[(size_t)x * c + k] = sample_at(row, (size_t)sx * in_c + k, depth);
    }
}

// ---------------------------------------------------------------------------------------------
// PNG EXIF orientation, as PIL 9.4 reads a PNG's metadata (docs/data.md, "Files")
//
// PIL keeps a dictionary of the chunks it has read, each later chunk replacing an earlier one of the
// same key: "exif" (an eXIf chunk, or a tEXt/zTXt/iTXt text chunk with that keyword), "Raw profile type
// exif" (hex text, as ImageMagick writes it) and "XML:com.adobe.xmp". It reads the chunks before the
// image data and, when no "exif" is among them, the chunks after it too. Then the orientation comes
// from "exif", else from the hex profile, else (when the EXIF names none) from the XMP.

static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

#define PNG_TEXT_MAX (1u << 20)   // PIL refuses a compressed text that inflates past 1 MiB (MAX_TEXT_CHUNK)

typedef struct {
    uint8_t *value;   // NULL: PIL has no such key
    size_t len;
    int text;         // "exif" from a zTXt or iTXt chunk: a string, which PIL fails to load as EXIF
} PngKey;

typedef struct {
    PngKey exif, raw, xmp;
    int past_idat;    // the chunks now come after the image data
    int oom;          // memory ran out for a chunk PIL reads: the orientation is unknown, not 1
} PngMeta;

static void png_key_set(PngMeta *m, PngKey *k, const uint8_t *v, size_t n, int text) {
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy) { m->oom = 1; return; }
    if (n) memcpy(copy, v, n);
    free(k->value);
    *k = (PngKey){copy, n, text};
}

static void png_meta_free(PngMeta *m) {
    free(m->exif.value);
    free(m->raw.value);
    free(m->xmp.value);
}

// Python's strict UTF-8 decoding succeeds on s (no overlong forms, surrogates or code points past
// U+10FFFF): PIL drops an iTXt chunk that fails it.
static int utf8_valid_n(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t c = s[i], min;
        size_t more;
        if (c < 0x80) { i++; continue; }
        if ((c & 0xe0) == 0xc0) more = 1, c &= 0x1f, min = 0x80;
        else if ((c & 0xf0) == 0xe0) more = 2, c &= 0x0f, min = 0x800;
        else if ((c & 0xf8) == 0xf0) more = 3, c &= 0x07, min = 0x10000;
        else return 0;
        if (n - i <= more) return 0;
        for (size_t j = 1; j <= more; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return 0;
            c = c << 6 | (s[i + j] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
        i += more + 1;
    }
    return 1;
}

// Inflates a text chunk's zlib stream as PIL does (zlib.decompressobj, at most PNG_TEXT_MAX bytes):
// 0 with *out (malloc'd, *outlen bytes; a stream cut short gives what it holds), 1 when the data is
// not zlib (zlib.error), 2 when PIL refuses it (more than PNG_TEXT_MAX bytes), 3 out of memory here.
static int png_inflate(const uint8_t *in, size_t n, uint8_t **out, size_t *outlen) {
    *out = NULL;
    *outlen = 0;
    if (n > UINT_MAX) return 2;
    uint8_t *buf = malloc(PNG_TEXT_MAX + 1);
    if (!buf) return 3;
    z_stream z = {0};
    int init = inflateInit(&z);
    if (init != Z_OK) { free(buf); return init == Z_MEM_ERROR ? 3 : 2; }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = buf;
    z.avail_out = PNG_TEXT_MAX + 1;
    int rc = inflate(&z, Z_FINISH);
    size_t got = PNG_TEXT_MAX + 1 - z.avail_out;
    inflateEnd(&z);
    if (got > PNG_TEXT_MAX) rc = 2;
    else if (rc == Z_STREAM_END || rc == Z_BUF_ERROR || rc == Z_OK) rc = 0;   // Z_BUF_ERROR: input ends early
    else rc = 1;
    if (rc) { free(buf); return rc; }
    *out = buf;
    *outlen = got;
    return 0;
}

// 1 when key (keylen bytes) is one of the keys PIL's orientation reads.
static int png_key_wanted(const uint8_t *key, size_t keylen) {
    static const char *const wanted[] = {"exif", "Raw profile type exif", "XML:com.adobe.xmp"};
    for (int i = 0; i < 3; i++)
        if (keylen == strlen(wanted[i]) && !memcmp(key, wanted[i], keylen)) return 1;
    return 0;
}

static void png_meta_text(PngMeta *m, const uint8_t *key, size_t keylen, const uint8_t *v, size_t n, int text) {
    if (!png_key_wanted(key, keylen)) return;
    PngKey *k = key[0] == 'e' ? &m->exif : key[0] == 'R' ? &m->raw : &m->xmp;
    png_key_set(m, k, v, n, key[0] == 'e' && text);
}

// One chunk (type, n bytes of data), as PIL's PngStream reads it (chunk_eXIf, chunk_tEXt, ...).
static void png_meta_chunk(PngMeta *m, const uint8_t *type, const uint8_t *d, size_t n) {
    if (!memcmp(type, "eXIf", 4)) {   // PIL's value: "Exif\0\0" and the chunk
        uint8_t *block = malloc(n + 6);
        if (!block) { m->oom = 1; return; }
        memcpy(block, "Exif\0\0", 6);
        memcpy(block + 6, d, n);
        png_key_set(m, &m->exif, block, n + 6, 0);
        free(block);
        return;
    }
    const uint8_t *nul = memchr(d, 0, n);
    size_t keylen = nul ? (size_t)(nul - d) : n;
    const uint8_t *v = nul ? nul + 1 : d + n;
    size_t vn = nul ? n - keylen - 1 : 0;
    if (keylen == 0 || !png_key_wanted(d, keylen)) return;
    if (!memcmp(type, "tEXt", 4)) {
        png_meta_text(m, d, keylen, v, vn, 0);
    } else if (!memcmp(type, "zTXt", 4)) {
        if (vn && v[0] != 0) return;   // an unknown compression method: PIL fails on the chunk
        uint8_t *text;
        size_t len;
        int rc = png_inflate(vn ? v + 1 : v, vn ? vn - 1 : 0, &text, &len);
        if (rc == 3) m->oom = 1;
        if (rc >= 2) return;
        png_meta_text(m, d, keylen, text, rc == 1 ? 0 : len, 1);   // not zlib: PIL keeps an empty text
        free(text);
    } else if (!memcmp(type, "iTXt", 4)) {
        // keyword \0 flag method language \0 translated keyword \0 text
        if (!nul || vn < 2) return;
        int compressed = v[0] != 0, method = v[1];
        const uint8_t *lang = v + 2, *end = v + vn;
        const uint8_t *lang_end = memchr(lang, 0, (size_t)(end - lang));
        const uint8_t *tk_end = lang_end ? memchr(lang_end + 1, 0, (size_t)(end - lang_end - 1)) : NULL;
        if (!tk_end || (compressed && method != 0)) return;
        if (!utf8_valid_n(lang, (size_t)(lang_end - lang)) || !utf8_valid_n(lang_end + 1, (size_t)(tk_end - lang_end - 1)))
            return;
        const uint8_t *t = tk_end + 1;
        size_t tn = (size_t)(end - t);
        uint8_t *text = NULL;
        if (compressed) {
            int rc = png_inflate(t, tn, &text, &tn);
            if (rc == 3) m->oom = 1;
            if (rc) return;
            t = text;
        }
        if (utf8_valid_n(t, tn)) png_meta_text(m, d, keylen, t, tn, 1);
        free(text);
    }
}

// PIL's bytes.fromhex("".join(text.split("\n")[3:])): the profile after its first three lines
// (ImageMagick writes "\nexif\n<length>\n"; the length is not read), as hex digit pairs with other
// whitespace allowed between the pairs. 0 with *out (malloc'd), -1 where PIL raises ValueError, -2 out
// of memory here.
static int png_raw_profile(const PngKey *k, uint8_t **out, size_t *outlen) {
    const uint8_t *s = k->value, *end = k->value + k->len;
    for (int lines = 0; s < end && lines < 3; s++) lines += *s == '\n';
    uint8_t *b = malloc((size_t)(end - s) / 2 + 1);
    if (!b) return -2;
    size_t n = 0;
    int half = -1;   // the first digit of a pair, once read
    for (; s < end; s++) {
        int c = *s, digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (c == '\n') continue;   // the lines were joined
        if (half < 0 && (c == ' ' || (c >= '\t' && c <= '\r'))) continue;
        if (digit < 0) { free(b); return -1; }
        if (half < 0) half = digit;
        else b[n++] = (uint8_t)(half << 4 | digit), half = -1;
    }
    if (half >= 0) { free(b); return -1; }
    *out = b;
    *outlen = n;
    return 0;
}

// The orientation PIL applies (1..8) from what m holds (Image.getexif, ImageOps.exif_transpose).
// Where PIL raises instead (an "exif" text, a profile that is not hex), the image stays as decoded.
// -1 when memory ran out for what it needed (m->oom, or the profile's bytes): not the upright image
// PIL gives, so no image at all (docs/data.md, "out of memory").
static int png_meta_orientation(const PngMeta *m) {
    int orientation = 0;
    const uint8_t *exif = m->exif.value;
    size_t len = m->exif.len;
    uint8_t *raw = NULL;
    if (m->oom) return -1;
    if (m->exif.value && m->exif.text && len) return 1;
    if (!m->exif.value && m->raw.value) {
        int rc = png_raw_profile(&m->raw, &raw, &len);
        if (rc) return rc == -2 ? -1 : 1;
        exif = raw;
    }
    if (exif && len >= 6 && !memcmp(exif, "Exif\0\0", 6)) exif += 6, len -= 6;
    if (exif && len) orientation = exif_orientation(exif, len);
    free(raw);
    if (orientation < 0) return -1;
    if (orientation) return orientation;
    // The digit after the first `tiff:Orientation="` or `tiff:Orientation>` (PIL's regular expression).
    if (!m->xmp.value) return 1;
    const uint8_t *x = m->xmp.value, *end = x + m->xmp.len;
    static const char pat[] = "tiff:Orientation";
    const size_t plen = sizeof pat - 1;
    for (; (size_t)(end - x) > plen; x++) {
        if (memcmp(x, pat, plen)) continue;
        const uint8_t *q = x + plen;
        if (end - q >= 3 && q[0] == '=' && q[1] == '"') q += 2;
        else if (end - q >= 2 && q[0] == '>') q += 1;
        else continue;
        if (*q >= '0' && *q <= '9') return *q >= '2' && *q <= '8' ? *q - '0' : 1;
    }
    return 1;
}

// Where a PNG's bytes are: buf holds [base, base + len) of the file; the rest, for a probe, is read
// from fd (-1: none) up to size.
typedef struct {
    const uint8_t *buf;
    uint64_t base;
    size_t len;
    int fd;
    uint64_t size;
} PngSource;

// n bytes at off: a pointer into buf, else into *tmp (read from fd into memory the caller frees);
// NULL when the file ends first, or out of memory for *tmp (then *oom is set, where oom is not NULL).
static const uint8_t *png_bytes(const PngSource *s, uint64_t off, size_t n, uint8_t **tmp, int *oom) {
    *tmp = NULL;
    if (off >= s->base && off - s->base <= s->len && n <= s->len - (off - s->base)) return s->buf + (off - s->base);
    if (s->fd < 0 || off > s->size || n > s->size - off) return NULL;
    uint8_t *b = malloc(n ? n : 1);
    if (!b && oom) *oom = 1;
    size_t got = 0;
    while (b && got < n) {
        ssize_t r = pread(s->fd, b + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    if (!b || got < n) { free(b); return NULL; }
    *tmp = b;
    return b;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int png_type_ok(const uint8_t *t) {
    for (int i = 0; i < 4; i++)
        if (!((t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= 'a' && t[i] <= 'z'))) return 0;
    return 1;
}

#define PNG_TAIL_BYTES (256u << 10)

// A probe's way past the image data, which can be tens of MiB in 8 KiB IDAT chunks (reading each
// chunk's header would read most of the file from disk): the chunks from pos to the end, found from
// the end. A PNG ends with IEND, and the chunk before a found one is the one whose length says it
// ends there and whose CRC agrees (a false match needs two 32-bit fields to agree by chance). When
// that walk back, within the file's last PNG_TAIL_BYTES, reaches an IDAT or pos itself, *tail holds
// those bytes and the offset to read on from is returned; else 0 (a last IDAT larger than that,
// bytes after IEND, a broken chunk), and the chunks are read one by one.
static uint64_t png_tail(const PngSource *s, uint64_t pos, PngSource *tail) {
    if (s->fd < 0 || pos >= s->size || s->size - pos < 12) return 0;
    size_t n = s->size - pos < PNG_TAIL_BYTES ? (size_t)(s->size - pos) : PNG_TAIL_BYTES;
    uint64_t base = s->size - n;
    const PngSource file = {NULL, 0, 0, s->fd, s->size};
    uint8_t *b;
    if (!png_bytes(&file, base, n, &b, NULL)) return 0;   // out of memory too: the chunks one by one
    static const uint8_t iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    size_t end = n - 12;   // where the chunk looked for ends, in b
    uint64_t from = 0;
    int ok = !memcmp(b + end, iend, 12);
    while (ok && !from) {
        if (base + end == pos) { from = pos; break; }
        if (end < 12) { ok = 0; break; }
        size_t p = end - 12;
        while (ok && !(be32(b + p) == end - p - 12 && png_type_ok(b + p + 4) &&
                       crc32(0, b + p + 4, (uInt)(end - p - 8)) == be32(b + end - 4)))
            ok = p-- > 0;
        if (ok && !memcmp(b + p + 4, "IDAT", 4)) from = base + p;
        end = p;
    }
    if (!from) { free(b); return 0; }
    *tail = (PngSource){b, base, n, -1, s->size};
    return from;
}

// The orientation PIL applies to the PNG in s (1..8), from its chunks in file order; -1 out of memory.
static int png_orientation(const PngSource *s) {
    PngMeta m = {0};
    PngSource tail = {0};
    const PngSource *src = s;
    int tail_tried = 0;
    uint64_t pos = 8;
    for (;;) {
        if (!tail_tried && m.past_idat && s->fd >= 0 && (pos < s->base || pos - s->base + 8 > s->len)) {
            tail_tried = 1;
            uint64_t from = png_tail(s, pos, &tail);
            if (from) src = &tail, pos = from;
            else posix_fadvise(s->fd, 0, 0, POSIX_FADV_RANDOM);   // headers only: no read-ahead between
        }
        uint8_t *tmp;
        const uint8_t *head = png_bytes(src, pos, 8, &tmp, &m.oom);
        if (!head) break;
        uint8_t type[4];
        uint32_t len = be32(head);
        memcpy(type, head + 4, 4);
        free(tmp);
        if (len > 0x7fffffffu || !png_type_ok(type) || !memcmp(type, "IEND", 4)) break;
        if (!memcmp(type, "IDAT", 4) && !m.past_idat) {
            m.past_idat = 1;
            if (m.exif.value) break;   // PIL reads nothing after the image data then
        }
        int text = !memcmp(type, "tEXt", 4) || !memcmp(type, "zTXt", 4) || !memcmp(type, "iTXt", 4);
        if (text || !memcmp(type, "eXIf", 4)) {
            // A text chunk is read whole only for a key PIL's orientation reads (at most 79 bytes).
            size_t peek = len < 80 ? len : 80;
            const uint8_t *d = text ? png_bytes(src, pos + 8, peek, &tmp, &m.oom) : NULL;
            if (text && !d) break;
            const uint8_t *nul = d ? memchr(d, 0, peek) : NULL;
            int wanted = !text || ((nul || len <= 80) && png_key_wanted(d, nul ? (size_t)(nul - d) : len));
            if (text) free(tmp);
            if (wanted) {
                if (!(d = png_bytes(src, pos + 8, len, &tmp, &m.oom))) break;
                png_meta_chunk(&m, type, d, len);
                free(tmp);
            }
        }
        pos += 12 + (uint64_t)len;
    }
    int orientation = png_meta_orientation(&m);
    png_meta_free(&m);
    free((void *)(uintptr_t)tail.buf);
    return orientation;
}

static int fit_rows_u8(const uint8_t *px8, int w, int h, int c, int orientation, int T, Image *out);
typedef struct RowFit RowFit;   // a working image resized as its rows arrive (geometry, below)
static RowFit *rowfit_new(int w, int h, int c, int T);
static size_t rowfit_bytes(int w, int h, int c, int T);
static float *rowfit_row(RowFit *f);
static void rowfit_push(RowFit *f);
static int rowfit_end(RowFit *f, Image *out);
static void rowfit_free(RowFit *f);

// ---------------------------------------------------------------------------------------------
// PNG decode

typedef struct {
    const uint8_t *buf;
    size_t len, pos;
    jmp_buf jb;
    char msg[200];
    png_structp png;
    png_infop info;
    uint8_t *rows;   // one row, or the whole image when interlaced
    float *px;
    RowFit *fit;     // instead of px: a working image resized as its rows come
} PngRead;

static void png_on_error(png_structp png, png_const_charp msg) {
    PngRead *r = png_get_error_ptr(png);
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    longjmp(r->jb, 1);
}
static void png_on_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

static void png_read_mem(png_structp png, png_bytep data, size_t n) {
    PngRead *r = png_get_io_ptr(png);
    if (n > r->len - r->pos) png_error(png, "truncated PNG data");
    memcpy(data, r->buf + r->pos, n);
    r->pos += n;
}

static void png_read_cleanup(PngRead *r) {
    if (r->png) png_destroy_read_struct(&r->png, r->info ? &r->info : NULL, NULL);
    r->png = NULL;
    r->info = NULL;
    free(r->rows);
    r->rows = NULL;
}

// Decodes into r->px; returns 0 with *out filled, or -1 with r->msg set. Owns nothing but *r.
static int png_decode(PngRead *r, const DecodeOpts *o, Image *out) {
    if (setjmp(r->jb)) {
        png_read_cleanup(r);
        free(r->px);
        r->px = NULL;
        rowfit_free(r->fit);
        r->fit = NULL;
        return -1;
    }
    r->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r, png_on_error, png_on_warning);
    if (!r->png) { snprintf(r->msg, sizeof r->msg, "out of memory"); return -1; }
    r->info = png_create_info_struct(r->png);
    if (!r->info) { snprintf(r->msg, sizeof r->msg, "out of memory"); png_read_cleanup(r); return -1; }
    png_set_read_fn(r->png, r, png_read_mem);
    // libpng's own limit (1,000,000 pixels a side) refused a header of a larger size as "Invalid IHDR
    // data" before --max-pixels could say it, and a 1,000,001 x 1 image that PIL reads; the format's
    // limit (2^31 - 1) stands, and the pixel limit below refuses by size.
    png_set_user_limits(r->png, 0x7fffffff, 0x7fffffff);
    // The metadata PIL reads are read by png_orientation; libpng skips them.
    png_set_keep_unknown_chunks(r->png, PNG_HANDLE_CHUNK_NEVER, (png_const_bytep)"eXIf\0tEXt\0zTXt\0iTXt", 4);
    png_read_info(r->png, r->info);

    png_uint_32 w = png_get_image_width(r->png, r->info), h = png_get_image_height(r->png, r->info);
    int color_type = png_get_color_type(r->png, r->info), bit_depth = png_get_bit_depth(r->png, r->info);
    // The probe and the decode see the same chunks, to the end of the file (a probe reads past its
    // first bytes from o->fd). Read before the pixel limit, whose reason gives the upright size.
    const PngSource src = {r->buf, 0, r->len, o->fd, o->file_size};
    int orientation = png_orientation(&src);
    if (orientation < 0) { snprintf(r->msg, sizeof r->msg, "out of memory"); png_read_cleanup(r); return -1; }
    if (pixel_limit_exceeded(w, h, orientation, o->max_pixels, r->msg, sizeof r->msg)) { png_read_cleanup(r); return -1; }
    if (o->alpha) *o->alpha = (color_type & PNG_COLOR_MASK_ALPHA) || png_get_valid(r->png, r->info, PNG_INFO_tRNS);
    if (o->header_only) {
        out->w = (int)(orientation >= 5 ? h : w);
        out->h = (int)(orientation >= 5 ? w : h);
        out->c = (color_type & PNG_COLOR_MASK_COLOR) ? 3 : 1;
        png_read_cleanup(r);
        return 0;
    }
    if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(r->png);
    if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(r->png);
    int passes = png_set_interlace_handling(r->png);
    png_read_update_info(r->png, r->info);

    // After the transforms: 1 (grey), 2 (grey+alpha), 3 (RGB) or 4 (RGBA) samples of 8 or 16 bits.
    int in_c = png_get_channels(r->png, r->info);
    int depth = png_get_bit_depth(r->png, r->info);
    size_t rowbytes = png_get_rowbytes(r->png, r->info);
    int c = in_c <= 2 ? 1 : 3;
    if ((depth != 8 && depth != 16) || rowbytes < (size_t)w * in_c * (depth / 8)) {
        snprintf(r->msg, sizeof r->msg, "unsupported PNG layout");
        png_read_cleanup(r);
        return -1;
    }
    // A working image (image_load_working) is resized as its rows come, without the whole image's floats
    // (docs/data.md, "Big photos on huge pages"): the right way up, as each row is read; turned by its
    // EXIF orientation, from the stored rows kept whole (as an interlaced image's are) once all are read,
    // the upright rows read across them.
    int fit = o->fit > 0 && w > (png_uint_32)o->fit && h > (png_uint_32)o->fit;
    int turned = fit && orientation != 1, swap = orientation >= 5;
    size_t row_bytes = rowbytes * (passes > 1 || turned ? h : 1);
    int uw = (int)(swap ? h : w), uh = (int)(swap ? w : h);   // upright
    size_t px_bytes = fit ? rowfit_bytes(uw, uh, c, o->fit) : (size_t)w * h * c * sizeof(float);
    r->rows = pixels_alloc(row_bytes);
    if (fit) r->fit = rowfit_new(uw, uh, c, o->fit);
    else r->px = pixels_alloc(px_bytes);
    if (!r->rows || (fit ? !r->fit : !r->px)) {
        if (r->rows && fit)   // the resize's few rows: said as image_load_working's own resize says it
            snprintf(r->msg, sizeof r->msg, "out of memory");
        else
            pixels_oom(w, h, orientation, fit ? row_bytes + px_bytes : decode_peak(orientation, row_bytes + px_bytes, px_bytes),
                       r->msg, sizeof r->msg);
        png_read_cleanup(r);
        free(r->px);
        r->px = NULL;
        rowfit_free(r->fit);
        r->fit = NULL;
        return -1;
    }
    for (int pass = 0; pass < passes; pass++)
        for (png_uint_32 y = 0; y < h; y++) {
            uint8_t *row = r->rows + (passes > 1 || turned ? (size_t)y * rowbytes : 0);
            png_read_row(r->png, row, NULL);
            if (pass != passes - 1 || turned) continue;
            upright_row(r->fit ? rowfit_row(r->fit) : r->px + (size_t)y * w * c, row, rowbytes, (int)w, 1, in_c, c,
                        depth, 1, 0);
            if (r->fit) rowfit_push(r->fit);
        }
    for (int y = 0; turned && y < uh; y++) {
        upright_row(rowfit_row(r->fit), r->rows, rowbytes, (int)w, (int)h, in_c, c, depth, orientation, y);
        rowfit_push(r->fit);
    }
    // No png_read_end: the image data is whole and its CRCs checked once the last row is read (libpng
    // finishes the last IDAT chunk then), and what follows it (IEND, text chunks) is PIL's to ignore
    // when damaged or missing: a PNG cut after its image data, or with a bad CRC there, decodes as PIL
    // decodes it (docs/data.md, "Files"). Its chunks' orientation is png_orientation's.
    png_read_cleanup(r);
    if (r->fit) {
        int rc = rowfit_end(r->fit, out);
        rowfit_free(r->fit);
        r->fit = NULL;
        if (rc) snprintf(r->msg, sizeof r->msg, "out of memory");   // as image_load_working's own resize says it
        return rc ? -1 : 0;
    }
    out->w = (int)w;
    out->h = (int)h;
    out->c = c;
    out->px = r->px;
    r->px = NULL;
    if (orientation != 1 && image_orient(out, orientation) != 0) {   // a second buffer: the two said
        image_free(out);
        pixels_oom(w, h, orientation, 2 * (size_t)w * h * c * sizeof(float), r->msg, sizeof r->msg);
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// JPEG decode

typedef struct {
    struct jpeg_error_mgr pub;   // first, so a j_common_ptr's err can be cast back
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX + 32];
} JpegErr;

typedef struct {
    struct jpeg_decompress_struct cinfo;
    JpegErr jerr;
    int created;
    uint8_t *row;
    float *px;
} JpegRead;

static void jpeg_fail(j_common_ptr cinfo) {
    JpegErr *e = (JpegErr *)cinfo->err;
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) snprintf(e->msg, sizeof e->msg, "truncated JPEG data");
    else (*cinfo->err->format_message)(cinfo, e->msg);
    longjmp(e->jb, 1);
}
// level < 0 is a warning (corrupt data, premature end): an error for us. Trace messages are ignored.
static void jpeg_on_message(j_common_ptr cinfo, int level) {
    if (level < 0) jpeg_fail(cinfo);
}
static void jpeg_silent(j_common_ptr cinfo) { (void)cinfo; }

static void jpeg_read_cleanup(JpegRead *r) {
    if (r->created) jpeg_destroy_decompress(&r->cinfo);
    r->created = 0;
    free(r->row);
    r->row = NULL;
}

// The EXIF orientation (1..8) from the first APP1 "Exif" marker saved by libjpeg, as PIL reads it;
// -1 out of memory.
static int jpeg_exif_orientation(j_decompress_ptr ci) {
    for (jpeg_saved_marker_ptr m = ci->marker_list; m; m = m->next) {
        if (m->marker != JPEG_APP0 + 1 || m->data_length < 6 || memcmp(m->data, "Exif\0\0", 6) != 0) continue;
        int orientation = exif_orientation(m->data + 6, m->data_length - 6);
        return orientation ? orientation : 1;   // -1: out of memory
    }
    return 1;
}

// The smallest libjpeg-turbo scale num/8 (1..8) whose shorter output side is still >= min_short.
static int jpeg_scale_for(unsigned w, unsigned h, int min_short) {
    unsigned s = w < h ? w : h;
    if (min_short <= 0 || s == 0) return 8;
    for (int num = 1; num < 8; num++)
        if ((s * (unsigned)num + 7) / 8 >= (unsigned)min_short) return num;
    return 8;
}

static int jpeg_decode(JpegRead *r, const uint8_t *buf, size_t len, const DecodeOpts *o, Image *out) {
    r->cinfo.err = jpeg_std_error(&r->jerr.pub);
    r->jerr.pub.error_exit = jpeg_fail;
    r->jerr.pub.emit_message = jpeg_on_message;
    r->jerr.pub.output_message = jpeg_silent;
    if (setjmp(r->jerr.jb)) {
        jpeg_read_cleanup(r);
        free(r->px);
        r->px = NULL;
        return -1;
    }
    jpeg_create_decompress(&r->cinfo);
    r->created = 1;
    jpeg_mem_src(&r->cinfo, buf, (unsigned long)len);
    jpeg_save_markers(&r->cinfo, JPEG_APP0 + 1, 0xffff);
    jpeg_read_header(&r->cinfo, TRUE);
    struct jpeg_decompress_struct *ci = &r->cinfo;
    int orientation = jpeg_exif_orientation(ci);
    if (orientation < 0) { snprintf(r->jerr.msg, sizeof r->jerr.msg, "out of memory"); jpeg_read_cleanup(r); return -1; }
    if (pixel_limit_exceeded(ci->image_width, ci->image_height, orientation, o->max_pixels, r->jerr.msg, sizeof r->jerr.msg)) {
        jpeg_read_cleanup(r);
        return -1;
    }
    int cmyk = 0, c = 3;
    switch (ci->jpeg_color_space) {
    case JCS_GRAYSCALE: ci->out_color_space = JCS_GRAYSCALE; c = 1; break;
    case JCS_CMYK: case JCS_YCCK: ci->out_color_space = JCS_CMYK; cmyk = 1; break;
    default: ci->out_color_space = JCS_RGB; break;
    }
    if (o->header_only) {
        int swap = orientation >= 5;
        out->w = (int)(swap ? ci->image_height : ci->image_width);
        out->h = (int)(swap ? ci->image_width : ci->image_height);
        out->c = c;
        jpeg_read_cleanup(r);
        return 0;
    }
    ci->scale_num = (unsigned)jpeg_scale_for(ci->image_width, ci->image_height, o->min_short);
    ci->scale_denom = 8;
    jpeg_start_decompress(ci);
    int w = (int)ci->output_width, h = (int)ci->output_height, in_c = ci->output_components;
    unsigned long header_w = ci->image_width, header_h = ci->image_height;   // w x h is the scaled size
    if (in_c != (cmyk ? 4 : c)) {
        snprintf(r->jerr.msg, sizeof r->jerr.msg, "unsupported JPEG colour layout");
        jpeg_read_cleanup(r);
        return -1;
    }
    size_t px_bytes = (size_t)w * h * c * sizeof(float);
    r->row = malloc((size_t)w * in_c);
    r->px = pixels_alloc(px_bytes);
    if (!r->row || !r->px) {
        pixels_oom(header_w, header_h, orientation, decode_peak(orientation, (size_t)w * in_c + px_bytes, px_bytes),
                   r->jerr.msg, sizeof r->jerr.msg);
        jpeg_read_cleanup(r);
        free(r->px);
        r->px = NULL;
        return -1;
    }
    while (ci->output_scanline < ci->output_height) {
        JSAMPROW rowp = r->row;
        int y = (int)ci->output_scanline;
        if (jpeg_read_scanlines(ci, &rowp, 1) != 1) {
            snprintf(r->jerr.msg, sizeof r->jerr.msg, "truncated JPEG data");
            jpeg_read_cleanup(r);
            free(r->px);
            r->px = NULL;
            return -1;
        }
        float *dst = r->px + (size_t)y * w * c;
        if (!cmyk) {
            for (size_t i = 0; i < (size_t)w * c; i++) dst[i] = (float)r->row[i] / 255.0f;
            continue;
        }
        // PIL's CMYK -> RGB: R = (1 - C)(1 - K), rounded to an 8-bit level as PIL's conversion gives
        // it (v k / 255 is never a tie), so that a view resized from it rounds as docs/encoder.md's
        // Python does ("The same view in Python"). The bytes are (1 - ink) * 255: Adobe's CMYK JPEGs
        // (Photoshop, libjpeg with its Adobe marker) store inverted inks, and PIL reads every CMYK JPEG
        // so, marker or not (docs/interface.md, section 2).
        for (int x = 0; x < w; x++) {
            const uint8_t *s = r->row + 4 * x;
            int k = s[3];
            for (int ch = 0; ch < 3; ch++) {
                int v = s[ch];
                dst[3 * x + ch] = (float)((2 * v * k + 255) / 510) / 255.0f;
            }
        }
    }
    jpeg_finish_decompress(ci);
    jpeg_read_cleanup(r);
    out->w = w;
    out->h = h;
    out->c = c;
    out->px = r->px;
    r->px = NULL;
    if (orientation != 1 && image_orient(out, orientation) != 0) {   // a second buffer: the two said
        image_free(out);
        pixels_oom(header_w, header_h, orientation, 2 * (size_t)w * h * c * sizeof(float), r->jerr.msg, sizeof r->jerr.msg);
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// WebP decode (libwebp): always RGB for us (alpha dropped, as PIL's convert('RGB')).

// The orientation of a WebP (1..8) from its first EXIF chunk, found with libwebp's demux API as PIL
// finds it (its decoder is libwebp's too); the chunk's "Exif\0\0" prefix, which PIL writes, is optional.
// -1 when data is a prefix of the file that ends before that chunk may come: the header probe reads
// the whole file then; -2 out of memory. A whole file the demuxer refuses (cut short) is refused, as PIL refuses it.
static int webp_orientation(const uint8_t *buf, size_t len, int header_only) {
    WebPData data = {buf, len};
    WebPDemuxState state;
    WebPDemuxer *dmux = header_only ? WebPDemuxPartial(&data, &state) : WebPDemux(&data);
    if (!dmux) return -1;
    int orientation = 1;
    WebPChunkIterator it;
    if (WebPDemuxGetChunk(dmux, "EXIF", 1, &it)) {
        const uint8_t *tiff = it.chunk.bytes;
        size_t n = it.chunk.size;
        if (n >= 6 && !memcmp(tiff, "Exif\0\0", 6)) tiff += 6, n -= 6;
        orientation = exif_orientation(tiff, n);
        if (orientation == 0) orientation = 1;
        else if (orientation < 0) orientation = -2;   // out of memory
        WebPDemuxReleaseChunkIterator(&it);
    } else if (header_only && state != WEBP_DEMUX_DONE && (WebPDemuxGetI(dmux, WEBP_FF_FORMAT_FLAGS) & EXIF_FLAG)) {
        orientation = -1;
    }
    WebPDemuxDelete(dmux);
    return orientation;
}

// The picture of a WebP: its bitstream (ALPH + VP8, or VP8L) and where it lies on the canvas.
typedef struct { const uint8_t *bytes; size_t size; int x, y, w, h; } WebPFrame;

// The frame of an animated WebP (docs/data.md, "Files"): an animation of one frame is a still image
// to PIL (it opens the first frame of any animation), and is read as that frame on its canvas. 1 with
// *fr when there is one frame, 0 when there are more (skipped: which frame is the image is not ours to
// choose), -1 when the data is corrupt or ends before it can tell (a prefix: the header probe reads
// the whole file then).
static int webp_one_frame(const uint8_t *buf, size_t len, WebPFrame *fr) {
    WebPData data = {buf, len};
    WebPDemuxState state;
    WebPDemuxer *dmux = WebPDemuxPartial(&data, &state);
    if (!dmux) return -1;
    int frames = (int)WebPDemuxGetI(dmux, WEBP_FF_FRAME_COUNT), rc = -1;
    WebPIterator it;
    if (frames > 1) rc = 0;   // a second frame begun: more than one, however the file goes on
    else if (state == WEBP_DEMUX_DONE && frames == 1 && WebPDemuxGetFrame(dmux, 1, &it)) {
        if (it.complete)
            *fr = (WebPFrame){it.fragment.bytes, it.fragment.size, it.x_offset, it.y_offset, it.width, it.height}, rc = 1;
        WebPDemuxReleaseIterator(&it);
    }
    WebPDemuxDelete(dmux);   // fr's bytes lie in buf, not in the demuxer
    return rc;
}

// A probe's first bytes that end inside an animation's first frame (a frame past PROBE_BYTES): whether a
// second frame follows, from the chunk headers read on from the file (8 bytes each, at most
// WEBP_WALK_CHUNKS of them), not from the whole file read into memory. 1 when a second ANMF chunk
// begins within the file, 0 when the walk cannot tell (no file, a chunk running past the RIFF's end,
// too many chunks): the whole file is read then.
#define WEBP_WALK_CHUNKS 4096
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
static int webp_second_frame(const uint8_t *buf, size_t len, const DecodeOpts *o) {
    if (o->fd < 0 || len < 12) return 0;
    PngSource src = {buf, 0, len, o->fd, o->file_size};   // the bytes of buf, the rest read from fd
    uint64_t end = 8 + (uint64_t)le32(buf + 4);
    if (end > o->file_size) end = o->file_size;
    int frames = 0;
    uint64_t pos = 12;
    for (int k = 0; k < WEBP_WALK_CHUNKS && end - pos >= 8; k++) {
        uint8_t *tmp;
        const uint8_t *h = png_bytes(&src, pos, 8, &tmp, NULL);
        if (!h) return 0;
        int anmf = !memcmp(h, "ANMF", 4);
        uint64_t size = le32(h + 4);
        free(tmp);
        if (size > end - pos - 8) return 0;
        if (anmf && size >= 16 && ++frames == 2) return 1;
        pos += 8 + size + (size & 1);
        if (pos > end) return 0;
    }
    return 0;
}

// decode_mem's answer to a probe of a file's first bytes that refuses the file for good (its rest read
// from DecodeOpts.fd): load_path reads it no further.
#define DECODE_REFUSED (-2)

static int webp_decode(const uint8_t *buf, size_t len, const DecodeOpts *o, Image *out, char *err, size_t errlen) {
    WebPBitstreamFeatures f;
    VP8StatusCode st = WebPGetFeatures(buf, len, &f);
    if (st == VP8_STATUS_NOT_ENOUGH_DATA) { set_err(err, errlen, "truncated WebP data"); return -1; }
    if (st != VP8_STATUS_OK) { set_err(err, errlen, "corrupt WebP data"); return -1; }
    if (f.width <= 0 || f.height <= 0) { set_err(err, errlen, "corrupt WebP data"); return -1; }
    WebPFrame fr = {buf, len, 0, 0, f.width, f.height};   // a still image: the whole canvas
    if (f.has_animation) {   // f's size is the canvas's
        int one = webp_one_frame(buf, len, &fr);
        int refused = one < 0 && webp_second_frame(buf, len, o);   // a probe's first bytes cut in frame 1
        if (one == 0 || refused) {
            set_err(err, errlen, "animated WebP of more than one frame is not supported");
            return refused ? DECODE_REFUSED : -1;
        }
        if (one < 0) { set_err(err, errlen, "corrupt or truncated WebP data"); return -1; }
        if (fr.x < 0 || fr.y < 0 || fr.w <= 0 || fr.h <= 0 || fr.w > f.width - fr.x || fr.h > f.height - fr.y) {
            set_err(err, errlen, "corrupt WebP data");
            return -1;
        }
    }
    // Read before the pixel limit, whose reason gives the upright size (none when unreadable: -1).
    int orientation = webp_orientation(buf, len, o->header_only);
    if (pixel_limit_exceeded((unsigned long)f.width, (unsigned long)f.height, orientation, o->max_pixels, err, errlen)) return -1;
    if (o->alpha) *o->alpha = f.has_alpha != 0;
    if (orientation < 0) { set_err(err, errlen, orientation == -2 ? "out of memory" : "corrupt or truncated WebP data"); return -1; }
    if (o->header_only) {
        *out = (Image){orientation >= 5 ? f.height : f.width, orientation >= 5 ? f.width : f.height, 3, NULL};
        return 0;
    }
    int w = f.width, h = f.height;
    // The advanced API (not WebPDecodeRGB) for its status: libwebp failing to allocate the decoded
    // pixels is said as out of memory, not as a corrupt file.
    WebPDecoderConfig dc;
    if (!WebPInitDecoderConfig(&dc)) { set_err(err, errlen, "libwebp: version mismatch"); return -1; }
    dc.output.colorspace = MODE_RGB;
    // The decoded frame goes into our own buffer (libwebp's "external memory"), on huge pages.
    size_t rgb_bytes = (size_t)fr.w * fr.h * 3, floats = (size_t)w * h * 3 * sizeof(float);
    // The row fits read the 8-bit frame; otherwise it is held with the canvas's floats, then turned.
    int fits = o->fit > 0 && fr.w == w && fr.h == h && w > o->fit && h > o->fit;
    size_t need = fits ? rgb_bytes : decode_peak(orientation, rgb_bytes + floats, floats);
    uint8_t *rgb = pixels_alloc(rgb_bytes);
    if (!rgb) {
        pixels_oom((unsigned long)fr.w, (unsigned long)fr.h, orientation, need, err, errlen);
        return -1;
    }
    dc.output.is_external_memory = 1;
    dc.output.u.RGBA.rgba = rgb;
    dc.output.u.RGBA.stride = fr.w * 3;
    dc.output.u.RGBA.size = rgb_bytes;
    st = WebPDecode(fr.bytes, fr.size, &dc);
    WebPFreeDecBuffer(&dc.output);   // frees nothing of ours: only what libwebp kept besides
    if (st == VP8_STATUS_OUT_OF_MEMORY) {
        free(rgb);
        pixels_oom((unsigned long)fr.w, (unsigned long)fr.h, orientation, need, err, errlen);
        return -1;
    }
    if (st != VP8_STATUS_OK || dc.output.width != fr.w || dc.output.height != fr.h) {
        free(rgb);
        set_err(err, errlen, "corrupt or truncated WebP data");
        return -1;
    }
    size_t stride = (size_t)fr.w * 3;
    if (fits) {   // any orientation
        int rc = fit_rows_u8(rgb, w, h, 3, orientation, o->fit, out);
        free(rgb);
        if (rc) set_err(err, errlen, "out of memory");   // as image_load_working's own resize says it
        return rc ? -1 : 0;
    }
    // Zeroed where a frame does not cover its canvas: PIL's transparent black, black once alpha is dropped.
    size_t npx = (size_t)w * h * 3;
    float *px = fr.w == w && fr.h == h ? pixels_alloc(npx * sizeof(float)) : cpu_calloc_big(npx, sizeof(float));
    if (!px) {
        free(rgb);
        pixels_oom((unsigned long)w, (unsigned long)h, orientation, need, err, errlen);
        return -1;
    }
    for (size_t y = 0; y < (size_t)fr.h; y++) {
        float *row = px + ((size_t)(fr.y + y) * w + (size_t)fr.x) * 3;
        for (size_t i = 0; i < (size_t)fr.w * 3; i++) row[i] = (float)rgb[y * stride + i] / 255.0f;
    }
    free(rgb);
    *out = (Image){w, h, 3, px};
    if (orientation != 1 && image_orient(out, orientation) != 0) {   // a second buffer: the two said
        image_free(out);
        pixels_oom((unsigned long)w, (unsigned long)h, orientation, 2 * (size_t)w * h * 3 * sizeof(float), err, errlen);
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Loading

static int is_webp(const uint8_t *buf, size_t len) {
    return len >= 12 && memcmp(buf, "RIFF", 4) == 0 && memcmp(buf + 8, "WEBP", 4) == 0;
}

// 1 when the first len bytes could begin a PNG, a JPEG or a WebP file: the dispatch of decode_mem.
static int known_magic(const uint8_t *buf, size_t len) {
    return memcmp(buf, png_magic, len < 8 ? len : 8) == 0 || memcmp(buf, "\xff\xd8\xff", len < 3 ? len : 3) == 0 ||
           is_webp(buf, len);
}

// The image formats vitmae does not read: their names' extensions (space-separated), how a decode
// names one by its first bytes (what, and up to two magics: either matches, or both must where
// both_magics), and the advice. A GIF named x.png said "not a PNG, JPEG or WebP file" where data's
// list, going by the name, said "GIF is not read; convert it to PNG".
typedef struct { size_t at, len; const char *bytes; } Magic;
static const struct {
    const char *exts, *what;
    Magic magic[2];
    int both_magics;
    const char *why;
} UNREAD[] = {
    {".svg .svgz", NULL, {{0}}, 0, "SVG is a vector format; export it as PNG"},
    {".gif", "a GIF file", {{0, 4, "GIF8"}}, 0, "GIF is not read; convert it to PNG"},
    {".tif .tiff", "a TIFF file", {{0, 4, "II*\0"}, {0, 4, "MM\0*"}}, 0, "TIFF is not read; convert it to PNG"},
    {".heic", "a HEIC file", {{4, 8, "ftypheic"}, {4, 8, "ftypheix"}}, 0, "HEIC is not read; convert it to JPEG"},
    {".heif .hif", "a HEIF file", {{4, 8, "ftypmif1"}}, 0, "HEIF is not read; convert it to JPEG"},
    {".avif", "an AVIF file", {{4, 8, "ftypavif"}}, 0, "AVIF is not read; convert it to JPEG or WebP"},
    {".jxl", "a JPEG XL file", {{0, 2, "\xff\x0a"}, {0, 8, "\0\0\0\x0cJXL "}}, 0, "JPEG XL is not read; convert it to JPEG"},
    {".jp2", "a JPEG 2000 file", {{0, 8, "\0\0\0\x0cjP  "}}, 0, "JPEG 2000 is not read; convert it to JPEG"},
    // "BM" alone begins too much text; a BMP's 4 reserved bytes at 6 are zero in every writer's file.
    {".bmp", "a BMP file", {{0, 2, "BM"}, {6, 4, "\0\0\0\0"}}, 1, "BMP is not read; convert it to PNG"},
    {".ico", NULL, {{0}}, 0, "ICO is not read; convert it to PNG"},
    {".ppm .pgm .pbm .pnm", NULL, {{0}}, 0, "PNM is not read; convert it to PNG"},
    {".tga", NULL, {{0}}, 0, "TGA is not read; convert it to PNG"},
    {".psd", "a PSD file", {{0, 4, "8BPS"}}, 0, "PSD is not read; export it as PNG"},
    {".exr", "an OpenEXR file", {{0, 4, "\x76\x2f\x31\x01"}}, 0, "OpenEXR is not read; export it as 16-bit PNG"},
    // Cameras' raw formats by maker (Adobe, Canon, Nikon, Sony, Fujifilm, Panasonic, Olympus, Pentax,
    // Samsung, Hasselblad, Sigma, Epson, Minolta, Kodak, Phase One, Leica, Mamiya, Leaf, Casio, GoPro,
    // RED, ARRI): a folder
    // straight from a camera; only four were named, and a CR3 or RAF folder was "other files ignored".
    {".dng .cr2 .cr3 .crw .nef .nrw .arw .srf .sr2 .raf .rw2 .raw .rwl .orf .pef .ptx .srw .3fr .fff .x3f .erf .mrw"
     " .mdc .kdc .dcr .dcs .drf .k25 .iiq .cap .eip .mef .mos .bay .gpr .r3d .ari",
     NULL, {{0}}, 0, "camera raw files are not read; export them as JPEG"},
    // An animated PNG, named so (PIL opens one as its first frame; vitmae reads no animation, as an
    // animated WebP is skipped).
    {".apng", NULL, {{0}}, 0, "animated PNG is not read; save a frame as PNG"},
};

int image_file_is_read(const char *path) {
    // An animated PNG begins as every PNG does: its name is what says it is one (the table above).
    const char *dot = strrchr(path, '.');
    if (dot && !strcasecmp(dot, ".apng")) return 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    uint8_t b[12];
    ssize_t n = read(fd, b, sizeof b);
    close(fd);
    return n >= 3 && known_magic(b, (size_t)n);
}

const char *image_unread_format(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return NULL;
    size_t n = strlen(dot);
    for (size_t i = 0; i < sizeof UNREAD / sizeof UNREAD[0]; i++)
        for (const char *e = UNREAD[i].exts; *e;) {
            size_t len = strcspn(e, " ");
            if (len == n && !strncasecmp(e, dot, n)) return UNREAD[i].why;
            e += len + (e[len] == ' ');
        }
    return NULL;
}

static int magic_at(const Magic *m, const uint8_t *b, size_t n) {
    return m->len > 0 && n >= m->at + m->len && memcmp(b + m->at, m->bytes, m->len) == 0;
}

// The reason for a file that is none of the three, its format named when its first bytes say it.
static void other_format_why(const uint8_t *b, size_t n, char *err, size_t errlen) {
    for (size_t i = 0; i < sizeof UNREAD / sizeof UNREAD[0]; i++) {
        int m0 = magic_at(&UNREAD[i].magic[0], b, n), m1 = magic_at(&UNREAD[i].magic[1], b, n);
        if (UNREAD[i].both_magics ? m0 && m1 : m0 || m1) {
            if (err && errlen) snprintf(err, errlen, "%s: %s", UNREAD[i].what, UNREAD[i].why);
            return;
        }
    }
    set_err(err, errlen, "not a PNG, JPEG or WebP file");
}

static int decode_mem(const uint8_t *buf, size_t len, const DecodeOpts *o, Image *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (len == 0) { set_err(err, errlen, "empty file"); return -1; }
    size_t npng = len < 8 ? len : 8;
    if (memcmp(buf, png_magic, npng) == 0) {
        if (len < 8) { set_err(err, errlen, "truncated PNG data"); return -1; }
        PngRead *r = calloc(1, sizeof *r);
        if (!r) { set_err(err, errlen, "out of memory"); return -1; }
        r->buf = buf;
        r->len = len;
        int rc = png_decode(r, o, out);
        if (rc) set_err(err, errlen, r->msg);
        free(r);
        return rc;
    }
    size_t njpg = len < 3 ? len : 3;
    if (memcmp(buf, "\xff\xd8\xff", njpg) == 0) {
        if (len < 3) { set_err(err, errlen, "truncated JPEG data"); return -1; }
        JpegRead *r = calloc(1, sizeof *r);
        if (!r) { set_err(err, errlen, "out of memory"); return -1; }
        int rc = jpeg_decode(r, buf, len, o, out);
        if (rc) set_err(err, errlen, r->jerr.msg);
        free(r);
        return rc;
    }
    if (is_webp(buf, len)) return webp_decode(buf, len, o, out, err, errlen);
    other_format_why(buf, len, err, errlen);
    return -1;
}

int image_load_mem(const uint8_t *buf, size_t len, long max_pixels, Image *out, char *err, size_t errlen) {
    DecodeOpts o = {.max_pixels = max_pixels, .fd = -1};
    return decode_mem(buf, len, &o, out, err, errlen);
}

#define MAX_FILE_BYTES (1L << 31)
#define PROBE_BYTES (1L << 20)   // a header read first; markers before a JPEG's frame rarely pass 1 MiB

// Reads up to `limit` bytes of path (limit <= 0: the whole file) into *buf; *whole = 1 when that
// is the whole file. With rest, a file not read whole stays open there (rest->fd, rest->file_size;
// the caller closes it); rest->fd is -1 otherwise.
static int read_file(const char *path, long limit, uint8_t **buf, size_t *len, int *whole, DecodeOpts *rest,
                     char *err, size_t errlen) {
    *buf = NULL;
    *len = 0;
    if (rest) rest->fd = -1;
    // O_NONBLOCK: opening a FIFO named x.png must not hang; fstat then refuses it.
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {   // in the words of an INPUT's stat (cmd/output.c), a link to nothing named so
        char why[4200];
        set_err(err, errlen, file_path_reason(path, errno, why, sizeof why));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) { errno_reason(errno, err, errlen); close(fd); return -1; }
    if (S_ISDIR(st.st_mode)) { set_err(err, errlen, "is a directory"); close(fd); return -1; }
    if (!S_ISREG(st.st_mode)) { set_err(err, errlen, "not a regular file"); close(fd); return -1; }
    if (st.st_size == 0) { set_err(err, errlen, "empty file"); close(fd); return -1; }
    if (st.st_size > MAX_FILE_BYTES) { set_err(err, errlen, "file larger than 2 GiB"); close(fd); return -1; }
    // The first bytes decide whether it can be an image at all: a large file of another kind (a video
    // named .png) is refused without reading it into memory.
    uint8_t head[12];
    ssize_t nh = pread(fd, head, sizeof head, 0);
    if (nh > 0 && !known_magic(head, (size_t)nh)) { other_format_why(head, (size_t)nh, err, errlen); close(fd); return -1; }
    size_t want = (size_t)st.st_size, got = 0;
    *whole = 1;
    if (limit > 0 && want > (size_t)limit) { want = (size_t)limit; *whole = 0; }
    uint8_t *b = malloc(want);
    if (!b) { set_err(err, errlen, "out of memory"); close(fd); return -1; }
    while (got < want) {
        ssize_t n = read(fd, b + got, want - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) { errno_reason(errno, err, errlen); free(b); close(fd); return -1; }
        if (n == 0) { *whole = 1; break; }   // the file shrank since fstat: decode what is there
        got += (size_t)n;
    }
    if (rest && !*whole) {
        rest->fd = fd;
        rest->file_size = (uint64_t)st.st_size;
    } else {
        close(fd);
    }
    *buf = b;
    *len = got;
    return 0;
}

static int load_path(const char *path, const DecodeOpts *opts, Image *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    DecodeOpts o = *opts;
    uint8_t *buf;
    size_t len;
    int whole;
    if (read_file(path, o.header_only ? PROBE_BYTES : 0, &buf, &len, &whole, &o, err, errlen)) return -1;
    int rc = decode_mem(buf, len, &o, out, err, errlen);
    free(buf);
    if (o.fd >= 0) close(o.fd);
    o.fd = -1;
    if (rc == DECODE_REFUSED) return -1;
    if (rc == 0 || whole) return rc;
    // The header did not fit in the first bytes read: the whole file.
    if (read_file(path, 0, &buf, &len, &whole, NULL, err, errlen)) return -1;
    rc = decode_mem(buf, len, &o, out, err, errlen);
    free(buf);
    return rc;
}

int image_load(const char *path, long max_pixels, Image *out, char *err, size_t errlen) {
    DecodeOpts o = {.max_pixels = max_pixels, .fd = -1};
    return load_path(path, &o, out, err, errlen);
}

int image_load_alpha(const char *path, long max_pixels, Image *out, int *alpha, char *err, size_t errlen) {
    *alpha = 0;
    DecodeOpts o = {.max_pixels = max_pixels, .fd = -1, .alpha = alpha};
    return load_path(path, &o, out, err, errlen);
}

int image_load_reduced(const char *path, long max_pixels, int min_short, Image *out, char *err, size_t errlen) {
    DecodeOpts o = {.max_pixels = max_pixels, .min_short = min_short, .fd = -1};
    return load_path(path, &o, out, err, errlen);
}

int image_load_working(const char *path, long max_pixels, int T, Image *out, char *err, size_t errlen) {
    DecodeOpts o = {.max_pixels = max_pixels, .min_short = T, .fit = T, .fd = -1};
    if (load_path(path, &o, out, err, errlen)) return -1;
    if (image_fit(out, T)) { image_free(out); set_err(err, errlen, "out of memory"); return -1; }
    return 0;
}

int image_probe(const char *path, long max_pixels, int *w, int *h, int *c, char *err, size_t errlen) {
    DecodeOpts o = {.max_pixels = max_pixels, .header_only = 1, .fd = -1};
    Image im;
    int rc = load_path(path, &o, &im, err, errlen);
    *w = im.w;
    *h = im.h;
    *c = im.c;
    return rc;
}

// ---------------------------------------------------------------------------------------------
// PNG encode

typedef struct {
    FILE *f;
    png_structp png;
    png_infop info;
    png_text *texts;
    char **utf8;      // the values as written (text_escape)
    int ntext;
    uint8_t *rows, *z;   // the filtered rows and their zlib stream (png_encode)
    struct libdeflate_compressor *zc;
    jmp_buf jb;
    char msg[200];
} PngWrite;

static void pngw_on_error(png_structp png, png_const_charp msg) {
    PngWrite *w = png_get_error_ptr(png);
    snprintf(w->msg, sizeof w->msg, "%s", msg);
    longjmp(w->jb, 1);
}

static void png_write_cleanup(PngWrite *w) {
    if (w->png) png_destroy_write_struct(&w->png, w->info ? &w->info : NULL);
    w->png = NULL;
    w->info = NULL;
    free(w->texts);
    w->texts = NULL;
    for (int i = 0; w->utf8 && i < w->ntext; i++) free(w->utf8[i]);
    free(w->utf8);
    w->utf8 = NULL;
    free(w->rows); free(w->z);
    w->rows = w->z = NULL;
    if (w->zc) libdeflate_free_compressor(w->zc);
    w->zc = NULL;
}

// PNG's Paeth predictor (filter type 4).
static inline int paeth(int a, int b, int c) {
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

// The image data as PNG's IDAT stream: every row Paeth-filtered (its filter byte then the row's
// differences, bpp = c bytes a pixel), all of it one zlib stream from libdeflate at level 5. libpng's
// own row writer (each row tried with all five filters, zlib level 6) made the same pixels in files
// 1-3% smaller at 4-6 times the CPU time, which was most of reconstruct's and attention's time on a
// folder (docs/performance.md, "The commands that use a model"). Returns the stream's length in w->z, or
// 0 out of memory.
static size_t png_idat(PngWrite *w, const uint8_t *px, int width, int height, int c) {
    size_t stride = (size_t)width * c, n = (stride + 1) * height;
    w->rows = malloc(n);
    w->zc = libdeflate_alloc_compressor(5);
    size_t bound = w->zc ? libdeflate_zlib_compress_bound(w->zc, n) : 0;
    w->z = w->zc ? malloc(bound) : NULL;
    if (!w->rows || !w->zc || !w->z) return 0;
    for (int y = 0; y < height; y++) {
        const uint8_t *r = px + (size_t)y * stride, *u = y ? r - stride : NULL;
        uint8_t *o = w->rows + (size_t)y * (stride + 1);
        o[0] = 4;
        for (size_t x = 0; x < stride; x++) {
            int a = x >= (size_t)c ? r[x - c] : 0, b = u ? u[x] : 0, d = u && x >= (size_t)c ? u[x - c] : 0;
            o[1 + x] = (uint8_t)(r[x] - paeth(a, b, d));
        }
    }
    return libdeflate_zlib_compress(w->zc, w->rows, n, w->z, bound);
}

// A text chunk's value, as PNG allows it: a tEXt chunk holds Latin-1 and a linefeed, no other control
// character, and an iTXt chunk is the one that holds UTF-8 (PIL and exiftool read a UTF-8 name in a
// tEXt as mojibake: "é" as "Ã©"). So the value is written as io/json.h's text_escape writes it (bytes
// that are not UTF-8 as U+FFFD, as JSON outputs write them: docs/interface.md, "Names that are not
// UTF-8"; control characters and backslashes as on stdout: \n, \t, \xHH, \\), then as tEXt when
// that is ASCII, else as iTXt. 0 ok, -1 out of memory.
static int png_text_set(PngWrite *w, int i, const char *key, const char *value) {
    png_text *t = &w->texts[i];
    t->key = (png_charp)(uintptr_t)key;   // libpng does not modify it
    if (!(w->utf8[i] = text_escape(value))) return -1;
    t->compression = PNG_TEXT_COMPRESSION_NONE;
    t->text = w->utf8[i];
    t->text_length = strlen(w->utf8[i]);
    const unsigned char *u = (const unsigned char *)w->utf8[i];
    while (*u && *u < 0x80) u++;
    if (!*u) return 0;
    t->compression = PNG_ITXT_COMPRESSION_NONE;
    t->text_length = 0;
    t->itxt_length = strlen(w->utf8[i]);
    t->lang = NULL;
    t->lang_key = NULL;
    return 0;
}

static int png_encode(PngWrite *w, const uint8_t *px, int width, int height, int c, const char *const *text) {
    if (setjmp(w->jb)) { png_write_cleanup(w); return -1; }
    w->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, w, pngw_on_error, png_on_warning);
    if (!w->png) { snprintf(w->msg, sizeof w->msg, "out of memory"); return -1; }
    w->info = png_create_info_struct(w->png);
    if (!w->info) { snprintf(w->msg, sizeof w->msg, "out of memory"); png_write_cleanup(w); return -1; }
    png_init_io(w->png, w->f);
    int type = c == 1 ? PNG_COLOR_TYPE_GRAY : c == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGB_ALPHA;
    png_set_IHDR(w->png, w->info, (png_uint_32)width, (png_uint_32)height, 8, type, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    int ntext = 0;
    while (text && text[2 * ntext] && text[2 * ntext + 1]) ntext++;
    if (ntext) {
        w->texts = calloc((size_t)ntext, sizeof *w->texts);
        w->utf8 = calloc((size_t)ntext, sizeof *w->utf8);
        w->ntext = ntext;
        int ok = w->texts && w->utf8;
        for (int i = 0; ok && i < ntext; i++) ok = png_text_set(w, i, text[2 * i], text[2 * i + 1]) == 0;
        if (!ok) { snprintf(w->msg, sizeof w->msg, "out of memory"); png_write_cleanup(w); return -1; }
        png_set_text(w->png, w->info, w->texts, ntext);
    }
    size_t zn = png_idat(w, px, width, height, c);
    if (!zn) { snprintf(w->msg, sizeof w->msg, "out of memory"); png_write_cleanup(w); return -1; }
    png_write_info(w->png, w->info);   // signature, IHDR, the text chunks
    for (size_t at = 0; at < zn; at += (size_t)1 << 20) {   // IDAT chunks of 1 MiB
        size_t len = zn - at < (size_t)1 << 20 ? zn - at : (size_t)1 << 20;
        png_write_chunk(w->png, (png_const_bytep)"IDAT", w->z + at, len);
    }
    png_write_chunk(w->png, (png_const_bytep)"IEND", NULL, 0);
    png_write_cleanup(w);
    return 0;
}

// png_write's staging: a new file at exactly tmp (io/files.h's file_tmp_create), removed on failure.
static int png_write_to(char *tmp, const uint8_t *px, int w, int h, int c, const char *const *text,
                        char *err, size_t errlen) {
    int fd = w <= 0 || h <= 0 || (c != 1 && c != 3 && c != 4) ? -2 : file_tmp_create(tmp);
    int rc = png_write_fd(fd, px, w, h, c, text, err, errlen);
    if (rc && fd >= 0) file_tmp_remove(tmp);
    else if (rc) file_tmp_forget(tmp);
    return rc;
}

int png_write_fd(int fd, const uint8_t *px, int w, int h, int c, const char *const *text, char *err, size_t errlen) {
    if (w <= 0 || h <= 0 || (c != 1 && c != 3 && c != 4)) {
        set_err(err, errlen, "bad image shape for PNG");
        if (fd >= 0) close(fd);
        return -1;
    }
    if (fd < 0) { errno_reason(errno, err, errlen); return -1; }
    PngWrite *pw = calloc(1, sizeof *pw);
    if (!pw) { set_err(err, errlen, "out of memory"); close(fd); return -1; }
    pw->f = fdopen(fd, "wb");
    if (!pw->f) {
        errno_reason(errno, err, errlen);
        close(fd);
        free(pw);
        return -1;
    }
    errno = 0;
    int rc = png_encode(pw, px, w, h, c, text);
    // A failed write inside libpng reads "Write Error"; the file's errno says why (disk full, ...).
    if (rc && ferror(pw->f) && errno) errno_reason(errno, err, errlen);
    else if (rc) set_err(err, errlen, pw->msg);
    if (fflush(pw->f) != 0 && rc == 0) { errno_reason(errno, err, errlen); rc = -1; }
    // On disk before it is renamed into place (io/files.h): else a power cut can leave an empty PNG.
    if (rc == 0 && fsync(fileno(pw->f)) != 0) { errno_reason(errno, err, errlen); rc = -1; }
    if (fclose(pw->f) != 0 && rc == 0) { errno_reason(errno, err, errlen); rc = -1; }
    free(pw);
    return rc;
}

int png_write(const char *path, const uint8_t *px, int w, int h, int c, const char *const *text,
              char *err, size_t errlen) {
    // Written under a temporary name beside path, fsync'd, renamed over it, its folder fsync'd
    // (io/files.h): a failed write leaves an earlier file as it was, a link at path is replaced, never
    // written through, and a power cut leaves the earlier file or this one whole.
    size_t tlen = strlen(path) + FILE_TMP_EXTRA;
    char *tmp = malloc(tlen);
    if (!tmp) { set_err(err, errlen, "out of memory"); return -1; }
    file_tmp_name(path, tmp, tlen);
    int rc = png_write_to(tmp, px, w, h, c, text, err, errlen);
    char msg[2 * FILE_NAME_CUT + 400];   // "PATH: why" (io/files.h: PATH and its folder cut) whole, whatever errlen
    if (rc == 0 && file_publish_atomic(tmp, path, msg, sizeof msg) != 0) {
        // png_write's callers name the path themselves: the reason alone, never a path cut short in err
        size_t n = strlen(path) < FILE_NAME_CUT ? strlen(path) : FILE_NAME_CUT;
        set_err(err, errlen, !strncmp(msg, path, n) && msg[n] == ':' && msg[n + 1] == ' ' ? msg + n + 2 : msg);
        rc = -1;
    }
    free(tmp);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// Geometry

static double triangle(double x) {
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

// PIL's bicubic kernel (Keys, a = -0.5; support 2), the one torchvision's InterpolationMode.BICUBIC
// runs on PIL images (docs/data.md, "Interpolation").
static double cubic(double x) {
    const double a = -0.5;
    x = fabs(x);
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
    return 0.0;
}

// PIL's precompute_coeffs for the filter (bilinear: support 1; bicubic: support 2), for outputs off ..
// off + n - 1 of a resize of `in` samples to `out` (each output's taps do not depend on the others, so
// a window of the output costs only its own taps): for output off + j the taps are first[j] ..
// first[j] + count[j] - 1, weights k[j * ksize ..] normalised to sum 1.
typedef struct { int n, ksize; int *first, *count; double *k; } Coeffs;

static void coeffs_free(Coeffs *c) { free(c->first); free(c->k); memset(c, 0, sizeof *c); }

static int coeffs_make(Coeffs *c, int in, long out, long off, int n, ImageFilter filter) {
    memset(c, 0, sizeof *c);
    double scale = (double)in / out;
    double filterscale = scale < 1.0 ? 1.0 : scale;
    double support = (filter == IMAGE_BICUBIC ? 2.0 : 1.0) * filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    c->n = n;
    c->ksize = ksize;
    c->first = malloc(sizeof(int) * (size_t)n * 2);
    c->k = calloc((size_t)n * ksize, sizeof *c->k);
    if (!c->first || !c->k) { coeffs_free(c); return -1; }
    c->count = c->first + n;
    for (int j = 0; j < n; j++) {
        long i = off + j;
        double center = (i + 0.5) * scale;
        int xmin = (int)(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int xmax = (int)(center + support + 0.5);
        if (xmax > in) xmax = in;
        xmax -= xmin;
        if (xmax > ksize) xmax = ksize;
        double *kj = c->k + (size_t)j * ksize, sum = 0;
        for (int x = 0; x < xmax; x++) {
            double t = (x + xmin - center + 0.5) / filterscale;
            sum += kj[x] = filter == IMAGE_BICUBIC ? cubic(t) : triangle(t);
        }
        for (int x = 0; x < xmax && sum != 0; x++) kj[x] /= sum;
        c->first[j] = xmin;
        c->count[j] = xmax;
    }
    return 0;
}

// One axis: src viewed as [outer][in][inner] holding samples base .. base + in - 1 of the axis,
// dst [outer][c->n][inner].
static void coeffs_apply(const Coeffs *c, const float *src, int in, int base, float *dst, int outer, int inner) {
    int out = c->n;
    #pragma omp parallel for schedule(static) if ((long)outer * out * inner > 65536)
    for (int o = 0; o < outer; o++)
        for (int i = 0; i < out; i++) {
            const double *ki = c->k + (size_t)i * c->ksize;
            const float *s = src + ((size_t)o * in + (c->first[i] - base)) * inner;
            float *d = dst + ((size_t)o * out + i) * inner;
            for (int j = 0; j < inner; j++) {
                double acc = 0;
                for (int t = 0; t < c->count[i]; t++) acc += ki[t] * s[(size_t)t * inner + j];
                d[j] = (float)acc;
            }
        }
}

// One axis: src viewed as [outer][in][inner] -> dst [outer][out][inner].
static int resize_axis(const float *src, float *dst, int outer, int in, int out, int inner, ImageFilter filter) {
    Coeffs c;
    if (coeffs_make(&c, in, out, 0, out, filter)) return -1;
    coeffs_apply(&c, src, in, 0, dst, outer, inner);
    coeffs_free(&c);
    return 0;
}

int image_resize(const float *src, int sw, int sh, int c, float *dst, int dw, int dh, ImageFilter filter) {
    if (sw == dw && sh == dh) { memcpy(dst, src, sizeof(float) * (size_t)sw * sh * c); return 0; }
    if (sh == dh) return resize_axis(src, dst, sh, sw, dw, c, filter);
    if (sw == dw) return resize_axis(src, dst, 1, sh, dh, sw * c, filter);
    // Horizontal first, then vertical (PIL's order).
    float *tmp = malloc(sizeof(float) * (size_t)sh * dw * c);
    int rc = !tmp || resize_axis(src, tmp, sh, sw, dw, c, filter) || resize_axis(tmp, dst, 1, sh, dh, dw * c, filter)
                 ? -1 : 0;
    free(tmp);
    return rc;
}

int image_resize_bilinear(const float *src, int sw, int sh, int c, float *dst, int dw, int dh) {
    return image_resize(src, sw, sh, c, dst, dw, dh, IMAGE_BILINEAR);
}

void image_resize_size(long w, long h, long size, long *nw, long *nh) {
    *nw = w <= h ? size : size * w / h;
    *nh = w <= h ? size * h / w : size;
}

// A working image resized as its rows arrive (image_load_working's decoders): each row of w x c floats
// resized along x to nw as it comes, then the rows [h][nw][c] along y once all have come, to
// image_resize_size for T (both sides larger than T). image_resize_bilinear's two passes over the same
// values, so the same bits, without the whole image's floats (docs/data.md, "Big photos on huge pages").
struct RowFit {
    int w, h, c, nw, nh, y;
    Coeffs ch;          // along x
    float *row, *tmp;   // [w][c], the next row; [h][nw][c], the rows resized along x
};

static void rowfit_free(RowFit *f) {
    if (!f) return;
    coeffs_free(&f->ch);
    free(f->row);
    free(f->tmp);
    free(f);
}

static size_t rowfit_bytes(int w, int h, int c, int T) {
    long nw, nh;
    image_resize_size(w, h, T, &nw, &nh);
    return sizeof(float) * ((size_t)w * c + (size_t)h * nw * c + (size_t)nw * nh * c);
}

static RowFit *rowfit_new(int w, int h, int c, int T) {
    RowFit *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    long nw, nh;
    image_resize_size(w, h, T, &nw, &nh);
    f->w = w, f->h = h, f->c = c, f->nw = (int)nw, f->nh = (int)nh;
    f->row = malloc(sizeof(float) * (size_t)w * c);
    f->tmp = malloc(sizeof(float) * (size_t)h * f->nw * c);
    if (!f->row || !f->tmp || coeffs_make(&f->ch, w, f->nw, 0, f->nw, IMAGE_BILINEAR)) { rowfit_free(f); return NULL; }
    return f;
}

// The row to fill next (w x c floats), then rowfit_push to resize it along x.
static float *rowfit_row(RowFit *f) { return f->row; }

static void rowfit_push(RowFit *f) {
    coeffs_apply(&f->ch, f->row, f->w, 0, f->tmp + (size_t)f->y * f->nw * f->c, 1, f->c);
    f->y++;
}

// Once the h rows are in: along y into *out. -1 out of memory.
static int rowfit_end(RowFit *f, Image *out) {
    float *dst = malloc(sizeof(float) * (size_t)f->nw * f->nh * f->c);
    if (!dst || resize_axis(f->tmp, dst, 1, f->h, f->nh, f->nw * f->c, IMAGE_BILINEAR)) { free(dst); return -1; }
    *out = (Image){f->nw, f->nh, f->c, dst};
    return 0;
}

// A RowFit of the w x h x c image of 8-bit samples px8 (as floats v / 255), shown the way its EXIF
// orientation says (1: as stored; 2..8: the rows of the upright image, read across the stored one).
// -1 out of memory.
static int fit_rows_u8(const uint8_t *px8, int w, int h, int c, int orientation, int T, Image *out) {
    int swap = orientation >= 5 && orientation <= 8;
    int uw = swap ? h : w, uh = swap ? w : h;   // upright
    RowFit *f = rowfit_new(uw, uh, c, T);
    if (!f) return -1;
    for (int y = 0; y < uh; y++) {
        upright_row(rowfit_row(f), px8, (size_t)w * c, w, h, c, c, 8, orientation, y);
        rowfit_push(f);
    }
    int rc = rowfit_end(f, out);
    rowfit_free(f);
    return rc;
}

int image_fit(Image *im, int T) {
    if (im->w <= T || im->h <= T) return 0;
    long lw, lh;
    image_resize_size(im->w, im->h, T, &lw, &lh);
    int nw = (int)lw, nh = (int)lh;   // smaller than im->w and im->h
    float *dst = malloc(sizeof(float) * (size_t)nw * nh * im->c);
    if (!dst || image_resize_bilinear(im->px, im->w, im->h, im->c, dst, nw, nh)) { free(dst); return -1; }
    free(im->px);
    *im = (Image){nw, nh, im->c, dst};
    return 0;
}

void image_convert_channels(const float *src, int cin, float *dst, int cout, size_t n) {
    if (cin == cout) {
        if (src != dst) memmove(dst, src, sizeof(float) * n * cin);
    } else if (cin == 1) {
        for (size_t i = 0; i < n; i++) dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[i];
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = 0.299f * src[3 * i] + 0.587f * src[3 * i + 1] + 0.114f * src[3 * i + 2];
    }
}

void image_crop(const Image *src, int x, int y, int w, int h, float *dst) {
    for (int r = 0; r < h; r++)
        memcpy(dst + (size_t)r * w * src->c, src->px + ((size_t)(y + r) * src->w + x) * src->c,
               sizeof(float) * (size_t)w * src->c);
}

// Crops (x, y, w, h) of src, resizes it to size x size with the filter and converts to `channels`
// into out. -1 out of memory (the crop's box is as large as the crop: up to the whole image), out
// untouched.
static int crop_resize(const Image *src, int x, int y, int w, int h, int size, int channels, ImageFilter filter,
                       float *out) {
    size_t n = (size_t)size * size;
    int c = src->c;
    float *box = NULL, *resized = out;
    const float *from = src->px;
    if (x != 0 || y != 0 || w != src->w || h != src->h) {
        box = malloc(sizeof(float) * (size_t)w * h * c);
        if (!box) return -1;
        image_crop(src, x, y, w, h, box);
        from = box;
    }
    if (channels != c) resized = malloc(sizeof(float) * n * c);
    if (!resized) { free(box); return -1; }
    int rc = image_resize(from, w, h, c, resized, size, size, filter);
    if (resized != out) {
        if (!rc) image_convert_channels(resized, c, out, channels, n);
        free(resized);
    }
    free(box);
    return rc;
}

long image_view_scale(int size, double crop_pct) {
    return crop_pct >= 1.0 ? size : (long)floor(size / crop_pct);
}

// The resized size (*nw x *nh) and the centre crop's offsets in it of a w x h source's view.
static void view_geometry(int w, int h, int size, double crop_pct, long *nw, long *nh, long *top, long *left) {
    image_resize_size(w, h, image_view_scale(size, crop_pct), nw, nh);
    // torchvision CenterCrop: offsets int(round((len - size) / 2)), Python's round (half to even).
    *top = (long)nearbyint((*nh - size) / 2.0);
    *left = (long)nearbyint((*nw - size) / 2.0);
}

void image_eval_box(int w, int h, int size, double crop_pct, double box[4]) {
    box[0] = 0; box[1] = 0; box[2] = w; box[3] = h;
    if ((w == size && h == size && crop_pct >= 1.0) || w < 1 || h < 1 || size < 1) return;
    // The same resize and crop as image_eval_view, mapped back through the resize's scale.
    long nw, nh, top, left;
    view_geometry(w, h, size, crop_pct, &nw, &nh, &top, &left);
    double sx = (double)w / (double)nw, sy = (double)h / (double)nh;
    box[0] = left * sx; box[1] = top * sy; box[2] = size * sx; box[3] = size * sy;
}

int image_eval_view(const Image *src, int size, ViewSpec view, int channels, float *out) {
    int w = src->w, h = src->h, c = src->c;
    size_t n = (size_t)size * size;
    long nw, nh, top, left;
    view_geometry(w, h, size, view.crop_pct, &nw, &nh, &top, &left);
    if (nw == w && nh == h && w == size && h == size) {
        image_convert_channels(src->px, c, out, channels, n);
        return 0;
    }
    // Resize-then-crop computes only the cropped window: the same taps and the same order (horizontal
    // pass first, as PIL) as resizing the whole image, so the same values, but memory and time stay
    // bounded by the crop (a 1 x 60,000,000 image would otherwise resize to 224 x 13 billion).
    // Source rows the vertical window reads: [r0, r1).
    Coeffs cv = {0}, chz = {0};
    int vertical = nh != h, horizontal = nw != w;
    long r0 = top, r1 = top + size;
    if (vertical) {
        if (coeffs_make(&cv, h, nh, top, size, view.filter)) goto oom;
        r0 = h; r1 = 0;
        for (int i = 0; i < size; i++) {
            if (cv.count[i] == 0) continue;
            if (cv.first[i] < r0) r0 = cv.first[i];
            if (cv.first[i] + cv.count[i] > r1) r1 = cv.first[i] + cv.count[i];
        }
        if (r1 <= r0) r0 = r1 = 0;
    }
    int rows = (int)(r1 - r0);
    float *band = malloc(sizeof(float) * ((size_t)rows * size * c + 1));   // [rows][size][c]
    float *crop = channels == c ? out : malloc(sizeof(float) * n * c);
    if (!band || !crop) { free(band); if (crop != out) free(crop); coeffs_free(&cv); goto oom; }
    const float *from = src->px + (size_t)r0 * w * c;
    if (horizontal) {
        if (coeffs_make(&chz, w, nw, left, size, view.filter)) { free(band); if (crop != out) free(crop); coeffs_free(&cv); goto oom; }
        coeffs_apply(&chz, from, w, 0, band, rows, c);
        coeffs_free(&chz);
    } else {
        for (int r = 0; r < rows; r++)
            memcpy(band + (size_t)r * size * c, from + ((size_t)r * w + left) * c, sizeof(float) * (size_t)size * c);
    }
    if (vertical) coeffs_apply(&cv, band, rows, (int)r0, crop, 1, size * c);
    else memcpy(crop, band, sizeof(float) * n * c);
    coeffs_free(&cv);
    free(band);
    if (crop != out) {
        image_convert_channels(crop, c, out, channels, n);
        free(crop);
    }
    return 0;
oom:   // said by the caller, not a black view (docs/data.md): out untouched
    return -1;
}

void image_rrc_params(int w, int h, double scale_lo, Rng *rng, int *cx, int *cy, int *cw, int *ch) {
    const double scale_hi = 1.0;
    const double log_lo = log(3.0 / 4.0), log_hi = log(4.0 / 3.0);
    double area = (double)w * h;
    for (int attempt = 0; attempt < 10; attempt++) {
        double target = area * (scale_lo + (scale_hi - scale_lo) * rng_uniform_double(rng));
        double ratio = exp(log_lo + (log_hi - log_lo) * rng_uniform_double(rng));
        int bw = (int)nearbyint(sqrt(target * ratio));
        int bh = (int)nearbyint(sqrt(target / ratio));
        if (bw > 0 && bw <= w && bh > 0 && bh <= h) {
            *cy = (int)rng_below(rng, (uint32_t)(h - bh + 1));
            *cx = (int)rng_below(rng, (uint32_t)(w - bw + 1));
            *cw = bw;
            *ch = bh;
            return;
        }
    }
    // Fallback: centre crop with the aspect ratio clamped to [3/4, 4/3].
    double in_ratio = (double)w / h;
    int bw = w, bh = h;
    if (in_ratio < 3.0 / 4.0) bh = (int)nearbyint(w / (3.0 / 4.0));
    else if (in_ratio > 4.0 / 3.0) bw = (int)nearbyint(h * (4.0 / 3.0));
    if (bw < 1) bw = 1;
    if (bh < 1) bh = 1;
    if (bw > w) bw = w;
    if (bh > h) bh = h;
    *cx = (w - bw) / 2;
    *cy = (h - bh) / 2;
    *cw = bw;
    *ch = bh;
}

int image_random_resized_crop(const Image *src, int size, int channels, double scale_lo, ImageFilter filter, Rng *rng,
                              float *out) {
    int x, y, w, h;
    image_rrc_params(src->w, src->h, scale_lo, rng, &x, &y, &w, &h);
    return crop_resize(src, x, y, w, h, size, channels, filter, out);
}

int image_orient(Image *im, int orientation) {
    if (orientation <= 1 || orientation > 8) return 0;
    int W = im->w, H = im->h, c = im->c, swap = orientation >= 5;
    int ow = swap ? H : W, oh = swap ? W : H;
    float *dst = pixels_alloc(sizeof(float) * (size_t)W * H * c + 1);
    if (!dst) return -1;
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < ow; x++) {
            int sx, sy;
            orient_source(orientation, W, H, x, y, &sx, &sy);
            memcpy(dst + ((size_t)y * ow + x) * c, im->px + ((size_t)sy * W + sx) * c, sizeof(float) * c);
        }
    free(im->px);
    im->px = dst;
    im->w = ow;
    im->h = oh;
    return 0;
}

void image_flip_h(float *px, int w, int h, int c) {
    for (int y = 0; y < h; y++) {
        float *row = px + (size_t)y * w * c;
        for (int a = 0, b = w - 1; a < b; a++, b--)
            for (int k = 0; k < c; k++) {
                float t = row[(size_t)a * c + k];
                row[(size_t)a * c + k] = row[(size_t)b * c + k];
                row[(size_t)b * c + k] = t;
            }
    }
}

void image_quantize8(float *px, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = px[i] * 255.0f;
        v = v < 0 ? 0 : v > 255 ? 255 : v;
        px[i] = (float)(int)(v + 0.5f) / 255.0f;
    }
}

int image_is_8bit(const float *px, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = px[i] * 255.0f;
        int k = (int)(v + 0.5f);
        if (k < 0 || k > 255 || (float)k / 255.0f != px[i]) return 0;
    }
    return 1;
}

int image_load_view(const char *path, long max_pixels, int size, ViewSpec view, int channels, float *out,
                    char *err, size_t errlen) {
    Image im;
    if (image_load(path, max_pixels, &im, err, errlen)) return -1;
    int rc = image_view(&im, size, view, channels, out, err, errlen);
    image_free(&im);
    return rc;
}

int image_view(const Image *im, int size, ViewSpec view, int channels, float *out, char *err, size_t errlen) {
    float *tmp = malloc(sizeof(float) * (size_t)size * size * im->c);
    if (!tmp) { snprintf(err, errlen, "out of memory"); return -1; }
    if (image_eval_view(im, size, view, im->c, tmp)) { free(tmp); snprintf(err, errlen, "out of memory"); return -1; }
    image_quantize8(tmp, (size_t)size * size * im->c);
    image_convert_channels(tmp, im->c, out, channels, (size_t)size * size);
    free(tmp);
    return 0;
}

int image_why_is_resource(const char *why) {
    static const char *const kinds[] = {"out of memory", "cannot allocate memory", "insufficient memory",
                                        "too many open files", NULL};
    if (why && strstr(why, IMAGE_PIXELS_OOM)) return 2;
    for (int i = 0; why && kinds[i]; i++)   // any case: strerror's "Cannot allocate memory", "Too many open files"
        if (strcasestr(why, kinds[i])) return 1;
    return 0;
}
