// bench_data DIR [--img N] [--limit K]: decode throughput on a folder of images, one core, by size
// class (megapixels): full decode (image_load, what eval views use) and the working image that
// training uses (DCT-scaled JPEG decode + resize to shorter side 2 x N, see src/data/dataset.h), and
// reading a working image back from the on-disk store; and the random resized crop of the working image
// to N x N with each of the two filters (--interp bilinear | bicubic, docs/data.md "Interpolation"),
// CROPS views an image, and MAE's RandAugment (rand-m9-mstd0.5-inc1, bicubic; docs/encoder.md
// "RandAugment") on those bicubic views. Prints img/s (views/s) per core for each class.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#include <unistd.h>
#include "data/dataset.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum { NCLASS = 5 };
static const double class_hi[NCLASS] = {0.25, 1, 4, 16, 1e30};
static const char *class_name[NCLASS] = {"< 0.25 Mpx", "0.25-1 Mpx", "1-4 Mpx", "4-16 Mpx", ">= 16 Mpx"};

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_data DIR [--img N] [--limit K]\n"); return 2; }
    int img = 64, limit = 200;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--img")) img = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--limit")) limit = atoi(argv[i + 1]);
    }
    omp_set_num_threads(1);
    char store[] = "/tmp/vitmae-bench-store-XXXXXX";
    if (!mkdtemp(store)) { perror("mkdtemp"); return 1; }
    char err[512];
    Dataset full, work, stored;
    DatasetOptions fo = {.lazy = 1}, wo = {.lazy = 1, .work_size = 2 * img, .store_dir = store};
    double t0 = now_s();
    if (dataset_scan(argv[1], &fo, &full, err, sizeof err)) { fprintf(stderr, "bench_data: %s: %s\n", argv[1], err); return 1; }
    double scan_s = now_s() - t0;
    dataset_scan(argv[1], &wo, &work, err, sizeof err);
    dataset_scan(argv[1], &wo, &stored, err, sizeof err);
    printf("%s: %d images (header scan %.3f s on 1 core, %.1f ms per image); working size %d (--img %d)\n", argv[1],
           full.n, scan_s, full.n ? 1e3 * scan_s / full.n : 0, 2 * img, img);
    enum { CROPS = 20 };
    double secs[6][NCLASS] = {{0}};
    RandAugSpec mae;
    const float imagenet_mean[3] = {0.485f, 0.456f, 0.406f};
    uint8_t fill[3];
    randaug_parse("rand-m9-mstd0.5-inc1", &mae, err, sizeof err);
    randaug_fill(imagenet_mean, 3, fill);
    float *view = malloc(sizeof(float) * (size_t)img * img * 3);
    if (!view) { fprintf(stderr, "bench_data: out of memory\n"); return 1; }
    int count[NCLASS] = {0};
    int n = full.n < limit ? full.n : limit;
    for (int i = 0; i < n; i++) {
        double mp = (double)full.items[i].w * full.items[i].h / 1e6;
        int c = 0;
        while (mp >= class_hi[c]) c++;
        Image im;
        double a = now_s();
        int ok = dataset_working_image(&full, i, &im, err, sizeof err) == 0;
        if (ok) image_free(&im);
        double b = now_s();
        ok = ok && dataset_working_image(&work, i, &im, err, sizeof err) == 0;   // decodes and writes the store
        if (ok) image_free(&im);
        double d = now_s();
        ok = ok && dataset_working_image(&stored, i, &im, err, sizeof err) == 0;   // reads the store
        double e = now_s();
        if (!ok) continue;
        for (int f = 0; f < 2; f++) {   // the same draws for both filters
            Rng rng;
            rng_seed(&rng, (uint64_t)i);
            double t = now_s();
            double ra_s = 0;
            for (int k = 0; k < CROPS; k++) {
                image_random_resized_crop(&im, img, im.c, AUGMENT_CROP_LO, f ? IMAGE_BICUBIC : IMAGE_BILINEAR, &rng, view);
                if (!f) continue;
                double u = now_s();
                randaug_image(view, img, img, im.c, &mae, IMAGE_BICUBIC, fill, &rng, NULL);
                ra_s += now_s() - u;
            }
            secs[3 + f][c] += (now_s() - t - ra_s) / CROPS;
            secs[5][c] += ra_s / CROPS;
        }
        image_free(&im);
        secs[0][c] += b - a;
        secs[1][c] += d - b;
        secs[2][c] += e - d;
        count[c]++;
    }
    printf("%-12s %6s %14s %14s %14s %14s %14s %14s\n", "size", "images", "full img/s", "working img/s", "store img/s",
           "crop bilinear", "crop bicubic", "RandAugment");
    for (int c = 0; c < NCLASS; c++) {
        if (!count[c]) continue;
        printf("%-12s %6d %14.1f %14.1f %14.1f %14.1f %14.1f %14.1f\n", class_name[c], count[c], count[c] / secs[0][c],
               count[c] / secs[1][c], count[c] / secs[2][c], count[c] / secs[3][c], count[c] / secs[4][c],
               count[c] / secs[5][c]);
    }
    printf("(one core each; 'working' = DCT-scaled decode + resize + store write, 'store' = read back, 'crop' = random "
           "resized crops of the working image to %d x %d, views/s; 'RandAugment' = MAE's rand-m9-mstd0.5-inc1 on each bicubic "
           "view, views/s)\n", img, img);
    free(view);
    dataset_free(&full);
    dataset_free(&work);
    dataset_free(&stored);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", store);
    return system(cmd) == 0 ? 0 : 1;
}
