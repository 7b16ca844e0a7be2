/*
 * jsonstrip.c - one member cut out of a JSON document before it is parsed
 * (see jsonstrip_int.h).
 *
 * A recursive-descent scanner over the raw bytes that checks the JSON
 * grammar (RFC 8259: strings with their escapes and UTF-8, numbers,
 * literals, nesting) without building anything. It walks the members of
 * the objects on the paths and skips every other value; it stops once the
 * member at the end of every path has been passed over. Recursion is bounded
 * by GPUOP_JSONSTRIP_MAX_DEPTH. Nothing is allocated; the bytes are only
 * read. A digest path's member also leaves where its value was, and once
 * the rest is parsed, it goes back in as the hash of those bytes.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpuop/hash.h"

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

/* The finder's state: the paths, which are cut, the cuts made so far,
 * and (spans, or NULL) where each digest path's value is. */
struct strip {
    const struct gpuop_jsonstrip_path *paths;
    size_t npaths;
    uint32_t all, done; /* a bit per path: every path, the paths cut */
    struct gpuop_jsonstrip_cut *cuts;
    size_t ncuts;
    struct gpuop_jsonstrip_cut *spans; /* per path; len 0: not found */
};

#define NONE      SIZE_MAX
#define STOP_SCAN 1 /* every path is cut: nothing more to read */

static void emit(struct strip *st, size_t from, size_t to)
{
    st->cuts[st->ncuts++] = (struct gpuop_jsonstrip_cut){.off = from, .len = to - from};
}

/* Walks the members of the object at sc->i, the paths in alive having
 * matched every key above it (level keys): a member that ends a path is
 * cut, one that continues a path is descended into when its value is an
 * object. Consecutive cut members are one cut, with their commas, so what
 * is left is a valid object: up to the next kept member's key, or (at the
 * object's end) from the end of the last kept member's value. Returns 0
 * past the object's end, STOP_SCAN once every path is cut, or a negative
 * code. */
static int find_in(struct scan *sc, struct strip *st, uint32_t alive, size_t level, int depth)
{
    if (depth >= GPUOP_JSONSTRIP_MAX_DEPTH)
        return GPUOP_ETOOBIG;
    if (!at(sc, '{'))
        return GPUOP_EPARSE;
    sc->i++;
    skip_ws(sc);
    if (at(sc, '}')) {
        sc->i++;
        return 0;
    }
    size_t run = NONE;      /* the key of the first member of the cut run pending */
    size_t run_prev = NONE; /* the end of the kept value before that run */
    size_t prev_end = NONE; /* the end of the last kept member's value */
    for (;;) {
        bool plain;
        size_t key = sc->i;
        if (!at(sc, '"') || !skip_string(sc, &plain))
            return GPUOP_EPARSE;
        const char *k = sc->s + key + 1;
        size_t klen = sc->i - key - 2;
        uint32_t leaf = 0, inner = 0, open = alive & ~st->done;
        if (open && !plain)
            return GPUOP_EPARSE; /* it might spell a path's key: not guessed at */
        for (size_t p = 0; open && p < st->npaths; p++) {
            const char *want = st->paths[p].key[level];
            if (!(open & (1u << p)) || strlen(want) != klen || memcmp(k, want, klen) != 0)
                continue;
            if (st->paths[p].n == level + 1)
                leaf |= 1u << p;
            else
                inner |= 1u << p;
        }
        skip_ws(sc);
        if (!at(sc, ':'))
            return GPUOP_EPARSE;
        sc->i++;
        skip_ws(sc);
        if (leaf) {
            st->done |= leaf; /* the first of a name only */
            if (run == NONE) {
                run = key;
                run_prev = prev_end;
            }
        } else if (run != NONE) { /* a kept member ends the run */
            emit(st, run, key);
            run = NONE;
            if (st->done == st->all)
                return STOP_SCAN;
        }
        int rc;
        size_t value = sc->i;
        if (!leaf && inner && at(sc, '{')) {
            rc = find_in(sc, st, inner, level + 1, depth + 1);
            if (rc != 0)
                return rc; /* STOP_SCAN, or an error */
        } else if ((rc = skip_value(sc, depth + 1)) < 0) {
            return rc;
        }
        size_t end = sc->i;
        if (!leaf)
            prev_end = end;
        for (size_t p = 0; leaf && st->spans && p < st->npaths; p++)
            if ((leaf & (1u << p)) && st->paths[p].digest)
                st->spans[p] = (struct gpuop_jsonstrip_cut){.off = value, .len = end - value};
        skip_ws(sc);
        bool more = at(sc, ',');
        if (!more && !at(sc, '}'))
            return GPUOP_EPARSE;
        if (!more) {
            if (run != NONE)
                emit(st, run_prev != NONE ? run_prev : run, end);
            sc->i++;
            return st->done == st->all ? STOP_SCAN : 0;
        }
        sc->i++;
        skip_ws(sc);
        if (st->done == st->all && run == NONE)
            return STOP_SCAN;
    }
}

static int find(const char *json, size_t len, const struct gpuop_jsonstrip_path *paths,
                size_t npaths, struct gpuop_jsonstrip_cut *cuts, size_t *ncuts,
                struct gpuop_jsonstrip_cut *spans)
{
    *ncuts = 0;
    if (npaths == 0 || npaths > GPUOP_JSONSTRIP_PATHS_MAX)
        return GPUOP_EINVAL;
    for (size_t p = 0; p < npaths; p++)
        if (paths[p].n == 0 || paths[p].n > GPUOP_JSONSTRIP_PATH_MAX)
            return GPUOP_EINVAL;
    struct strip st = {.paths = paths,
                       .npaths = npaths,
                       .all = (uint32_t)((1ull << npaths) - 1),
                       .cuts = cuts,
                       .spans = spans};
    if (spans)
        memset(spans, 0, npaths * sizeof(*spans));
    struct scan sc = {.s = json, .n = len, .i = 0};
    skip_ws(&sc);
    int rc = find_in(&sc, &st, st.all, 0, 0);
    if (rc < 0)
        return rc;
    if (!st.ncuts)
        return GPUOP_ENOTFOUND;
    *ncuts = st.ncuts;
    return 0;
}

int gpuop_jsonstrip_find(const char *json, size_t len, const struct gpuop_jsonstrip_path *paths,
                         size_t npaths, struct gpuop_jsonstrip_cut *cuts, size_t *ncuts)
{
    return find(json, len, paths, npaths, cuts, ncuts, NULL);
}

int gpuop_jsonstrip_split(char *dotted, const char *prefix, size_t max_keys,
                          struct gpuop_jsonstrip_path *out)
{
    memset(out, 0, sizeof(*out));
    if (max_keys > GPUOP_JSONSTRIP_PATH_MAX)
        max_keys = GPUOP_JSONSTRIP_PATH_MAX;
    if (prefix) {
        if (max_keys == 0)
            return GPUOP_EINVAL;
        out->key[out->n++] = prefix;
    }
    for (char *k = dotted; k;) {
        char *dot = strchr(k, '.');
        if (dot)
            *dot = '\0';
        if (!*k || out->n >= max_keys)
            return GPUOP_EINVAL;
        out->key[out->n++] = k;
        k = dot ? dot + 1 : NULL;
    }
    return 0;
}

/* Puts each digest path's member found (spans) back into obj, as its
 * digest. GPUOP_ENOMEM when jansson cannot. */
static int put_digests(json_t *obj, const char *json, const struct gpuop_jsonstrip_path *paths,
                       size_t npaths, const struct gpuop_jsonstrip_cut *spans)
{
    for (size_t p = 0; p < npaths; p++) {
        if (!paths[p].digest || spans[p].len == 0)
            continue;
        json_t *parent = obj;
        for (size_t k = 0; k + 1 < paths[p].n; k++)
            parent = json_object_get(parent, paths[p].key[k]);
        if (!json_is_object(parent))
            continue; /* a duplicate key above it, which jansson kept instead */
        char d[GPUOP_JSONSTRIP_DIGEST_LEN + 1];
        snprintf(d, sizeof(d), GPUOP_JSONSTRIP_DIGEST "%016" PRIx64,
                 gpuop_hash_bytes(GPUOP_HASH_INIT, json + spans[p].off, spans[p].len));
        if (json_object_set_new(parent, paths[p].key[paths[p].n - 1], json_string(d)) < 0)
            return GPUOP_ENOMEM;
    }
    return 0;
}

/* json_load_callback's reader: the bytes between the cuts, in turn. */
struct segments {
    const char *json;
    size_t len, pos; /* the next byte to read */
    const struct gpuop_jsonstrip_cut *cuts;
    size_t ncuts, k; /* the next cut ahead */
};

static size_t read_segments(void *buf, size_t buflen, void *arg)
{
    struct segments *sg = arg;
    while (sg->k < sg->ncuts && sg->pos >= sg->cuts[sg->k].off) {
        sg->pos = sg->cuts[sg->k].off + sg->cuts[sg->k].len;
        sg->k++;
    }
    size_t stop = sg->k < sg->ncuts ? sg->cuts[sg->k].off : sg->len;
    size_t n = stop - sg->pos < buflen ? stop - sg->pos : buflen;
    memcpy(buf, sg->json + sg->pos, n);
    sg->pos += n;
    return n;
}

json_t *gpuop_jsonstrip_load(const char *json, size_t len, const struct gpuop_jsonstrip_path *paths,
                             size_t npaths, size_t flags, json_error_t *err)
{
    struct gpuop_jsonstrip_cut cuts[GPUOP_JSONSTRIP_PATHS_MAX], spans[GPUOP_JSONSTRIP_PATHS_MAX];
    size_t ncuts;
    if (find(json, len, paths, npaths, cuts, &ncuts, spans) < 0)
        return json_loadb(json, len, flags, err);
    struct segments sg = {.json = json, .len = len, .cuts = cuts, .ncuts = ncuts};
    json_t *obj = json_load_callback(read_segments, &sg, flags, err);
    if (obj && put_digests(obj, json, paths, npaths, spans) < 0) {
        json_decref(obj);
        if (err)
            snprintf(err->text, sizeof(err->text), "out of memory");
        return NULL;
    }
    return obj;
}
