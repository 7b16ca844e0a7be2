/*
 * sharing.h - GPU sharing as NVIDIA's device plugin and GFD run it (issue
 * 41): the labels a node carries, and what gpuop reads of the device
 * plugin's ConfigMap of named configs (spec.devicePlugin.config.name).
 *
 * Each node picks one of the ConfigMap's keys with the label
 * GPUOP_LABEL_PLUGIN_CONFIG (none, or "": spec.devicePlugin.config.default);
 * NVIDIA's config-manager fails where the key is missing
 * (k8s-device-plugin v0.20.0 cmd/config-manager/main.go updateConfigName:
 * "specified config %v does not exist"). gpuop keeps the ConfigMap's key
 * names, at most GPUOP_SHARING_KEYS_BYTES of them: a ConfigMap with more is
 * "too big" and judges no node (nothing is claimed of keys gpuop did not
 * keep); and of each key's config (its data, YAML, at most
 * GPUOP_SHARING_CONF_BYTES) what the device plugin makes of its sharing
 * (k8s-device-plugin v0.20.0 api/config/v1/sharing.go SharingStrategy,
 * replicas.go ReplicatedResources): the strategy, the replicas of
 * nvidia.com/gpu, and whether it is renamed nvidia.com/gpu.shared
 * (renameByDefault, or its rename). A key whose config does not parse is
 * named in problem and judges no node by its settings.
 *
 * Layer: model.
 */
#ifndef GPUOP_SHARING_H
#define GPUOP_SHARING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "gpuop/error.h"

/* The node's config: a key of the ConfigMap (NVIDIA's config-manager
 * NODE_LABEL, the GPU Operator's default). */
#define GPUOP_LABEL_PLUGIN_CONFIG "nvidia.com/device-plugin.config"
/* GFD's labels of what the device plugin applied (k8s-device-plugin
 * v0.20.0 internal/lm/resource.go): the strategy ("none", "time-slicing",
 * "mps") and the replicas per GPU. */
#define GPUOP_LABEL_SHARING_STRATEGY "nvidia.com/gpu.sharing-strategy"
#define GPUOP_LABEL_GPU_REPLICAS     "nvidia.com/gpu.replicas"
/* GFD's count of the node's GPUs (k8s-device-plugin v0.20.0
 * internal/lm/resource.go): allocatable is this x replicas. */
#define GPUOP_LABEL_GPU_COUNT "nvidia.com/gpu.count"
/* The count kept up to this, 5 bits; a higher one is not judged. */
#define GPUOP_SHARING_COUNT_MAX 31

/* Longest config label value kept: a label value is at most 63 bytes (the
 * API server refuses more); a longer one is cut and marked (config_long). */
#define GPUOP_SHARING_CONFIG_MAX 63
/* GFD's gpu.replicas kept up to this (saturating). */
#define GPUOP_SHARING_REPLICAS_MAX 255

/* GFD's nvidia.com/gpu.sharing-strategy (struct gpuop_node.sharing). */
enum gpuop_sharing_strategy {
    GPUOP_SHARING_NONE = 0,     /* absent or "none" */
    GPUOP_SHARING_TIME_SLICING, /* "time-slicing" */
    GPUOP_SHARING_MPS,          /* "mps" */
    GPUOP_SHARING_OTHER,        /* another value */
};
/* The label value of s ("time-slicing", "mps"), "none", or "other"; static. */
const char *gpuop_sharing_strategy_name(int s);
/* enum gpuop_sharing_strategy of a label value (NULL: none). */
int gpuop_sharing_strategy_of(const char *value);
/* GFD's replicas label value: 1..GPUOP_SHARING_REPLICAS_MAX (saturating),
 * 0 when absent or not a positive decimal number. */
uint8_t gpuop_sharing_replicas_of(const char *value);

/* GFD's count label value: 1..GPUOP_SHARING_COUNT_MAX (a higher one
 * saturates at it), 0 when absent or not a positive decimal number. */
uint8_t gpuop_sharing_count_of(const char *value);

/* What gpuop read of the ConfigMap (struct gpuop_sharing_cm.state). */
enum gpuop_sharing_cm_state {
    GPUOP_SHARING_CM_UNKNOWN = 0, /* not read: no config in the policy, not yet, the read
                                     failed: no node is judged by it */
    GPUOP_SHARING_CM_ABSENT,      /* the API server says it does not exist (404) */
    GPUOP_SHARING_CM_READ,        /* read: keys holds its keys */
    GPUOP_SHARING_CM_TOO_BIG,     /* more keys than GPUOP_SHARING_KEYS_BYTES holds: no node
                                     is judged by it */
};
/* Bytes of key names kept, separators and NUL included. */
#define GPUOP_SHARING_KEYS_BYTES 1024
/* Longest ConfigMap name kept (a Kubernetes name). */
#define GPUOP_SHARING_CM_NAME_MAX 253

/* Most keys kept (each takes at least a character and its separator). */
#define GPUOP_SHARING_KEYS_MAX (GPUOP_SHARING_KEYS_BYTES / 2)
/* Longest config (one key's data) whose settings are read; a longer one
 * is a problem (the whole ConfigMap is at most 1 MiB). */
#define GPUOP_SHARING_CONF_BYTES (64u << 10)
/* Longest problem kept (the key and why its config was not read). */
#define GPUOP_SHARING_PROBLEM_MAX 255
/* The shared resource's name under renameByDefault (replicas.go:
 * ResourceName.DefaultSharedRename, ".shared" appended). */
#define GPUOP_RESOURCE_GPU_SHARED "nvidia.com/gpu.shared"

/* struct gpuop_sharing_conf.flags */
enum {
    GPUOP_SHARING_CONF_READ = 1u << 0,         /* the config was read: the fields hold */
    GPUOP_SHARING_CONF_BAD = 1u << 1,          /* it was not: YAML that does not parse, not a
                                                  mapping, a field of the wrong type, too big */
    GPUOP_SHARING_CONF_RENAME = 1u << 2,       /* nvidia.com/gpu is advertised as
                                                  GPUOP_RESOURCE_GPU_SHARED */
    GPUOP_SHARING_CONF_RENAME_OTHER = 1u << 3, /* ... under another name (not judged) */
};
/* What one key's config says of sharing nvidia.com/gpu. */
struct gpuop_sharing_conf {
    uint8_t strategy; /* enum gpuop_sharing_strategy: NONE, TIME_SLICING, MPS */
    uint8_t replicas; /* of nvidia.com/gpu (1 when not shared), saturating */
    uint8_t flags;    /* GPUOP_SHARING_CONF_* */
};

struct gpuop_sharing_cm {
    uint8_t state;                                          /* enum gpuop_sharing_cm_state */
    uint16_t nkeys;                                         /* keys READ */
    char name[GPUOP_SHARING_CM_NAME_MAX + 1];               /* the ConfigMap's name ("" unknown) */
    char keys[GPUOP_SHARING_KEYS_BYTES];                    /* READ: its keys (data and binaryData),
                                                               sorted, ", "-separated ("" none) */
    struct gpuop_sharing_conf conf[GPUOP_SHARING_KEYS_MAX]; /* READ: the nkeys keys' configs,
                                                               in keys' order (binaryData's
                                                               are not read: flags 0) */
    char problem[GPUOP_SHARING_PROBLEM_MAX + 1]; /* the first key whose config was not read,
                                                    and why ("" none) */
    /* Not read from the ConfigMap (gpuop_sharing_cm_read leaves 0), last so
     * that a comparison of what was read stops before it: READ, when the
     * caches first saw each key's config (conf[i]) as it is, seconds since
     * the epoch (gpuop_sharing_cm_stamp); 0 unknown. */
    uint32_t since[GPUOP_SHARING_KEYS_MAX];
};
/* Bytes of struct gpuop_sharing_cm that gpuop_sharing_cm_read fills: two
 * reads of the same ConfigMap have the same ones. */
#define GPUOP_SHARING_CM_READ_BYTES offsetof(struct gpuop_sharing_cm, since)

/* Fills *out from ConfigMap cm (borrowed; NULL: absent) named name
 * (borrowed): READ with its keys, TOO_BIG when they do not fit, ABSENT
 * for NULL. A key is a name the API server accepts ([-._a-zA-Z0-9]+):
 * any other is skipped. 0, or GPUOP_EINVAL (cm is not an object: *out
 * UNKNOWN). */
int gpuop_sharing_cm_read(json_t *cm, const char *name, struct gpuop_sharing_cm *out);
/* Is key (borrowed) one of cm's READ keys? False for any other state. */
bool gpuop_sharing_cm_has(const struct gpuop_sharing_cm *cm, const char *key);
/* The config of key (borrowed) in cm (borrowed), or NULL: not a READ key,
 * or its config was not read (flags without GPUOP_SHARING_CONF_READ). */
const struct gpuop_sharing_conf *gpuop_sharing_cm_conf(const struct gpuop_sharing_cm *cm,
                                                       const char *key);
/* Reads a config's text (borrowed, len bytes) into *out, as the device
 * plugin does its sharing; 0, or GPUOP_EPARSE / GPUOP_ETOOBIG with why in
 * err (out then has GPUOP_SHARING_CONF_BAD). */
int gpuop_sharing_conf_read(const char *text, size_t len, struct gpuop_sharing_conf *out,
                            struct gpuop_err *err);
/* key's index among cm's READ keys (conf[] and since[]), or -1. */
int gpuop_sharing_cm_index(const struct gpuop_sharing_cm *cm, const char *key);
/* The key at index i of cm's READ keys into key (room for
 * GPUOP_SHARING_CM_NAME_MAX + 1; "" when there is none). */
void gpuop_sharing_cm_key(const struct gpuop_sharing_cm *cm, int i, char *key);
/* Stamps cm's keys (READ): a key old (borrowed, NULL none) also has with
 * the same config keeps old's time, any other gets now (seconds since the
 * epoch). */
void gpuop_sharing_cm_stamp(struct gpuop_sharing_cm *cm, const struct gpuop_sharing_cm *old,
                            long long now);
/* Does cm say something of the nodes (ABSENT or READ)? */
bool gpuop_sharing_cm_known(const struct gpuop_sharing_cm *cm);

#endif
