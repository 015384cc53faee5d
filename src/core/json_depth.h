// JSON nested past what the JSON reader takes: cJSON refuses arrays and objects deeper than
// CJSON_NESTING_LIMIT (1000 levels), and its error is then the one a malformed text gets. Every reader
// of JSON a user can hand vitmae (a safetensors header, the config, train_state and classifier metadata,
// docs/interface.md section 4) asks here, so that such a text is refused as JSON_TOO_DEEP says, not as
// "malformed" or "not valid JSON", which would send the user after a syntax error that is not there.
// Here, in core, below io: the config's reader (core/config.c) needs it too.
#ifndef VITMAE_JSON_DEPTH_H
#define VITMAE_JSON_DEPTH_H
#include <stddef.h>
#include <cjson/cJSON.h>

// What every reader says of such a text, after what it read ("config: ", "train_state: ", ...).
#define JSON_TOO_DEEP_FMT "JSON nested deeper than %d levels (the limit of the JSON reader)"

// 1 when a cJSON parse of text (len bytes) that failed at byte at failed because the text nests
// arrays and objects deeper than CJSON_NESTING_LIMIT, not because it is malformed; else 0.
int json_nesting_too_deep(const char *text, size_t len, size_t at);
// The same for a parse of text (len bytes) that failed with *end at end (cJSON's error position;
// NULL or outside the text: not too deep).
int json_parse_too_deep(const char *text, size_t len, const char *end);
#endif
