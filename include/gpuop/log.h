/*
 * log.h - one line per event, as text or JSON, to stderr. Every line can
 * name the object it is about ("gpupolicy/default", "node/gpu-1"); obj NULL
 * means the process itself ("gpuop").
 * Nothing secret is ever passed here: callers log names, never tokens.
 */
#ifndef GPUOP_LOG_H
#define GPUOP_LOG_H

enum gpuop_log_level { GPUOP_LOG_DEBUG = 0, GPUOP_LOG_INFO, GPUOP_LOG_WARN, GPUOP_LOG_ERROR };

/* Returns 0, or GPUOP_EINVAL for an unknown name ("debug", "info", ...). */
int gpuop_log_set_level(const char *name);
/* "text" or "json"; GPUOP_EINVAL otherwise. */
int gpuop_log_set_format(const char *name);
int gpuop_log_enabled(enum gpuop_log_level lvl);

/* obj may be NULL. */
void gpuop_log(enum gpuop_log_level lvl, const char *obj, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define gpuop_debug(obj, ...) gpuop_log(GPUOP_LOG_DEBUG, obj, __VA_ARGS__)
#define gpuop_info(obj, ...)  gpuop_log(GPUOP_LOG_INFO, obj, __VA_ARGS__)
#define gpuop_warn(obj, ...)  gpuop_log(GPUOP_LOG_WARN, obj, __VA_ARGS__)
#define gpuop_error(obj, ...) gpuop_log(GPUOP_LOG_ERROR, obj, __VA_ARGS__)

#endif
