// Parameter table: MAE names and shapes, offsets contiguous, presets, config validation.
#include "check.h"
#include "core/model.h"

int main(void) {
    MaeConfig c;
    CHECK(mae_config_preset(&c, "tiny") == 0, "tiny preset exists");
    CHECK(mae_config_preset(&c, "huge") == -1, "unknown preset refused");
    // The presets' sizes as docs/interface.md section 3 tables them (D / depth / heads, decoder Dd / depth / heads).
    static const struct { const char *name; int d, depth, heads, dd, ddepth, dheads; } table[] = {
        {"tiny", 192, 6, 3, 128, 2, 4}, {"small", 384, 12, 6, 256, 4, 8}, {"base", 768, 12, 12, 512, 8, 16}};
    for (int i = 0; i < 3; i++) {
        MaeConfig p;
        int rc = mae_config_preset(&p, table[i].name);
        CHECK(rc == 0 && p.embed_dim == table[i].d && p.depth == table[i].depth && p.num_heads == table[i].heads &&
                  p.dec_embed_dim == table[i].dd && p.dec_depth == table[i].ddepth && p.dec_num_heads == table[i].dheads,
              "preset %s: %d / %d / %d, decoder %d / %d / %d", table[i].name, p.embed_dim, p.depth, p.num_heads,
              p.dec_embed_dim, p.dec_depth, p.dec_num_heads);
    }
    mae_config_preset(&c, "base");
    // facebookresearch/mae's mae_vit_base_patch16 has 111,907,840 parameters (incl. fixed pos tables).
    CHECK(mae_num_params(&c) == 111907840u, "ViT-B MAE parameter count %zu", mae_num_params(&c));
    mae_config_preset(&c, "tiny");
    c.img_size = 32; c.patch_size = 4; c.in_chans = 3;
    MaeTensor t[512];
    int n = mae_param_table(&c, t, 512);
    CHECK(n == 4 + 12 * 6 + 2 + 4 + 12 * 2 + 4, "tensor count %d", n);
    CHECK(!strcmp(t[0].name, "cls_token") && t[0].ndim == 3 && t[0].shape[2] == 192, "cls_token first");
    CHECK(!strcmp(t[1].name, "pos_embed") && t[1].shape[1] == 65, "pos_embed [1, 65, 192]");
    CHECK(!strcmp(t[2].name, "patch_embed.proj.weight") && t[2].shape[0] == 192 && t[2].shape[1] == 3
          && t[2].shape[2] == 4 && t[2].shape[3] == 4, "patch weight [192, 3, 4, 4]");
    CHECK(!strcmp(t[6].name, "blocks.0.attn.qkv.weight") && t[6].shape[0] == 576 && t[6].shape[1] == 192, "qkv [576, 192]");
    CHECK(!strcmp(t[n - 2].name, "decoder_pred.weight") && t[n - 2].shape[0] == 48 && t[n - 2].shape[1] == 128, "pred [48, 128]");
    size_t off = 0; int contiguous = 1, decay_ok = 1;
    for (int i = 0; i < n; i++) {
        contiguous &= t[i].offset == off;
        off += t[i].numel;
        decay_ok &= t[i].decay == (t[i].ndim >= 2 && strcmp(t[i].name, "pos_embed") && strcmp(t[i].name, "decoder_pos_embed")
                                   && strcmp(t[i].name, "cls_token") && strcmp(t[i].name, "mask_token"));
    }
    CHECK(contiguous, "offsets contiguous");
    CHECK(decay_ok, "weight decay only on weight matrices");
    CHECK(off == mae_num_params(&c), "num_params matches the table");

    char err[256];
    CHECK(mae_config_check(&c, err, sizeof err) == 0, "tiny 32/4 valid: %s", err);
    MaeConfig bad = c; bad.img_size = 30;
    CHECK(mae_config_check(&bad, err, sizeof err) == -1 && strstr(err, "multiple"), "img not multiple of patch");
    bad = c; bad.num_heads = 5;
    CHECK(mae_config_check(&bad, err, sizeof err) == -1 && strstr(err, "divisible"), "dim not divisible by heads");
    bad = c; bad.embed_dim = 198; bad.num_heads = 3;
    CHECK(mae_config_check(&bad, err, sizeof err) == -1 && strstr(err, "sin-cos"), "dim not divisible by 4");
    return check_done();
}
