/*
 * model.h - the compact view of the cluster that gpuop keeps and analyses.
 *
 * The watch caches do not keep whole Kubernetes objects: a Node, an operand
 * DaemonSet or an operand Pod is reduced on arrival to the few fields the
 * analysis reads (labels that matter, taints, pod phase and readiness ...).
 * This keeps a 5,000-node cluster in a few megabytes and makes the analysis
 * a pure function over plain C structs (see analysis.h).
 *
 * Ownership: a Node or a Pod is one allocation from gpuop_pool (see
 * pool.h: cache entries live apart from short-lived heap memory) holding
 * the struct and every string and array it points to, made by
 * gpuop_node_new() / gpuop_pod_new() and released by gpuop_node_free() /
 * gpuop_pod_free(); a cached pod is a single block. A DaemonSet (a handful
 * exist) is filled into a caller's struct by gpuop_ds_from_json() and its
 * strings released by gpuop_ds_free().
 */
#ifndef GPUOP_MODEL_H
#define GPUOP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "gpuop/error.h"
#include "gpuop/gate.h"
#include "gpuop/operand.h"
#include "gpuop/sharing.h"

/* State of one nvidia.com/gpu.deploy.* label on a node. */
enum gpuop_label {
    GPUOP_LABEL_ABSENT = 0,   /* no such label */
    GPUOP_LABEL_TRUE,         /* exactly "true" */
    GPUOP_LABEL_FALSE,        /* exactly "false": excluded on purpose by a person, host-provided */
    GPUOP_LABEL_OTHER,        /* any other value ("", "paused" ...): value kept */
    GPUOP_LABEL_PREINSTALLED, /* exactly GPUOP_LABEL_VALUE_PREINSTALLED, on an operand's label
                                only (gpu.present and deploy.operands read it as OTHER):
                                NVIDIA's driver container found a driver on the host,
                                host-provided */
    GPUOP_LABEL_NOT_HERE      /* no label: an operand without one of its own (operand.h,
                                 struct gpuop_operand_follow) that is not for this node
                                 (the MPS control daemon where nvidia.com/mps.capable is
                                 not "true"): neither expected nor host-provided */
};

/* The deploy label value NVIDIA's driver container writes when it finds a
 * driver already on the host, and turns itself off (GPU Operator release
 * notes, 1.11.1: "NVIDIA driver container will auto-disable itself on the
 * node with pre-installed drivers by applying label
 * nvidia.com/gpu.deploy.driver=pre-installed"); nodes moved from the GPU
 * Operator carry it for the driver and sometimes the container toolkit. */
#define GPUOP_LABEL_VALUE_PREINSTALLED "pre-installed"

/* host-provided(N,O) by N's label (SPEC 5): "false" (a person excluded
 * the operand) or "pre-installed" (NVIDIA's driver container found it on
 * the host). label: an enum gpuop_label. The one test of it. */
static inline bool gpuop_label_host_provided(int label)
{
    return label == GPUOP_LABEL_FALSE || label == GPUOP_LABEL_PREINSTALLED;
}

struct gpuop_taint {
    char *key;
    char *value;  /* may be NULL */
    char *effect; /* NoSchedule | PreferNoSchedule | NoExecute */
};

struct gpuop_toleration {
    char *key;    /* may be NULL/empty (with Exists: tolerates everything) */
    char *op;     /* "Exists" or "Equal" (NULL means Equal) */
    char *value;  /* may be NULL */
    char *effect; /* may be NULL/empty: all effects */
};

#define GPUOP_RESOURCE_GPU "nvidia.com/gpu"
/* NVIDIA's GPU DRA driver: a pod holding a ResourceClaim allocated by it
 * holds a GPU (gpu-operator v26.7.0 PodHasNVIDIAGPUClaim). */
#define GPUOP_DRA_GPU_DRIVER      "gpu.nvidia.com"
#define GPUOP_RESOURCE_MIG_PREFIX "nvidia.com/mig-"

/* What a node advertises to the scheduler (status.capacity and
 * status.allocatable): nvidia.com/gpu, and the nvidia.com/mig-* resources
 * summed (the MIG slices of a "mixed" strategy). Saturating at 65535. */
struct gpuop_gpu_counts {
    uint16_t capacity;        /* capacity["nvidia.com/gpu"] */
    uint16_t allocatable;     /* allocatable["nvidia.com/gpu"]: what the scheduler hands out */
    uint16_t mig_capacity;    /* sum of capacity["nvidia.com/mig-*"] */
    uint16_t mig_allocatable; /* sum of allocatable["nvidia.com/mig-*"] */
};

/* The node's driver upgrade state: label GPUOP_LABEL_UPGRADE_STATE, the
 * GPU Operator's (gpu-operator v26.7.0: cmd/gpu-operator/main.go sets the
 * driver name "gpu" of k8s-operator-libs' "nvidia.com/%s-driver-upgrade-state",
 * vendor/github.com/NVIDIA/k8s-operator-libs/pkg/upgrade/consts.go). */
#define GPUOP_LABEL_UPGRADE_STATE "nvidia.com/gpu-driver-upgrade-state"
enum gpuop_upgrade {
    GPUOP_UPGRADE_ABSENT = 0, /* no such label (or ""): no upgrade known */
    GPUOP_UPGRADE_DONE,       /* "upgrade-done" */
    GPUOP_UPGRADE_FAILED,     /* "upgrade-failed" */
    GPUOP_UPGRADE_ACTIVE,     /* any other value: an upgrade in progress */
};
/* The deploy label value the GPU Operator's driver manager leaves while it
 * upgrades the driver (gpu-operator v26.7.0,
 * controllers/nodelabeling_controller.go honours it). */
#define GPUOP_LABEL_PAUSED_FOR_UPGRADE "paused-for-driver-upgrade"

/* The state label's every value (docs/upgrade.md): the GPU Operator's
 * (k8s-operator-libs pkg/upgrade/consts.go). NONE: absent or ""; OTHER: a
 * value gpuop does not write (node-maintenance-required ...). */
enum gpuop_upgrade_state {
    GPUOP_US_NONE = 0,
    GPUOP_US_OTHER,
    GPUOP_US_REQUIRED,     /* upgrade-required */
    GPUOP_US_CORDON,       /* cordon-required */
    GPUOP_US_WAIT_JOBS,    /* wait-for-jobs-required */
    GPUOP_US_POD_DELETION, /* pod-deletion-required */
    GPUOP_US_DRAIN,        /* drain-required */
    GPUOP_US_POD_RESTART,  /* pod-restart-required */
    GPUOP_US_VALIDATION,   /* validation-required */
    GPUOP_US_UNCORDON,     /* uncordon-required */
    GPUOP_US_DONE,         /* upgrade-done */
    GPUOP_US_FAILED,       /* upgrade-failed */
    GPUOP_US_COUNT
};
/* The label value of state s (static), NULL for NONE and OTHER. */
const char *gpuop_upgrade_state_name(int s);
/* gpuop's annotations of a node in an upgrade (docs/upgrade.md). */
#define GPUOP_ANNOTATION_UPGRADE_CORDONED "gpuop.dev/driver-upgrade-cordoned"
#define GPUOP_ANNOTATION_UPGRADE_SINCE    "gpuop.dev/driver-upgrade-since"
#define GPUOP_ANNOTATION_UPGRADE_PAUSED   "gpuop.dev/driver-upgrade-paused"
#define GPUOP_ANNOTATION_UPGRADE_FAILED   "gpuop.dev/driver-upgrade-failed"
/* A node an admin keeps out of every driver upgrade: "true" (the GPU
 * Operator's, k8s-operator-libs pkg/upgrade: "nvidia.com/%s-driver-upgrade.skip"
 * with the driver name "gpu"; docs/upgrade.md). */
#define GPUOP_LABEL_UPGRADE_SKIP "nvidia.com/gpu-driver-upgrade.skip"
/* The DaemonSet's template generation (the API server sets it, the
 * DaemonSet controller copies it into each pod's label below). */
#define GPUOP_ANNOTATION_TEMPLATE_GEN "deprecated.daemonset.template.generation"
#define GPUOP_LABEL_POD_TEMPLATE_GEN  "pod-template-generation"
/* The driver container's install configuration digest (docs/upgrade.md;
 * the GPU Operator's and NVIDIA's driver container's name), decimal. */
#define GPUOP_DRIVER_DIGEST_ENV "DRIVER_CONFIG_DIGEST"
/* ... and the same digest as a label of the driver pods (the caches keep
 * no pod's containers: this is how gpuop reads a pod's digest). */
#define GPUOP_LABEL_DRIVER_DIGEST "gpuop.dev/driver-config-digest"

/* What the driver upgrade reads of a node (12 bytes). */
struct gpuop_node_upgrade {
    uint32_t since;           /* GPUOP_ANNOTATION_UPGRADE_SINCE; 0 none or unreadable */
    uint32_t failed_gen;      /* the generation GPUOP_ANNOTATION_UPGRADE_FAILED names; 0 none */
    uint8_t state;            /* enum gpuop_upgrade_state of the label */
    bool unschedulable : 1;   /* spec.unschedulable */
    bool cordoned : 1;        /* GPUOP_ANNOTATION_UPGRADE_CORDONED is "true" */
    bool paused : 1;          /* GPUOP_ANNOTATION_UPGRADE_PAUSED is there */
    bool rollback : 1;        /* GPUOP_LABEL_DRIVER_ROLLBACK is there (not empty) */
    bool rollback_ending : 1; /* ... and is GPUOP_DRIVER_ROLLBACK_ENDING */
    bool not_ready : 1;       /* condition Ready is there and not True */
    bool skip : 1;            /* GPUOP_LABEL_UPGRADE_SKIP is "true" */
    bool pool_ours : 1;       /* not the upgrade's, in its last bit: the node's
                                 GPUOP_LABEL_DRIVER_POOL is the value gpuop wrote
                                 (GPUOP_ANNOTATION_DRIVER_POOL_SET names it) */
};

/* The ResourceSlices of the DRA driver GPUOP_DRA_GPU_DRIVER that name a
 * node (spec.nodeName), summed (4 bytes): what the findings read of DRA
 * (docs/findings.md: GpusAdvertisedTwice, SlicesWithoutDriver,
 * NoSlicesPublished). */
struct gpuop_node_dra {
    uint16_t devices;    /* their spec.devices, summed (each slice has at most
                            GPUOP_SLICE_DEVICES_MAX, so no sum of slices below
                            overflows) */
    uint8_t slices;      /* their number, saturating at UINT8_MAX (then recounted) */
    uint8_t watched : 1; /* 1 while the caches watch ResourceSlices: the fields
                            above are known (0: the cluster does not serve them,
                            or DRA is off) */
    uint8_t claims : 7;  /* ResourceClaims holding a GPUOP_DRA_GPU_DRIVER device
                            allocated here and reserved by a pod (struct
                            gpuop_claim), saturating at GPUOP_DRA_CLAIMS_MAX
                            (then recounted) */
};
#define GPUOP_DRA_CLAIMS_MAX 127

struct gpuop_node { /* 96 bytes, its strings and taints after it */
    char *name;
    char **deploy_other;        /* NULL when no deploy label has another value;
                                   else GPUOP_OPERAND_MAX entries, the value when
                                   deploy[i] == OTHER, else NULL. Read it with
                                   gpuop_node_deploy_value(). */
    struct gpuop_taint *taints; /* only NoSchedule and NoExecute taints are kept */
    uint32_t created;           /* metadata.creationTimestamp, seconds since epoch (32 bits:
                                   until 2106, saturating); 0 unknown */
    uint32_t sharing_since;     /* when the caches first saw its sharing labels (its config
                                   label, GFD's strategy and replicas: gpuop_node_sharing_equal)
                                   as they are, seconds since the epoch; 0 unknown. Stamped by
                                   the caches (caches.c node_fold), like dra not read by
                                   gpuop_node_new nor compared by gpuop_node_equal:
                                   SharingConfigNotApplied's grace starts here. */
    unsigned char deploy[GPUOP_OPERAND_MAX]; /* enum gpuop_label per operand index */
    bool gpu;                                /* a GPU node per SPEC section 5 */
    unsigned char operands_label;            /* enum gpuop_label of ...deploy.operands */
    uint16_t ntaints;                        /* at most GPUOP_MODEL_TAINTS_MAX are kept */
    struct gpuop_gpu_counts gpus;            /* what the node advertises */
    /* Node labelling (SPEC 4a), in the 4 bytes left: */
    uint16_t labelled;            /* bit per operand index: deploy label gpuop set "true"
                                     (its annotation GPUOP_ANNOTATION_NODE_LABELS) */
    uint8_t present_label : 2;    /* enum gpuop_label of nvidia.com/gpu.present */
    uint8_t label_note : 2;       /* enum gpuop_label_note: gpuop's annotation */
    uint8_t upgrade : 2;          /* enum gpuop_upgrade */
    bool any_deploy : 1;          /* some nvidia.com/gpu.deploy.* label, of any suffix */
    bool labelled_present : 1;    /* gpuop set nvidia.com/gpu.present "true" */
    uint8_t os_labels : 7;        /* GPUOP_OS_HAS_* bits: which of NFD's OS labels (and
                                     the driver pool label and annotations) it carries */
    bool mig_capable : 1;         /* the GPU Operator's hasMIGCapableGPU: nvidia.com/mig.capable
                                     "true", else nvidia.com/gpu.product names an A100, A30 or
                                     H100; never with nvidia.com/vgpu.host-driver-version */
    char *os;                     /* their values, seven consecutive strings ("" when absent):
                                     ID, VERSION_ID, VERSION_ID.major, kernel-version.full,
                                     gpuop.dev/driver-pool, the annotations
                                     gpuop.dev/driver-pool-conflict and
                                     gpuop.dev/driver-pool-wanted;
                                     NULL when it carries none. Read them with
                                     gpuop_node_os(). */
    struct gpuop_node_upgrade up; /* the driver upgrade's view (docs/upgrade.md) */
    /* The node's ResourceSlices of driver GPUOP_DRA_GPU_DRIVER (DRA), folded
     * by the caches (slicefold_int.h) from their own watch, not from the
     * Node: never read by gpuop_node_new (zero), not compared by
     * gpuop_node_equal; with the sharing fields below, 8 bytes the struct grew by. */
    struct gpuop_node_dra dra;
    /* GPU sharing (sharing.h), beside the DRA fold: */
    uint16_t config_at;       /* where the value of its GPUOP_LABEL_PLUGIN_CONFIG label is,
                                 a string after the struct (bytes from the node's start);
                                 0 without the label or with "" (the policy's default then).
                                 Read it with gpuop_node_plugin_config(). */
    uint8_t replicas;         /* GFD's GPUOP_LABEL_GPU_REPLICAS, saturating; 0 absent */
    uint8_t sharing : 2;      /* enum gpuop_sharing_strategy of GPUOP_LABEL_SHARING_STRATEGY */
    bool config_long : 1;     /* the config label's value was longer than
                                 GPUOP_SHARING_CONFIG_MAX (no label value can be): kept cut */
    uint8_t gpu_count : 5;    /* GFD's GPUOP_LABEL_GPU_COUNT, saturating at
                                 GPUOP_SHARING_COUNT_MAX; 0 absent */
    struct {                  /* nvidia.com/gpu.shared (GPUOP_RESOURCE_GPU_SHARED): what a */
        uint16_t capacity;    /* device plugin whose config renames nvidia.com/gpu */
        uint16_t allocatable; /* (renameByDefault) advertises, saturating */
    } shared;
};

/* gpuop's annotation on a node (struct gpuop_node.label_note). */
enum gpuop_label_note {
    GPUOP_NOTE_NONE = 0, /* gpuop never labelled the node */
    GPUOP_NOTE_OK,       /* gpuop labelled it: what is in labelled / labelled_present */
    GPUOP_NOTE_BAD       /* the annotation is there but unreadable: gpuop writes nothing */
};

/* Largest gpuop annotation read (bytes); a longer one is GPUOP_NOTE_BAD. */
#define GPUOP_MODEL_NOTE_MAX 8192

/* NFD's OS labels (node-feature-discovery's system-os_release source),
 * which the driver's image tag and OS pools come from (SPEC 4b), and its
 * kernel label, which precompiled drivers' images and pools add
 * (NVIDIA/gpu-operator v26.7.0 internal/state/nodepool.go nfdKernelLabelKey). */
#define GPUOP_LABEL_OS_ID      "feature.node.kubernetes.io/system-os_release.ID"
#define GPUOP_LABEL_OS_VERSION "feature.node.kubernetes.io/system-os_release.VERSION_ID"
#define GPUOP_LABEL_OS_MAJOR   "feature.node.kubernetes.io/system-os_release.VERSION_ID.major"
#define GPUOP_LABEL_KERNEL     "feature.node.kubernetes.io/kernel-version.full"
enum gpuop_os_field {
    GPUOP_OS_ID,
    GPUOP_OS_VERSION,
    GPUOP_OS_MAJOR,
    GPUOP_OS_KERNEL,
    GPUOP_OS_DRIVER_POOL,   /* not NFD's: gpuop's GPUOP_LABEL_DRIVER_POOL (names.h), the
                               driver pool the node is in, kept with the OS labels as a
                               part of its driver DaemonSet's identity */
    GPUOP_OS_POOL_CONFLICT, /* not a label: gpuop's annotation
                               GPUOP_ANNOTATION_DRIVER_POOL_CONFLICT (names.h), the
                               pools that select the node when more than one does */
    GPUOP_OS_POOL_WANTED,   /* not a label: gpuop's annotation
                               GPUOP_ANNOTATION_DRIVER_POOL_WANTED (names.h), the pool
                               the node is to move to through the driver upgrade */
    GPUOP_OS_FIELDS
};
#define GPUOP_OS_HAS(f) (1u << (f))

/* status.phase. A value no kubelet reports is kept as UNKNOWN. */
enum gpuop_phase {
    GPUOP_PHASE_NONE = 0, /* no phase (yet) */
    GPUOP_PHASE_PENDING,
    GPUOP_PHASE_RUNNING,
    GPUOP_PHASE_SUCCEEDED,
    GPUOP_PHASE_FAILED,
    GPUOP_PHASE_UNKNOWN,
};

/* "Pending", "Running" ...; NULL for GPUOP_PHASE_NONE. Static. */
const char *gpuop_phase_name(int phase);

/* A pod's times are 32-bit seconds since the epoch (until 2106): three of
 * them fit where one long long and two flags were. 0 means "no such time";
 * GPUOP_TIME_UNREADABLE that the field is set but could not be parsed. */
#define GPUOP_TIME_UNREADABLE 1u

struct gpuop_pod {         /* 48 bytes: a cache holds one per operand per node */
    char *name;            /* first of the strings, which share one allocation */
    char *node;            /* spec.nodeName; while unbound, the node a DaemonSet pod's
                              required affinity (matchFields metadata.name) targets;
                              NULL when neither is known */
    char *waiting_reason;  /* first waiting reason among init containers, then
                              containers; else "Unschedulable" when condition
                              PodScheduled=False; else NULL */
    char *waiting_message; /* that reason's message, at most GPUOP_MODEL_MESSAGE_MAX
                              bytes; "" when it has none; NULL iff waiting_reason is */
    uint32_t created;      /* metadata.creationTimestamp; 0 unknown */
    uint32_t deleted;      /* being deleted (metadata.deletionTimestamp set) since:
                              deletionTimestamp - deletionGracePeriodSeconds, when the
                              deletion was asked for; 0 when not being deleted */
    union {
        uint32_t ready_since; /* gate == GPUOP_GATE_NONE: condition Ready=True since (its
                                 lastTransitionTime, else the creation time;
                                 GPUOP_TIME_UNREADABLE when neither is known); 0 when
                                 not Ready */
        uint32_t gate_since;  /* gate != GPUOP_GATE_NONE (the pod is never Ready then):
                                 when the gate's init container started
                                 (state.running.startedAt; GPUOP_TIME_UNREADABLE when
                                 unknown). Shares ready_since's 4 bytes: read either
                                 only after looking at gate. */
    };
    uint16_t restarts; /* sum of containers' restartCount, saturating */
    int8_t operand;    /* operand index: label app.kubernetes.io/component, else
                          the owning DaemonSet's name; -1 if unknown */
    uint8_t phase : 4; /* enum gpuop_phase */
    bool bound : 1;    /* spec.nodeName was set */
    uint8_t gate : 3;  /* enum gpuop_gate (gate.h): the GPU Operator's init container
                          the pod is held in (running, not Ready, while condition
                          Initialized is not True, and the pod is not Ready); NONE
                          otherwise, also for an init container of another name and
                          one that waits (crash loop, image pull: waiting_reason) */
};

struct gpuop_ds {
    char *name;
    int operand;                          /* operand index, -1 if the name is not an operand's */
    struct gpuop_toleration *tolerations; /* from spec.template.spec */
    size_t ntolerations;
    long long desired;      /* status.desiredNumberScheduled */
    long long current;      /* status.currentNumberScheduled */
    long long ready;        /* status.numberReady */
    long long available;    /* status.numberAvailable */
    long long generation;   /* metadata.generation */
    long long observed;     /* status.observedGeneration */
    long long created;      /* metadata.creationTimestamp, seconds since epoch; 0 unknown */
    long long template_gen; /* GPUOP_ANNOTATION_TEMPLATE_GEN; 0 unknown */
    uint32_t driver_digest; /* its pod template's GPUOP_LABEL_DRIVER_DIGEST; 0 none */
    bool host_network;      /* spec.template.spec.hostNetwork (the DaemonSet controller
                               then also tolerates network-unavailable) */
    bool deleting;          /* metadata.deletionTimestamp set: being deleted (a finalizer,
                               the orphan one of --cascade=orphan, holds it for a while) */
    /* What the DaemonSet controller says when it makes no pod: "<reason>:
     * <message>" of the DaemonSet's newest Warning Event ("FailedCreate:
     * ... serviceaccount ... not found"), or NULL. Not read from the
     * DaemonSet: borrowed, set by the caches when they make a view (see
     * caches.h); not compared by gpuop_ds_equal, not freed by gpuop_ds_free. */
    const char *controller_says;
};

/* Longest pod waiting message kept (bytes, cut on a UTF-8 boundary). */
#define GPUOP_MODEL_MESSAGE_MAX 256
/* Most taints kept per node (NoSchedule and NoExecute ones; a node has a handful). */
#define GPUOP_MODEL_TAINTS_MAX 1024

/* A new Node / Pod (see above) from obj (borrowed); NULL on error (err
 * says why). name: NULL, or a string equal to metadata.name that outlives
 * the result (a cache's key): then ->name points at it instead of a copy. */
struct gpuop_node *gpuop_node_new(json_t *obj /* borrowed */, const char *name /* borrowed */,
                                  struct gpuop_err *err);
struct gpuop_pod *gpuop_pod_new(json_t *obj /* borrowed */, const char *name /* borrowed */,
                                struct gpuop_err *err);
/* Fills a zeroed *out with new memory (release with gpuop_ds_free). */
int gpuop_ds_from_json(json_t *obj /* borrowed */, struct gpuop_ds *out, struct gpuop_err *err);

/* True when a and b (borrowed) hold the same values in every field above:
 * an update that changes none of them (a heartbeat, a condition timestamp)
 * makes no difference to the analysis. Kept beside the structs so a new
 * field is compared as soon as it is added. */
bool gpuop_node_equal(const struct gpuop_node *a, const struct gpuop_node *b);
/* True when a and b (borrowed) have the same sharing labels: the config
 * label's value, GFD's strategy and replicas (sharing.h). */
bool gpuop_node_sharing_equal(const struct gpuop_node *a, const struct gpuop_node *b);
bool gpuop_pod_equal(const struct gpuop_pod *a, const struct gpuop_pod *b);
/* The members of a Pod that gpuop_pod_new never reads, as paths from the
 * object ("spec.containers"), NULL-terminated (static): the caches' pod
 * informer cuts them from a pod's bytes before they are parsed (they are
 * most of a pod once its managedFields are cut). A field read from one of
 * them must leave this list (test_model checks that a pod converts the
 * same without them). */
const char *const *gpuop_pod_unread(void);
bool gpuop_ds_equal(const struct gpuop_ds *a, const struct gpuop_ds *b);

/* The value of operand i's deploy label when it is neither "true" nor
 * "false" (deploy[i] == GPUOP_LABEL_OTHER, or GPUOP_LABEL_PREINSTALLED:
 * GPUOP_LABEL_VALUE_PREINSTALLED), else NULL; borrowed. */
const char *gpuop_node_deploy_value(const struct gpuop_node *n, int i);

/* The value of the node's GPUOP_LABEL_PLUGIN_CONFIG label (borrowed; at
 * most GPUOP_SHARING_CONFIG_MAX bytes, see config_long), NULL when it has
 * none or "". */
const char *gpuop_node_plugin_config(const struct gpuop_node *n);

/* The value of the node's OS label f (enum gpuop_os_field), borrowed, or
 * NULL when the node lacks it. */
const char *gpuop_node_os(const struct gpuop_node *n, int f);
/* The label (or annotation) OS string f is read from; NULL past
 * GPUOP_OS_FIELDS. Static. */
const char *gpuop_node_os_key(int f);
/* The pod-template-generation label of a driver pod made by gpuop_pod_new
 * (kept after the struct, for driver pods only: 8 bytes a GPU node, not
 * 8 a pod); 0 for any other pod, when it has none, or for a rollback
 * DaemonSet's pod (label GPUOP_LABEL_DRIVER_ROLLBACK: of no pool's
 * generation, never the one being rolled out). */
uint32_t gpuop_pod_template_gen(const struct gpuop_pod *p);
/* A driver pod's install configuration digest (label
 * GPUOP_LABEL_DRIVER_DIGEST, docs/upgrade.md); 0 for any other pod or none. */
uint32_t gpuop_pod_driver_digest(const struct gpuop_pod *p);
/* The DaemonSet controller's label naming a pod's ControllerRevision (the
 * hash part of its name), which the GPU Operator's "in sync" compares with
 * the DaemonSet's newest revision (k8s-operator-libs common_manager.go). */
#define GPUOP_LABEL_REVISION_HASH "controller-revision-hash"
/* A 32-bit hash of a revision hash string (never 0); 0 for NULL or "". */
uint32_t gpuop_revision_hash(const char *rev);
/* A driver pod's gpuop_revision_hash of its GPUOP_LABEL_REVISION_HASH; 0
 * for any other pod or none. */
uint32_t gpuop_pod_revision(const struct gpuop_pod *p);

/* ---- ResourceSlices (resource.k8s.io/v1), src/model/slice.c ----
 *
 * A ResourceSlice of the DRA driver GPUOP_DRA_GPU_DRIVER, reduced to what
 * the node fold reads: its node and device count (the pool's generation
 * changes no finding: not kept).
 * NVIDIA's GPU kubelet plugin (k8s-dra-driver-gpu,
 * cmd/gpu-kubelet-plugin/driver.go) publishes one pool per node, named
 * after the node, of one slice (or, with DynamicMIG, one per GPU and one
 * of shared counters only). One gpuop_pool block holding the struct and
 * its node's name; the caches keep 12 bytes of it (cache/slicetab_int.h)
 * and free it. */
#define GPUOP_SLICE_API      "resource.k8s.io/v1"
#define GPUOP_SLICE_RESOURCE "resourceslices"
/* resource.k8s.io/v1 ResourceSliceMaxDevices: the API server refuses a
 * slice with more; one read with more is refused here too. */
#define GPUOP_SLICE_DEVICES_MAX 128
/* Bytes of one ResourceSlice (a list item or watch event) the informer
 * takes: 128 devices of NVIDIA's attributes are about 200 KB; a larger
 * one is refused like any watch event over its limit (informer.h). */
#define GPUOP_SLICE_MAX_BYTES (1u << 20)

struct gpuop_slice {
    char *node;       /* spec.nodeName (after the struct, in its block) */
    uint16_t devices; /* spec.devices' length, at most GPUOP_SLICE_DEVICES_MAX */
};

/* A new slice from obj (borrowed) or NULL with err: a slice of another
 * driver, without spec.nodeName (a pool of several nodes: none of the
 * findings' nodes), without a pool, or with more than
 * GPUOP_SLICE_DEVICES_MAX devices. */
struct gpuop_slice *gpuop_slice_new(json_t *obj, struct gpuop_err *err);
void gpuop_slice_free(struct gpuop_slice *s);
/* The members gpuop_slice_new never reads (static, NULL-terminated): cut
 * before a slice is parsed (informer.h, unread). */
const char *const *gpuop_slice_unread(void);

/* ---- ResourceClaims (resource.k8s.io/v1), src/model/claim.c ----
 *
 * A ResourceClaim reduced to what the DRA findings and the upgrade's
 * GPU-pod test read: the node its devices were allocated on, how many
 * devices of the driver GPUOP_DRA_GPU_DRIVER it holds, and the pods that
 * reserve it (status.reservedFor). The claim's namespace and name are the
 * store's key ("namespace/name"), borrowed. A claim with no device of
 * GPUOP_DRA_GPU_DRIVER allocated (not allocated yet, or another driver's)
 * is the one shared GPUOP_CLAIM_NONE: no block of its own. One gpuop_pool
 * block otherwise: the struct, the node's name, the pods' names and uids.
 */
#define GPUOP_CLAIM_RESOURCE "resourceclaims"
/* resource.k8s.io/v1 AllocationResultsMaxSize: results of one allocation. */
#define GPUOP_CLAIM_RESULTS_MAX 32
/* resource.k8s.io/v1 ResourceClaimReservedForMaxSize: reserving pods. */
#define GPUOP_CLAIM_RESERVED_MAX 256
/* Bytes of one ResourceClaim the informer takes (its spec and device
 * statuses are cut before parsing: gpuop_claim_unread; 256 reservations
 * of long names are about 90 KB); a larger one fails like any watch event
 * over its limit (informer.h). */
#define GPUOP_CLAIM_MAX_BYTES (256u << 10)

struct gpuop_claim { /* 32 bytes, its strings after it */
    const char *key; /* "namespace/name": the store's key, borrowed */
    char *node;      /* the node allocated on (first in the block) */
    char *pods;      /* npods pairs "name\0uid\0" one after the other (status.reservedFor
                        entries of resource "pods"); NULL when none */
    uint8_t devices; /* results of GPUOP_DRA_GPU_DRIVER without adminAccess: GPUs held */
    uint8_t admin;   /* ... with adminAccess (the DRA validator's): held by no one */
    uint16_t npods;
};

/* The claim of no GPU (static, shared): not allocated, or nothing of
 * GPUOP_DRA_GPU_DRIVER. */
extern const struct gpuop_claim GPUOP_CLAIM_NONE;

/* A new claim from obj (borrowed), key borrowed for its life: NULL with
 * err for a claim refused (more results or reservations than the API
 * allows, a result or reservation that is not an object, an allocation of
 * GPUOP_DRA_GPU_DRIVER whose node cannot be told), or &GPUOP_CLAIM_NONE. */
struct gpuop_claim *gpuop_claim_new(json_t *obj, const char *key, struct gpuop_err *err);
/* NULL and GPUOP_CLAIM_NONE are fine. */
void gpuop_claim_free(struct gpuop_claim *c);
bool gpuop_claim_equal(const struct gpuop_claim *a, const struct gpuop_claim *b);
/* Whether pod name (uid: may be NULL, then not compared) reserves c. */
bool gpuop_claim_reserved_by(const struct gpuop_claim *c, const char *name, const char *uid);
/* Pod k (< c->npods) of c: its name, and its uid into *uid. Borrowed. */
const char *gpuop_claim_pod(const struct gpuop_claim *c, size_t k, const char **uid);
/* The members gpuop_claim_new never reads (static, NULL-terminated). */
const char *const *gpuop_claim_unread(void);

/* Release what *_new made (NULL is fine); gpuop_ds_free releases what d
 * owns and zeroes it. */
void gpuop_node_free(struct gpuop_node *n);
void gpuop_pod_free(struct gpuop_pod *p);
void gpuop_ds_free(struct gpuop_ds *d);

/* Kubernetes toleration matching, exactly as the scheduler does it for
 * NoSchedule/NoExecute taints: true when t tolerates taint. */
bool gpuop_toleration_matches(const struct gpuop_toleration *t, const struct gpuop_taint *taint);

/* Parses an RFC 3339 timestamp ("2026-11-29T21:06:40Z"); -1 on error. */
long long gpuop_parse_time(const char *s);

#endif
