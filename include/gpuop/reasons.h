/*
 * reasons.h - the finding kinds and their reasons, as data (src/findings/reasons.c).
 *
 * A finding (see analysis.h) has a kind (Missing, NotScheduled, Unexpected,
 * OrderingViolation, Held) and a CamelCase reason that says why. The table holds,
 * per reason, its kind, its name, a one-line summary and what to do; status
 * messages, Events, metrics and docs/findings.md are all drawn from it.
 */
#ifndef GPUOP_REASONS_H
#define GPUOP_REASONS_H

#include <stdbool.h>

enum gpuop_kind {
    GPUOP_KIND_MISSING = 0,   /* expected but not running */
    GPUOP_KIND_NOT_SCHEDULED, /* GPU node, operand enabled, label absent or not true/false */
    GPUOP_KIND_UNEXPECTED,    /* running but not expected */
    GPUOP_KIND_ORDERING, /* running while a prerequisite is neither running nor host-provided */
    GPUOP_KIND_HELD,     /* ordering: enforce keeps it off: a prerequisite's label blocks it */
    GPUOP_KIND_COUNT
};

enum gpuop_reason {
    /* Missing, in the order an engineer checks */
    GPUOP_REASON_DAEMONSET_ABSENT = 0,
    GPUOP_REASON_OS_LABELS_MISSING,    /* the per-OS driver's image needs the node's OS */
    GPUOP_REASON_KERNEL_LABEL_MISSING, /* a precompiled driver's image needs its kernel */
    GPUOP_REASON_TAINT_NOT_TOLERATED,
    GPUOP_REASON_POD_NOT_CREATED,
    GPUOP_REASON_POD_UNSCHEDULABLE,
    GPUOP_REASON_IMAGE_PULL_FAILED,
    GPUOP_REASON_CRASH_LOOP,
    GPUOP_REASON_WAITING_FOR_GATE,
    GPUOP_REASON_POD_PENDING,
    GPUOP_REASON_POD_NOT_READY,
    GPUOP_REASON_POD_FAILED,
    GPUOP_REASON_POD_TERMINATING,
    GPUOP_REASON_DEVICE_PLUGIN_ADVERTISES_NOTHING,
    GPUOP_REASON_SHARING_CONFIG_KEY_MISSING, /* its config label names no key of the ConfigMap */
    GPUOP_REASON_SHARED_ALLOCATABLE_DIFFERS, /* allocatable is not GFD's count x replicas */
    GPUOP_REASON_NO_SLICES_PUBLISHED, /* DRA: the kubelet plugin runs, no slice has devices */
    /* NotScheduled */
    GPUOP_REASON_LABEL_ABSENT,
    GPUOP_REASON_LABEL_EMPTY,
    GPUOP_REASON_LABEL_PAUSED,
    GPUOP_REASON_LABEL_PAUSED_LEFT_OVER,
    GPUOP_REASON_LABEL_INVALID,
    GPUOP_REASON_LABEL_CHANGED,        /* a label gpuop set (node labelling) someone changed */
    GPUOP_REASON_DRIVER_POOL_CONFLICT, /* two driver pools select the node: it moves to neither */
    /* Unexpected */
    GPUOP_REASON_OPERAND_DISABLED,
    GPUOP_REASON_NODE_OPTED_OUT,
    GPUOP_REASON_LABEL_NOT_TRUE,
    GPUOP_REASON_NOT_GPU_NODE,
    GPUOP_REASON_POD_STUCK_TERMINATING,
    GPUOP_REASON_GPUS_ADVERTISED_TWICE, /* DRA: the device plugin's and the DRA driver's */
    /* OrderingViolation */
    GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_TOOLKIT,
    GPUOP_REASON_PREREQUISITE_NOT_RUNNING,
    GPUOP_REASON_GPUS_ADVERTISED_WITHOUT_TOOLKIT,
    GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_MPS_DAEMON, /* on a node whose config is MPS */
    GPUOP_REASON_SLICES_WITHOUT_DRIVER,            /* DRA: slices with devices, the driver off */
    /* Held */
    GPUOP_REASON_HELD_BY_PREREQUISITE,
    /* added since, each at the end (its kind in reasons.c) */
    GPUOP_REASON_DRA_PLUGIN_STALE,     /* DRA: the kubelet plugin started before the driver pod */
    GPUOP_REASON_CLAIM_WITHOUT_PLUGIN, /* DRA: a claim allocated here, no plugin to prepare it */
    GPUOP_REASON_SHARING_CONFIG_NOT_APPLIED, /* GFD's sharing labels are not the node's config
                                                past the advertise grace */
    GPUOP_REASON_COUNT
};

/* Templates (message, action): "<name>" is replaced by a placeholder's
 * value, "[name:text]" stands for text (which may hold placeholders) when
 * name's value is not empty, else for nothing. Placeholders: operand, key
 * (its spec key), ds (its DaemonSet), node (the node's name), label-now (a deploy label's value
 * as the finding borrows it: "absent", or the value quoted), prereq (the unsatisfied prerequisite
 * of an ordering finding), detail (gpuop_finding_detail), since
 * (gpuop_finding_since, RFC 3339, empty when unknown), chain ("a -> b -> c"
 * when the prerequisite is not the direct one, else empty), label-state
 * ("\"false\"", "\"pre-installed\" (NVIDIA's driver container found a
 * driver on the host)" or "not \"true\""), terminating (when the pod was
 * deleted, empty when it is not), grace (the terminating grace, s), prereq-label
 * (the prerequisite's deploy label on the node: "absent", or its value
 * quoted), capacity and allocatable (nvidia.com/gpu of the node),
 * advertised / unadvertised (non-empty when its allocatable is above 0 /
 * is 0), mig (non-empty when the node advertises MIG devices), controller
 * (the DaemonSet controller's newest Warning on the operand's DaemonSet
 * while it lacks pods, "FailedCreate: ...", empty when none), stranded
 * (the GPU pods bound to the node of an ordering finding, "ns/a, ns/b and
 * 3 more", as the controller listed them; empty when none or not listed)
 * and stranded-count (their number, empty when none); gate, gate-file and
 * gate-what (the init container a pod is held in, the file it waits for,
 * what must work for it: gate.h) and upgrade-state (the node's
 * nvidia.com/gpu-driver-upgrade-state: "absent" or its value quoted);
 * dra-devices and dra-slices (the devices and the ResourceSlices of
 * driver gpu.nvidia.com on the node, of the DRA findings that count them:
 * GpusAdvertisedTwice, SlicesWithoutDriver; empty for others);
 * config-map (the device plugin's sharing ConfigMap, spec.devicePlugin.config.name),
 * config-keys (its keys as gpuop read them, "a, b", "none" when it has
 * none; empty when it does not exist) and config-absent (non-empty when
 * the API server says it does not exist); gpu-count, replicas, strategy
 * (GFD's nvidia.com/gpu.count, gpu.replicas, sharing-strategy of the node)
 * and shared (their product: what allocatable should be); gpu-resource
 * (the resource the node's GPUs are advertised as: nvidia.com/gpu, or
 * nvidia.com/gpu.shared where its sharing config renames it, which
 * capacity and allocatable then count), other-resource (the other of the
 * two) and other-name (non-empty when the node advertises the other and
 * none of gpu-resource); config-key, config-strategy, config-replicas (the
 * node's key of the ConfigMap and what its config says, of
 * SharingConfigNotApplied; empty for others). */
/* When a finding's Warning is posted (the table's `transient` column;
 * false and true keep their old meaning). */
enum gpuop_wait {
    GPUOP_WAIT_NONE = 0,  /* at once */
    GPUOP_WAIT_GRACE = 1, /* once it has lasted the event grace (true) */
    GPUOP_WAIT_STALL = 2, /* a rollout step: once it has lasted the grace and its node has
                             made no progress for the grace (gpuop_node_result.progressing);
                             never while the node progresses, however long that takes */
};

/* What a finding says of its node's progress (the table's `progress`
 * column; analysis.c judges the pod): a node progresses while it has a
 * step and no failure (analysis.h). */
enum gpuop_progress {
    GPUOP_PROGRESS_NONE = 0, /* nothing */
    GPUOP_PROGRESS_STEP,     /* a pod on its way: being created, starting, held in its gate,
                                replaced; unless its pod restarted or waits for a reason that
                                is no start, or the step outlasted GPUOP_PROGRESS_DEADLINE_S */
    GPUOP_PROGRESS_FAILED,   /* a failure: its node does not progress */
};

struct gpuop_reason_info {
    int kind;            /* enum gpuop_kind */
    const char *name;    /* CamelCase, e.g. "TaintNotTolerated" */
    const char *message; /* template: what is wrong here (status, Events, check) */
    const char *summary; /* what it means, one sentence */
    const char *action;  /* template: what to do, one or two sentences */
    /* For OrderingViolation reasons tied to one pair: the operand (running)
     * and prerequisite (not satisfied) names; NULL for generic reasons. */
    const char *operand;
    const char *prereq;
    /* Usually passes on its own while things start or stop (a rollout, a
     * label change): an Event is posted only once the finding has lasted
     * longer than the policy's spec.findings.eventGracePeriodSeconds
     * (events_int.h); the status shows it at once. enum gpuop_wait: a rollout
     * step (GPUOP_WAIT_STALL) waits also for its node to stop progressing. */
    unsigned char transient;
    unsigned char progress; /* enum gpuop_progress */
};

/* Borrowed, static; NULL when out of range. */
const struct gpuop_reason_info *gpuop_reason_get(int reason);

/* "Missing", "NotScheduled", "Unexpected", "OrderingViolation", "Held"; "Unknown"
 * when out of range. Static. */
const char *gpuop_kind_name(int kind);

/* One-sentence description of a kind. Static. */
const char *gpuop_kind_summary(int kind);

/* Index of a reason by CamelCase name; -1 if none. */
int gpuop_reason_by_name(const char *name);

/* The ordering reason for operand `op` running while prerequisite `prereq`
 * (operand names) is unsatisfied: a specific one from the table, else
 * GPUOP_REASON_PREREQUISITE_NOT_RUNNING. */
int gpuop_reason_ordering(const char *op, const char *prereq);

#endif
