// UTF-8 checks, whole numbers and the JSON printer every writer uses (see json.h).
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/json.h"

// cJSON says nothing of an allocation that fails while an object is built: cJSON_Add*ToObject
// returns NULL and the object goes on without the item, so a text printed from it lacks the item (a
// checkpoint's train state without its seed, a config.json without "model"). Every cJSON allocation
// comes here, and a failure is noted for its thread until json_print_utf8, which then prints nothing.
static _Thread_local int alloc_failed;
static atomic_long test_allocs, test_fail_at;

static void *json_alloc(size_t n) {
    long k = atomic_fetch_add(&test_allocs, 1) + 1;
    void *p = k == atomic_load(&test_fail_at) ? NULL : malloc(n);
    if (!p) alloc_failed = 1;
    return p;
}

// Before any cJSON allocation: a constructor, as the hooks must be in place for the first one.
__attribute__((constructor)) static void json_hooks(void) { cJSON_InitHooks(&(cJSON_Hooks){json_alloc, free}); }

cJSON *json_parse_n(const char *text, size_t len, const char **end, int *oom) {
    int before = alloc_failed;   // an object being built meanwhile keeps its own failure for its printing
    alloc_failed = 0;
    cJSON *o = cJSON_ParseWithLengthOpts(text, len, end, 0);
    *oom = !o && alloc_failed;   // (a parse that returns an object had every allocation it asked for)
    alloc_failed = before;
    return o;
}

cJSON *json_parse(const char *text, int *oom) { return json_parse_n(text, strlen(text) + 1, NULL, oom); }

void json_test_fail_alloc(long n) {
    atomic_store(&test_allocs, 0);
    atomic_store(&test_fail_at, n);
}

long json_test_allocs(void) { return atomic_load(&test_allocs); }

// The sequence at s: its length n (1-4) when it is valid UTF-8, else -m, where m (1-3) is the length of
// its longest start that could still begin a valid sequence (the "maximal subpart" that Unicode and
// Python's errors="replace" turn into one U+FFFD). Overlong forms, surrogates and code points past
// U+10FFFF are invalid: their second byte is out of the lead byte's range.
static int seq_len(const unsigned char *s) {
    if (s[0] < 0x80) return 1;
    int n = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
    if (!n) return -1;
    unsigned lo = s[0] == 0xe0 ? 0xa0 : s[0] == 0xf0 ? 0x90 : 0x80;
    unsigned hi = s[0] == 0xed ? 0x9f : s[0] == 0xf4 ? 0x8f : 0xbf;
    for (int i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
        if (s[i] < lo || s[i] > hi) return -i;
    return n;
}

int utf8_seq_len(const char *s) { return seq_len((const unsigned char *)s); }

size_t text_escape_at(const char *text, char out[9], size_t *used) {
    const unsigned char *p = (const unsigned char *)text;
    unsigned char c = p[0];
    int n = utf8_seq_len(text);
    *used = n > 1 ? (size_t)n : 1;
    if (n == 2 && c == 0xc2 && p[1] <= 0x9f) {   // a C1 control, U+0080..U+009F in UTF-8
        snprintf(out, 9, "\\xc2\\x%02x", p[1]);
        return 8;
    }
    if (n > 1) return 0;   // another character: printable
    // A byte of 0x80..0x9F outside a valid sequence: a C1 control to an 8-bit terminal.
    if (c >= 0x20 && c != 0x7f && c != '\\' && (n == 1 || c < 0x80 || c > 0x9f)) return 0;
    if (c == '\\' || c == '\n' || c == '\t' || c == '\r') {
        out[0] = '\\';
        out[1] = c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        out[2] = 0;
        return 2;
    }
    snprintf(out, 9, "\\x%02x", c);
    return 4;
}

char *text_escape(const char *s) {
    char *clean = utf8_clean(s);
    if (!clean) return NULL;
    size_t n = 1;
    for (const char *p = clean; *p;) {
        char esc[9];
        size_t used, k = text_escape_at(p, esc, &used);
        n += k ? k : used;
        p += used;
    }
    char *out = malloc(n), *o = out;
    for (const char *p = clean; out && *p;) {
        char esc[9];
        size_t used, k = text_escape_at(p, esc, &used);
        memcpy(o, k ? esc : p, k ? k : used);
        o += k ? k : used;
        p += used;
    }
    if (out) *o = 0;
    free(clean);
    return out;
}

int utf8_valid(const char *s) {
    for (const unsigned char *u = (const unsigned char *)s; *u;) {
        int n = seq_len(u);
        if (n < 0) return 0;
        u += n;
    }
    return 1;
}

int utf8_first_invalid(char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!utf8_valid(names[i])) return i;
    return -1;
}

const char *utf8_clip(char out[UTF8_CLIP_SIZE], const char *s) {
    static const char fffd[] = "\xef\xbf\xbd";
    const unsigned char *u = (const unsigned char *)(s ? s : "(null)");
    size_t n = 0;
    while (*u) {
        int k = seq_len(u);
        size_t w = k < 0 ? 3 : (size_t)k;   // what is not UTF-8: U+FFFD, 3 bytes
        if (n + w > UTF8_CLIP_MAX) { memcpy(out + n, "...", 3); n += 3; break; }
        memcpy(out + n, k < 0 ? (const unsigned char *)fffd : u, w);
        n += w;
        u += k < 0 ? -k : k;
    }
    out[n] = 0;
    return out;
}

char *utf8_clean(const char *s) {
    size_t len = strlen(s);
    char *o = malloc(len * 3 + 1), *p = o;
    if (!o) return NULL;
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        int n = seq_len(u);
        if (n > 0) { memcpy(p, u, (size_t)n); p += n; u += n; }
        else { memcpy(p, "\xef\xbf\xbd", 3); p += 3; u -= n; }
    }
    *p = 0;
    return o;
}

// cJSON prints a number with 15 significant digits when they read back within a rounding error of
// it: 9007199254740991 came out as 9.00719925474099e+15, and a sum carried across a resume
// (config.json's log_loss_sum) as another double, 1-2 units in the last place off, so the resumed
// run's next metrics row differed from the uninterrupted run's. Each whole number from 10^15 to 2^53
// (the largest every double holds exactly) becomes a raw item with all its digits, and each finite
// number that is not whole a raw item with the fewest significant digits that read back as exactly
// it (as Python's repr), in place. Smaller whole numbers cJSON prints exactly itself.
void json_double_text(double v, char *buf, size_t n) {
    // A whole number below 10^16 in its digits, as Python's repr writes it (less the ".0"): "%.1g"
    // of 80 is "8e+01", which metrics.csv's epoch column showed between 64 and 96 (docs/interface.md,
    // section 5).
    if (v == floor(v) && fabs(v) < 1e16) {
        snprintf(buf, n, "%.0f", v);
        return;
    }
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, n, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
}

static void exact_numbers(cJSON *x) {
    double d = x->valuedouble;
    int whole = d == floor(d);
    if (cJSON_IsNumber(x) && isfinite(d) && (!whole || (fabs(d) >= 1e15 && fabs(d) <= 9007199254740992.0))) {
        char buf[40];
        json_double_text(d, buf, sizeof buf);   // a whole number in its digits
        char *text = cJSON_malloc(strlen(buf) + 1);   // (NULL: noted, and nothing is printed)
        if (text) {
            strcpy(text, buf);
            x->type = cJSON_Raw;
            x->valuestring = text;
        }
    }
    for (cJSON *c = x->child; c; c = c->next) exact_numbers(c);
}

// C1 controls (U+0080..U+009F, bytes C2 80..C2 9F), which cJSON copies as they are (JSON asks only C0
// ones to be escaped), written as \u0080..\u009f: the same JSON value, and a report printed on a
// terminal (info's train state, data --json) cannot steer it (U+009B is ESC [), as Python's
// json.dumps writes them. Outside strings JSON text is ASCII, so every such pair is inside one.
// Frees s; malloc'ed, NULL when out of memory.
static char *escape_c1(char *s) {
    size_t n = 0, len = strlen(s);
    for (size_t i = 0; i + 1 < len; i++) n += (unsigned char)s[i] == 0xc2 && (unsigned char)s[i + 1] >= 0x80 &&
                                             (unsigned char)s[i + 1] <= 0x9f;
    if (!n) return s;
    char *o = malloc(len + 4 * n + 1), *p = o;
    if (o) {
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)s[i], d = (unsigned char)s[i + 1];
            if (c == 0xc2 && d >= 0x80 && d <= 0x9f) { p += sprintf(p, "\\u%04x", d); i++; }
            else *p++ = (char)c;
        }
        *p = 0;
    }
    free(s);
    return o;
}

char *json_print_utf8(cJSON *o, int formatted) {
    if (o) exact_numbers(o);
    char *s = o ? (formatted ? cJSON_Print(o) : cJSON_PrintUnformatted(o)) : NULL;
    if (s && alloc_failed) { cJSON_free(s); s = NULL; }
    alloc_failed = 0;
    if (s && !utf8_valid(s)) {
        char *c = utf8_clean(s);
        cJSON_free(s);
        s = c;
    }
    return s ? escape_c1(s) : NULL;
}
