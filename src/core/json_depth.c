// Telling JSON nested too deep from malformed JSON (see json_depth.h).
#include "core/json_depth.h"

int json_nesting_too_deep(const char *text, size_t len, size_t at) {
    // cJSON refuses the array or object one level past its limit where it begins: its error points
    // at that bracket, with CJSON_NESTING_LIMIT brackets open before it (those inside strings aside).
    if (at >= len || (text[at] != '[' && text[at] != '{')) return 0;
    long depth = 0;
    int in_string = 0;
    for (size_t i = 0; i < at; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = 0;
        } else if (c == '"') in_string = 1;
        else if (c == '[' || c == '{') depth++;
        else if (c == ']' || c == '}') depth--;
    }
    return !in_string && depth >= CJSON_NESTING_LIMIT;
}

int json_parse_too_deep(const char *text, size_t len, const char *end) {
    return end && end >= text && json_nesting_too_deep(text, len, (size_t)(end - text));
}
