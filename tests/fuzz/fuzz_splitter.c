/* Fuzz target for the watch-stream JSON splitter (runtime/kube/json_splitter.c): the first
 * byte seeds how the rest is cut into chunks, as a socket would deliver it. Whatever the
 * chunking, the values handed out must be the same, each one a whole JSON value (jansson reads
 * it, a scalar included), and together with the whitespace between them they must make up
 * exactly the stream that was fed. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "kube.h"

struct collected {
    const char *stream; /* what was fed */
    size_t size, at;    /* and how far the values handed out so far cover it */
    char *text;         /* the values, each followed by '\n' */
    size_t len, capacity;
    unsigned values;
};

static int collect(void *ctx, const char *json, size_t len)
{
    struct collected *c = ctx;
    fuzz_check(len > 0, "json_splitter", "an empty value");
    fuzz_check(json[len] == '\0', "json_splitter", "a value not NUL-terminated during the call");
    json_error_t error;
    json_t *value = json_loadb(json, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &error);
    /* the splitter only finds where values end; a malformed one inside (a bad number, a bad
     * escape) is the parser's to refuse, but the outline of an object, array or string must
     * have been whole: neither cut short nor followed by more. (A bare scalar runs to the next
     * delimiter: "1n3" is one malformed word, which jansson reads as 1 followed by more; and
     * jansson takes a NUL byte outside a string for the end of its input.) */
    enum json_error_code code = value == NULL ? json_error_code(&error) : json_error_unknown;
    bool outlined = memchr("{[\"", json[0], 3) != NULL && memchr(json, 0, len) == NULL;
    fuzz_check(value != NULL || !outlined ||
                   (code != json_error_premature_end_of_input &&
                    code != json_error_end_of_input_expected),
               "json_splitter", "a value cut short or two values handed out as one");
    json_decref(value);
    /* the value is the next bytes of the stream, after nothing but whitespace */
    while (c->at < c->size && memchr(" \t\r\n", c->stream[c->at], 4) != NULL)
        c->at++;
    fuzz_check(c->at + len <= c->size && memcmp(c->stream + c->at, json, len) == 0,
               "json_splitter", "a value that is not the next bytes of the stream");
    c->at += len;
    if (c->len + len + 1 > c->capacity) {
        size_t capacity = (c->len + len + 1) * 2;
        char *text = realloc(c->text, capacity);
        fuzz_check(text != NULL, "realloc", NULL);
        c->text = text;
        c->capacity = capacity;
    }
    memcpy(c->text + c->len, json, len);
    c->len += len;
    c->text[c->len++] = '\n';
    c->values++;
    return 0;
}

/* Feeds the stream in chunks whose sizes come from seed (0: all at once). Returns the
 * splitter's verdict: the first error of feed or finish. */
static int split(const char *stream, size_t size, unsigned seed, struct collected *out)
{
    struct json_splitter s = {0};
    int rc = 0;
    for (size_t at = 0; rc == 0 && at < size;) {
        size_t chunk = size - at;
        if (seed != 0) {
            seed = seed * 1103515245u + 12345u;
            chunk = 1 + (seed >> 16) % 7;
            if (chunk > size - at)
                chunk = size - at;
        }
        rc = json_splitter_feed(&s, stream + at, chunk, collect, out);
        at += chunk;
    }
    if (rc == 0)
        rc = json_splitter_finish(&s, collect, out);
    json_splitter_free(&s);
    fuzz_check(rc == 0 || rc == -EPROTO || rc == -ENOMEM, "json_splitter",
               "an undocumented error");
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned seed = data[0] | 1u;
    const char *stream = (const char *)data + 1;
    size -= 1;
    struct collected whole = {.stream = stream, .size = size};
    struct collected pieces = {.stream = stream, .size = size};
    int rc_whole = split(stream, size, 0, &whole);
    int rc_pieces = split(stream, size, seed, &pieces);
    if (rc_whole != -ENOMEM && rc_pieces != -ENOMEM) {
        fuzz_check(rc_whole == rc_pieces, "json_splitter", "the verdict depends on the chunking");
        fuzz_check(whole.values == pieces.values && whole.len == pieces.len &&
                       (whole.len == 0 || memcmp(whole.text, pieces.text, whole.len) == 0),
                   "json_splitter", "the values depend on the chunking");
    }
    if (rc_whole == 0) {
        /* a clean end: nothing but whitespace after the last value */
        while (whole.at < size && memchr(" \t\r\n", stream[whole.at], 4) != NULL)
            whole.at++;
        fuzz_check(whole.at == size, "json_splitter", "bytes left over after a clean end");
    }
    free(whole.text);
    free(pieces.text);
    return 0;
}
