// Checkpoints: bitwise round trips, every way a file can be wrong (each refused with a reason
// naming the problem, no crash), encoder-only files, the PyTorch-written fixture, and atomic
// writes (a failed write leaves the previous file byte-identical; readers never see a partial file).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include "check.h"
#include "st_rewrite.h"
#include "io/checkpoint.h"
#include "io/json.h"
#include "core/model.h"

static const char *tmp;

static void small_config(MaeConfig *c) {
    mae_config_preset(c, "tiny");
    c->img_size = 8; c->patch_size = 4; c->in_chans = 3;
    c->embed_dim = 8; c->depth = 2; c->num_heads = 2;
    c->dec_embed_dim = 4; c->dec_depth = 1; c->dec_num_heads = 1;
    c->norm_pix_loss = 1; c->mask_ratio = 0.6f; c->pos_learned = 0;
    c->pixel_mean[0] = 0.485f; c->pixel_mean[1] = 0.456f; c->pixel_mean[2] = 0.1f / 3.0f;
    c->pixel_std[0] = 0.229f; c->pixel_std[1] = 1e-3f; c->pixel_std[2] = 7.0f;
    c->ln_eps = 1e-5f;
}

// Values that catch lossy paths: negative zero, subnormals, huge, tiny, NaN payloads.
static void fill(float *p, size_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        uint32_t bits = s;
        memcpy(&p[i], &bits, 4);
    }
    if (n > 3) { p[0] = -0.0f; p[1] = 1e-40f; p[2] = 3.4e38f; }
}

// The same, finite: a checkpoint never holds NaN or infinite values (ckpt_save and the readers refuse
// them; test_nonfinite), so what goes through them is made finite by clearing an exponent bit.
static void fill_finite(float *p, size_t n, uint32_t seed) {
    fill(p, n, seed);
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &p[i], 4);
        if (((bits >> 23) & 0xff) == 0xff) bits &= ~(1u << 30);
        memcpy(&p[i], &bits, 4);
    }
}

// The floats ckpt_load_encoder keeps: the tensors before the decoder's.
static size_t encoder_floats(const MaeConfig *c) {
    size_t k;
    mae_encoder_model_table(c, NULL, 0, &k);
    return k;
}

static char *path_in(const char *name) {
    static char buf[8][600];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 600, "%s/%s", tmp, name);
    return p;
}

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); fclose(f); return NULL; }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void spit(const char *path, const void *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(2); }
    if (len) fwrite(buf, 1, len, f);
    fclose(f);
}

// A safetensors file from a header string and `data_len` data bytes (value i & 0xff).
static uint8_t *make_st(const char *header, size_t data_len, size_t *len) {
    size_t h = strlen(header);
    *len = 8 + h + data_len;
    uint8_t *b = malloc(*len + 1);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    for (size_t i = 0; i < data_len; i++) b[8 + h + i] = (uint8_t)i;
    return b;
}

// The buffer must be refused (from memory and from a file) with a reason containing want.
static void expect_refused(const uint8_t *buf, size_t len, const char *want, const char *what) {
    char err[512] = "";
    StFile *f = st_open_mem(buf, len, "mem.safetensors", err, sizeof err);
    CHECK(f == NULL, "%s: accepted", what);
    CHECK(strstr(err, want) != NULL, "%s: reason '%s' lacks '%s'", what, err, want);
    CHECK(strncmp(err, "mem.safetensors: ", 17) == 0, "%s: reason '%s' does not name the file", what, err);
    st_close(f);
    const char *p = path_in("refused.safetensors");
    spit(p, buf, len);
    Checkpoint ck;
    err[0] = 0;
    CHECK(ckpt_load(p, &ck, err, sizeof err) != 0, "%s: ckpt_load accepted", what);
    CHECK(strstr(err, want) != NULL && strstr(err, p) == err, "%s: ckpt_load reason '%s'", what, err);
}

static void expect_hdr_refused(const char *header, size_t data_len, const char *want, const char *what) {
    size_t len;
    uint8_t *b = make_st(header, data_len, &len);
    expect_refused(b, len, want, what);
    free(b);
}

static void test_generic_format(void) {
    // A valid hand-made file first, so the refusals below are about the one thing changed.
    size_t len;
    uint8_t *b = make_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                         "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]},"
                         "\"z\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[12,12]},"
                         "\"__metadata__\":{\"k\":\"v\"}}", 12, &len);
    char err[512] = "";
    StFile *f = st_open_mem(b, len, "ok", err, sizeof err);
    CHECK(f != NULL, "hand-made file refused: %s", err);
    if (f) {
        int nd = -1;
        int64_t sh[4];
        const float *a = st_get(f, "a", &nd, sh);
        uint8_t want[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        CHECK(a && nd == 1 && sh[0] == 2 && memcmp(a, want, 8) == 0, "tensor a read back");
        CHECK(((uintptr_t)a & 3) == 0, "tensor data is float-aligned");
        CHECK(st_get(f, "s", &nd, sh) && nd == 0, "scalar tensor");
        CHECK(st_get(f, "z", &nd, sh) && nd == 2 && sh[0] == 0 && sh[1] == 3, "empty tensor");
        CHECK(st_get(f, "nope", NULL, NULL) == NULL, "absent tensor is NULL");
        CHECK(st_count(f) == 3 && !strcmp(st_tensor_name(f, 0), "a"), "count and names");
        CHECK(st_meta(f, "k") && !strcmp(st_meta(f, "k"), "v") && !st_meta(f, "crc32"), "metadata");
        st_close(f);
    }
    free(b);

    expect_refused((const uint8_t *)"", 0, ": an empty file, not a safetensors checkpoint", "empty file");
    // Files of other kinds are named by their first bytes; the rest keep the header length's reason.
    expect_refused((const uint8_t *)"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16, ": a PNG image, not", "PNG");
    expect_refused((const uint8_t *)"\xff\xd8\xff\xe0\0\x10JFIF", 10, ": a JPEG image, not", "JPEG");
    expect_refused((const uint8_t *)"RIFF\x24\0\0\0WEBPVP8 ", 16, ": a WebP image, not", "WebP");
    expect_refused((const uint8_t *)"RIFF\x24\0\0\0WAVEfmt ", 16, "is too large", "RIFF but not WebP");
    expect_refused((const uint8_t *)"{}", 2, ": JSON text, not", "2-byte JSON");
    expect_refused((const uint8_t *)"PK\x03\x04", 4, "tools/convert_mae.py", "zip");
    expect_refused((const uint8_t *)"\x10\0\0\0", 4, ": not a safetensors checkpoint (file too short: 4 bytes", "4-byte file");
    // Text (a CSV, a log, UTF-8 included) said "header length N is too large", or "file too short".
    expect_refused((const uint8_t *)"step,loss\r\n1,\t0.5\n", 17, ": a text file, not a safetensors checkpoint", "CSV");
    expect_refused((const uint8_t *)"h\xc3\xa9\n", 4, ": a text file, not a safetensors checkpoint", "4-byte UTF-8 text");
    expect_refused((const uint8_t *)"step,los\x01", 9, ": not a safetensors checkpoint (header length", "text with a control byte");
    expect_refused((const uint8_t *)"abcdefgh\x7f", 9, ": not a safetensors checkpoint (header length", "text with DEL");
    expect_refused((const uint8_t *)"abcdefgh\xe9t\xe9", 11, ": not a safetensors checkpoint (header length", "Latin-1, not UTF-8");
    b = make_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, &len);
    expect_refused(b, 20, "truncated header", "truncated header");
    expect_refused(b, len - 3, "truncated data (tensor 'a' needs data bytes 0..8, file has 5)", "truncated data");
    uint8_t *c = malloc(len);
    memcpy(c, b, len);
    uint64_t beyond = len - 8 + 1;
    for (int i = 0; i < 8; i++) c[i] = (uint8_t)(beyond >> (8 * i));
    expect_refused(c, len, "truncated header", "header length beyond the file");
    memset(c, 0, 8);
    c[7] = 0x80;   // 2^63
    expect_refused(c, len, ": not a safetensors checkpoint (header length 9223372036854775808 is too large: the limit is 100000000)",
                   "header length 2^63");
    memset(c, 0xff, 8);
    expect_refused(c, len, "is too large", "header length 2^64-1");
    free(c);
    free(b);

    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[100,108]}}", 8,
                       "needs data bytes 100..108", "offsets out of range");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
                       "do not match its shape [3]", "offsets not matching the shape");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
                       "do not match", "offsets reversed");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
                       "tensor 'a' has dtype 'F16'", "wrong dtype");
    // A dtype edited to "F32 " said "has dtype F32  (only F32 is supported)": the value is quoted.
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32 \",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                       "tensor 'a' has dtype 'F32 ' (only F32 is supported)", "a dtype with a trailing space");
    // ... and the refusal names the way out (it said only "only F32 is supported").
    expect_hdr_refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
                       "convert the file with tools/convert_mae.py", "a half-precision dtype, the way out said");
    expect_hdr_refused("{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "no dtype", "no dtype");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8,
                       "not a non-negative integer", "negative dimension");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,8]}}", 8,
                       "not a non-negative integer", "fractional dimension");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
                       "shape too large", "shape product overflow");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,2],\"data_offsets\":[0,8]}}", 8,
                       "5 dimensions", "too many dimensions");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "data_offsets", "no offsets");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", 8, "data_offsets", "3 offsets");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
                       "overlaps", "overlapping tensors");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
                       "data bytes 0..4 belong to no tensor", "hole in the data");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12,
                       "4 trailing data bytes", "trailing bytes");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
                       "'a' appears twice", "duplicate tensor");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]", 8,
                       "malformed JSON header", "malformed JSON");
    expect_hdr_refused("{\"a\":1} {}", 0, "malformed JSON header", "JSON with trailing bytes");
    // Nested past the JSON reader's 1000 levels: said so, not "malformed" (1000 levels parse).
    for (int levels = 1000; levels <= 1001; levels++) {
        char deep[2 * 1001 + 16], what[32];
        check_json_nested(deep, sizeof deep, "{\"a\":", levels);
        snprintf(what, sizeof what, "header of %d levels", levels);
        expect_hdr_refused(deep, 0, levels == 1000 ? "entry 'a' is not an object"
                                                   : "JSON header nested deeper than 1000 levels (the limit of the JSON reader; at byte 1004 of", what);
    }
    expect_hdr_refused("[1, 2]", 0, "header is not a JSON object", "header an array");
    expect_hdr_refused("\"x\"", 0, "header is not a JSON object", "header a string");
    expect_hdr_refused("{\"a\":[1]}", 0, "entry 'a' is not an object", "tensor entry not an object");
    expect_hdr_refused("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ value 'k' is not a string", "metadata number");
    expect_hdr_refused("{\"__metadata__\":[]}", 0, "__metadata__ is not an object", "metadata array");
    expect_hdr_refused("{\"__metadata__\":{\"crc32\":\"zz\"}}", 0, "crc32 'zz' is not 8 hex digits", "bad crc text");
    expect_hdr_refused("{\"__metadata__\":{\"crc32\":\"00000001\"}}", 0, "crc32 mismatch (file damaged)", "crc of nothing");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"__metadata__\":{\"crc32\":\"00000000\"}}", 8, "crc32 mismatch (file damaged)", "wrong crc");
    // A name from the file is quoted as utf8_clip shows it (io/json.h): its control characters kept for
    // the printer, which writes them out (cli_info.sh); they are no longer '?', which the file's own
    // name (a path with a newline) got too. A long one is cut to 96 bytes, then "...".
    expect_hdr_refused("{\"a\\nb\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
                       "tensor 'a\nb' has dtype 'F16'", "control character in a name");
    {
        char hdr[1024], want[320];
        snprintf(hdr, sizeof hdr, "{\"%0300d\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 7);
        snprintf(want, sizeof want, "tensor '%0*d...' has dtype 'F16'", UTF8_CLIP_MAX, 0);
        expect_hdr_refused(hdr, 4, want, "a name of 300 bytes");
        // A prefix of 200 bytes before a name vitmae looks for: cut too, in both places it is named.
        snprintf(hdr, sizeof hdr, "{\"%0200d.cls_token\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 7);
        size_t len;
        uint8_t *b = make_st(hdr, 4, &len);
        char err[512] = "";
        StFile *f = st_open_mem(b, len, "mem.safetensors", err, sizeof err);
        CHECK(f != NULL, "a long prefix: read (%s)", err);
        if (f) st_missing(f, "cls_token", err, sizeof err);
        snprintf(want, sizeof want, "as '%0*d...cls_token': strip the prefix '%0*d...' from", UTF8_CLIP_MAX, 0, UTF8_CLIP_MAX, 0);
        CHECK(f && strstr(err, want), "a long prefix: cut in '%s'", err);
        st_close(f);
        free(b);
    }
    // The wrapper named by its prefix: torch.compile's _orig_mod., another's (Lightning's model.) plainly;
    // each said DistributedDataParallel's.
    {
        const char *pre[2] = {"_orig_mod.", "model."}, *who[2] = {"as a model compiled with torch.compile writes it",
                                                                   "as a wrapped model writes it"};
        for (int k = 0; k < 2; k++) {
            char hdr[256], err[512] = "";
            snprintf(hdr, sizeof hdr, "{\"%scls_token\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", pre[k]);
            size_t len;
            uint8_t *b = make_st(hdr, 4, &len);
            StFile *f = st_open_mem(b, len, "mem.safetensors", err, sizeof err);
            if (f) st_missing(f, "cls_token", err, sizeof err);
            CHECK(f && strstr(err, who[k]) && !strstr(err, "DistributedDataParallel"), "prefix %s: '%s'", pre[k], err);
            st_close(f);
            free(b);
        }
    }
    // A key given twice means two things to two readers (cJSON keeps the first, Python the last).
    expect_hdr_refused("{\"__metadata__\":{\"format\":\"vitmae\",\"format\":\"other\"}}", 0,
                       "key 'format' appears twice", "metadata key twice");
    expect_hdr_refused("{\"__metadata__\":{\"config\":\"{\\\"depth\\\":1,\\\"depth\\\":2}\"}}", 0,
                       "key 'depth' of __metadata__ 'config' appears twice", "a key twice inside a metadata value");
    expect_hdr_refused("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                       "key 'dtype' appears twice", "a tensor's field twice");
    // A NUL byte inside the header: cJSON stops there; the rest is not whitespace.
    static const uint8_t nul[14] = {6, 0, 0, 0, 0, 0, 0, 0, '{', '}', 0, ' ', ' ', ' '};
    expect_refused(nul, sizeof nul, "malformed JSON header", "NUL in header");
}

static int write_ckpt(const char *path, const MaeConfig *cfg, const float *params, const char *ts,
                      const float *m, const float *v) {
    char err[512];
    int rc = ckpt_save(path, cfg, params, ts, m, v, err, sizeof err);
    CHECK(rc == 0, "ckpt_save %s: %s", path, err);
    return rc;
}

static void test_round_trip(void) {
    MaeConfig cfg;
    small_config(&cfg);
    size_t n = mae_num_params(&cfg);
    float *p = malloc(n * 4), *m = malloc(n * 4), *v = malloc(n * 4);
    fill_finite(p, n, 1); fill_finite(m, n, 2); fill_finite(v, n, 3);
    const char *ts = "{\"step\":123,\"rng\":[1,2,3],\"data_pos\":7}";
    const char *path = path_in("rt.safetensors");
    write_ckpt(path, &cfg, p, ts, m, v);
    Checkpoint ck;
    char err[512];
    int rc = ckpt_load(path, &ck, err, sizeof err);
    CHECK(rc == 0, "round trip load: %s", err);
    if (rc == 0) {
        CHECK(memcmp(&ck.cfg, &cfg, sizeof cfg) == 0, "config round trip bitwise");
        CHECK(memcmp(ck.params, p, n * 4) == 0, "params bitwise");
        CHECK(ck.exp_avg && memcmp(ck.exp_avg, m, n * 4) == 0, "exp_avg bitwise");
        CHECK(ck.exp_avg_sq && memcmp(ck.exp_avg_sq, v, n * 4) == 0, "exp_avg_sq bitwise");
        CHECK(ck.train_state && !strcmp(ck.train_state, ts), "train_state");
        CHECK(ck.has_decoder == 1 && !ck.classifier && !ck.fc_norm, "has decoder; not a classifier, no fc_norm");
        ckpt_free(&ck);
    }
    // Weights only (every command but resuming): the same parameters and train state, no moments.
    rc = ckpt_load_weights(path, &ck, err, sizeof err);
    CHECK(rc == 0, "weights-only load: %s", err);
    if (rc == 0) {
        CHECK(memcmp(&ck.cfg, &cfg, sizeof cfg) == 0 && memcmp(ck.params, p, n * 4) == 0, "weights only: params bitwise");
        CHECK(!ck.exp_avg && !ck.exp_avg_sq && ck.train_state && !strcmp(ck.train_state, ts) && ck.has_decoder == 1,
              "weights only: train_state and decoder, no moments");
        ckpt_free(&ck);
    }
    // The encoder's weights alone (attention, embed, probe): the first floats of the same, no more held.
    rc = ckpt_load_encoder(path, &ck, err, sizeof err);
    CHECK(rc == 0, "encoder load: %s", err);
    if (rc == 0) {
        size_t k = encoder_floats(&cfg);
        CHECK(k < n && memcmp(&ck.cfg, &cfg, sizeof cfg) == 0 && memcmp(ck.params, p, k * 4) == 0,
              "encoder load: the first %zu of %zu floats bitwise", k, n);
        CHECK(!ck.exp_avg && !ck.exp_avg_sq && ck.train_state && ck.has_decoder == 1, "encoder load: no moments");
        ckpt_free(&ck);
    }
    // The file is a plain safetensors file with our metadata and MAE's names, in table order.
    StFile *f = st_open(path, err, sizeof err);
    CHECK(f != NULL, "st_open: %s", err);
    if (f) {
        MaeTensor tab[64];
        int nt = mae_param_table(&cfg, tab, 64);
        CHECK(st_count(f) == 3 * nt, "tensor count %d", st_count(f));
        CHECK(!strcmp(st_tensor_name(f, 0), "cls_token") && !strcmp(st_tensor_name(f, nt - 1), "decoder_pred.bias"),
              "table order");
        CHECK(!strcmp(st_tensor_name(f, nt), "optimizer.exp_avg.cls_token"), "moment names");
        CHECK(!strcmp(st_meta(f, "format"), "vitmae") && st_meta(f, "crc32") && strlen(st_meta(f, "crc32")) == 8,
              "format and crc32");
        int nd;
        int64_t sh[4];
        CHECK(st_get(f, "blocks.1.attn.qkv.weight", &nd, sh) && nd == 2 && sh[0] == 24 && sh[1] == 8, "qkv shape");
        st_close(f);
    }
    // Header padded to a multiple of 8, as the reference implementation writes it.
    size_t len;
    uint8_t *bytes = slurp(path, &len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | bytes[i];
    CHECK(hlen % 8 == 0 && bytes[8 + hlen - 1] != 0, "header length %llu padded", (unsigned long long)hlen);

    // Every single-byte truncation and many byte flips: refused or accepted, never a crash.
    int refused = 0;
    for (size_t cut = 0; cut < len; cut += (cut < 64 || len - cut < 64) ? 1 : 97) {
        StFile *g = st_open_mem(bytes, cut, "cut", err, sizeof err);
        refused += g == NULL;
        st_close(g);
    }
    CHECK(refused > 100, "truncations refused (%d)", refused);
    uint32_t s = 7;
    int flips_refused = 0, flips = 0;
    for (int k = 0; k < 400; k++) {
        s = s * 1664525u + 1013904223u;
        size_t at = (s >> 8) % len;
        uint8_t old = bytes[at];
        bytes[at] ^= (uint8_t)(1u << (s % 8));
        StFile *g = st_open_mem(bytes, len, "flip", err, sizeof err);
        flips++;
        flips_refused += g == NULL;
        CHECK(g != NULL || strncmp(err, "flip: ", 6) == 0, "flip reason '%s'", err);
        if (g && at >= 8 + hlen) CHECK(0, "flipped data byte %zu accepted", at);
        st_close(g);
        bytes[at] = old;
    }
    CHECK(flips_refused > flips / 2, "flips refused %d of %d", flips_refused, flips);
    bytes[len - 1] ^= 0x40;
    expect_refused(bytes, len, "crc32 mismatch (file damaged)", "flipped data byte");
    free(bytes);

    // Without train_state: no moments written or loaded; a 1-channel config round trips too.
    cfg.in_chans = 1; cfg.pos_learned = 1; cfg.norm_pix_loss = 0;
    cfg.pixel_mean[1] = cfg.pixel_mean[2] = 0.0f; cfg.pixel_std[1] = cfg.pixel_std[2] = 1.0f;
    size_t n1 = mae_num_params(&cfg);
    path = path_in("rt1.safetensors");
    write_ckpt(path, &cfg, p, NULL, NULL, NULL);
    rc = ckpt_load(path, &ck, err, sizeof err);
    CHECK(rc == 0, "1-channel load: %s", err);
    if (rc == 0) {
        CHECK(memcmp(&ck.cfg, &cfg, sizeof cfg) == 0, "1-channel config bitwise");
        CHECK(memcmp(ck.params, p, n1 * 4) == 0, "1-channel params bitwise");
        CHECK(!ck.train_state && !ck.exp_avg && !ck.exp_avg_sq, "no train state");
        ckpt_free(&ck);
    }
    free(p); free(m); free(v);
}

// The whole-file reader's answer for path: st_open, then ckpt_from_st on the file in memory.
static int load_whole(const char *path, Checkpoint *ck, char *err, size_t errlen) {
    memset(ck, 0, sizeof *ck);
    StFile *f = st_open(path, err, errlen);
    if (!f) return -1;
    int rc = ckpt_from_st(f, 1, ck, err, errlen);
    st_close(f);
    return rc;
}

// Reading the header, then the data straight into their places (st_open_header, st_take, st_fill:
// every checkpoint reader's way in): the same tensors as a whole-file read; damage anywhere in the
// data found, in tensors nobody takes too; and for a damaged checkpoint, the same answer, reason
// included, as the whole-file reader.
static void test_streamed(void) {
    char err[512], err2[512];
    // A tensor larger than the reader's 4 MiB buffer, read through it in pieces, between two taken.
    size_t nb = (5u << 20) / 4 + 13;
    float *big = malloc(nb * 4), a[7], c[5], got_a[7], got_c[5];
    fill(big, nb, 4); fill(a, 7, 5); fill(c, 5, 6);
    StTensor t[3] = {{"a", 1, {7, 0, 0, 0}, a}, {"big", 1, {(int64_t)nb, 0, 0, 0}, big}, {"c", 1, {5, 0, 0, 0}, c}};
    const char *path = path_in("big.safetensors");
    // The crc32 written is zlib's over the data section (the writer takes it tensor by tensor).
    CHECK(st_write(path, t, 3, NULL, NULL, 0, err, sizeof err) == 0, "write: %s", err);
    {
        size_t blen;
        uint8_t *b = slurp(path, &blen);
        uint64_t h = 0;
        for (int i = 7; i >= 0; i--) h = (h << 8) | b[i];
        uLong want = crc32(crc32(0L, Z_NULL, 0), b + 8 + h, (uInt)(blen - 8 - h));
        StFile *w = st_open(path, err, sizeof err);
        char hex[16];
        snprintf(hex, sizeof hex, "%08lx", want);
        CHECK(w && !strcmp(st_meta(w, "crc32"), hex), "crc32 %s, zlib over the data section %s", w ? st_meta(w, "crc32") : err, hex);
        st_close(w);
        free(b);
    }
    {
        // st_scan of a tensor no place receives, larger than the reader's buffer: a NaN or an infinity in
        // its first piece, its last, or none (it is read in pieces; each one counts).
        float *fin = malloc(nb * 4);
        fill_finite(fin, nb, 4);
        const char *sp = path_in("scan.safetensors");
        for (int where = 0; where < 3; where++) {
            if (where < 2) fin[where ? nb - 1 : 3] = where ? INFINITY : NAN;
            StTensor u[3] = {{"a", 1, {7, 0, 0, 0}, a}, {"big", 1, {(int64_t)nb, 0, 0, 0}, fin}, {"c", 1, {5, 0, 0, 0}, c}};
            CHECK(st_write(sp, u, 3, NULL, NULL, 0, err, sizeof err) == 0, "write: %s", err);
            StFile *w = st_open_header(sp, err, sizeof err);
            if (!w) { CHECK(0, "st_open_header: %s", err); break; }
            st_take(w, st_find(w, "a", NULL, NULL), got_a);
            st_scan(w, st_find(w, "big", NULL, NULL));
            CHECK(st_fill(w, err, sizeof err) == 0, "st_fill: %s", err);
            CHECK(st_nonfinite(w, st_find(w, "big", NULL, NULL)) == (where < 2) && st_nonfinite(w, st_find(w, "a", NULL, NULL)) == 0,
                  "st_scan of a tensor in pieces, %s", where == 0 ? "NaN in the first" : where == 1 ? "inf in the last" : "none");
            st_close(w);
            fin[3] = fin[nb - 1] = 1.0f;
        }
        free(fin);
    }
    {
        // An empty tensor given without data, between two others, adds nothing to the crc32 (it
        // does not start it afresh): the file reads back whole and from its header.
        StTensor e[3] = {{"a", 1, {7, 0, 0, 0}, a}, {"none", 2, {0, 3, 0, 0}, NULL}, {"c", 1, {5, 0, 0, 0}, c}};
        const char *ep = path_in("empty.safetensors");
        CHECK(st_write(ep, e, 3, NULL, NULL, 0, err, sizeof err) == 0, "write with an empty tensor: %s", err);
        StFile *w = st_open(ep, err, sizeof err);
        CHECK(w != NULL, "an empty tensor in the middle: read whole: %s", err);
        st_close(w);
        w = st_open_header(ep, err, sizeof err);
        int ok = w && st_verify(w, err, sizeof err) == 0;
        CHECK(ok, "an empty tensor in the middle: read from the header: %s", err);
        st_close(w);
    }
    StFile *f = st_open_header(path, err, sizeof err);
    CHECK(f != NULL, "st_open_header: %s", err);
    if (f) {
        int nd = -1;
        int64_t sh[4];
        int ia = st_find(f, "a", NULL, NULL), ic = st_find(f, "c", &nd, sh);
        CHECK(ia >= 0 && ic >= 0 && nd == 1 && sh[0] == 5 && st_find(f, "nope", NULL, NULL) < 0, "st_find");
        CHECK(st_get(f, "a", NULL, NULL) == NULL, "no data in memory before st_fill");
        memset(got_a, 0, sizeof got_a); memset(got_c, 0, sizeof got_c);
        st_take(f, ic, got_c);
        st_take(f, ia, got_a);
        CHECK(st_fill(f, err, sizeof err) == 0, "st_fill: %s", err);
        CHECK(!memcmp(got_a, a, sizeof a) && !memcmp(got_c, c, sizeof c), "taken tensors bitwise");
        st_close(f);
    }
    // A header that lists its tensors in another order than their data: each still gets its own bytes.
    {
        size_t ol;
        uint8_t *ob = make_st("{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[8,20]},"
                              "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 20, &ol);
        const char *op = path_in("order.safetensors");
        spit(op, ob, ol);
        StFile *whole = st_open(op, err, sizeof err), *hdr = st_open_header(op, err2, sizeof err2);
        CHECK(whole && hdr, "out-of-order file: '%s' / '%s'", err, err2);
        if (whole && hdr) {
            float x[3] = {0}, y[2] = {0};
            st_take(hdr, st_find(hdr, "x", NULL, NULL), x);
            st_take(hdr, st_find(hdr, "y", NULL, NULL), y);
            CHECK(st_fill(hdr, err, sizeof err) == 0, "st_fill: %s", err);
            CHECK(!memcmp(x, st_get(whole, "x", NULL, NULL), sizeof x) && !memcmp(y, st_get(whole, "y", NULL, NULL), sizeof y),
                  "each tensor its own bytes, whatever the header's order");
        }
        st_close(whole); st_close(hdr);
        free(ob);
    }
    size_t len;
    uint8_t *bytes = slurp(path, &len);
    // A byte of the big tensor past the reader's first 4 MiB: found, with the whole reader's reason.
    bytes[len - 5 * 4 - 100] ^= 0x01;
    const char *bad = path_in("big-bad.safetensors");
    spit(bad, bytes, len);
    f = st_open_header(bad, err, sizeof err);
    CHECK(f != NULL, "header of a file with damaged data: %s", err);
    if (f) {
        st_take(f, st_find(f, "a", NULL, NULL), got_a);
        CHECK(st_fill(f, err, sizeof err) != 0 && strstr(err, "crc32 mismatch (file damaged)"), "untaken damage found: %s", err);
        st_close(f);
    }
    StFile *g = st_open(bad, err2, sizeof err2);
    CHECK(g == NULL && !strcmp(err, err2), "the whole reader's reason '%s'", err2);
    st_close(g);
    // st_verify: the crc32 alone, the places left as they were.
    f = st_open_header(bad, err, sizeof err);
    if (f) {
        memset(got_a, 0, sizeof got_a);
        st_take(f, st_find(f, "a", NULL, NULL), got_a);
        strcpy(err, "untouched");
        CHECK(st_verify(f, err, sizeof err) != 0 && strstr(err, "crc32 mismatch"), "st_verify: %s", err);
        CHECK(got_a[3] == 0.0f && got_a[4] == 0.0f, "st_verify fills nothing");
        st_close(f);
    }
    f = st_open_header(path, err, sizeof err);
    if (f) {
        strcpy(err, "untouched");
        CHECK(st_verify(f, err, sizeof err) == 0 && !strcmp(err, "untouched"), "st_verify of a sound file: %s", err);
        st_close(f);
    }
    // A file shortened between the header and the data: refused, never a partial read taken as whole.
    f = st_open_header(path, err, sizeof err);
    if (f) {
        st_take(f, st_find(f, "c", NULL, NULL), got_c);
        CHECK(truncate(path, (off_t)(len - 3)) == 0, "truncate");
        CHECK(st_fill(f, err, sizeof err) != 0 && strstr(err, "file shrank while reading"), "shortened file: %s", err);
        st_close(f);
    }
    free(bytes); free(big);

    // A resumable checkpoint: byte flips anywhere, and cuts. Both readers that go through the header
    // (ckpt_load, ckpt_load_weights) give the whole-file reader's answer, word for word; every flip
    // in the data (the moments included, which ckpt_load_weights does not keep) is refused.
    MaeConfig cfg;
    small_config(&cfg);
    size_t n = mae_num_params(&cfg);
    float *p = malloc(n * 4), *m = malloc(n * 4), *v = malloc(n * 4);
    fill_finite(p, n, 7); fill_finite(m, n, 8); fill_finite(v, n, 9);
    path = path_in("st.safetensors");
    write_ckpt(path, &cfg, p, "{\"step\":5}", m, v);
    bytes = slurp(path, &len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | bytes[i];
    const char *dmg = path_in("st-dmg.safetensors");
    uint32_t s = 11;
    int same = 0, data_flips = 0, data_refused = 0, moment_flips = 0, dec_flips = 0, dec_refused = 0;
    for (int k = 0; k < 300; k++) {
        s = s * 1664525u + 1013904223u;
        size_t at = k == 0 ? len - 1 : (s >> 8) % len;
        uint8_t old = bytes[at];
        bytes[at] ^= (uint8_t)(1u << (s % 8));
        spit(dmg, bytes, len);
        Checkpoint w, h, hw, he;
        int rw = load_whole(dmg, &w, err, sizeof err);
        int rh = ckpt_load(dmg, &h, err2, sizeof err2);
        char err3[512], err4[512];
        int rhw = ckpt_load_weights(dmg, &hw, err3, sizeof err3);
        int rhe = ckpt_load_encoder(dmg, &he, err4, sizeof err4);
        int agree = (rw != 0) == (rh != 0) && (rw != 0) == (rhw != 0) && (rw != 0) == (rhe != 0) &&
                    (!rw || (!strcmp(err, err2) && !strcmp(err, err3) && !strcmp(err, err4)));
        if (!rw && !rh && !rhw && !rhe)
            agree = !memcmp(w.params, h.params, n * 4) && !memcmp(w.params, hw.params, n * 4) &&
                    !memcmp(w.params, he.params, encoder_floats(&w.cfg) * 4) &&
                    !memcmp(w.exp_avg, h.exp_avg, n * 4) && !memcmp(w.exp_avg_sq, h.exp_avg_sq, n * 4);
        CHECK(agree, "flip of byte %zu: whole '%s', ckpt_load '%s', weights only '%s', encoder '%s'", at, rw ? err : "ok",
              rh ? err2 : "ok", rhw ? err3 : "ok", rhe ? err4 : "ok");
        same += agree;
        if (at >= 8 + hlen) {
            data_flips++;
            data_refused += rhw != 0 && strstr(err3, "crc32 mismatch (file damaged)") != NULL;
            moment_flips += at >= 8 + hlen + n * 4;   // past the parameters: in a moment
        }
        if (at >= 8 + hlen + encoder_floats(&cfg) * 4 && at < 8 + hlen + n * 4) {   // in the decoder's weights
            dec_flips++;
            dec_refused += rhe != 0 && strstr(err4, "crc32 mismatch (file damaged)") != NULL;
        }
        ckpt_free(&w); ckpt_free(&h); ckpt_free(&hw); ckpt_free(&he);
        bytes[at] = old;
    }
    CHECK(same == 300, "%d of 300 flips answered alike", same);
    CHECK(data_flips > 100 && moment_flips > 50 && data_refused == data_flips,
          "flips in the data: %d, in the moments %d, refused by the crc32 %d", data_flips, moment_flips, data_refused);
    CHECK(dec_flips > 5 && dec_refused == dec_flips, "flips in the decoder's weights, which ckpt_load_encoder reads past: %d, "
          "refused by the crc32 %d", dec_flips, dec_refused);
    for (size_t cut = 0; cut < len; cut += cut < 16 || len - cut < 16 ? 1 : 61) {
        spit(dmg, bytes, cut);
        Checkpoint w, h, he;
        char err4[512];
        int rw = load_whole(dmg, &w, err, sizeof err);
        int rh = ckpt_load_weights(dmg, &h, err2, sizeof err2);
        int rhe = ckpt_load_encoder(dmg, &he, err4, sizeof err4);
        CHECK(rw != 0 && rh != 0 && rhe != 0 && !strcmp(err, err2) && !strcmp(err, err4),
              "cut at %zu: whole '%s', weights only '%s', encoder '%s'", cut, err, err2, err4);
        ckpt_free(&w); ckpt_free(&h); ckpt_free(&he);
    }
    free(bytes); free(p); free(m); free(v);
}

static void test_config_json(void) {
    MaeConfig cfg, back;
    small_config(&cfg);
    char *js = mae_config_to_json(&cfg);
    char err[256];
    CHECK(js && mae_config_from_json(js, &back, err, sizeof err) == 0, "config json round trip: %s", err);
    CHECK(memcmp(&cfg, &back, sizeof cfg) == 0, "config json bitwise");
    CHECK(js && strstr(js, "\"pixel_mean\":[0.485,0.456,") && strstr(js, "\"pos_embed\":\"fixed\"")
          && strstr(js, "\"norm_pix_loss\":true"), "config json text: %s", js);
    free(js);
    static const struct { const char *from, *to, *want; } bad[] = {
        {"\"img_size\":8", "\"img_size\":\"8\"", "'img_size' must be an integer"},
        {"\"img_size\":8,", "", "missing field 'img_size'"},
        {"\"img_size\":8", "\"img_size\":10", "img_size 10 is not a multiple of patch_size 4"},
        {"\"depth\":2", "\"depth\":2.5", "'depth' must be an integer"},
        {"\"num_heads\":2", "\"num_heads\":3", "not divisible by num_heads 3"},
        {"\"num_heads\":2", "\"num_heads\":0", "config: num_heads 0 is out of range [1, 8]"},
        {"\"decoder_num_heads\":1", "\"decoder_num_heads\":0", "config: decoder_num_heads 0 is out of range [1, 4]"},
        {"\"layer_norm_eps\":1e-05", "\"layer_norm_eps\":1e308", "'layer_norm_eps' 1e+308 is out of a float's range"},
        {"\"norm_pix_loss\":true", "\"norm_pix_loss\":1", "'norm_pix_loss' must be true or false"},
        {"\"pos_embed\":\"fixed\"", "\"pos_embed\":\"sincos\"", "'pos_embed' must be"},
        {"\"mask_ratio\":0.6", "\"mask_ratio\":1.5", "mask_ratio 1.5 is out of range"},
        {"\"mask_ratio\":0.6", "\"mask_ratio\":null", "'mask_ratio' must be a number"},
        {"[0.229,0.001,7]", "[0.229,0.001]", "'pixel_std' must be an array of in_chans (3)"},
        {"[0.229,0.001,7]", "[0.229,0,7]", "pixel_std[1] 0 must be > 0"},
        {"\"layer_norm_eps\":1e-05", "\"layer_norm_eps\":-1", "layer_norm_eps -1 must be > 0"},
        {"\"in_chans\":3", "\"in_chans\":2", "in_chans 2 must be 1 or 3"},
        {"{", "[", "config: malformed JSON"},
    };
    js = mae_config_to_json(&cfg);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *at = strstr(js, bad[i].from);
        CHECK(at != NULL, "case %zu: '%s' not in %s", i, bad[i].from, js);
        if (!at) continue;
        char buf[2048];
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - js), js, bad[i].to, at + strlen(bad[i].from));
        err[0] = 0;
        CHECK(mae_config_from_json(buf, &back, err, sizeof err) != 0, "case %zu accepted: %s", i, buf);
        CHECK(strstr(err, bad[i].want) != NULL, "case %zu: reason '%s' lacks '%s'", i, err, bad[i].want);
    }
    free(js);
    CHECK(mae_config_from_json("[1]", &back, err, sizeof err) != 0 && strstr(err, "not a JSON object"), "array config");
    // Nested past the JSON reader's 1000 levels: said so, not "malformed JSON" (1000 levels parse).
    for (int levels = 1000; levels <= 1001; levels++) {
        char deep[2 * 1001 + 16];
        check_json_nested(deep, sizeof deep, "{\"a\":", levels);
        const char *want = levels == 1000 ? "config: missing field 'img_size'" : "config: JSON nested deeper than 1000 levels";
        err[0] = 0;
        CHECK(mae_config_from_json(deep, &back, err, sizeof err) != 0 && strstr(err, want), "config of %d levels: '%s'", levels, err);
    }
    // MAE's own configs have mlp_ratio 4.0: an integral float is accepted.
    js = mae_config_to_json(&cfg);
    char *at = strstr(js, "\"mlp_ratio\":4");
    char buf[2048];
    snprintf(buf, sizeof buf, "%.*s\"mlp_ratio\":4.0%s", (int)(at - js), js, at + strlen("\"mlp_ratio\":4"));
    CHECK(mae_config_from_json(buf, &back, err, sizeof err) == 0 && back.mlp_ratio == 4, "mlp_ratio 4.0: %s", err);
    free(js);
}

// A checkpoint built tensor by tensor so single things can be wrong.
enum { DROP_NONE, DROP_ONE, DROP_DECODER, DROP_ONE_DECODER, BAD_SHAPE, DROP_MOMENT, DROP_MOMENTS, PREFIX_MODULE };
static void write_custom(const char *path, const MaeConfig *cfg, const float *p, int how,
                         const char *cfg_json, const char *format, const char *train_state) {
    MaeTensor tab[64];
    int n = mae_param_table(cfg, tab, 64);
    StTensor st[192];
    char names[128][96];
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (how == DROP_ONE && !strcmp(tab[i].name, "blocks.1.mlp.fc1.bias")) continue;
        if (how == DROP_DECODER && tab[i].decoder) continue;
        if (how == DROP_ONE_DECODER && !strcmp(tab[i].name, "decoder_norm.weight")) continue;
        StTensor t = {tab[i].name, tab[i].ndim, {0}, p + tab[i].offset};
        if (how == PREFIX_MODULE) { snprintf(names[i], 96, "module.%.63s", tab[i].name); t.name = names[i]; }
        for (int d = 0; d < tab[i].ndim; d++) t.shape[d] = tab[i].shape[d];
        if (how == BAD_SHAPE && !strcmp(tab[i].name, "pos_embed")) { t.shape[1] = 1; t.shape[2] = tab[i].shape[1] * tab[i].shape[2]; }
        st[k++] = t;
    }
    if (train_state && how != DROP_MOMENTS)
        for (int i = 0; i < n; i++) {
            if (how == DROP_MOMENT && i == 3) continue;
            snprintf(names[i], 96, "optimizer.exp_avg.%.63s", tab[i].name);
            snprintf(names[64 + i], 96, "optimizer.exp_avg_sq.%.63s", tab[i].name);
            for (int m = 0; m < 2; m++) {
                StTensor t = {names[64 * m + i], tab[i].ndim, {0}, p + tab[i].offset};
                for (int d = 0; d < tab[i].ndim; d++) t.shape[d] = tab[i].shape[d];
                st[k++] = t;
            }
        }
    const char *keys[3], *vals[3];
    int nm = 0;
    if (format) { keys[nm] = "format"; vals[nm++] = format; }
    if (cfg_json) { keys[nm] = "config"; vals[nm++] = cfg_json; }
    if (train_state) { keys[nm] = "train_state"; vals[nm++] = train_state; }
    char err[512];
    CHECK(st_write(path, st, k, keys, vals, nm, err, sizeof err) == 0, "st_write: %s", err);
}

static void expect_load_fails(const char *path, const char *want, const char *what) {
    Checkpoint ck;
    char err[512] = "";
    CHECK(ckpt_load(path, &ck, err, sizeof err) != 0, "%s: loaded", what);
    CHECK(strstr(err, want) != NULL && strstr(err, path) == err, "%s: reason '%s' lacks '%s'", what, err, want);
    CHECK(ck.params == NULL && ck.train_state == NULL, "%s: nothing left allocated", what);
    char err2[512] = "";   // the weights-only load makes every check too (the moments' included)
    CHECK(ckpt_load_weights(path, &ck, err2, sizeof err2) != 0 && !strcmp(err2, err), "%s: weights only: '%s'", what, err2);
    char err3[512] = "";   // and the encoder's alone, the decoder's and the moments' checks included
    CHECK(ckpt_load_encoder(path, &ck, err3, sizeof err3) != 0 && !strcmp(err3, err) && ck.params == NULL,
          "%s: encoder only: '%s'", what, err3);
}

static void test_checkpoint_rules(void) {
    MaeConfig cfg;
    small_config(&cfg);
    size_t n = mae_num_params(&cfg);
    float *p = malloc(n * 4);
    fill_finite(p, n, 9);
    char *cj = mae_config_to_json(&cfg);
    const char *path = path_in("custom.safetensors");

    write_custom(path, &cfg, p, DROP_ONE, cj, "vitmae", NULL);
    expect_load_fails(path, "missing tensor 'blocks.1.mlp.fc1.bias'", "missing tensor");
    // A DDP-wrapped model's state_dict (`module.cls_token`, ...) saved by a PyTorch user: the
    // reason names the prefix, not only a tensor that seems to be there (docs/interface.md, section 4).
    write_custom(path, &cfg, p, PREFIX_MODULE, cj, "vitmae", NULL);
    expect_load_fails(path, "missing tensor 'cls_token' (the file has it as 'module.cls_token': strip the prefix 'module.'",
                      "names with DDP's module. prefix");
    // ... and the header's peek (eval, reconstruct, train --init: a full checkpoint wanted) takes it for
    // a full one, which the loader then refuses so: its decoder's names missing too, it was "an
    // encoder-only checkpoint (no decoder tensors)", which hid the prefix.
    {
        char perr[512] = "";
        int kind = ckpt_peek_kind(path, CKPT_FULL, perr, sizeof perr);
        CHECK(kind == CKPT_FULL, "module. prefix: peek says kind %d (%s), not a full checkpoint", kind, perr);
    }
    write_custom(path, &cfg, p, BAD_SHAPE, cj, "vitmae", NULL);
    expect_load_fails(path, "tensor 'pos_embed' has shape [1, 1, 40], the config needs [1, 5, 8]", "wrong shape");
    write_custom(path, &cfg, p, DROP_ONE_DECODER, cj, "vitmae", NULL);
    expect_load_fails(path, "missing tensor 'decoder_norm.weight'", "part of the decoder");
    write_custom(path, &cfg, p, DROP_NONE, NULL, "vitmae", NULL);
    expect_load_fails(path, "no 'config' in __metadata__", "no config");
    write_custom(path, &cfg, p, DROP_NONE, cj, "pytorch", NULL);
    expect_load_fails(path, "format is 'pytorch', not 'vitmae'", "other format");
    write_custom(path, &cfg, p, DROP_NONE, "{\"img_size\": 8", "vitmae", NULL);
    expect_load_fails(path, "config: malformed JSON", "malformed config");
    write_custom(path, &cfg, p, DROP_NONE, "{\"img_size\": 8}", "vitmae", NULL);
    expect_load_fails(path, "config: missing field 'patch_size'", "config missing a field");
    write_custom(path, &cfg, p, DROP_MOMENT, cj, "vitmae", "{\"step\":1}");
    expect_load_fails(path, "missing tensor 'optimizer.exp_avg.patch_embed.proj.bias'", "missing moment");
    // Another config makes every shape wrong: the first mismatch is named.
    MaeConfig other = cfg;
    other.embed_dim = 12; other.num_heads = 3;
    char *oj = mae_config_to_json(&other);
    write_custom(path, &cfg, p, DROP_NONE, oj, "vitmae", NULL);
    expect_load_fails(path, "tensor 'cls_token' has shape [1, 1, 8], the config needs [1, 1, 12]", "config/tensor mismatch");
    free(oj);
    // A config of fewer blocks than the file holds (a hand-edited depth, a conversion given the wrong
    // one): each block past it is named, where the load dropped them without a word (and a resumed run
    // then saved the model without them). Every block the config asks for is there, so only this
    // check refuses it; the moments' names are checked too.
    MaeConfig shallow = cfg;
    shallow.depth = 1;
    char *sj = mae_config_to_json(&shallow);
    write_custom(path, &cfg, p, DROP_NONE, sj, "vitmae", NULL);
    expect_load_fails(path, "holds tensor 'blocks.1.norm1.weight', of a block past the config's depth 1 (the config does "
                      "not describe the file", "a block past the config's depth");
    free(sj);
    shallow = cfg;
    shallow.dec_depth = 0;
    sj = mae_config_to_json(&shallow);
    write_custom(path, &cfg, p, DROP_NONE, sj, "vitmae", NULL);
    expect_load_fails(path, "holds tensor 'decoder_blocks.0.norm1.weight', of a block past the config's decoder_depth 0",
                      "a decoder block past the config's decoder_depth");
    free(sj);
    {   // the block names' reader: "decoder_blocks." is no "blocks." part, and ema. / optimizer. prefixes are read past
        const char *names[] = {"cls_token", "decoder_blocks.0.norm1.weight", "optimizer.exp_avg.blocks.7.mlp.fc1.bias",
                               "ema.blocks.2.attn.qkv.weight", "blocks.12", "myblocks.9.x"};
        float one = 1.0f;
        StTensor st[6];
        for (int i = 0; i < 6; i++) { StTensor t = {names[i], 1, {1}, &one}; st[i] = t; }
        char err[512];
        CHECK(st_write(path, st, 6, NULL, NULL, 0, err, sizeof err) == 0, "st_write: %s", err);
        StFile *f = st_open(path, err, sizeof err);
        CHECK(f != NULL, "st_open: %s", err);
        if (f) {
            CHECK(ckpt_check_block_names(f, 8, 1, err, sizeof err) == 0, "depth 8, decoder 1: taken (%s)", err);
            CHECK(ckpt_check_block_names(f, 7, 1, err, sizeof err) != 0 &&
                  strstr(err, "'optimizer.exp_avg.blocks.7.mlp.fc1.bias', of a block past the config's depth 7"),
                  "depth 7: the moment's block named: %s", err);
            CHECK(ckpt_check_block_names(f, 8, 0, err, sizeof err) != 0 && strstr(err, "decoder_depth 0"),
                  "decoder_depth 0: named: %s", err);
            CHECK(ckpt_check_block_names(f, 8, -1, err, sizeof err) == 0, "decoder blocks unchecked (-1): %s", err);
            st_close(f);
        }
        CHECK(st_write(path, st + 3, 1, NULL, NULL, 0, err, sizeof err) == 0, "st_write: %s", err);   // the EMA's alone
        f = st_open(path, err, sizeof err);
        CHECK(f != NULL, "st_open: %s", err);
        if (f) {
            CHECK(ckpt_check_block_names(f, 2, 1, err, sizeof err) != 0 && strstr(err, "'ema.blocks.2.attn.qkv.weight'"),
                  "depth 2: the EMA's block named: %s", err);
            CHECK(ckpt_check_block_names(f, 3, 1, err, sizeof err) == 0, "depth 3: the EMA's block taken: %s", err);
            st_close(f);
        }
    }

    Checkpoint ck;
    char err[512];
    // train_state with every moment removed (a user shares the weights alone): the weights load by each
    // reader, has_moments 0 (a resume refuses it, cmd/train_state.c); it was "missing tensor
    // 'optimizer.exp_avg.cls_token' (train_state is present, so AdamW moments are required)".
    write_custom(path, &cfg, p, DROP_MOMENTS, cj, "vitmae", "{\"step\":1}");
    for (int mode = 0; mode < 3; mode++) {
        err[0] = 0;
        int lrc = mode == 0 ? ckpt_load(path, &ck, err, sizeof err) : mode == 1 ? ckpt_load_weights(path, &ck, err, sizeof err)
                                                                   : ckpt_load_encoder(path, &ck, err, sizeof err);
        CHECK(lrc == 0, "moments removed, reader %d: loads (%s)", mode, err);
        if (lrc) continue;
        CHECK(!ck.has_moments && !ck.exp_avg && !ck.exp_avg_sq && ck.train_state && !strcmp(ck.train_state, "{\"step\":1}") &&
              !memcmp(ck.params, p, (mode == 2 ? 1 : n) * 4), "moments removed, reader %d: weights and train_state, no moments", mode);
        ckpt_free(&ck);
    }
    write_custom(path, &cfg, p, DROP_NONE, cj, "vitmae", "{\"step\":1}");
    CHECK(ckpt_load_weights(path, &ck, err, sizeof err) == 0 && ck.has_moments == 1 && !ck.exp_avg, "moments kept: has_moments 1 (%s)", err);
    ckpt_free(&ck);

    // No format, no crc32, no train_state, an unknown extra tensor: loads (converted files).
    write_custom(path, &cfg, p, DROP_NONE, cj, NULL, NULL);
    CHECK(ckpt_load(path, &ck, err, sizeof err) == 0, "file without format: %s", err);
    CHECK(memcmp(ck.params, p, n * 4) == 0, "params of a file without format");
    ckpt_free(&ck);

    // Encoder-only: loads with has_decoder 0, decoder parameters zero, encoder ones intact.
    write_custom(path, &cfg, p, DROP_DECODER, cj, "vitmae", NULL);
    int rc = ckpt_load(path, &ck, err, sizeof err);
    CHECK(rc == 0, "encoder-only: %s", err);
    if (rc == 0) {
        CHECK(ck.has_decoder == 0, "has_decoder 0");
        MaeTensor tab[64];
        int nt = mae_param_table(&cfg, tab, 64);
        int enc_ok = 1, dec_zero = 1;
        for (int i = 0; i < nt; i++)
            for (size_t j = 0; j < tab[i].numel; j++) {
                size_t at = tab[i].offset + j;
                if (tab[i].decoder) dec_zero &= ck.params[at] == 0.0f && !signbit(ck.params[at]);
                else enc_ok &= memcmp(&ck.params[at], &p[at], 4) == 0;
            }
        CHECK(enc_ok && dec_zero, "encoder params kept (%d), decoder zero (%d)", enc_ok, dec_zero);
        ckpt_free(&ck);
    }
    rc = ckpt_load_encoder(path, &ck, err, sizeof err);
    CHECK(rc == 0 && ck.has_decoder == 0 && !memcmp(ck.params, p, encoder_floats(&cfg) * 4),
          "encoder-only file, the encoder's weights alone: %s", rc ? err : "not the file's");
    if (rc == 0) ckpt_free(&ck);
    // ckpt_save refuses a bad config and a train_state that is not JSON.
    MaeConfig bad = cfg;
    bad.patch_size = 3;
    CHECK(ckpt_save(path_in("never.safetensors"), &bad, p, NULL, NULL, NULL, err, sizeof err) != 0
          && strstr(err, "not a multiple of patch_size 3"), "save with a bad config: %s", err);
    CHECK(ckpt_save(path_in("never.safetensors"), &cfg, p, "{step", p, p, err, sizeof err) != 0
          && strstr(err, "train_state is not valid JSON"), "save with bad train_state: %s", err);
    // One nested past the JSON reader's 1000 levels is said so, not "not valid JSON".
    char deep_state[2 * 1001 + 16];
    int dn = snprintf(deep_state, sizeof deep_state, "{\"a\":");
    for (int k = 1; k < 1001; k++) deep_state[dn++] = '[';
    for (int k = 1; k < 1001; k++) deep_state[dn++] = ']';
    snprintf(deep_state + dn, sizeof deep_state - (size_t)dn, "}");
    CHECK(ckpt_save(path_in("never.safetensors"), &cfg, p, deep_state, p, p, err, sizeof err) != 0
          && strstr(err, "train_state: JSON nested deeper than 1000 levels (the limit of the JSON reader)"),
          "save with a train_state of 1001 levels: %s", err);
    CHECK(access(path_in("never.safetensors"), F_OK) != 0, "nothing written on refusal");
    free(cj);
    free(p);
}

static void test_torch_fixture(void) {
    Checkpoint full, enc;
    char err[512], path[1024];
    const char *root = getenv("VITMAE_ROOT");
    snprintf(path, sizeof path, "%s/tests/fixtures/torch_small.safetensors", root && *root ? root : ".");
    int rc = ckpt_load(path, &full, err, sizeof err);
    CHECK(rc == 0, "torch fixture: %s", err);
    if (rc) return;
    CHECK(full.cfg.img_size == 16 && full.cfg.patch_size == 4 && full.cfg.embed_dim == 16 && full.cfg.dec_embed_dim == 8
          && full.cfg.mlp_ratio == 4 && full.cfg.norm_pix_loss == 1 && full.cfg.pixel_mean[0] == 0.485f, "fixture config");
    CHECK(full.has_decoder == 1 && full.train_state == NULL && full.exp_avg == NULL, "fixture: decoder, no train state");
    CHECK(mae_num_params(&full.cfg) == 5984, "fixture parameter count %zu", mae_num_params(&full.cfg));
    // cls_token holds i / 8 (written by PyTorch, read here): values cross implementations exactly.
    int cls_ok = 1;
    for (int i = 0; i < 16; i++) cls_ok &= full.params[i] == (float)i / 8.0f;
    CHECK(cls_ok, "cls_token values");
    snprintf(path, sizeof path, "%s/tests/fixtures/torch_small_encoder.safetensors", root && *root ? root : ".");
    rc = ckpt_load(path, &enc, err, sizeof err);
    CHECK(rc == 0, "torch encoder fixture: %s", err);
    if (rc == 0) {
        CHECK(enc.has_decoder == 0, "encoder fixture has no decoder");
        MaeTensor tab[64];
        int nt = mae_param_table(&full.cfg, tab, 64);
        int same = 1;
        for (int i = 0; i < nt; i++)
            if (!tab[i].decoder) same &= memcmp(enc.params + tab[i].offset, full.params + tab[i].offset, tab[i].numel * 4) == 0;
        CHECK(same, "encoder tensors equal in both fixtures");
        ckpt_free(&enc);
    }
    Checkpoint alone;   // the encoder's weights alone of the file PyTorch wrote (its order, not ours)
    snprintf(path, sizeof path, "%s/tests/fixtures/torch_small.safetensors", root && *root ? root : ".");
    rc = ckpt_load_encoder(path, &alone, err, sizeof err);
    CHECK(rc == 0 && !memcmp(alone.params, full.params, encoder_floats(&full.cfg) * 4) && alone.has_decoder == 1,
          "torch fixture, the encoder alone: %s", rc ? err : "not the full load's first floats");
    if (rc == 0) ckpt_free(&alone);
    ckpt_free(&full);
}

static int count_temp_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp-") != NULL;
    if (d) closedir(d);
    return n;
}

// An AdamW moment holding NaN or infinity (a file with a crc32 that matches) is refused by every reader
// with the same line: ckpt_load, which copies the moments for a resume, refused it, but the readers
// that check the moments' names and shapes without copying them (ckpt_load_weights: eval, reconstruct,
// info; ckpt_load_encoder: embed, probe, attention, finetune --ckpt) took it, and info said "can resume".
static void test_nonfinite_moments(void) {
    MaeConfig cfg;
    small_config(&cfg);
    size_t n = mae_num_params(&cfg);
    float *p = malloc(n * 4), *m = malloc(n * 4), *v = malloc(n * 4);
    fill_finite(p, n, 31);
    for (size_t i = 0; i < n; i++) { m[i] = 0.5f * p[i]; v[i] = fabsf(p[i]); }
    const char *path = path_in("nonfinite-moment.safetensors");
    const char *moments[3] = {"optimizer.exp_avg.cls_token", "optimizer.exp_avg_sq.blocks.0.norm1.bias",
                              "optimizer.exp_avg_sq.decoder_pred.weight"};
    for (int k = 0; k < 3; k++) {
        char err[512], want[160];
        CHECK(ckpt_save(path, &cfg, p, "{\"step\":1}", m, v, err, sizeof err) == 0, "save: %s", err);
        st_rewrite(path, path, NULL, moments[k], k == 1 ? INFINITY : NAN);
        snprintf(want, sizeof want, "%s: tensor '%s' holds NaN or infinite values", path, moments[k]);
        Checkpoint ck;
        char e1[512] = "", e2[512] = "", e3[512] = "";
        CHECK(ckpt_load(path, &ck, e1, sizeof e1) != 0 && !strcmp(e1, want), "%s: ckpt_load: '%s'", moments[k], e1);
        CHECK(ckpt_load_weights(path, &ck, e2, sizeof e2) != 0 && !strcmp(e2, want), "%s: weights only: '%s'", moments[k], e2);
        CHECK(ckpt_load_encoder(path, &ck, e3, sizeof e3) != 0 && !strcmp(e3, want) && !ck.params,
              "%s: the encoder alone: '%s'", moments[k], e3);
        unlink(path);
    }
    free(p); free(m); free(v);
}

// A checkpoint never holds NaN or infinite values: ckpt_save refuses them naming the tensor (nothing
// written), and a file that holds one (written tensor by tensor) is refused when read, weights or
// moments alike.
static void test_nonfinite(void) {
    MaeConfig cfg;
    small_config(&cfg);
    size_t n = mae_num_params(&cfg);
    MaeTensor tab[64];
    int nt = mae_param_table(&cfg, tab, 64);
    float *p = malloc(n * 4);
    fill_finite(p, n, 21);
    size_t at = 0;
    for (int i = 0; i < nt; i++) if (!strcmp(tab[i].name, "blocks.0.norm1.bias")) at = tab[i].offset + 1;
    char err[512];
    const char *path = path_in("nonfinite.safetensors");
    for (int kind = 0; kind < 3; kind++) {
        float bad = kind == 0 ? NAN : kind == 1 ? INFINITY : -INFINITY;
        p[at] = bad;
        CHECK(ckpt_save(path, &cfg, p, NULL, NULL, NULL, err, sizeof err) == -1 &&
              strstr(err, "not written: tensor 'blocks.0.norm1.bias' holds NaN or infinite values") &&
              access(path, F_OK) != 0, "ckpt_save refuses %g: %s", (double)bad, err);
        char *cj = mae_config_to_json(&cfg);
        write_custom(path, &cfg, p, DROP_NONE, cj, "vitmae", NULL);
        free(cj);
        Checkpoint ck;
        CHECK(ckpt_load_weights(path, &ck, err, sizeof err) == -1 &&
              strstr(err, "tensor 'blocks.0.norm1.bias' holds NaN or infinite values"), "load refuses %g: %s", (double)bad, err);
        unlink(path);
    }
    p[at] = 0.5f;
    // In the decoder, which ckpt_load_encoder reads past: refused as ckpt_load_weights refuses it, word
    // for word; with the encoder's NaN too, the first in table order named (the encoder's), as before.
    const char *dec_names[2] = {"mask_token", "decoder_pred.weight"};
    for (int d = 0; d < 4; d++) {
        size_t dat = 0;
        for (int i = 0; i < nt; i++) if (!strcmp(tab[i].name, dec_names[d % 2])) dat = tab[i].offset + tab[i].numel - 1;
        p[dat] = d % 2 ? -INFINITY : NAN;
        if (d >= 2) p[at] = NAN;
        char *dj = mae_config_to_json(&cfg);
        write_custom(path, &cfg, p, DROP_NONE, dj, "vitmae", NULL);
        free(dj);
        Checkpoint ck;
        char want[128], err2[512];
        snprintf(want, sizeof want, "tensor '%s' holds NaN or infinite values", d >= 2 ? "blocks.0.norm1.bias" : dec_names[d % 2]);
        CHECK(ckpt_load_weights(path, &ck, err, sizeof err) == -1 && strstr(err, want), "weights: %s", err);
        CHECK(ckpt_load_encoder(path, &ck, err2, sizeof err2) == -1 && !strcmp(err2, err) && !ck.params,
              "the encoder alone, %s in %s: '%s', not '%s'", d % 2 ? "-inf" : "NaN", dec_names[d % 2], err2, err);
        StFile *f = st_open(path, err, sizeof err);   // in memory: st_scan answers at once
        if (f) {
            int di = st_find(f, dec_names[d % 2], NULL, NULL), ci = st_find(f, "cls_token", NULL, NULL);
            st_scan(f, di);
            st_scan(f, ci);
            CHECK(st_nonfinite(f, di) == 1 && st_nonfinite(f, ci) == 0, "st_scan of a file in memory");
            st_close(f);
        }
        p[dat] = 0.25f;
        p[at] = 0.5f;
        unlink(path);
    }
    char *cj = mae_config_to_json(&cfg);
    write_custom(path, &cfg, p, DROP_NONE, cj, "vitmae", NULL);
    Checkpoint ck;
    CHECK(ckpt_load_weights(path, &ck, err, sizeof err) == 0, "finite again: loads (%s)", err);
    ckpt_free(&ck);
    free(cj);
    free(p);
}

static void test_atomic_write(void) {
    MaeConfig cfg;
    small_config(&cfg);
    size_t n = mae_num_params(&cfg);
    float *a = malloc(n * 4), *b = malloc(n * 4);
    fill_finite(a, n, 11); fill_finite(b, n, 12);
    char err[512];

    // Into a folder that does not exist: an error naming the path, nothing created.
    char missing[600];
    snprintf(missing, sizeof missing, "%s/no/such/dir/x.safetensors", tmp);
    CHECK(ckpt_save(missing, &cfg, a, NULL, NULL, NULL, err, sizeof err) != 0, "write into a missing folder");
    CHECK(strstr(err, missing) == err && strstr(err, "No such file or directory"), "reason: %s", err);
    CHECK(access(path_in("no"), F_OK) != 0, "no folder created");

    // A failed overwrite (file size limit: EFBIG) leaves the old file byte-identical.
    const char *path = path_in("atomic.safetensors");
    // The temporary file's folder, held open by io/files.c while it is written (file_tmp_create_unique),
    // is let go once the file is in place: a run's checkpoints leave no descriptor open.
    // (A folder of its own: one held already, by a leak, would be shared, not opened again.)
    char folder[600], fresh[700];
    snprintf(folder, sizeof folder, "%s/fds", tmp);
    snprintf(fresh, sizeof fresh, "%s/x.safetensors", folder);
    CHECK(mkdir(folder, 0777) == 0, "mkdir %s", folder);
    int free_fd = dup(0);
    close(free_fd);
    write_ckpt(fresh, &cfg, a, NULL, NULL, NULL);
    int now_fd = dup(0);
    close(now_fd);
    CHECK(now_fd == free_fd, "no folder left open once the checkpoint is written (descriptor %d free before, %d now)",
          free_fd, now_fd);
    unlink(fresh);
    rmdir(folder);
    write_ckpt(path, &cfg, a, NULL, NULL, NULL);
    size_t len0, len1;
    uint8_t *before = slurp(path, &len0);
    struct stat st;
    mode_t um = umask(0);
    umask(um);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~um), "file mode follows the umask (%o)",
          (unsigned)(st.st_mode & 0777));
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {1000, 1000};
        setrlimit(RLIMIT_FSIZE, &rl);
        char e[512] = "";
        int rc = ckpt_save(path, &cfg, b, "{\"step\":2}", b, b, e, sizeof e);
        _exit(rc != 0 && strstr(e, "File too large") && strstr(e, "previous file left intact") ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "size-limited write failed with EFBIG (status %d)", status);
    uint8_t *after = slurp(path, &len1);
    CHECK(after && len0 == len1 && memcmp(before, after, len0) == 0, "old file byte-identical after a failed write");
    CHECK(count_temp_files(tmp) == 0, "no temporary file left behind");
    free(after);

    // Readers never see a partial file while it is overwritten again and again.
    char done[600];
    snprintf(done, sizeof done, "%s/writer-done", tmp);
    pid = fork();
    if (pid == 0) {
        int bad = 0, reads = 0;
        for (;;) {
            int finished = access(done, F_OK) == 0;
            char e[512];
            StFile *f = st_open(path, e, sizeof e);
            bad += f == NULL;
            reads++;
            st_close(f);
            if (finished) break;
        }
        _exit(bad == 0 && reads > 0 ? 0 : 1);
    }
    for (int i = 0; i < 60; i++) write_ckpt(path, &cfg, i % 2 ? a : b, NULL, NULL, NULL);
    spit(done, "", 0);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a concurrent reader always found a valid file");
    CHECK(count_temp_files(tmp) == 0, "no temporary file left after overwrites");
    Checkpoint ck;
    CHECK(ckpt_load(path, &ck, err, sizeof err) == 0 && memcmp(ck.params, a, n * 4) == 0, "last write wins");
    ckpt_free(&ck);
    free(before); free(a); free(b);
}

// A checkpoint name that fits in a folder (250 bytes) but whose temporary name (".NAME.tmp-XXXXXX", 12
// bytes more) does not: st_write says it cannot create the temporary file, with why, in one message
// naming the file; the file already there under that name is left byte for byte, no temporary is left.
static void test_temp_name_too_long(void) {
    char name[251], path[900], err[1200], want[1200];
    memset(name, 'n', 250);
    memcpy(name + 250 - 12, ".safetensors", 12);
    name[250] = 0;
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    spit(path, "previous", 8);
    float a[2] = {1, 2};
    StTensor t = {"a", 1, {2, 0, 0, 0}, a};
    int rc = st_write(path, &t, 1, NULL, NULL, 0, err, sizeof err);
    snprintf(want, sizeof want, "%s: cannot create a temporary file in its folder: %s", path, strerror(ENAMETOOLONG));
    CHECK(rc == -1 && !strcmp(err, want), "a temporary name too long: rc %d, '%s'", rc, err);
    size_t len = 0;
    uint8_t *back = slurp(path, &len);
    CHECK(back && len == 8 && !memcmp(back, "previous", 8), "a temporary name too long: the file there kept");
    free(back);
    CHECK(count_temp_files(tmp) == 0, "a temporary name too long: no temporary file left");
    unlink(path);
}

int main(void) {
    tmp = check_tmpdir();
    test_generic_format();
    test_config_json();
    test_round_trip();
    test_streamed();
    test_checkpoint_rules();
    test_torch_fixture();
    test_nonfinite();
    test_nonfinite_moments();
    test_atomic_write();
    test_temp_name_too_long();
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return check_done();
}
