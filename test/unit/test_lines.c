/*
 * test_lines.c - the watch-stream line framer: every split point of a
 * sample, byte-at-a-time feeding, CRLF split between '\r' and '\n', the
 * size limit at and just over its edge, recovery, callback abort, and the
 * no-copy path for chunks of whole lines.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lines_int.h"

/* Collects delivered lines joined by '|' so a whole run compares at once. */
struct sink {
    char out[8192];
    size_t len;
    int lines;
    int stop_after; /* abort on this line number (1-based); 0 = never */
    int stop_rc;
    const char *chunk_lo, *chunk_hi; /* when set: lines lying in the chunk */
    int direct;
};

static int collect(void *arg, const char *line, size_t len)
{
    struct sink *s = arg;
    assert_true(len > 0);
    assert_true(s->len + len + 1 < sizeof(s->out));
    assert_null(memchr(line, '\n', len));
    memcpy(s->out + s->len, line, len);
    s->len += len;
    s->out[s->len++] = '|';
    s->out[s->len] = '\0';
    s->lines++;
    if (s->chunk_lo && line >= s->chunk_lo && line < s->chunk_hi)
        s->direct++;
    if (s->stop_after && s->lines == s->stop_after)
        return s->stop_rc;
    return 0;
}

/* A sample with CRLF, empty lines, and multi-byte UTF-8 (2, 3 and 4 bytes). */
static const char sample[] = "{\"type\":\"ADDED\",\"n\":\"caf\xc3\xa9\"}\r\n"
                             "\n"
                             "\r\n"
                             "second \xe2\x82\xac line\n"
                             "third \xf0\x9f\x9a\x80\r\n"
                             "x\n"
                             "partial tail";
static const char expected[] = "{\"type\":\"ADDED\",\"n\":\"caf\xc3\xa9\"}|"
                               "second \xe2\x82\xac line|"
                               "third \xf0\x9f\x9a\x80|"
                               "x|";

static void test_every_split(void **state)
{
    size_t n = sizeof(sample) - 1;
    for (size_t a = 0; a <= n; a++) {
        for (size_t b = a; b <= n; b++) {
            struct gpuop_lines l;
            struct sink s = {0};
            gpuop_lines_init(&l, 1024);
            assert_int_equal(gpuop_lines_feed(&l, sample, a, collect, &s), 0);
            assert_int_equal(gpuop_lines_feed(&l, sample + a, b - a, collect, &s), 0);
            assert_int_equal(gpuop_lines_feed(&l, sample + b, n - b, collect, &s), 0);
            assert_string_equal(s.out, expected);
            assert_int_equal(s.lines, 4);
            assert_int_equal(gpuop_lines_pending(&l), strlen("partial tail"));
            gpuop_lines_free(&l);
        }
    }
}

static void test_one_byte_chunks(void **state)
{
    struct gpuop_lines l;
    struct sink s = {0};
    gpuop_lines_init(&l, 1024);
    for (size_t i = 0; i < sizeof(sample) - 1; i++)
        assert_int_equal(gpuop_lines_feed(&l, sample + i, 1, collect, &s), 0);
    assert_string_equal(s.out, expected);
    assert_int_equal(gpuop_lines_feed(&l, "\n", 1, collect, &s), 0);
    assert_int_equal(s.lines, 5);
    assert_int_equal(gpuop_lines_pending(&l), 0);
    gpuop_lines_free(&l);
}

struct counter {
    int lines;
    size_t total, last_len;
};

static int count(void *arg, const char *line, size_t len)
{
    struct counter *c = arg;
    c->lines++;
    c->total += len;
    c->last_len = len;
    return 0;
}

/* A long line in many small chunks: the buffer grows geometrically, so
 * the number of reallocations is logarithmic, and the line arrives whole. */
static void test_long_line_small_chunks(void **state)
{
    enum { N = 1 << 20 };
    struct gpuop_lines l;
    struct counter c = {0};
    char *line = malloc(N + 1);
    size_t last_cap = 0;
    int grows = 0;
    assert_non_null(line);
    memset(line, 'a', N);
    line[N] = '\n';
    gpuop_lines_init(&l, N);
    for (size_t i = 0; i <= N; i += 7) {
        size_t k = N + 1 - i < 7 ? N + 1 - i : 7;
        assert_int_equal(gpuop_lines_feed(&l, line + i, k, count, &c), 0);
        if (l.buf.cap != last_cap) {
            grows++;
            last_cap = l.buf.cap;
        }
    }
    assert_true(grows <= 16);
    assert_true(l.buf.cap <= (size_t)N + 1);
    assert_int_equal(c.lines, 1);
    assert_int_equal(c.last_len, N);
    assert_int_equal(gpuop_lines_pending(&l), 0);
    gpuop_lines_free(&l);
    free(line);
}

/* A carry-over grown for a long line is given back once the line is out;
 * one that a short line used is kept for the next. */
static void test_long_carry_given_back(void **state)
{
    (void)state;
    enum { LONG = 200 * 1024 };
    struct gpuop_lines l;
    struct counter c = {0};
    char *line = malloc(LONG + 1);
    assert_non_null(line);
    memset(line, 'b', LONG);
    line[LONG] = '\n';
    gpuop_lines_init(&l, 1 << 20);
    assert_int_equal(gpuop_lines_feed(&l, "short", 5, count, &c), 0);
    assert_int_equal(gpuop_lines_feed(&l, "er\n", 3, count, &c), 0);
    assert_int_equal(c.lines, 1);
    assert_true(l.buf.cap > 0); /* kept */
    assert_int_equal(gpuop_lines_feed(&l, line, LONG / 2, count, &c), 0);
    assert_true(l.buf.cap >= LONG / 2);
    assert_int_equal(gpuop_lines_feed(&l, line + LONG / 2, LONG / 2 + 1, count, &c), 0);
    assert_int_equal(c.lines, 2);
    assert_int_equal(c.last_len, LONG);
    assert_int_equal(l.buf.cap, 0); /* given back */
    /* and grows again for the next one, within the same limit */
    assert_int_equal(gpuop_lines_feed(&l, line, LONG / 2, count, &c), 0);
    assert_int_equal(gpuop_lines_feed(&l, line + LONG / 2, LONG / 2 + 1, count, &c), 0);
    assert_int_equal(c.lines, 3);
    assert_int_equal(c.last_len, LONG);
    gpuop_lines_free(&l);
    free(line);
}

/* Whole lines in one chunk are delivered from the chunk itself and the
 * carry-over buffer is never allocated. */
static void test_whole_lines_no_copy(void **state)
{
    static const char chunk[] = "one\ntwo\r\n\nthree\n";
    struct gpuop_lines l;
    struct sink s = {0};
    s.chunk_lo = chunk;
    s.chunk_hi = chunk + sizeof(chunk) - 1;
    gpuop_lines_init(&l, 64);
    assert_int_equal(gpuop_lines_feed(&l, chunk, sizeof(chunk) - 1, collect, &s), 0);
    assert_string_equal(s.out, "one|two|three|");
    assert_int_equal(s.direct, 3);
    assert_null(l.buf.data);
    assert_int_equal(l.buf.cap, 0);
    gpuop_lines_free(&l);
}

/* Table: a line of exactly max bytes passes, max + 1 fails, whatever the
 * ending and however it is split. */
static void test_limit_edges(void **state)
{
    enum { MAX = 16 };
    static const struct {
        size_t body;        /* bytes of line content */
        const char *ending; /* "\n" or "\r\n" */
        size_t split;       /* first chunk length; rest in the second */
        int rc;
    } cases[] = {
        {MAX, "\n", 0, 0},
        {MAX, "\n", MAX, 0},
        {MAX, "\n", 5, 0},
        {MAX, "\r\n", MAX, 0},     /* split before '\r' */
        {MAX, "\r\n", MAX + 1, 0}, /* split between '\r' and '\n' */
        {MAX, "\r\n", 0, 0},
        {MAX + 1, "\n", 0, GPUOP_ETOOBIG},
        {MAX + 1, "\n", 3, GPUOP_ETOOBIG},
        {MAX + 1, "\n", MAX + 1, GPUOP_ETOOBIG},
        {MAX + 1, "\r\n", MAX + 1, GPUOP_ETOOBIG},
        {MAX + 1, "\r\n", MAX + 2, GPUOP_ETOOBIG},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[64];
        size_t n = cases[i].body, total;
        struct gpuop_lines l;
        struct counter c = {0};
        int rc;
        memset(buf, 'z', n);
        memcpy(buf + n, cases[i].ending, strlen(cases[i].ending));
        total = n + strlen(cases[i].ending);
        gpuop_lines_init(&l, MAX);
        rc = gpuop_lines_feed(&l, buf, cases[i].split, count, &c);
        if (rc == 0)
            rc = gpuop_lines_feed(&l, buf + cases[i].split, total - cases[i].split, count, &c);
        assert_int_equal(rc, cases[i].rc);
        if (rc == 0) {
            assert_int_equal(c.lines, 1);
            assert_int_equal(c.last_len, MAX);
        } else {
            assert_int_equal(c.lines, 0);
            assert_int_equal(gpuop_lines_pending(&l), 0);
        }
        gpuop_lines_free(&l);
    }
}

/* An oversized line fails, whether it is carried over or whole in a
 * chunk; after a reset the framer works again. */
static void test_oversized_and_reset(void **state)
{
    struct gpuop_lines l;
    struct sink s = {0};
    char big[100];
    memset(big, 'b', sizeof(big));
    gpuop_lines_init(&l, 32);

    /* carried over across chunks: fails as soon as it is known too long */
    assert_int_equal(gpuop_lines_feed(&l, big, 20, collect, &s), 0);
    assert_int_equal(gpuop_lines_pending(&l), 20);
    assert_int_equal(gpuop_lines_feed(&l, big, 20, collect, &s), GPUOP_ETOOBIG);
    assert_int_equal(gpuop_lines_pending(&l), 0);
    gpuop_lines_reset(&l);
    assert_int_equal(gpuop_lines_feed(&l, "ok\n", 3, collect, &s), 0);
    assert_string_equal(s.out, "ok|");

    /* a chunk holding a good line, a too-long line, and more */
    assert_int_equal(gpuop_lines_feed(&l, "good\n", 5, collect, &s), 0);
    {
        char chunk[200];
        size_t n = 0;
        memcpy(chunk, "fine\n", 5);
        n = 5;
        memcpy(chunk + n, big, 40);
        n += 40;
        memcpy(chunk + n, "\nafter\n", 7);
        n += 7;
        assert_int_equal(gpuop_lines_feed(&l, chunk, n, collect, &s), GPUOP_ETOOBIG);
    }
    assert_string_equal(s.out, "ok|good|fine|");
    gpuop_lines_reset(&l);
    assert_int_equal(gpuop_lines_pending(&l), 0);
    assert_int_equal(gpuop_lines_feed(&l, "par", 3, collect, &s), 0);
    assert_int_equal(gpuop_lines_feed(&l, "tial\n", 5, collect, &s), 0);
    assert_string_equal(s.out, "ok|good|fine|partial|");

    /* a partial line at the end of a chunk that is already too long */
    assert_int_equal(gpuop_lines_feed(&l, big, 40, collect, &s), GPUOP_ETOOBIG);
    assert_int_equal(gpuop_lines_pending(&l), 0);
    gpuop_lines_free(&l);
}

/* The callback's negative value stops the feed and is returned. */
static void test_callback_abort(void **state)
{
    struct gpuop_lines l;
    struct sink s = {0};
    s.stop_after = 2;
    s.stop_rc = -42;
    gpuop_lines_init(&l, 64);
    assert_int_equal(gpuop_lines_feed(&l, "a\nb\nc\nd", 7, collect, &s), -42);
    assert_string_equal(s.out, "a|b|");
    /* also when the aborting line came from the carry-over */
    s = (struct sink){.stop_after = 1, .stop_rc = GPUOP_ECANCELED};
    gpuop_lines_reset(&l);
    assert_int_equal(gpuop_lines_feed(&l, "xy", 2, collect, &s), 0);
    assert_int_equal(gpuop_lines_feed(&l, "z\nq\n", 4, collect, &s), GPUOP_ECANCELED);
    assert_string_equal(s.out, "xyz|");
    gpuop_lines_free(&l);
}

/* Only empty lines and CRs: nothing delivered, nothing pending after. */
static void test_empty_lines_skipped(void **state)
{
    struct gpuop_lines l;
    struct sink s = {0};
    gpuop_lines_init(&l, 8);
    assert_int_equal(gpuop_lines_feed(&l, "\n\r\n\n\r", 5, collect, &s), 0);
    assert_int_equal(gpuop_lines_feed(&l, "\n", 1, collect, &s), 0);
    assert_int_equal(gpuop_lines_feed(&l, NULL, 0, collect, &s), 0);
    assert_int_equal(s.lines, 0);
    assert_int_equal(gpuop_lines_pending(&l), 0);
    gpuop_lines_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_one_byte_chunks),
        cmocka_unit_test(test_long_line_small_chunks),
        cmocka_unit_test(test_long_carry_given_back),
        cmocka_unit_test(test_whole_lines_no_copy),
        cmocka_unit_test(test_limit_edges),
        cmocka_unit_test(test_oversized_and_reset),
        cmocka_unit_test(test_callback_abort),
        cmocka_unit_test(test_empty_lines_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
