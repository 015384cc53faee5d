// libFuzzer target: the safetensors reader (st_open_mem) and the vitmae checkpoint checks
// (ckpt_from_st: metadata, config, names, shapes, crc32) on arbitrary bytes; and the same bytes as a
// file read from its header into place (st_open_header, as ckpt_load and ckpt_load_weights read),
// which must give the same answer, reason and parameters included. The file is then read by
// ckpt_load_weights and by ckpt_load_encoder, which keeps the encoder's weights alone and reads the
// decoder's past (io/checkpoint.h): the same answer, the same line, the encoder's floats bitwise; and by
// ckpt_load_encoder_ema, which accepts only what they accept.
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "io/checkpoint.h"
#include "io/json.h"

// A reason quotes what it names from the file clipped, as UTF-8 (io/json.h, utf8_clip): it never
// fills its line (a tensor name of a kilobyte did), and is valid UTF-8 here, where the file's own name
// is ASCII. Control characters in a quoted name are the printer's to write out (cmd/cli.h).
static int clipped(const char *err, size_t errlen) { return strlen(err) + 1 < errlen && utf8_valid(err); }

// The reason without its leading "<name>: ".
static const char *why(const char *err, const char *name) {
    size_t n = strlen(name);
    return !strncmp(err, name, n) && !strncmp(err + n, ": ", 2) ? err + n + 2 : err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[1024], err2[1024];
    StFile *f = st_open_mem(data, size, "fuzz", err, sizeof err);
    Checkpoint ck;
    int rc = -1;
    if (!f) {
        if (!clipped(err, sizeof err)) __builtin_trap();
    } else {
        for (int i = 0; i < st_count(f); i++) {
            int nd;
            int64_t shape[4];
            const char *name = st_tensor_name(f, i);
            const float *p = st_get(f, name, &nd, shape);
            if (!p) __builtin_trap();
            int64_t n = 1;
            for (int k = 0; k < nd; k++) n *= shape[k];
            volatile float sink = 0;
            if (n > 0) sink += p[0] + p[n - 1];      // every element lies inside the data section
            (void)sink;
        }
        (void)st_meta(f, "format");
        rc = ckpt_from_st(f, 1, &ck, err, sizeof err);
        if (rc && !clipped(err, sizeof err)) __builtin_trap();
        st_close(f);
    }
    // The same bytes as a file, read from the header into place.
    int fd = memfd_create("fuzz", 0);
    if (fd < 0) { if (!rc) ckpt_free(&ck); return 0; }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (size && write(fd, data, size) != (ssize_t)size) __builtin_trap();
    Checkpoint ck2;
    int rc2 = -1;
    StFile *g = st_open_header(path, err2, sizeof err2);
    if (g) {
        rc2 = ckpt_from_st(g, 1, &ck2, err2, sizeof err2);
        st_close(g);
    }
    if ((rc != 0) != (rc2 != 0)) __builtin_trap();                              // the same answer
    if (rc2 && !clipped(err2, sizeof err2)) __builtin_trap();
    if (rc && strcmp(why(err, "fuzz"), why(err2, path))) __builtin_trap();          // the same reason
    Checkpoint w, e;
    char errw[1024], erre[1024];
    int rw = ckpt_load_weights(path, &w, errw, sizeof errw), re = ckpt_load_encoder(path, &e, erre, sizeof erre);
    if ((rw != 0) != (re != 0)) __builtin_trap();                                // the same answer
    if (rw && strcmp(errw, erre)) __builtin_trap();                              // the same line
    // The encoder of a classifier's moving average (--ema) reads no file the others refuse, and only a
    // classifier's; its line is clipped as theirs.
    Checkpoint a;
    char erra[1024];
    int ra = ckpt_load_encoder_ema(path, &a, erra, sizeof erra);
    if (!ra && (rw || !a.classifier || !a.fc_norm || memcmp(&w.cfg, &a.cfg, sizeof w.cfg))) __builtin_trap();
    if (ra && !clipped(erra, sizeof erra)) __builtin_trap();
    if (!ra) ckpt_free(&a);
    if (!rw) {
        size_t enc, D = (size_t)w.cfg.embed_dim;
        mae_encoder_model_table(&w.cfg, NULL, 0, &enc);
        if (memcmp(&w.cfg, &e.cfg, sizeof w.cfg) || memcmp(w.params, e.params, enc * sizeof(float))) __builtin_trap();
        if (!rc2 && memcmp(ck2.params, w.params, mae_num_params(&w.cfg) * sizeof(float))) __builtin_trap();
        if (w.has_decoder != e.has_decoder || w.classifier != e.classifier || e.exp_avg || e.exp_avg_sq) __builtin_trap();
        if (!w.train_state != !e.train_state || (w.train_state && strcmp(w.train_state, e.train_state))) __builtin_trap();
        if (!w.fc_norm != !e.fc_norm || (w.fc_norm && memcmp(w.fc_norm, e.fc_norm, 2 * D * sizeof(float)))) __builtin_trap();
        ckpt_free(&w);
        ckpt_free(&e);
    }
    if (!rc) {
        size_t np = mae_num_params(&ck.cfg);
        if (memcmp(ck.params, ck2.params, np * sizeof(float))) __builtin_trap();  // the same weights
        if (!ck.exp_avg != !ck2.exp_avg) __builtin_trap();
        if (ck.exp_avg && (memcmp(ck.exp_avg, ck2.exp_avg, np * 4) || memcmp(ck.exp_avg_sq, ck2.exp_avg_sq, np * 4)))
            __builtin_trap();
        ckpt_free(&ck);
        ckpt_free(&ck2);
    }
    close(fd);
    return 0;
}
