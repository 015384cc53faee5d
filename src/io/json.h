// The JSON text vitmae writes (outputs, config.json, checkpoint headers): UTF-8, and whole numbers
// exact.
//
// Names are bytes; JSON is UTF-8. File and folder names reach JSON (outputs, checkpoint headers) as
// whatever bytes the file system holds, and cJSON copies bytes of 0x80 and above as they are, so a name
// that is not UTF-8 would make a file that Python's json and the safetensors library refuse. Every JSON
// text vitmae writes is printed by json_print_utf8: bytes that are not part of valid UTF-8 become
// U+FFFD, as Python's errors="replace" writes them (docs/interface.md, "Names that are not UTF-8").
//
// Numbers read back exactly: whole numbers (steps, seeds) up to 2^53 with all their digits, others
// with the fewest digits that read back as the same double (as Python's repr). cJSON alone prints 15
// significant digits when they read back within a rounding error, so a seed of 16 digits came back
// as another seed (docs/interface.md, "Seeds"), and a resumed run's carried loss sum as another
// double.
#ifndef VITMAE_JSON_H
#define VITMAE_JSON_H
#include <cJSON.h>

// 1 when s is valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF), else 0.
int utf8_valid(const char *s);
// The UTF-8 sequence at s (s[0] not NUL): its length (1-4) when valid, else minus the length of its
// longest start that could begin a valid one (1-3: the bytes one U+FFFD replaces).
int utf8_seq_len(const char *s);
// The index of the first of names[0..n) that is not valid UTF-8, or -1 when all are.
int utf8_first_invalid(char *const *names, int n);
// What finetune and probe say of such a class folder (its name goes into checkpoints and JSON, and a
// name changed there would no longer match the folder's); the %s is the folder's name.
#define UTF8_CLASS_REFUSAL "class folder '%s': its name is not UTF-8 (classifiers and JSON outputs hold class names as UTF-8 text); rename the folder"
// A malloc'ed copy of s with what is not valid UTF-8 replaced by U+FFFD, as Python's
// bytes.decode("utf-8", "replace") replaces it (one U+FFFD for each maximal subpart); NULL when out of
// memory.
char *utf8_clean(const char *s);
// How a line of text shows the character at text: \n, \t, \r or \xHH for a control character (a byte
// below 0x20, and 0x7f), \xc2\xHH for a C1 control (U+0080..U+009F, the two bytes C2 80..C2 9F of
// UTF-8, which a terminal obeys as it obeys ESC: U+009B is ESC [), \xHH for a byte of 0x80..0x9F
// that is not part of valid UTF-8 (an 8-bit terminal's C1 control), \\ for a backslash, into out
// (NUL-ended), returning its length; 0 (out untouched) when the *used bytes at text (a character,
// 1 to 4 bytes) are written as they are. *used: the bytes of text it stands for. The commands'
// lines (cmd/cli.h, cli_escape_at), attention's index.html, embed's FEATS.txt and PNG text chunks
// (data/image.h) write names so.
size_t text_escape_at(const char *text, char out[9], size_t *used);
// A malloc'ed copy of s, utf8_clean'ed, then every character written as text_escape_at writes it:
// UTF-8 with no control character; NULL when out of memory.
char *text_escape(const char *s);
// A name read from inside a file (a checkpoint's tensor names, metadata keys and values, a dtype) as
// a message shows it: what is not valid UTF-8 as U+FFFD (as utf8_clean), and a name longer than
// UTF8_CLIP_MAX bytes so written cut to the whole characters of its first UTF8_CLIP_MAX bytes, then
// "...": a hostile file's kilobyte of a name stays a short line. Control characters are left for the
// line's printer, which writes them out (cmd/cli.h, cli_escape_at; docs/interface.md, section 1).
// File and folder names are never clipped: a user needs all of a path to find the file. Writes into
// out and returns it; NULL s gives "(null)".
#define UTF8_CLIP_MAX 96
#define UTF8_CLIP_SIZE (UTF8_CLIP_MAX + 4)
const char *utf8_clip(char out[UTF8_CLIP_SIZE], const char *s);
// The fewest significant digits ("%.Ng", N from 1 to 17) that read back as exactly v, as Python's
// repr finds them, a whole number below 10^16 in its digits ("80", not "8e+01"); buf of at least 32
// bytes. JSON numbers (below) and metrics.csv's fields use it.
void json_double_text(double v, char *buf, size_t n);
// cJSON_Print (formatted) or cJSON_PrintUnformatted of o, with every whole number of o from 10^15 to
// 2^53 and every finite one that is not whole turned into a raw item of its exact digits first (o is
// changed so), then utf8_clean'ed; malloc'ed,
// NULL when out of memory. Free with free(). NULL also when o is NULL, or when any cJSON allocation of
// this thread failed since the last call (json.c): an item that memory ran out for is missing from o,
// and a text without it is never written; the failure is then forgotten.
char *json_print_utf8(cJSON *o, int formatted);
// cJSON_Parse of text (NUL-ended; json_parse_n: len bytes, *end where a malformed text stopped, may be
// NULL), with *oom 1 when it returned NULL for want of memory, not for the text. Every reader that
// tells the two apart parses here.
cJSON *json_parse(const char *text, int *oom);
cJSON *json_parse_n(const char *text, size_t len, const char **end, int *oom);
// Tests: cJSON's allocation numbered n, counted from this call, fails as when memory runs out (0:
// none); json_test_allocs says how many there were since.
void json_test_fail_alloc(long n);
long json_test_allocs(void);
#endif
