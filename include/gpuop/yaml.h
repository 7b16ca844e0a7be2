/*
 * yaml.h - YAML to JSON and back, on libyaml.
 *
 * Loading resolves plain scalars with the YAML 1.2 core schema (null, bool,
 * int, float; quoted scalars are always strings), supports multi-document
 * streams, anchors and aliases, and enforces limits on input size, nesting
 * depth and alias expansion (the Debian libyaml has no limits of its own).
 * Dumping writes block-style YAML with keys in the object's order, quoting
 * strings that would otherwise read back as another type.
 */
#ifndef GPUOP_YAML_H
#define GPUOP_YAML_H

#include <stddef.h>
#include <jansson.h>

#include "gpuop/error.h"

#define GPUOP_YAML_MAX_INPUT (4u << 20) /* bytes */
#define GPUOP_YAML_MAX_DEPTH 64
#define GPUOP_YAML_MAX_NODES 1000000 /* nodes produced, aliases expanded included */

/* Parses buf[0..len) into *out: new JSON array with one element per
 * document (empty documents are skipped). On error returns GPUOP_EPARSE or
 * GPUOP_ETOOBIG with line/column in err->message, and *out is NULL. */
int gpuop_yaml_load(const char *buf, size_t len, json_t **out, struct gpuop_err *err);

/* Same, reading a file ("-" is standard input), at most GPUOP_YAML_MAX_INPUT. */
int gpuop_yaml_load_file(const char *path, json_t **out, struct gpuop_err *err);

/* Returns a new malloc'd NUL-terminated YAML text of doc (borrowed), one
 * document without "---"; NULL on out-of-memory. */
char *gpuop_yaml_dump(json_t *doc);

#endif
