/*
 * analysis.h - (policy, nodes, DaemonSets, pods) -> findings (SPEC section 5).
 *
 * gpuop_analyze() is a pure function shared by the controller and `gpuop
 * check`: it reads only its arguments and `now` (grace periods: a pod
 * stuck terminating, a device plugin that advertises nothing; the result's
 * next_change says when such a judgement would change), allocates its result, and
 * runs in O(nodes x operands + pods) (pods are indexed by node name with a
 * hash table). Its inputs are arrays of pointers so the controller can pass
 * what its hash-table caches hold without copying. What the controller
 * keeps between reconciles is not such a set but the node records
 * (gpuop_records_*, below): the same judgement of one node, kept per node
 * with owned copies; gpuop_analyze is their reference (test_records, the
 * verify oracle); `gpuop check` judges through records too.
 *
 * Terms (per GPU node N and operand O):
 *   expected(N,O)      O enabled, N's deploy label for O is "true", and N is
 *                      not labelled nvidia.com/gpu.deploy.operands=false.
 *   running(N,O)       a pod of O bound to N, phase Running, Ready. A pod
 *                      being deleted that still reports Running and Ready
 *                      still runs (it serves; a device plugin in it still
 *                      advertises GPUs); its findings say since when it is
 *                      terminating, and one terminating longer than the
 *                      policy's grace is Unexpected/PodStuckTerminating.
 *   host-provided(N,O) O disabled in the policy, or N's label for O is "false"
 *                      (a person excluded it) or "pre-installed" (NVIDIA's
 *                      driver container found it on the host).
 *
 * Findings are listed node by node (nodes sorted by name), and within a node
 * in operand-table order, then kind order. At most one finding per (node,
 * operand, kind). Non-GPU nodes get a finding only when an operand pod runs
 * there (Unexpected/NotGpuNode); they count in no summary number and are
 * listed in `nodes` only when they have a finding.
 *
 * Also judged: what the scheduler sees (the node's allocatable
 * nvidia.com/gpu and MIG devices: GpusAdvertisedWithoutToolkit,
 * DevicePluginAdvertisesNothing), and with spec.ordering: enforce, Held
 * where a prerequisite's label keeps an operand off the node.
 *
 * Messages are not stored: gpuop_finding_message() builds them on demand
 * from the reason's templates (reasons.c) filled with the finding's
 * operand, prerequisite and detail, and the detail from what
 * the finding borrows from the inputs (the pod, the taint, the label value),
 * so 5,000 nodes of findings stay small (mid-rollout they are 30,000; what
 * copying their details cost is in docs/benchmarks-history.md). Messages and details of a set
 * may therefore be read only while the inputs it was computed from are
 * alive and unchanged: in the controller, within the reconcile. Messages
 * hold no relative times (only absolute timestamps), so an unchanged cluster
 * yields byte-identical messages.
 */
#ifndef GPUOP_ANALYSIS_H
#define GPUOP_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuop/arena.h"
#include "gpuop/model.h"
#include "gpuop/operand.h"
#include "gpuop/ospool.h"
#include "gpuop/policy.h"
#include "gpuop/reasons.h"

/* State of one (node, operand) cell, for the check matrix. */
enum gpuop_cell {
    GPUOP_CELL_NA = 0,        /* nothing expected, nothing runs (operands=false, non-GPU) */
    GPUOP_CELL_RUNNING,       /* running and expected, prerequisites satisfied */
    GPUOP_CELL_MISSING,       /* finding Missing */
    GPUOP_CELL_NOT_SCHEDULED, /* finding NotScheduled */
    GPUOP_CELL_HOST_PROVIDED, /* label "false" or "pre-installed" */
    GPUOP_CELL_DISABLED,      /* disabled in the policy (host-provided) */
    GPUOP_CELL_UNEXPECTED,    /* finding Unexpected */
    GPUOP_CELL_VIOLATION,     /* running, finding OrderingViolation */
    GPUOP_CELL_HELD,          /* finding Held (ordering: enforce) */
    GPUOP_CELL_COUNT
};

struct gpuop_finding { /* 16 bytes: a set holds up to 6 per node */
    uint32_t node;     /* index into gpuop_findings.nodes */
    uint8_t operand;   /* operand index */
    uint8_t kind : 7;  /* enum gpuop_kind */
    bool owned : 1;    /* ref is a record's packed copy of the pod (records.c), not a
                          struct gpuop_pod: read it with gpuop_finding_detail() and
                          gpuop_finding_since() */
    uint8_t reason;    /* enum gpuop_reason */
    int8_t prereq;     /* OrderingViolation (and Held): the unsatisfied prerequisite;
                          TaintNotTolerated and PodNotCreated of a per-OS operand:
                          the index of its pool's DaemonSet in
                          operands[operand].daemonsets; else -1 */
    union {
        const void *ref; /* every reason but PodNotCreated: borrowed from gpuop_analyze's
                            inputs, may be NULL: what the detail is made of (the untolerated
                            taint, the label value, the pod); read it with
                            gpuop_finding_detail() */
        long long since; /* PodNotCreated: later of DaemonSet and node creation (seconds
                            since epoch), 0 when unknown; read it with gpuop_finding_since() */
    };
};

struct gpuop_node_result {           /* 56 bytes: a set holds one per GPU node */
    char *name;                      /* in the set's names arena */
    bool gpu : 1;                    /* a GPU node */
    bool progressing : 1;            /* mid-rollout (only judged on a node with findings):
                                        a step among its findings and no failure
                                        (reasons.h gpuop_progress), or one of its pods
                                        became Ready less than the event grace ago */
    uint8_t upgrade : 2;             /* enum gpuop_upgrade of the node (model.h) */
    uint8_t sharing : 2;             /* a GPU node's enum gpuop_sharing_strategy, GFD's
                                        label (sharing.h) */
    bool renamed : 1;                /* its config renames nvidia.com/gpu: gpus below counts
                                        nvidia.com/gpu.shared (renameByDefault, sharing.h) */
    bool other_name : 1;             /* it advertises none of the resource it should, and
                                        some of the other (nvidia.com/gpu or .shared) */
    uint8_t idle_s;                  /* not progressing: seconds since one of its pods
                                        last became Ready, saturating at 255; 0 when
                                        none did or it failed (events_int.h: the stall began
                                        then) */
    uint8_t replicas;                /* a GPU node's GFD replicas label, 0 absent */
    uint8_t gpu_count;               /* a GPU node's GFD count label, 0 absent */
    uint16_t host_provided;          /* bit per operand index: host-provided (information) */
    uint16_t preinstalled;           /* ... of those, by the label "pre-installed" (NVIDIA's
                                        driver container wrote it), not "false" */
    uint8_t cell[GPUOP_OPERAND_MAX]; /* enum gpuop_cell per operand index */
    /* this node's findings, findings[0 .. nfindings) (borrowed: from the
     * set's items, or in a records' view from its node's record), the
     * set's first .. first+nfindings-1 in node order */
    const struct gpuop_finding *findings;
    uint32_t first;
    uint32_t nfindings;
    struct gpuop_gpu_counts gpus; /* what the node advertises (model.h): nvidia.com/gpu,
                                     nvidia.com/gpu.shared's instead when renamed */
};

struct gpuop_operand_result {
    bool enabled;                /* in the policy */
    bool ds_present;             /* its DaemonSet was among the inputs */
    size_t expected_nodes;       /* GPU nodes where expected(N,O) */
    size_t running_nodes;        /* nodes (GPU or not) where running(N,O) */
    long long desired;           /* DaemonSet status.desiredNumberScheduled (0 if absent) */
    long long ready;             /* DaemonSet status.numberReady (0 if absent) */
    const char *controller_says; /* the DaemonSet's controller_says (borrowed from the
                                    inputs, see model.h), or NULL */
    const char *daemonsets;      /* a per-OS operand (SPEC 4b): its DaemonSets'
                                    names, sorted, comma-separated, "" for none
                                    (in the findings' names arena); NULL for an
                                    operand with its one DaemonSet. desired and
                                    ready above are their sums. */
};

/* Stranded GPU pods of one node (issue 15 §2): pods bound to a node with
 * an ordering violation (or GpusAdvertisedTwice: issue 42's over-admission)
 * that request nvidia.com/gpu. Gathered by the
 * controller (src/controller/stranded.c), passed in, rendered here: the
 * analysis never lists pods itself. Bounded: the count, and the first
 * GPUOP_STRANDED_NAMES_MAX names. */
#define GPUOP_STRANDED_NAMES_MAX 10
struct gpuop_stranded {
    const char *node;                            /* borrowed */
    uint32_t count;                              /* GPU pods bound there */
    uint32_t nnames;                             /* <= GPUOP_STRANDED_NAMES_MAX */
    const char *names[GPUOP_STRANDED_NAMES_MAX]; /* "namespace/name", borrowed */
    uint32_t gpus; /* GPUs those pods hold: their effective nvidia.com/gpu requests
                      summed (stranded.c), or their claims' devices (claimpods.c) */
};

/* Most per-OS DaemonSets the analysis looks at. */
#define GPUOP_ANALYSIS_OS_DS_MAX (2 * GPUOP_OSPOOL_MAX)

struct gpuop_node_tally; /* analysis.c: what one node adds to the counters */

/* What every node is judged against (gpuop_analyze's setup, the records'
 * header): the DaemonSets chosen (borrowed from the inputs, for the pass
 * or the setup) and what was read of the policy (copied), the capacity of
 * the items, and per listed node of a pass what it added to the
 * counters. */
struct gpuop_analysis_state {
    const struct gpuop_ds *dsof[GPUOP_OPERAND_MAX];        /* borrowed; per operand */
    const struct gpuop_ds *osds[GPUOP_ANALYSIS_OS_DS_MAX]; /* borrowed; per-OS, by name */
    size_t nosds;
    bool per_os[GPUOP_OPERAND_MAX];
    bool by_kernel[GPUOP_OPERAND_MAX]; /* per OS pool and kernel (precompiled driver) in
                                          the default pool, spec.driver's */
    char dpools[2 * GPUOP_DRIVER_POOLS_MAX][GPUOP_DRIVER_POOL_NAME_MAX + 1]; /* spec.driver.pools'
                                          names, then the draining pools': a node labelled
                                          with one is in its pool */
    int ndpools;
    bool dpool_by_kernel[2 * GPUOP_DRIVER_POOLS_MAX]; /* dpools[k]'s driver precompiled */
    int driver;   /* the driver's operand index (its pools' conflicts) */
    int dra;      /* the DRA driver's operand index (its ResourceSlices' findings) */
    bool enforce; /* spec.ordering: enforce */
    long advertise_grace_s, event_grace_s;
    int device_plugin, toolkit;        /* operand indexes the scheduler's view is judged on */
    int8_t prereq[GPUOP_OPERAND_MAX];  /* gpuop_policy_prereq per operand */
    struct gpuop_sharing_cm plugin_cm; /* the policy's plugin_cm while it names a device
                                          plugin config, else UNKNOWN (sharing.h) */
    char plugin_default[GPUOP_SHARING_CM_NAME_MAX + 1]; /* ... and its default key ("") */
    size_t items_cap, nodes_cap;
    uint64_t ds_fp;                 /* what the nodes read of the DaemonSets chosen */
    struct gpuop_node_tally *tally; /* new; one per nodes[] entry of a pass */
};

struct gpuop_findings {
    struct gpuop_node_result *nodes; /* every GPU node, plus non-GPU nodes with
                                        findings; sorted by name */
    size_t nnodes;
    struct gpuop_finding *items; /* gpuop_analyze's own array of the findings, grouped by
                                    node in node order; NULL in the records' view (its
                                    findings are in the records): read a node's through
                                    nodes[i].findings */
    size_t nitems;               /* the findings, every node's */
    struct gpuop_operand_result operands[GPUOP_OPERAND_MAX];
    int noperands;
    size_t gpu_nodes;                 /* GPU nodes */
    size_t complete_nodes;            /* GPU nodes without any finding */
    size_t violations;                /* GPU nodes with at least one OrderingViolation */
    size_t finding_nodes;             /* nodes (GPU or not) with at least one finding */
    size_t progressing_nodes;         /* nodes whose result says progressing */
    size_t advertised_gpus;           /* GPU nodes' allocatable nvidia.com/gpu, summed */
    size_t by_kind[GPUOP_KIND_COUNT]; /* findings per kind */
    size_t by_reason[GPUOP_REASON_COUNT];
    struct gpuop_arena names;              /* the nodes' names */
    long terminating_grace_s;              /* the policy's, for the messages */
    const struct gpuop_stranded *stranded; /* borrowed, sorted by node; see
                                              gpuop_findings_set_stranded */
    size_t nstranded;
    size_t stranded_pods; /* the stranded counts of the nodes with a violation, summed */
    const struct gpuop_stranded *claim_pods; /* borrowed, sorted by node; see
                                                gpuop_findings_set_claim_pods */
    size_t nclaim_pods;
    long long next_change;           /* seconds since epoch: the first moment after `now` at which
                                        the same inputs give other findings (a terminating pod's
                                        grace ends ...); 0 never. Reconcile again then. */
    struct gpuop_analysis_state inc; /* the setup the nodes were judged against */
};

/* A step (reasons.h GPUOP_PROGRESS_STEP) that has lasted this long is no
 * longer progress: a pod stuck ContainerCreating, or in its gate, for half
 * an hour is stuck (like a Deployment's progressDeadlineSeconds). Counted
 * from the pod's creation, its gate's start, its deletion, or for a pod
 * not created yet the later of DaemonSet and node creation. */
#define GPUOP_PROGRESS_DEADLINE_S 1800

/* running(N,O) for the pod p (borrowed; NULL is not running): bound,
 * Running, Ready; being deleted or not. The one definition, for whatever
 * counts running pods. */
bool gpuop_pod_running(const struct gpuop_pod *p);

/* The pods of node (borrowed name) into buf (at most max, borrowed pods),
 * *n of them: exactly the pods whose node it is (gpuop_pod.node). 0, or
 * a negative code (GPUOP_ETOOBIG: more than max), which ends the pass. */
typedef int (*gpuop_analysis_pods_fn)(void *arg, const char *node, const struct gpuop_pod **buf,
                                      size_t max, size_t *n);

/* Most pods of one node a pass reads through pods_of. */
#define GPUOP_ANALYSIS_NODE_PODS_MAX 64

/* What one pass reads, every pointer borrowed; NULL entries in the arrays
 * are skipped. The pods come either as one array of every pod (pods,
 * npods: indexed by node once per pass) or, when pods_of is set, node by
 * node from it (no index of all pods per pass: the caches keep one as
 * pods change); both give the same set, but for nodes of equal names
 * (with pods_of each gets the pods). */
struct gpuop_analysis_in {
    const struct gpuop_policy *policy; /* NULL: every operand enabled */
    const struct gpuop_node *const *nodes;
    size_t nnodes;
    const struct gpuop_ds *const *ds; /* among several of one operand the first is used */
    size_t nds;
    const struct gpuop_pod *const *pods; /* a pod whose node is not among nodes is ignored */
    size_t npods;
    gpuop_analysis_pods_fn pods_of; /* with pods_arg; instead of pods when set */
    void *pods_arg;
    long long now; /* seconds since epoch: the grace periods; messages use absolute times */
};

/* Computes the findings of in (borrowed) into a zeroed *out (new memory:
 * release with gpuop_findings_free, also after a failure). Returns 0,
 * GPUOP_ENOMEM, or pods_of's code. */
int gpuop_analyze(const struct gpuop_analysis_in *in, struct gpuop_findings *out);

void gpuop_findings_free(struct gpuop_findings *f);

/* Called with the name of a node to judge again (borrowed, valid until
 * the records change; a name may come more than once). */
typedef void (*gpuop_analysis_rejudge_fn)(const char *node, void *arg);

/* ---- the node records (records.c): judged one node at a time, kept ----
 *
 * A record per node (GPU nodes and nodes with findings), keyed by name:
 * its result, its tally and its findings, with owned copies of what their
 * details and messages name (never a pointer into the inputs); and the
 * policy-wide sums, kept by taking a node's old record out and adding its
 * new one. Judging every node is judging each (gpuop_records_begin_all,
 * gpuop_records_judge per node, gpuop_records_sweep). */
struct gpuop_records;

/* A new, empty set of records (*out; gpuop_records_free). 0 or GPUOP_ENOMEM. */
int gpuop_records_new(struct gpuop_records **out);
void gpuop_records_free(struct gpuop_records *rec);

/* Records held (the listed nodes). */
size_t gpuop_records_count(const struct gpuop_records *rec);

/* Reads what every node is judged against: the policy p and the
 * DaemonSets ds (borrowed for the call; NULL entries skipped), and the
 * operands' results they make. Returns 1 when every node must be judged
 * again (the first setup, or what a node's judgement reads of them
 * changed: the policy's switches, which DaemonSet an operand has, its
 * name, creation, host network, tolerations); else 0, after naming to
 * rejudge each node whose PodNotCreated steps read whether an operand's
 * DaemonSet controller says why it creates no pod, when that changed
 * (the caller judges those). GPUOP_ENOMEM: set up again. */
int gpuop_records_setup(struct gpuop_records *rec, const struct gpuop_policy *p,
                        const struct gpuop_ds *const *ds, size_t nds,
                        gpuop_analysis_rejudge_fn rejudge, void *arg);

/* Names to due each node whose judgement changes with the clock by now
 * (its tally's next_change): the caller judges those. */
void gpuop_records_due(const struct gpuop_records *rec, long long now,
                       gpuop_analysis_rejudge_fn due, void *arg);

/* Starts a judgement of every node: the records of nodes not judged
 * before gpuop_records_sweep go then. */
void gpuop_records_begin_all(struct gpuop_records *rec);
void gpuop_records_sweep(struct gpuop_records *rec);

/* Judges node `name` into its record, as gpuop_analyze judges it: node is
 * its state (borrowed, NULL when it is gone: its record goes), pods
 * (borrowed for the call, NULL entries and other nodes' pods skipped)
 * every pod bound to it. The sums lose the old record's share and gain
 * the new one's. 0, GPUOP_EINVAL (no setup, or node is not name), or
 * GPUOP_ENOMEM (the sums may be off: start again with new records). */
int gpuop_records_judge(struct gpuop_records *rec, const char *name, const struct gpuop_node *node,
                        const struct gpuop_pod *const *pods, size_t npods, long long now);

/* Every node of in judged (in->policy, ds and nds are not read: the
 * setup's), each with its pods from in->pods_of, or else from in->pods;
 * then the records of nodes not among them swept. 0, GPUOP_ENOMEM,
 * GPUOP_EINVAL (no setup), or pods_of's code (judge again without it). */
int gpuop_records_judge_all(struct gpuop_records *rec, const struct gpuop_analysis_in *in);

/* The records as one findings set (*out, borrowed; never
 * gpuop_findings_free it): nodes in name order, each node's findings
 * borrowed from its record (nodes[i].findings; items is NULL), idle_s
 * aged to now, next_change the earliest of the records', the stranded
 * pods s (borrowed, as gpuop_findings_set_stranded) counted. Valid until
 * the next gpuop_records_view, gpuop_records_setup or gpuop_records_free,
 * and unchanged by the judging in between: a replaced record's bytes are
 * freed only by the next view's compaction. Equal to gpuop_analyze over
 * the inputs the records were judged from (the verify oracle's test). 0
 * or GPUOP_ENOMEM. */
int gpuop_records_view(struct gpuop_records *rec, const struct gpuop_stranded *s, size_t n,
                       long long now, struct gpuop_findings **out);

/* Is a (say, the records' view at now) the same as b (a full pass at
 * now, with the same stranded pods)?
 * Compares every count, operand, node result and finding with its detail
 * and message; on the first difference writes it into why (size bytes)
 * and returns false. */
bool gpuop_findings_same(const struct gpuop_findings *a, const struct gpuop_findings *b, char *why,
                         size_t size);

/* Gives f the stranded GPU pods the controller gathered: s (borrowed,
 * sorted by node name, strictly; it must outlive every read of f's
 * messages and status) holds n entries; only those of nodes with an
 * OrderingViolation in f count (stranded_pods) and are shown (messages'
 * <stranded>, status strandedPods); those of nodes with GpusAdvertisedTwice
 * feed gpuop_findings_overadmit. Replaces what was set before; s may be
 * NULL. */
void gpuop_findings_set_stranded(struct gpuop_findings *f, const struct gpuop_stranded *s,
                                 size_t n);

/* Has node result r an OrderingViolation (the nodes whose pods are
 * listed for stranded ones)? */
bool gpuop_findings_violates(const struct gpuop_node_result *r);

/* Gives f the pods reserving GPU claims (DRA) on the nodes of its
 * ClaimWithoutPlugin and GpusAdvertisedTwice findings, gathered by the controller from the claims
 * it watches: s (borrowed, n entries sorted by node, each "namespace/name"
 * as gpuop_stranded) shown by those findings' messages (<claim-pods>).
 * Replaces what was set before; s may be NULL. */
void gpuop_findings_set_claim_pods(struct gpuop_findings *f, const struct gpuop_stranded *s,
                                   size_t n);
/* The claim pods entry of node result r of f (borrowed), NULL when none. */
const struct gpuop_stranded *gpuop_findings_claim_pods(const struct gpuop_findings *f,
                                                       const struct gpuop_node_result *r);

/* Over-admission on the node of a GpusAdvertisedTwice finding (issue 42):
 * the node's GPUs (GFD's nvidia.com/gpu.count, else the finding's slice
 * devices) against the GPUs held by the pods bound there (f's stranded
 * entry of the node, the controller's LIST: their nvidia.com/gpu requests)
 * plus the devices of the GPU claims allocated there and reserved by pods
 * (f's claim pods entry). */
struct gpuop_overadmit {
    uint32_t gpus;        /* the node's GPUs */
    uint32_t by_requests; /* held through nvidia.com/gpu requests */
    uint32_t by_claims;   /* held through claims' devices */
    /* the pods holding them, both kinds (count and the first names);
       names borrowed from f */
    struct gpuop_stranded pods;
};
/* Fills *o for finding x of node result r of f and says whether the
 * GPUs held exceed the node's: false (and *o's pods empty) for another
 * reason, no GPU count known, or no more held than the node has. */
bool gpuop_findings_overadmit(const struct gpuop_findings *f, const struct gpuop_node_result *r,
                              const struct gpuop_finding *x, struct gpuop_overadmit *o);
/* The stranded entry of node result r of f (borrowed), NULL when none or
 * the node has no OrderingViolation. */
const struct gpuop_stranded *gpuop_findings_stranded(const struct gpuop_findings *f,
                                                     const struct gpuop_node_result *r);

/* Writes "ns/a, ns/b[ and K more]" of s into buf (NUL-terminated,
 * truncated to size); "" when s is NULL or counts none. Returns the length
 * it wanted, like snprintf. */
int gpuop_stranded_text(const struct gpuop_stranded *s, char *buf, size_t size);

/* Writes finding x's detail into buf (NUL-terminated, truncated to size):
 * "key=value:Effect" of an untolerated taint, a deploy label's value, the
 * name of an unexpected pod, or "<pod> is <phase>..., N restarts" for pod
 * reasons; "" for other reasons.
 * Reads the inputs x->ref borrows from: call it only while they are alive
 * and unchanged. Returns the length it wanted, like snprintf. */
int gpuop_finding_detail(const struct gpuop_finding *x, char *buf, size_t size);

/* When the situation of finding x began, seconds since epoch, 0 when
 * unknown: for PodNotCreated the later of DaemonSet and node creation, for
 * pod reasons the pod's creation (read from the pod x->ref borrows: the same
 * rule as gpuop_finding_detail). */
long long gpuop_finding_since(const struct gpuop_finding *x);

/* Longest message gpuop_finding_message writes (bytes, NUL included). */
#define GPUOP_FINDING_MESSAGE_MAX 1024

/* Writes the message a person can act on (what is wrong here, then what to
 * do) for finding x of f into buf (NUL-terminated, truncated to size).
 * Returns the length it wanted, like snprintf. */
int gpuop_finding_message(const struct gpuop_findings *f, const struct gpuop_finding *x, char *buf,
                          size_t size);

/* Name of the node of finding x (borrowed from f). */
const char *gpuop_finding_node(const struct gpuop_findings *f, const struct gpuop_finding *x);

#endif
