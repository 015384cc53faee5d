// Converts Fashion-MNIST (the idx.gz files of Debian's dataset-fashion-mnist, or the originals) to
// PNG folders: OUT/{train,test}/<class name>/<index>.png, index zero-padded to 5 digits.
// Usage: fmnist2png SRC_DIR OUT_DIR   (SRC_DIR holds train-images-idx3-ubyte.gz and the other three)
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include "data/image.h"

static const char *const class_names[10] = {"T-shirt_top", "Trouser", "Pullover", "Dress", "Coat",
                                            "Sandal", "Shirt", "Sneaker", "Bag", "Ankle_boot"};

static int mkdir_one(const char *path) {
    if (mkdir(path, 0777) == 0 || errno == EEXIST) return 0;
    fprintf(stderr, "fmnist2png: %s: %s\n", path, strerror(errno));
    return -1;
}

static uint32_t be32(const uint8_t *b) { return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]; }

// Reads a whole idx.gz file; checks the magic (0x0801 labels, 0x0803 images) and that the data size
// matches the header. dims: count (and rows, cols for images).
static uint8_t *read_idx(const char *path, uint32_t magic, uint32_t *dims, int ndims) {
    gzFile f = gzopen(path, "rb");
    if (!f) { fprintf(stderr, "fmnist2png: %s: %s\n", path, errno ? strerror(errno) : "cannot open"); return NULL; }
    uint8_t head[16];
    int hlen = 4 + 4 * ndims;
    if (gzread(f, head, (unsigned)hlen) != hlen) {
        fprintf(stderr, "fmnist2png: %s: truncated idx header\n", path);
        gzclose(f);
        return NULL;
    }
    if (be32(head) != magic) {
        fprintf(stderr, "fmnist2png: %s: bad idx magic 0x%08x (want 0x%08x)\n", path, be32(head), magic);
        gzclose(f);
        return NULL;
    }
    size_t total = 1;
    for (int i = 0; i < ndims; i++) {
        dims[i] = be32(head + 4 + 4 * i);
        if (dims[i] == 0 || dims[i] > 1000000) {
            fprintf(stderr, "fmnist2png: %s: implausible dimension %u\n", path, dims[i]);
            gzclose(f);
            return NULL;
        }
        total *= dims[i];
    }
    uint8_t *data = malloc(total + 1);
    if (!data) { fprintf(stderr, "fmnist2png: out of memory\n"); gzclose(f); return NULL; }
    size_t got = 0;
    while (got < total) {
        unsigned chunk = total - got > (1u << 30) ? (1u << 30) : (unsigned)(total - got);
        int n = gzread(f, data + got, chunk);
        if (n <= 0) break;
        got += (size_t)n;
    }
    int extra = gzread(f, data + total, 1);
    gzclose(f);
    if (got != total || extra != 0) {
        fprintf(stderr, "fmnist2png: %s: %s (header says %zu bytes of data)\n", path,
                got != total ? "truncated data" : "trailing data", total);
        free(data);
        return NULL;
    }
    return data;
}

static int convert(const char *src, const char *out, const char *split, const char *prefix) {
    char ipath[4096], lpath[4096], dir[4096];
    snprintf(ipath, sizeof ipath, "%s/%s-images-idx3-ubyte.gz", src, prefix);
    snprintf(lpath, sizeof lpath, "%s/%s-labels-idx1-ubyte.gz", src, prefix);
    uint32_t idims[3], ldims[1];
    uint8_t *images = read_idx(ipath, 0x00000803, idims, 3);
    if (!images) return -1;
    uint8_t *labels = read_idx(lpath, 0x00000801, ldims, 1);
    if (!labels) { free(images); return -1; }
    int rc = 0;
    if (idims[0] != ldims[0]) {
        fprintf(stderr, "fmnist2png: %s has %u images but %s has %u labels\n", ipath, idims[0], lpath, ldims[0]);
        rc = -1;
    }
    for (uint32_t i = 0; rc == 0 && i < ldims[0]; i++)
        if (labels[i] > 9) { fprintf(stderr, "fmnist2png: %s: label %u of item %u is not 0..9\n", lpath, labels[i], i); rc = -1; }
    snprintf(dir, sizeof dir, "%s/%s", out, split);
    if (rc == 0) rc = mkdir_one(dir);
    for (int k = 0; rc == 0 && k < 10; k++) {
        snprintf(dir, sizeof dir, "%s/%s/%s", out, split, class_names[k]);
        rc = mkdir_one(dir);
    }
    int n = rc == 0 ? (int)idims[0] : 0, h = (int)idims[1], w = (int)idims[2], failed = 0;
    #pragma omp parallel for schedule(dynamic, 64) reduction(|:failed)
    for (int i = 0; i < n; i++) {
        char path[4096], err[256];
        snprintf(path, sizeof path, "%s/%s/%s/%05d.png", out, split, class_names[labels[i]], i);
        if (png_write(path, images + (size_t)i * w * h, w, h, 1, NULL, err, sizeof err)) {
            #pragma omp critical
            fprintf(stderr, "fmnist2png: %s: %s\n", path, err);
            failed = 1;
        }
    }
    if (failed) rc = -1;
    if (rc == 0) printf("fmnist2png: %s: %d images of %dx%d\n", split, n, w, h);
    free(images);
    free(labels);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: fmnist2png SRC_DIR OUT_DIR\n"
                        "  SRC_DIR holds {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz\n");
        return 2;
    }
    if (mkdir_one(argv[2])) return 1;
    if (convert(argv[1], argv[2], "train", "train")) return 1;
    if (convert(argv[1], argv[2], "test", "t10k")) return 1;
    return 0;
}
