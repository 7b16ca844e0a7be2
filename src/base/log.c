/*
 * log.c - leveled logging to stderr, one line per call, text or JSON.
 * The message is formatted into a bounded buffer (longer messages are cut),
 * so a log call never allocates. Every line names an object: a caller
 * that passes none gets "gpuop" (the process itself), so a log pipeline can
 * always group by it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpuop/clock.h"
#include "gpuop/error.h"
#include "gpuop/log.h"

static enum gpuop_log_level level = GPUOP_LOG_INFO;
static int json_format;

static const char *const names[] = {"debug", "info", "warn", "error"};

int gpuop_log_set_level(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (name && strcmp(name, names[i]) == 0) {
            level = (enum gpuop_log_level)i;
            return 0;
        }
    return GPUOP_EINVAL;
}

int gpuop_log_set_format(const char *name)
{
    if (name && strcmp(name, "text") == 0)
        json_format = 0;
    else if (name && strcmp(name, "json") == 0)
        json_format = 1;
    else
        return GPUOP_EINVAL;
    return 0;
}

int gpuop_log_enabled(enum gpuop_log_level lvl)
{
    return lvl >= level;
}

/* Writes s as the inside of a JSON string. */
static void put_json_string(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
}

void gpuop_log(enum gpuop_log_level lvl, const char *obj, const char *fmt, ...)
{
    if (lvl < level)
        return;
    if (!obj || !*obj)
        obj = "gpuop";
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    char ts[GPUOP_TIME_MAX];
    gpuop_time_format(ts, sizeof(ts), gpuop_clock_wall_us(), GPUOP_TIME_MS);

    if (json_format) {
        fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\",\"object\":\"", ts, names[lvl]);
        put_json_string(stderr, obj);
        fputc('"', stderr);
        fputs(",\"msg\":\"", stderr);
        put_json_string(stderr, msg);
        fputs("\"}\n", stderr);
    } else {
        fprintf(stderr, "%s %-5s %s: %s\n", ts, names[lvl], obj, msg);
    }
}
