/*
 * yaml.c - YAML to JSON (jansson) and back, on libyaml's event API.
 *
 * Loading. Events are folded into jansson values with an explicit stack of
 * open collections, so nesting never recurses. Scalars resolve with the YAML
 * 1.2 core schema, and only PLAIN scalars are resolved:
 *
 *   null   ~ null Null NULL and the empty plain scalar
 *   bool   true True TRUE false False FALSE
 *   int    [-+]?[0-9]+ (decimal, so 0777 is 777), 0o[0-7]+, 0x[0-9a-fA-F]+
 *   float  [-+]?(.[0-9]+|[0-9]+(.[0-9]*)?)([eE][-+]?[0-9]+)?
 *          and [-+]?(.inf|.Inf|.INF), .nan|.NaN|.NAN
 *   string everything else
 *
 * YAML 1.1 forms (yes/no/on/off, 0777 octal, 1_000, sexagesimal) are
 * strings. Quoted and block scalars are always strings. Explicit tags !!str,
 * !!int, !!float, !!bool and !!null force that type (a value that does not
 * fit is an error); other tags are ignored. JSON has no infinity or NaN and
 * jansson no integer beyond 64 bits, so .inf, .nan and out-of-range integers
 * are errors rather than silently changed values.
 *
 * Mappings: keys must be scalars (aliases to scalars included); a key is its
 * scalar text, whatever it would resolve to. A duplicate key in one mapping
 * is an error (as strict Kubernetes decoding does): a manifest with two
 * "image:" lines is a mistake, not a choice. Merge keys (<<) are not
 * special: "<<" is an ordinary key.
 *
 * Streams: one array element per document; documents whose root is null
 * (empty, only comments, "~") are skipped.
 *
 * Anchors and aliases: an alias deep-copies the anchored value, so callers
 * may mutate the result freely. Limits are ours (the Debian libyaml has
 * none): GPUOP_YAML_MAX_INPUT bytes, GPUOP_YAML_MAX_DEPTH nested collections
 * in the result (alias expansion included), and GPUOP_YAML_MAX_NODES nodes
 * produced (every scalar, key and collection, expanded aliases counted in
 * full). Each anchor remembers its expanded size and height, so an alias is
 * checked BEFORE it is copied and an alias bomb fails after a few thousand
 * nodes of real work.
 *
 * Dumping. A small writer of our own: block style, two-space indents, keys
 * in the object's order, sequences as "- " items, {} and [] for empty
 * collections. A string is written plain only when it is unambiguous for
 * YAML 1.2 and 1.1 readers alike; otherwise double-quoted with escapes for
 * every control or non-printable character. Reals are written in the
 * shortest form that reads back to the same double and always look like a
 * float. The output loads back to an equal value (tested).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "gpuop/buf.h"
#include "gpuop/hash.h"
#include "gpuop/yaml.h"

#define TAG_PREFIX "tag:yaml.org,2002:"
#define READ_FIRST 65536 /* a file's first read buffer; doubles up to the limit */
#define DUMP_FIRST 256   /* the dump's first buffer; doubles */

/* ---------------------------------------------------------------------- */
/* Scalar resolution                                                      */
/* ---------------------------------------------------------------------- */

enum scalar_kind { K_STR, K_NULL, K_BOOL, K_INT, K_FLOAT };

static bool is_one_of(const char *s, size_t len, const char *const *words)
{
    for (; *words; words++)
        if (strlen(*words) == len && memcmp(*words, s, len) == 0)
            return true;
    return false;
}

static const char *const null_words[] = {"~", "null", "Null", "NULL", NULL};
static const char *const true_words[] = {"true", "True", "TRUE", NULL};
static const char *const false_words[] = {"false", "False", "FALSE", NULL};
static const char *const inf_words[] = {".inf", ".Inf", ".INF", NULL};
static const char *const nan_words[] = {".nan", ".NaN", ".NAN", NULL};

static bool span_digits(const char *s, size_t len, size_t *i, int base)
{
    size_t start = *i;
    for (; *i < len; (*i)++) {
        char c = s[*i];
        bool ok = base == 16
                      ? ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
                  : base == 8 ? (c >= '0' && c <= '7')
                              : (c >= '0' && c <= '9');
        if (!ok)
            break;
    }
    return *i > start;
}

static bool is_int_form(const char *s, size_t len)
{
    size_t i = 0;
    if (len > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
        i = 2;
        return span_digits(s, len, &i, s[1] == 'o' ? 8 : 16) && i == len;
    }
    if (i < len && (s[i] == '-' || s[i] == '+'))
        i++;
    return span_digits(s, len, &i, 10) && i == len;
}

static bool is_float_form(const char *s, size_t len)
{
    size_t i = 0;
    const char *rest;
    if (is_one_of(s, len, nan_words))
        return true;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        i++;
    rest = s + i;
    if (is_one_of(rest, len - i, inf_words))
        return true;
    if (i < len && s[i] == '.') {
        i++;
        if (!span_digits(s, len, &i, 10))
            return false;
    } else {
        if (!span_digits(s, len, &i, 10))
            return false;
        if (i < len && s[i] == '.') {
            i++;
            span_digits(s, len, &i, 10);
        }
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '-' || s[i] == '+'))
            i++;
        if (!span_digits(s, len, &i, 10))
            return false;
    }
    return i == len;
}

static enum scalar_kind classify_plain(const char *s, size_t len)
{
    if (len == 0 || is_one_of(s, len, null_words))
        return K_NULL;
    if (is_one_of(s, len, true_words) || is_one_of(s, len, false_words))
        return K_BOOL;
    if (is_int_form(s, len))
        return K_INT;
    if (is_float_form(s, len))
        return K_FLOAT;
    return K_STR;
}

/* ---------------------------------------------------------------------- */
/* Loader state                                                           */
/* ---------------------------------------------------------------------- */

struct anchor {
    char *name;
    json_t *value; /* collections: the finished value (owned) */
    char *text;    /* scalars: raw text, style and tag, resolved per use */
    size_t textlen;
    bool plain;
    char *tag;
    size_t nodes; /* nodes an alias produces */
    int height;   /* collections below and including it */
};

/* The anchors array's first size; its limit: one anchor a node at most. */
#define ANCHORS_FIRST 8

GPUOP_ARRAY(anchor_array, struct anchor);

struct frame {
    json_t *node; /* the collection being filled (owned) */
    bool is_map;
    bool have_key;
    char *key; /* pending key of a mapping (owned) */
    size_t keylen;
    yaml_mark_t key_mark;
    char *anchor;       /* anchor of this collection (owned), or NULL */
    size_t start_nodes; /* node counter when opened */
    int child_height;   /* highest finished child */
};

struct loader {
    struct gpuop_err *err;
    struct frame stack[GPUOP_YAML_MAX_DEPTH];
    int depth;
    json_t *root; /* finished root of the current document */
    int root_height;
    struct anchor_array anchors; /* in definition order */
    size_t *slots;               /* hash of anchor names: index + 1, latest definition */
    size_t nslots;
    size_t nodes;
};

static int fail_at(struct loader *ld, int rc, yaml_mark_t mark, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail_at(struct loader *ld, int rc, yaml_mark_t mark, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return gpuop_err_set(ld->err, rc, NULL, "line %zu, column %zu: %s", mark.line + 1,
                         mark.column + 1, what);
}

static int oom(struct loader *ld)
{
    return gpuop_err_set(ld->err, GPUOP_ENOMEM, NULL, "out of memory while loading YAML");
}

static void anchors_clear(struct loader *ld)
{
    struct anchor *a = anchor_array_items(&ld->anchors);
    for (size_t i = 0; i < anchor_array_len(&ld->anchors); i++) {
        free(a[i].name);
        free(a[i].text);
        free(a[i].tag);
        json_decref(a[i].value);
    }
    anchor_array_clear(&ld->anchors);
    if (ld->slots)
        memset(ld->slots, 0, ld->nslots * sizeof(*ld->slots));
}

/* The slot for name: holding it, or the empty slot where it would go. */
static size_t *anchor_slot(struct loader *ld, const char *name)
{
    const struct anchor *a = anchor_array_items(&ld->anchors);
    size_t mask = ld->nslots - 1, i = (size_t)gpuop_hash_str(name) & mask;
    while (ld->slots[i] && strcmp(a[ld->slots[i] - 1].name, name) != 0)
        i = (i + 1) & mask;
    return &ld->slots[i];
}

static struct anchor *anchor_find(struct loader *ld, const char *name)
{
    size_t *slot;
    if (!ld->nslots)
        return NULL;
    slot = anchor_slot(ld, name);
    return *slot ? &anchor_array_items(&ld->anchors)[*slot - 1] : NULL;
}

/* Indexes the last anchor; keeps the table under half full; names are
 * redefined in place. */
static int anchor_index(struct loader *ld)
{
    size_t n = anchor_array_len(&ld->anchors);
    const struct anchor *a = anchor_array_items(&ld->anchors);
    if (n * 2 > ld->nslots) {
        size_t ns = ld->nslots ? ld->nslots * 2 : 16;
        size_t *old = ld->slots, oldn = ld->nslots;
        ld->slots = calloc(ns, sizeof(*ld->slots));
        if (!ld->slots) {
            ld->slots = old;
            return -1;
        }
        ld->nslots = ns;
        for (size_t i = 0; i < oldn; i++)
            if (old[i])
                *anchor_slot(ld, a[old[i] - 1].name) = old[i];
        free(old);
    }
    *anchor_slot(ld, a[n - 1].name) = n;
    return 0;
}

/* An anchor to add, as struct anchor says: name, text and tag borrowed
 * (anchor_add copies them), value stolen. */
struct anchor_in {
    const char *name;
    json_t *value;
    const char *text;
    size_t textlen;
    bool plain;
    const char *tag;
    size_t nodes;
    int height;
};

/* Takes in's name, value (steals), text copy. */
static int anchor_add(struct loader *ld, const struct anchor_in *in)
{
    const char *text = in->text, *tag = in->tag;
    json_t *value = in->value;
    struct anchor a = {.name = strdup(in->name),
                       .value = value,
                       .textlen = in->textlen,
                       .plain = in->plain,
                       .nodes = in->nodes,
                       .height = in->height};
    if (text) {
        a.text = malloc(a.textlen + 1);
        if (a.text) {
            memcpy(a.text, text, a.textlen);
            a.text[a.textlen] = '\0';
        }
        a.tag = tag ? strdup(tag) : NULL;
    }
    int rc = !a.name || (text && !a.text) || (tag && text && !a.tag)
                 ? GPUOP_ENOMEM
                 : anchor_array_push(&ld->anchors, a);
    if (rc == 0 && anchor_index(ld) != 0) {
        (void)anchor_array_pop(&ld->anchors);
        rc = GPUOP_ENOMEM;
    }
    if (rc < 0) {
        free(a.name);
        free(a.text);
        free(a.tag);
        json_decref(value);
        return rc == GPUOP_ETOOBIG
                   ? gpuop_err_set(ld->err, rc, NULL, "more than %d anchors", GPUOP_YAML_MAX_NODES)
                   : oom(ld);
    }
    return 0;
}

static int count_nodes(struct loader *ld, size_t n, yaml_mark_t mark)
{
    if (n > GPUOP_YAML_MAX_NODES || ld->nodes > GPUOP_YAML_MAX_NODES - n)
        return fail_at(ld, GPUOP_ETOOBIG, mark, "more than %d nodes (aliases expanded)",
                       GPUOP_YAML_MAX_NODES);
    ld->nodes += n;
    return 0;
}

/* Resolves a scalar to a new JSON value, or fails with the mark. */
static int resolve(struct loader *ld, const char *s, size_t len, bool plain, const char *tag,
                   yaml_mark_t mark, json_t **out)
{
    enum scalar_kind kind = plain ? classify_plain(s, len) : K_STR;

    *out = NULL;
    if (tag && strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0) {
        const char *t = tag + strlen(TAG_PREFIX);
        enum scalar_kind want = kind;
        if (strcmp(t, "str") == 0)
            want = K_STR;
        else if (strcmp(t, "null") == 0)
            want = K_NULL;
        else if (strcmp(t, "bool") == 0)
            want = K_BOOL;
        else if (strcmp(t, "int") == 0)
            want = K_INT;
        else if (strcmp(t, "float") == 0)
            want = K_FLOAT;
        if (want != K_STR) {
            enum scalar_kind have = classify_plain(s, len);
            if (want == K_FLOAT && have == K_INT)
                have = K_FLOAT;
            if (have != want)
                return fail_at(ld, GPUOP_EPARSE, mark, "value does not match its tag !!%.60s", t);
        }
        kind = want;
    } else if (tag && strcmp(tag, "!") == 0) {
        kind = K_STR; /* the non-specific tag: a string */
    }

    switch (kind) {
    case K_NULL:
        *out = json_null();
        break;
    case K_BOOL:
        *out = json_boolean(s[0] == 't' || s[0] == 'T');
        break;
    case K_INT: {
        char tmp[80];
        char *end;
        int base = 10;
        const char *digits = tmp;
        long long v;
        if (len >= sizeof(tmp))
            return fail_at(ld, GPUOP_EPARSE, mark, "integer out of range");
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        if (len > 2 && tmp[0] == '0' && (tmp[1] == 'x' || tmp[1] == 'o')) {
            base = tmp[1] == 'x' ? 16 : 8;
            digits = tmp + 2;
        }
        errno = 0;
        v = strtoll(digits, &end, base);
        if (errno == ERANGE || *end != '\0')
            return fail_at(ld, GPUOP_EPARSE, mark, "integer out of range: %.60s", tmp);
        *out = json_integer((json_int_t)v);
        break;
    }
    case K_FLOAT: {
        char tmp[400];
        double v;
        if (len >= sizeof(tmp))
            return fail_at(ld, GPUOP_EPARSE, mark, "number too long");
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        if (strchr(tmp, 'n') || strchr(tmp, 'N') || strchr(tmp, 'i') || strchr(tmp, 'I'))
            return fail_at(ld, GPUOP_EPARSE, mark, "%.60s cannot be represented in JSON", tmp);
        v = strtod(tmp, NULL);
        if (!isfinite(v))
            return fail_at(ld, GPUOP_EPARSE, mark, "float out of range: %.60s", tmp);
        *out = json_real(v);
        break;
    }
    case K_STR:
        *out = json_stringn(s, len);
        break;
    }
    if (!*out)
        return oom(ld);
    return 0;
}

/* Adds a finished value (steals) to the open collection or as the root. */
static int add_value(struct loader *ld, json_t *v, int height, yaml_mark_t mark)
{
    struct frame *f;
    if (ld->depth == 0) {
        json_decref(ld->root);
        ld->root = v;
        ld->root_height = height;
        return 0;
    }
    f = &ld->stack[ld->depth - 1];
    if (height > f->child_height)
        f->child_height = height;
    if (!f->is_map) {
        if (json_array_append_new(f->node, v) != 0)
            return oom(ld);
        return 0;
    }
    /* a mapping value: the key is pending */
    if (json_object_getn(f->node, f->key, f->keylen)) {
        int rc = fail_at(ld, GPUOP_EPARSE, f->key_mark, "duplicate mapping key \"%.200s\"", f->key);
        json_decref(v);
        return rc;
    }
    if (json_object_setn_new_nocheck(f->node, f->key, f->keylen, v) != 0)
        return oom(ld);
    free(f->key);
    f->key = NULL;
    f->have_key = false;
    return 0;
}

static int set_key(struct loader *ld, const char *s, size_t len, yaml_mark_t mark)
{
    struct frame *f = &ld->stack[ld->depth - 1];
    f->key = malloc(len + 1);
    if (!f->key)
        return oom(ld);
    memcpy(f->key, s, len);
    f->key[len] = '\0';
    f->keylen = len;
    f->key_mark = mark;
    f->have_key = true;
    return 0;
}

static bool expecting_key(struct loader *ld)
{
    return ld->depth > 0 && ld->stack[ld->depth - 1].is_map && !ld->stack[ld->depth - 1].have_key;
}

static int on_scalar(struct loader *ld, yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    const char *tag = (const char *)ev->data.scalar.tag;
    const char *anchor = (const char *)ev->data.scalar.anchor;
    json_t *v;
    int rc;

    if ((rc = count_nodes(ld, 1, ev->start_mark)) != 0)
        return rc;
    struct anchor_in in = {
        .name = anchor, .text = s, .textlen = len, .plain = plain, .tag = tag, .nodes = 1};
    if (anchor && (rc = anchor_add(ld, &in)) != 0)
        return rc;
    if (expecting_key(ld))
        return set_key(ld, s, len, ev->start_mark);
    if ((rc = resolve(ld, s, len, plain, tag, ev->start_mark, &v)) != 0)
        return rc;
    return add_value(ld, v, 0, ev->start_mark);
}

static int on_alias(struct loader *ld, yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    struct anchor *a = anchor_find(ld, name);
    json_t *v;
    int rc;

    if (!a)
        return fail_at(ld, GPUOP_EPARSE, ev->start_mark, "unknown anchor \"%.200s\"", name);
    if ((rc = count_nodes(ld, a->nodes, ev->start_mark)) != 0)
        return rc;
    if (expecting_key(ld)) {
        if (!a->text)
            return fail_at(ld, GPUOP_EPARSE, ev->start_mark,
                           "mapping key \"*%.200s\" is not a scalar", name);
        return set_key(ld, a->text, a->textlen, ev->start_mark);
    }
    if (ld->depth + a->height > GPUOP_YAML_MAX_DEPTH)
        return fail_at(ld, GPUOP_ETOOBIG, ev->start_mark,
                       "alias \"*%.200s\" nests deeper than the depth limit", name);
    if (a->text) {
        if ((rc = resolve(ld, a->text, a->textlen, a->plain, a->tag, ev->start_mark, &v)) != 0)
            return rc;
    } else {
        v = json_deep_copy(a->value);
        if (!v)
            return oom(ld);
    }
    return add_value(ld, v, a->height, ev->start_mark);
}

static int on_start(struct loader *ld, yaml_event_t *ev, bool is_map)
{
    const char *anchor = is_map ? (const char *)ev->data.mapping_start.anchor
                                : (const char *)ev->data.sequence_start.anchor;
    struct frame *f;
    int rc;

    if (expecting_key(ld))
        return fail_at(ld, GPUOP_EPARSE, ev->start_mark, "mapping keys must be scalars");
    if (ld->depth >= GPUOP_YAML_MAX_DEPTH)
        return fail_at(ld, GPUOP_ETOOBIG, ev->start_mark, "nesting deeper than %d levels",
                       GPUOP_YAML_MAX_DEPTH);
    if ((rc = count_nodes(ld, 1, ev->start_mark)) != 0)
        return rc;
    f = &ld->stack[ld->depth];
    memset(f, 0, sizeof(*f));
    f->is_map = is_map;
    f->start_nodes = ld->nodes;
    f->node = is_map ? json_object() : json_array();
    if (!f->node)
        return oom(ld);
    ld->depth++;
    if (anchor && !(f->anchor = strdup(anchor)))
        return oom(ld);
    return 0;
}

static int on_end(struct loader *ld, yaml_event_t *ev)
{
    struct frame f = ld->stack[--ld->depth];
    int height = f.child_height + 1;
    int rc;

    /* the parser guarantees balanced events, and a mapping never ends
     * between a key and its value */
    if (f.anchor) {
        /* the anchor shares the finished node: nothing mutates it again,
         * and aliases deep-copy it */
        rc = anchor_add(ld, &(struct anchor_in){.name = f.anchor,
                                                .value = json_incref(f.node),
                                                .nodes = ld->nodes - f.start_nodes + 1,
                                                .height = height});
        free(f.anchor);
        if (rc != 0) {
            free(f.key);
            json_decref(f.node);
            return rc;
        }
    }
    free(f.key);
    return add_value(ld, f.node, height, ev->start_mark);
}

static void loader_reset_doc(struct loader *ld)
{
    while (ld->depth > 0) {
        struct frame *f = &ld->stack[--ld->depth];
        json_decref(f->node);
        free(f->key);
        free(f->anchor);
    }
    json_decref(ld->root);
    ld->root = NULL;
    anchors_clear(ld);
}

static int parser_error(struct loader *ld, yaml_parser_t *p, const char *buf, size_t len)
{
    yaml_mark_t mark = p->problem_mark;
    const char *problem = p->problem ? p->problem : "syntax error";
    if (p->error == YAML_MEMORY_ERROR)
        return oom(ld);
    if (p->error == YAML_READER_ERROR) {
        /* the reader reports a byte offset: count lines and characters */
        size_t line = 1, col = 1;
        for (size_t i = 0; i < p->problem_offset && i < len; i++) {
            if (buf[i] == '\n') {
                line++;
                col = 1;
            } else if (((unsigned char)buf[i] & 0xC0) != 0x80) {
                col++;
            }
        }
        return gpuop_err_set(ld->err, GPUOP_EPARSE, NULL, "line %zu, column %zu: %s", line, col,
                             problem);
    }
    if (p->context)
        return gpuop_err_set(ld->err, GPUOP_EPARSE, NULL, "line %zu, column %zu: %s (%s)",
                             mark.line + 1, mark.column + 1, problem, p->context);
    return gpuop_err_set(ld->err, GPUOP_EPARSE, NULL, "line %zu, column %zu: %s", mark.line + 1,
                         mark.column + 1, problem);
}

int gpuop_yaml_load(const char *buf, size_t len, json_t **out, struct gpuop_err *err)
{
    struct loader ld;
    yaml_parser_t parser;
    json_t *docs;
    int rc = 0;
    bool done = false;

    *out = NULL;
    if (len > GPUOP_YAML_MAX_INPUT)
        return gpuop_err_set(err, GPUOP_ETOOBIG, NULL, "YAML input of %zu bytes exceeds %u", len,
                             GPUOP_YAML_MAX_INPUT);
    memset(&ld, 0, sizeof(ld));
    ld.err = err;
    anchor_array_init(&ld.anchors, ANCHORS_FIRST, GPUOP_YAML_MAX_NODES);
    docs = json_array();
    if (!docs)
        return oom(&ld);
    if (!yaml_parser_initialize(&parser)) {
        json_decref(docs);
        return oom(&ld);
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)(buf ? buf : ""), len);

    while (!done && rc == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser_error(&ld, &parser, buf, len);
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            loader_reset_doc(&ld);
            break;
        case YAML_DOCUMENT_END_EVENT:
            if (ld.root && !json_is_null(ld.root)) {
                if (json_array_append_new(docs, ld.root) != 0)
                    rc = oom(&ld);
                ld.root = NULL;
            }
            loader_reset_doc(&ld);
            break;
        case YAML_SCALAR_EVENT:
            rc = on_scalar(&ld, &ev);
            break;
        case YAML_ALIAS_EVENT:
            rc = on_alias(&ld, &ev);
            break;
        case YAML_SEQUENCE_START_EVENT:
            rc = on_start(&ld, &ev, false);
            break;
        case YAML_MAPPING_START_EVENT:
            rc = on_start(&ld, &ev, true);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            rc = on_end(&ld, &ev);
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    loader_reset_doc(&ld);
    anchor_array_free(&ld.anchors);
    free(ld.slots);
    if (rc != 0) {
        json_decref(docs);
        return rc;
    }
    *out = docs;
    return 0;
}

int gpuop_yaml_load_file(const char *path, json_t **out, struct gpuop_err *err)
{
    /* One byte over the limit is read to tell a file of exactly the limit
     * from a larger one. Grown as we read, so a small file costs a small
     * buffer. */
    struct gpuop_buf buf = GPUOP_BUF_INIT(READ_FIRST, GPUOP_YAML_MAX_INPUT + 1);
    bool is_stdin = strcmp(path, "-") == 0;
    int rc;

    *out = NULL;
    FILE *fp = is_stdin ? stdin : fopen(path, "rb");
    if (!fp)
        return gpuop_err_set(err, GPUOP_EIO, path, "cannot open %s: %s", path, strerror(errno));
    for (;;) {
        if (buf.len == buf.cap) {
            rc = gpuop_buf_reserve(&buf, 1);
            if (rc == GPUOP_ETOOBIG)
                break; /* holds max: too large, said below */
            if (rc < 0) {
                gpuop_buf_free(&buf);
                if (!is_stdin)
                    fclose(fp);
                return gpuop_err_set(err, GPUOP_ENOMEM, path, "out of memory reading %s", path);
            }
        }
        size_t n = fread(buf.data + buf.len, 1, buf.cap - buf.len, fp);
        buf.len += n;
        if (n == 0)
            break;
    }
    if (ferror(fp)) {
        rc = gpuop_err_set(err, GPUOP_EIO, path, "cannot read %s", path);
        gpuop_buf_free(&buf);
        if (!is_stdin)
            fclose(fp);
        return rc;
    }
    if (!is_stdin)
        fclose(fp);
    if (buf.len > GPUOP_YAML_MAX_INPUT) {
        gpuop_buf_free(&buf);
        return gpuop_err_set(err, GPUOP_ETOOBIG, path, "%s is larger than %u bytes", path,
                             GPUOP_YAML_MAX_INPUT);
    }
    rc = gpuop_yaml_load(buf.data, buf.len, out, err);
    gpuop_buf_free(&buf);
    if (rc != 0 && err && err->field[0] == '\0')
        snprintf(err->field, sizeof(err->field), "%s", path);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Dumper                                                                 */
/* ---------------------------------------------------------------------- */

/* The dump's text; after a failed allocation, `failed` and nothing more is
 * written. */
struct sbuf {
    struct gpuop_buf b;
    bool failed;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
    if (!b->failed && gpuop_buf_append(&b->b, s, n) < 0)
        b->failed = true;
}

static void sb_str(struct sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static void sb_indent(struct sbuf *b, int n)
{
    static const char spaces[] = "                                ";
    while (n > 0) {
        int k = n > 32 ? 32 : n;
        sb_put(b, spaces, (size_t)k);
        n -= k;
    }
}

/* Decodes one UTF-8 sequence (jansson strings are valid UTF-8). */
static size_t utf8_next(const unsigned char *s, size_t len, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t n, i;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (n > len) {
        *cp = 0xFFFD;
        return 1;
    }
    *cp = c & (0x3F >> (n - 1));
    for (i = 1; i < n; i++)
        *cp = (*cp << 6) | (s[i] & 0x3F);
    return n;
}

/* Printable for YAML (and not a line break libyaml would fold). */
static bool cp_printable(uint32_t c)
{
    if (c == 0x2028 || c == 0x2029 || c == 0xFEFF)
        return false; /* line and paragraph separators, byte order mark */
    return (c >= 0x20 && c <= 0x7E) || (c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) ||
           (c >= 0x10000 && c <= 0x10FFFF);
}

/* YAML 1.1 words a reader may take for bools or nulls. */
static const char *const yaml11_words[] = {"y",   "Y",   "yes", "Yes", "YES", "n",  "N",
                                           "no",  "No",  "NO",  "on",  "On",  "ON", "off",
                                           "Off", "OFF", "=",   "<<",  NULL};

static bool needs_quotes(const char *s, size_t len)
{
    size_t i;
    if (len == 0)
        return true;
    if (classify_plain(s, len) != K_STR || is_one_of(s, len, yaml11_words))
        return true;
    /* first character: indicators, spaces, anything number-like */
    if (strchr("-?:,[]{}#&*!|>'\"%@`. \t+", s[0]) || (s[0] >= '0' && s[0] <= '9'))
        return true;
    if (s[len - 1] == ' ' || s[len - 1] == ':')
        return true;
    for (i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_next((const unsigned char *)s + i, len - i, &cp);
        if (!cp_printable(cp))
            return true;
        if (cp == ':' && i + 1 < len && s[i + 1] == ' ')
            return true;
        if (cp == ' ' && i + 1 < len && s[i + 1] == '#')
            return true;
        i += n;
    }
    return false;
}

static void put_string(struct sbuf *b, const char *s, size_t len)
{
    size_t i;
    char tmp[16];
    if (!needs_quotes(s, len)) {
        sb_put(b, s, len);
        return;
    }
    sb_put(b, "\"", 1);
    for (i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_next((const unsigned char *)s + i, len - i, &cp);
        switch (cp) {
        case '"':
            sb_str(b, "\\\"");
            break;
        case '\\':
            sb_str(b, "\\\\");
            break;
        case '\n':
            sb_str(b, "\\n");
            break;
        case '\t':
            sb_str(b, "\\t");
            break;
        case '\r':
            sb_str(b, "\\r");
            break;
        case 0:
            sb_str(b, "\\0");
            break;
        default:
            if (cp_printable(cp)) {
                sb_put(b, s + i, n);
            } else {
                if (cp <= 0xFF)
                    snprintf(tmp, sizeof(tmp), "\\x%02X", (unsigned)cp);
                else if (cp <= 0xFFFF)
                    snprintf(tmp, sizeof(tmp), "\\u%04X", (unsigned)cp);
                else
                    snprintf(tmp, sizeof(tmp), "\\U%08X", (unsigned)cp);
                sb_str(b, tmp);
            }
        }
        i += n;
    }
    sb_put(b, "\"", 1);
}

/* Shortest text that reads back to v and looks like a float: fixed
 * notation for ordinary magnitudes, exponent notation otherwise. */
static void put_real(struct sbuf *b, double v)
{
    char tmp[400];
    int prec;
    double a = fabs(v);
    if (a == 0 || (a >= 1e-4 && a < 1e16)) {
        for (prec = 1; prec <= 24; prec++) {
            snprintf(tmp, sizeof(tmp), "%.*f", prec, v);
            if (strtod(tmp, NULL) == v)
                break;
        }
    } else {
        for (prec = 1; prec <= 17; prec++) {
            snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
            if (strtod(tmp, NULL) == v)
                break;
        }
    }
    if (!strpbrk(tmp, ".eE"))
        strcat(tmp, ".0"); /* must read back as a float */
    sb_str(b, tmp);
}

static bool is_scalar_or_empty(json_t *v)
{
    if (json_is_object(v))
        return json_object_size(v) == 0;
    if (json_is_array(v))
        return json_array_size(v) == 0;
    return true;
}

static void put_scalar(struct sbuf *b, json_t *v)
{
    char tmp[32];
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        sb_str(b, "{}");
        break;
    case JSON_ARRAY:
        sb_str(b, "[]");
        break;
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        snprintf(tmp, sizeof(tmp), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        sb_str(b, tmp);
        break;
    case JSON_REAL:
        put_real(b, json_real_value(v));
        break;
    case JSON_TRUE:
        sb_str(b, "true");
        break;
    case JSON_FALSE:
        sb_str(b, "false");
        break;
    case JSON_NULL:
        sb_str(b, "null");
        break;
    }
}

#define LONG_KEY 100 /* bytes; escaped, at most 10 times as long */

static void dump_seq(struct sbuf *b, json_t *v, int indent, bool inline_first);

static void dump_map(struct sbuf *b, json_t *v, int indent, bool inline_first)
{
    bool first = true;
    void *it;
    for (it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
        json_t *val = json_object_iter_value(it);
        if (!first || !inline_first)
            sb_indent(b, indent);
        first = false;
        if (json_object_iter_key_len(it) > LONG_KEY) {
            /* an implicit key may not exceed 1024 characters: explicit */
            sb_put(b, "? ", 2);
            put_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
            sb_put(b, "\n", 1);
            sb_indent(b, indent);
        } else {
            put_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
        }
        sb_put(b, ":", 1);
        if (is_scalar_or_empty(val)) {
            sb_put(b, " ", 1);
            put_scalar(b, val);
            sb_put(b, "\n", 1);
        } else if (json_is_object(val)) {
            sb_put(b, "\n", 1);
            dump_map(b, val, indent + 2, false);
        } else {
            sb_put(b, "\n", 1);
            dump_seq(b, val, indent + 2, false);
        }
    }
}

static void dump_seq(struct sbuf *b, json_t *v, int indent, bool inline_first)
{
    size_t i;
    for (i = 0; i < json_array_size(v); i++) {
        json_t *item = json_array_get(v, i);
        if (i > 0 || !inline_first)
            sb_indent(b, indent);
        sb_put(b, "- ", 2);
        if (is_scalar_or_empty(item)) {
            put_scalar(b, item);
            sb_put(b, "\n", 1);
        } else if (json_is_object(item)) {
            dump_map(b, item, indent + 2, true);
        } else {
            dump_seq(b, item, indent + 2, true);
        }
    }
}

char *gpuop_yaml_dump(json_t *doc)
{
    struct sbuf b = {GPUOP_BUF_INIT(DUMP_FIRST, GPUOP_BUF_UNLIMITED), false};
    if (!doc)
        return NULL;
    if (is_scalar_or_empty(doc)) {
        put_scalar(&b, doc);
        sb_put(&b, "\n", 1);
    } else if (json_is_object(doc)) {
        dump_map(&b, doc, 0, false);
    } else {
        dump_seq(&b, doc, 0, false);
    }
    sb_put(&b, "", 1); /* the terminating NUL */
    if (b.failed) {
        gpuop_buf_free(&b.b);
        return NULL;
    }
    return gpuop_buf_steal(&b.b);
}
