// libFuzzer target: image decoding (PNG and JPEG paths of image_load_mem) and the evaluation-view
// geometry on whatever decodes. The first byte picks the view size and channel count; the rest is
// the file. The pixel limit is lowered so that a fuzzed header cannot ask for gigabytes.
#include <stdint.h>
#include <stdlib.h>
#include "data/image.h"

#define FUZZ_MAX_PIXELS (1L << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int view = 1 + (data[0] & 15);           // 1..16
    int channels = (data[0] & 16) ? 3 : 1;
    Image im;
    char err[256];
    if (image_load_mem(data + 1, size - 1, FUZZ_MAX_PIXELS, &im, err, sizeof err) == 0) {
        float *out = malloc(sizeof(float) * (size_t)view * view * channels);
        if (out) {
            image_eval_view(&im, view, channels, out);
            // Values stay finite and in [0, 1]: any garbage would show here.
            for (size_t i = 0; i < (size_t)view * view * channels; i++)
                if (!(out[i] >= -1e-5f && out[i] <= 1.0f + 1e-5f)) abort();
            free(out);
        }
        image_free(&im);
    }
    return 0;
}
