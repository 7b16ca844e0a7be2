/*
 * jsonstrip.c - one member cut out of a JSON document before it is parsed
 * (see jsonstrip_int.h).
 *
 * A recursive-descent scanner over the raw bytes that checks the JSON
 * grammar (RFC 8259: strings with their escapes and UTF-8, numbers,
 * literals, nesting) without building anything. It walks the members of
 * the objects on the path and skips every other value; it stops once the
 * member at the end of the path has been passed over. Recursion is bounded
 * by GPUOP_JSONSTRIP_MAX_DEPTH. Nothing is allocated; the bytes are only
 * read.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "jsonstrip_int.h"

struct scan {
    const char *s;
    size_t n, i;
};

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_ws(struct scan *sc)
{
    while (sc->i < sc->n && is_ws(sc->s[sc->i]))
        sc->i++;
}

static bool at(const struct scan *sc, char c)
{
    return sc->i < sc->n && sc->s[sc->i] == c;
}

static bool is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Length of the UTF-8 sequence starting at s[i] (a byte >= 0x80), 0 when
 * it is not one: RFC 3629, no overlong forms, no surrogates. */
static size_t utf8_len(const unsigned char *s, size_t n, size_t i)
{
    unsigned char c = s[i];
    size_t len;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n - i < len)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[i + k] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* Past the string at sc->i (a '"'); *plain: it has no escape. */
static bool skip_string(struct scan *sc, bool *plain)
{
    const unsigned char *s = (const unsigned char *)sc->s;
    size_t i = sc->i + 1;
    *plain = true;
    while (i < sc->n) {
        unsigned char c = s[i];
        if (c == '"') {
            sc->i = i + 1;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c == '\\') {
            *plain = false;
            if (i + 1 >= sc->n)
                return false;
            c = s[i + 1];
            if (c == 'u') {
                if (sc->n - i < 6 || !is_hex(s[i + 2]) || !is_hex(s[i + 3]) || !is_hex(s[i + 4]) ||
                    !is_hex(s[i + 5]))
                    return false;
                i += 6;
            } else if (c && strchr("\"\\/bfnrt", c)) {
                i += 2;
            } else {
                return false;
            }
            continue;
        }
        if (c >= 0x80) {
            size_t len = utf8_len(s, sc->n, i);
            if (!len)
                return false;
            i += len;
            continue;
        }
        i++;
    }
    return false;
}

static bool skip_digits(struct scan *sc)
{
    size_t start = sc->i;
    while (sc->i < sc->n && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9')
        sc->i++;
    return sc->i > start;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool skip_number(struct scan *sc)
{
    if (at(sc, '-'))
        sc->i++;
    if (at(sc, '0'))
        sc->i++;
    else if (!skip_digits(sc))
        return false;
    if (at(sc, '.')) {
        sc->i++;
        if (!skip_digits(sc))
            return false;
    }
    if (at(sc, 'e') || at(sc, 'E')) {
        sc->i++;
        if (at(sc, '+') || at(sc, '-'))
            sc->i++;
        if (!skip_digits(sc))
            return false;
    }
    return true;
}

static bool skip_literal(struct scan *sc, const char *lit)
{
    size_t len = strlen(lit);
    if (sc->n - sc->i < len || memcmp(sc->s + sc->i, lit, len) != 0)
        return false;
    sc->i += len;
    return true;
}

static int skip_value(struct scan *sc, int depth);

/* Past the object or array at sc->i ('{' or '['). */
static int skip_container(struct scan *sc, int depth)
{
    bool obj = sc->s[sc->i] == '{', plain;
    char close = obj ? '}' : ']';
    if (depth >= GPUOP_JSONSTRIP_MAX_DEPTH)
        return GPUOP_ETOOBIG;
    sc->i++;
    skip_ws(sc);
    if (at(sc, close)) {
        sc->i++;
        return 0;
    }
    for (;;) {
        if (obj) {
            if (!at(sc, '"') || !skip_string(sc, &plain))
                return GPUOP_EPARSE;
            skip_ws(sc);
            if (!at(sc, ':'))
                return GPUOP_EPARSE;
            sc->i++;
            skip_ws(sc);
        }
        int rc = skip_value(sc, depth + 1);
        if (rc < 0)
            return rc;
        skip_ws(sc);
        if (at(sc, ',')) {
            sc->i++;
            skip_ws(sc);
            continue;
        }
        if (!at(sc, close))
            return GPUOP_EPARSE;
        sc->i++;
        return 0;
    }
}

/* Past the value at sc->i (no whitespace before it). */
static int skip_value(struct scan *sc, int depth)
{
    bool plain;
    if (sc->i >= sc->n)
        return GPUOP_EPARSE;
    switch (sc->s[sc->i]) {
    case '"':
        return skip_string(sc, &plain) ? 0 : GPUOP_EPARSE;
    case '{':
    case '[':
        return skip_container(sc, depth);
    case 't':
        return skip_literal(sc, "true") ? 0 : GPUOP_EPARSE;
    case 'f':
        return skip_literal(sc, "false") ? 0 : GPUOP_EPARSE;
    case 'n':
        return skip_literal(sc, "null") ? 0 : GPUOP_EPARSE;
    default:
        return skip_number(sc) ? 0 : GPUOP_EPARSE;
    }
}

/* Walks the members of the object at sc->i looking for path[0]: the last
 * key of the path is cut, any other is descended into when its value is
 * an object. */
static int find_in(struct scan *sc, const char *const *path, size_t npath, int depth,
                   struct gpuop_jsonstrip_cut *cut)
{
    if (depth >= GPUOP_JSONSTRIP_MAX_DEPTH)
        return GPUOP_ETOOBIG;
    if (!at(sc, '{'))
        return GPUOP_EPARSE;
    size_t want = strlen(path[0]);
    size_t comma = SIZE_MAX; /* the comma before the member being read */
    sc->i++;
    skip_ws(sc);
    if (at(sc, '}')) {
        sc->i++;
        return GPUOP_ENOTFOUND;
    }
    for (;;) {
        bool plain;
        size_t key = sc->i;
        if (!at(sc, '"') || !skip_string(sc, &plain))
            return GPUOP_EPARSE;
        size_t klen = sc->i - key - 2;
        if (!plain)
            return GPUOP_EPARSE; /* it might spell path[0]: not guessed at */
        bool match = klen == want && memcmp(sc->s + key + 1, path[0], want) == 0;
        skip_ws(sc);
        if (!at(sc, ':'))
            return GPUOP_EPARSE;
        sc->i++;
        skip_ws(sc);
        int rc;
        if (match && npath > 1 && at(sc, '{')) {
            rc = find_in(sc, path + 1, npath - 1, depth + 1, cut);
            if (rc != GPUOP_ENOTFOUND)
                return rc;
            /* find_in stopped at the object's end: carry on after it */
        } else {
            rc = skip_value(sc, depth + 1);
            if (rc < 0)
                return rc;
        }
        size_t end = sc->i;
        skip_ws(sc);
        bool more = at(sc, ',');
        if (!more && !at(sc, '}'))
            return GPUOP_EPARSE;
        if (match && npath == 1) {
            if (comma != SIZE_MAX) { /* ", "key": value" */
                cut->off = comma;
                cut->len = end - comma;
            } else if (more) { /* ""key": value, " */
                sc->i++;
                skip_ws(sc);
                cut->off = key;
                cut->len = sc->i - key;
            } else { /* the only member */
                cut->off = key;
                cut->len = end - key;
            }
            return 0;
        }
        if (!more) {
            sc->i++;
            return GPUOP_ENOTFOUND;
        }
        comma = sc->i;
        sc->i++;
        skip_ws(sc);
    }
}

int gpuop_jsonstrip_find(const char *json, size_t len, const char *const *path, size_t npath,
                         struct gpuop_jsonstrip_cut *cut)
{
    if (npath == 0 || npath > GPUOP_JSONSTRIP_PATH_MAX)
        return GPUOP_EINVAL;
    struct scan sc = {.s = json, .n = len, .i = 0};
    skip_ws(&sc);
    return find_in(&sc, path, npath, 0, cut);
}

/* json_load_callback's reader: the bytes before the cut, then after it. */
struct segments {
    const char *p[2];
    size_t n[2];
    int k;
};

static size_t read_segments(void *buf, size_t buflen, void *arg)
{
    struct segments *sg = arg;
    while (sg->k < 2 && sg->n[sg->k] == 0)
        sg->k++;
    if (sg->k >= 2)
        return 0;
    size_t n = sg->n[sg->k] < buflen ? sg->n[sg->k] : buflen;
    memcpy(buf, sg->p[sg->k], n);
    sg->p[sg->k] += n;
    sg->n[sg->k] -= n;
    return n;
}

json_t *gpuop_jsonstrip_load(const char *json, size_t len, const char *const *path, size_t npath,
                             size_t flags, json_error_t *err)
{
    struct gpuop_jsonstrip_cut cut;
    if (gpuop_jsonstrip_find(json, len, path, npath, &cut) < 0)
        return json_loadb(json, len, flags, err);
    struct segments sg = {.p = {json, json + cut.off + cut.len},
                          .n = {cut.off, len - cut.off - cut.len}};
    return json_load_callback(read_segments, &sg, flags, err);
}
