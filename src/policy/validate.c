/*
 * validate.c - values the API server or the kubelet would refuse or change
 * (see validate.h). Each rule follows what Kubernetes does, not what its
 * documentation suggests, and test/e2e/50_policy_server.sh holds gpuop to
 * it against the lab's API server:
 *
 * - Quantities are exact: a value is its decimal digits times a power of 10
 *   (exponent or SI suffix) times a power of 1024 (binary suffix), computed
 *   in thousandths with 128-bit integers. The API server keeps thousandths
 *   (it rounds 0.000000001n and 0.0001 up to 1m) and values up to 2^63-1
 *   (it caps 8Ei and 99999999999999999999Ei at 9223372036854775807, and
 *   refuses larger integers for extended resources); anything else would be
 *   stored as something other than what the policy says.
 * - Image references follow distribution's grammar as the kubelet reads it
 *   (ParseNormalizedNamed): the first path component is a registry when it
 *   has '.', ':', is "localhost" or has upper case; the repository must be
 *   lower case; a digest must be of a known algorithm and length. The API
 *   server accepts any string, so without this an operand's pods sit in
 *   InvalidImageName on every node.
 * - Environment variable names: since RelaxedEnvironmentVariableValidation
 *   (GA in 1.34) any printable ASCII but '='; older servers wanted C
 *   identifiers, which are a subset.
 */
#include <string.h>

#include "validate.h"

/* ---- quantities ---------------------------------------------------------- */

#define EXP_CAP 100000 /* exponents beyond this are "too big" or "too fine" alike */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Multiplies *v by f, false when the result passes GPUOP_QTY_MILLI_MAX. */
static bool mul_capped(unsigned __int128 *v, unsigned f)
{
    if (*v > GPUOP_QTY_MILLI_MAX / f)
        return false;
    *v *= f;
    return *v <= GPUOP_QTY_MILLI_MAX;
}

/* The suffix: power of ten, power of 1024; false if unknown. */
static bool suffix(const char *q, long *dec, int *bin)
{
    static const struct {
        const char *s;
        int dec, bin;
    } sfx[] = {{"", 0, 0},   {"n", -9, 0}, {"u", -6, 0}, {"m", -3, 0}, {"k", 3, 0},  {"M", 6, 0},
               {"G", 9, 0},  {"T", 12, 0}, {"P", 15, 0}, {"E", 18, 0}, {"Ki", 0, 1}, {"Mi", 0, 2},
               {"Gi", 0, 3}, {"Ti", 0, 4}, {"Pi", 0, 5}, {"Ei", 0, 6}};
    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
        if (!strcmp(q, sfx[i].s)) {
            *dec = sfx[i].dec;
            *bin = sfx[i].bin;
            return true;
        }
    if (q[0] != 'e' && q[0] != 'E')
        return false;
    /* decimal exponent: a signed integer */
    q++;
    bool neg = *q == '-';
    if (*q == '+' || *q == '-')
        q++;
    if (!is_digit(*q))
        return false;
    long e = 0;
    for (; is_digit(*q); q++)
        if (e < EXP_CAP)
            e = e * 10 + (*q - '0');
    if (*q)
        return false;
    *dec = neg ? -e : e;
    *bin = 0;
    return true;
}

enum gpuop_qty_error gpuop_validate_quantity(const char *s, unsigned __int128 *milli)
{
    char digits[GPUOP_QTY_DIGITS_MAX + 1];
    size_t nd = 0, frac = 0, zeros = 0;
    bool neg = false, any = false, nonzero = false, dot = false;
    long dec;
    int bin;
    const char *q = s;

    *milli = 0;
    if (*q == '+' || *q == '-')
        neg = *q++ == '-';
    /* digits with at most one '.', leading zeros dropped, trailing zeros
     * counted (they only shift the exponent) */
    for (; is_digit(*q) || (*q == '.' && !dot); q++) {
        if (*q == '.') {
            dot = true;
            continue;
        }
        any = true;
        if (dot)
            frac++;
        if (*q == '0' && !nonzero)
            continue;
        nonzero = true;
        if (*q == '0') {
            zeros++;
            continue;
        }
        if (nd + zeros + 1 > GPUOP_QTY_DIGITS_MAX)
            return GPUOP_QTY_DIGITS;
        while (zeros) {
            digits[nd++] = '0';
            zeros--;
        }
        digits[nd++] = *q;
    }
    if (!any || !suffix(q, &dec, &bin))
        return GPUOP_QTY_SYNTAX;
    if (!nonzero)
        return GPUOP_QTY_OK; /* zero, whatever its sign or unit */
    if (neg)
        return GPUOP_QTY_NEGATIVE;

    /* value = m * 10^e * 1024^bin thousandths, m < 10^30 */
    unsigned __int128 m = 0;
    for (size_t i = 0; i < nd; i++)
        m = m * 10 + (unsigned)(digits[i] - '0');
    long e = dec + 3 - (long)frac + (long)zeros;
    if (e > EXP_CAP || e < -EXP_CAP)
        return e > 0 ? GPUOP_QTY_TOO_BIG : GPUOP_QTY_TOO_FINE;
    /* 10^e = 2^e * 5^e; with the binary factor, value = m * 2^t * 5^e */
    long t = e + 10L * bin;
    if (e < 0) {
        /* m must be divisible by 5^-e, and by 2^-t when t < 0 */
        for (long k = 0; k < -e; k++) {
            if (m % 5)
                return GPUOP_QTY_TOO_FINE;
            m /= 5;
        }
    }
    for (long k = 0; k < -t; k++) {
        if (m % 2)
            return GPUOP_QTY_TOO_FINE;
        m /= 2;
    }
    if (m > GPUOP_QTY_MILLI_MAX)
        return GPUOP_QTY_TOO_BIG;
    for (long k = 0; k < e; k++)
        if (!mul_capped(&m, 5))
            return GPUOP_QTY_TOO_BIG;
    for (long k = 0; k < t; k++)
        if (!mul_capped(&m, 2))
            return GPUOP_QTY_TOO_BIG;
    *milli = m;
    return GPUOP_QTY_OK;
}

const char *gpuop_validate_quantity_why(enum gpuop_qty_error e)
{
    switch (e) {
    case GPUOP_QTY_OK:
        return "is valid";
    case GPUOP_QTY_SYNTAX:
        return "is not a quantity (for example \"500m\", \"1Gi\", \"2\")";
    case GPUOP_QTY_NEGATIVE:
        return "is negative";
    case GPUOP_QTY_TOO_BIG:
        return "is larger than Kubernetes keeps (9223372036854775807)";
    case GPUOP_QTY_TOO_FINE:
        return "is finer than 1m (0.001), which Kubernetes would round up";
    case GPUOP_QTY_DIGITS:
        return "has more significant digits than Kubernetes keeps";
    }
    return "is invalid";
}

/* ---- image references ---------------------------------------------------- */

#define REPO_NAME_MAX 255 /* registry and repository together */
#define TAG_MAX       128

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || is_digit(c);
}

static bool alnum(char c)
{
    return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool hexdigit(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f');
}

/* A path component: lower-case alphanumerics joined by '.', '_', "__" or
 * runs of '-'. */
static bool component_ok(const char *s, size_t n)
{
    size_t i = 0;
    if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
        return false;
    while (i < n) {
        if (lower_alnum(s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && !lower_alnum(s[j]))
            j++;
        size_t run = j - i;
        bool ok = (run == 1 && (s[i] == '.' || s[i] == '_')) ||
                  (run == 2 && s[i] == '_' && s[i + 1] == '_');
        for (size_t k = i; !ok && k < j && s[k] == '-'; k++)
            ok = k + 1 == j;
        if (!ok)
            return false;
        i = j;
    }
    return true;
}

/* Registry: host[:port], host a DNS name (any case) or [IPv6]. */
static bool registry_ok(const char *s, size_t n)
{
    size_t i = 0;
    if (n && s[0] == '[') {
        for (i = 1; i < n && s[i] != ']'; i++)
            if (!hexdigit(s[i]) && !(s[i] >= 'A' && s[i] <= 'F') && s[i] != ':' && s[i] != '.')
                return false;
        if (i >= n || i == 1)
            return false;
        i++;
    } else {
        size_t start = 0;
        for (i = 0; i <= n; i++) {
            if (i < n && s[i] != '.' && s[i] != ':')
                continue;
            /* a label: alphanumerics with '-' inside */
            if (i == start || !alnum(s[start]) || !alnum(s[i - 1]))
                return false;
            for (size_t k = start; k < i; k++)
                if (!alnum(s[k]) && s[k] != '-')
                    return false;
            if (i == n || s[i] == ':')
                break;
            start = i + 1;
        }
    }
    if (i == n)
        return true;
    if (s[i] != ':' || i + 1 == n)
        return false;
    for (i++; i < n; i++)
        if (!is_digit(s[i]))
            return false;
    return true;
}

static bool digest_ok(const char *d, const char **why)
{
    static const struct {
        const char *alg;
        size_t hex;
    } known[] = {{"sha256", 64}, {"sha384", 96}, {"sha512", 128}};
    const char *colon = strchr(d, ':');
    if (!colon) {
        *why = "has a digest without \"algorithm:\"";
        return false;
    }
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        size_t al = strlen(known[i].alg);
        if ((size_t)(colon - d) != al || strncmp(d, known[i].alg, al))
            continue;
        const char *h = colon + 1;
        size_t n = strlen(h);
        for (size_t k = 0; k < n; k++)
            if (!hexdigit(h[k])) {
                *why = "has a digest that is not lower-case hexadecimal";
                return false;
            }
        if (n != known[i].hex) {
            *why = "has a digest of the wrong length";
            return false;
        }
        return true;
    }
    *why = "has a digest of an unknown algorithm (sha256, sha384 or sha512)";
    return false;
}

/* The tag of reference s before *end (its digest's '@', or its end), a
 * ':' after the last '/': moves *end to it; false (*why) when invalid. */
static bool image_tag(const char *s, const char **end, const char **why)
{
    const char *colon = NULL;
    for (const char *c = s; c < *end; c++) {
        if (*c == '/')
            colon = NULL;
        else if (*c == ':')
            colon = colon ? colon : c;
    }
    if (!colon)
        return true;
    size_t tl = (size_t)(*end - colon - 1);
    const char *t = colon + 1;
    bool ok = tl > 0 && tl <= TAG_MAX && (alnum(t[0]) || t[0] == '_');
    for (size_t i = 1; ok && i < tl; i++)
        ok = alnum(t[i]) || t[i] == '_' || t[i] == '.' || t[i] == '-';
    if (!ok) {
        *why = "has an invalid tag (letters, digits, '_', '.', '-'; at most 128)";
        return false;
    }
    *end = colon;
    return true;
}

/* The repository name s..end: no image ID, a registry host when its first
 * component looks like one, lower-case components; false (*why) when
 * invalid. */
static bool image_name(const char *s, const char *end, const char **why)
{
    size_t nl = (size_t)(end - s);
    if (nl > REPO_NAME_MAX) {
        *why = "has a name longer than 255 characters";
        return false;
    }
    if (nl == 64) {
        bool hex = true;
        for (size_t i = 0; hex && i < 64; i++)
            hex = hexdigit(s[i]);
        if (hex) {
            *why = "is 64 hexadecimal characters, which reads as an image ID";
            return false;
        }
    }
    /* registry? */
    const char *first = memchr(s, '/', nl), *path = s;
    if (first) {
        size_t fl = (size_t)(first - s);
        bool upper = false;
        for (size_t i = 0; i < fl; i++)
            upper |= s[i] >= 'A' && s[i] <= 'Z';
        if (memchr(s, '.', fl) || memchr(s, ':', fl) || (fl == 9 && !strncmp(s, "localhost", 9)) ||
            upper) {
            if (!registry_ok(s, fl)) {
                *why = "has an invalid registry host";
                return false;
            }
            path = first + 1;
        }
    }
    for (const char *c = path; c < end; c++)
        if (*c >= 'A' && *c <= 'Z') {
            *why = "has upper case in the repository name (it must be lower case)";
            return false;
        }
    for (const char *c = path;;) {
        const char *next = memchr(c, '/', (size_t)(end - c));
        const char *ce = next ? next : end;
        if (!component_ok(c, (size_t)(ce - c))) {
            *why = "has an invalid repository name (lower-case letters and digits, joined by "
                   "'.', '_', '__' or '-')";
            return false;
        }
        if (!next)
            return true;
        c = next + 1;
    }
}

bool gpuop_validate_image(const char *s, const char **why)
{
    size_t len = strlen(s);
    *why = "is not a valid image reference";
    if (len == 0) {
        *why = "is empty";
        return false;
    }
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f) {
            *why = "contains a space, a control character or a non-ASCII character";
            return false;
        }
    const char *at = strchr(s, '@'), *end = at ? at : s + len;
    if (at && (strchr(at + 1, '@') || !digest_ok(at + 1, why))) {
        if (strchr(at + 1, '@'))
            *why = "has more than one '@'";
        return false;
    }
    return image_tag(s, &end, why) && image_name(s, end, why);
}

/* ---- environment variable names ----------------------------------------- */

bool gpuop_validate_env_name(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e || s[i] == '=')
            return false;
    return true;
}
