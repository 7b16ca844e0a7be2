/*
 * policy.h - a GpuPolicy custom resource, parsed, defaulted and validated.
 *
 * gpuop_policy_parse() never fails on bad user input: every value it cannot
 * use is recorded as a problem (field path + message) and replaced by its
 * default, so the rest of the policy keeps working; the controller turns the
 * problems into a Reconciled=False condition naming the field. It returns a
 * negative code only for out-of-memory or a non-object argument.
 */
#ifndef GPUOP_POLICY_H
#define GPUOP_POLICY_H

#include <stdbool.h>
#include <jansson.h>

#include "gpuop/error.h"
#include "gpuop/names.h"
#include "gpuop/operand.h"
#include "gpuop/sharing.h"

#define GPUOP_POLICY_PROBLEMS_MAX 32

/* spec.ordering */
enum gpuop_ordering {
    GPUOP_ORDERING_REPORT,  /* default: findings report a broken order */
    GPUOP_ORDERING_ENFORCE, /* DaemonSets also carry node affinity on their prerequisites */
};

/* spec.mig.strategy: how the device plugin and GFD expose MIG devices */
enum gpuop_mig_strategy {
    GPUOP_MIG_NONE,
    GPUOP_MIG_SINGLE, /* default, as the GPU Operator's */
    GPUOP_MIG_MIXED,
};

/* spec.devicePlugin.mps.root's default: the GPU Operator's DefaultMPSRoot
 * (gpu-operator v26.7.0 controllers/object_controls.go), the MPS control
 * daemon's directory on the host (its pipes and logs; shm below it). */
#define GPUOP_MPS_ROOT_DEFAULT "/run/nvidia/mps"

/* spec.toolkit.installDir's default: the GPU Operator's */
#define GPUOP_TOOLKIT_INSTALL_DIR_DEFAULT "/usr/local/nvidia"

/* spec.hostPaths' defaults: the GPU Operator's (gpu-operator v26.7.0
 * controllers/object_controls.go, DefaultDriverInstallDir,
 * DefaultKubeletRootDir; transformForHostRoot takes "" and "/" alike). */
#define GPUOP_HOST_ROOT_DEFAULT          "/"
#define GPUOP_DRIVER_INSTALL_DIR_DEFAULT "/run/nvidia/driver"
#define GPUOP_KUBELET_ROOT_DIR_DEFAULT   "/var/lib/kubelet"

/* spec.driver.manager's image by default: NVIDIA's k8s-driver-manager, the
 * driver pod's init container (gpu-operator v26.7.0
 * deployments/gpu-operator/values.yaml driver.manager). */
#define GPUOP_DRIVER_MANAGER_REPOSITORY "nvcr.io/nvidia/cloud-native"
#define GPUOP_DRIVER_MANAGER_IMAGE      "k8s-driver-manager"
#define GPUOP_DRIVER_MANAGER_VERSION    "v0.12.0"

/* spec.driver.manager (the GPU Operator's DriverManagerSpec): the
 * k8s-driver-manager init container of the driver pods. */
struct gpuop_driver_manager {
    char *image;          /* repository/image:version joined, or a full reference in image */
    char *pull_policy;    /* Always | IfNotPresent | Never; default IfNotPresent */
    json_t *env;          /* array of {name, value} (owned), never NULL: set over NVIDIA's */
    json_t *pull_secrets; /* array of {name} (owned), never NULL: added to the driver pods' */
};

/* The validator's components whose init containers take env of their own
 * (spec.validator.<component>.env, as ClusterPolicy's ValidatorSpec). */
enum gpuop_validator_component {
    GPUOP_VALIDATOR_DRIVER,
    GPUOP_VALIDATOR_TOOLKIT,
    GPUOP_VALIDATOR_PLUGIN,
    GPUOP_VALIDATOR_COMPONENTS,
};

/* spec.operator.defaultRuntime: the container runtime the toolkit
 * configures on the nodes (the GPU Operator's Runtime, gpu-operator
 * v26.7.0 api/nvidia/v1/clusterpolicy_types.go). */
enum gpuop_container_runtime {
    GPUOP_RUNTIME_CONTAINERD, /* default */
    GPUOP_RUNTIME_CRIO,
    GPUOP_RUNTIME_DOCKER,
    GPUOP_RUNTIMES,
};

/* Defaults and bounds of spec.findings.* (seconds). */
#define GPUOP_TERMINATING_GRACE_DEFAULT 300
#define GPUOP_ADVERTISE_GRACE_DEFAULT   120
#define GPUOP_EVENT_GRACE_DEFAULT       60
#define GPUOP_GRACE_MAX                 604800 /* a week */

/* spec.driver.upgradePolicy: the GPU Operator's DriverUpgradePolicySpec
 * (k8s-operator-libs api/upgrade/v1alpha1/upgrade_spec.go as vendored by
 * gpu-operator v26.7.0) with its chart's defaults (deployments/gpu-operator/
 * values.yaml driver.upgradePolicy), plus gpuop's onFailure and
 * driverReadyTimeoutSeconds (docs/upgrade.md). Times in seconds. */
#define GPUOP_UPGRADE_MAX_PARALLEL_DEFAULT 1
#define GPUOP_UPGRADE_MAX_UNAVAILABLE_PCT  25 /* "25%" */
#define GPUOP_UPGRADE_DELETION_TIMEOUT     300
#define GPUOP_UPGRADE_DRAIN_TIMEOUT        300
#define GPUOP_UPGRADE_READY_TIMEOUT        600 /* gpuop's: new driver pod Ready within */
#define GPUOP_UPGRADE_COUNT_MAX            1000000
#define GPUOP_UPGRADE_SELECTOR_MAX         256
enum gpuop_upgrade_on_failure {
    GPUOP_ON_FAILURE_STOP,     /* default: the node stays upgrade-failed, cordoned */
    GPUOP_ON_FAILURE_ROLLBACK, /* the old driver back on the node, uncordoned */
};
struct gpuop_upgrade_policy {
    bool auto_upgrade;   /* default true (the chart's) */
    int max_parallel;    /* maxParallelUpgrades; 0 = no limit; default 1 */
    int max_unavailable; /* maxUnavailable: a count, or a percentage when max_unavailable_pct */
    bool max_unavailable_pct;
    long wait_timeout_s;   /* waitForCompletion.timeoutSeconds; 0 = wait for ever */
    char *wait_selector;   /* waitForCompletion.podSelector; "" = no wait */
    bool delete_force;     /* gpuPodDeletion.force */
    long delete_timeout_s; /* gpuPodDeletion.timeoutSeconds; default 300 */
    bool delete_empty_dir; /* gpuPodDeletion.deleteEmptyDir */
    bool drain;            /* drain.enable */
    bool drain_force;
    char *drain_selector; /* drain.podSelector; "" = every pod */
    long drain_timeout_s; /* default 300 */
    bool drain_empty_dir;
    long ready_timeout_s; /* driverReadyTimeoutSeconds; default 600 */
    enum gpuop_upgrade_on_failure on_failure;
};

/* maxUnavailable of u as a node count out of total GPU nodes, a percentage
 * rounded up (the GPU Operator's GetScaledValueFromIntOrPercent(..., true)). */
int gpuop_policy_max_unavailable(const struct gpuop_upgrade_policy *u, int total);

struct gpuop_operand_spec {
    bool enabled;      /* default from the operand table */
    char *image;       /* full reference: spec.<key>.image when it is one, else
                          repository/image:version (@version for a digest)
                          joined; default from the operand table */
    bool os_tag;       /* a per-OS operand (the driver) whose image is a tag
                          from repository/image/version: each node's OS tag
                          is appended ("-ubuntu24.04"), one DaemonSet per OS
                          pool (SPEC 4b); false for a full reference or a
                          digest, used as it is */
    char *pull_policy; /* Always | IfNotPresent | Never; default IfNotPresent */
    json_t *args;      /* array of strings (owned reference), never NULL */
    json_t *env;       /* array of {name, value} (owned), never NULL */
    json_t *resources; /* object (owned), NULL when unset */
    char *config_name; /* config.name: the ConfigMap the operand reads; default
                          from the operand table; NULL when it reads none */
    bool held;         /* its image fields (repository, image, version) could not be
                          used (a problem names the field): the controller keeps its
                          running DaemonSets as they are instead of rolling out the
                          default image (one that does not exist yet gets the
                          default, as `gpuop render` shows) */
    bool hold_absent;  /* with held: none is created either (the DRA driver, whose
                          every field holds it: a plugin that publishes devices is
                          rolled out as asked or not at all) */
};

/* spec.driver's install options and spec.gds / spec.gdrcopy: the GPU
 * Operator's DriverSpec fields and its GPUDirectStorageSpec / GDRCopySpec
 * (gpu-operator v26.7.0 api/nvidia/v1/clusterpolicy_types.go), which its
 * TransformDriver renders into the driver's DaemonSet (render.c does the
 * same: docs/operands.md). A name is NULL when unset. */
struct gpuop_driver_sidecar {
    bool enabled;      /* spec.<gds|gdrcopy>.enabled; default false */
    char *image;       /* repository/image:version joined (or a full reference, as
                          the driver's); default NVIDIA's chart's (policy.c) */
    bool os_tag;       /* the node's OS tag is appended, as to the driver's image
                          (resolveDriverTag); false for a full reference or a digest */
    char *pull_policy; /* default IfNotPresent */
    json_t *env;       /* array of {name, value} (owned), never NULL */
};
struct gpuop_driver_opts {
    char *kernel_module_type;        /* kernelModuleType: auto | open | proprietary; NULL when
                                        unset (the image's own default, auto) */
    char *kernel_module_config;      /* kernelModuleConfig.name: a ConfigMap of module parameters */
    char *repo_config;               /* repoConfig.configMapName: package repositories */
    char *cert_config;               /* certConfig.name: CA certificates */
    char *licensing_config_map;      /* licensingConfig.configMapName (deprecated by NVIDIA) */
    char *licensing_secret;          /* licensingConfig.secretName (used before configMapName) */
    bool nls;                        /* licensingConfig.nlsEnabled: the NLS client token too */
    char *secret_env;                /* secretEnv: a Secret whose keys become environment */
    bool rdma;                       /* rdma.enabled: GPUDirect RDMA, the nvidia-peermem sidecar */
    bool host_mofed;                 /* rdma.useHostMofed: MOFED installed on the host */
    bool precompiled;                /* usePrecompiled: one DaemonSet per OS pool and kernel,
                                        images "<version>-<kernel>-<os>" (ospool.h); false
                                        when refused (a digest or full reference) */
    struct gpuop_driver_sidecar gds; /* spec.gds: the nvidia-fs sidecar */
    struct gpuop_driver_sidecar gdrcopy; /* spec.gdrcopy: the nvidia-gdrcopy sidecar */
};

/* spec.driver.pools (issue 38, item 2): driver specs of their own for
 * some GPU nodes, as NVIDIA's NVIDIADriver objects give each node pool its
 * own (gpu-operator api/nvidia/v1alpha1/nvidiadriver_types.go). A pool's
 * nodes are the GPU nodes labelled GPUOP_LABEL_DRIVER_POOL=<name>, as
 * NVIDIA's pools are those labelled nvidia.com/gpu-operator.driver.owner
 * (internal/state/nodepool.go getNodePools); spec.driver itself is the
 * default pool, of every other GPU node. Each field a pool leaves out is
 * spec.driver's. */
#define GPUOP_DRIVER_POOLS_MAX 8
/* Longest pool name: a DNS label short enough that "gpuop-driver-<pool>-"
 * leaves most of a DaemonSet name to the OS tag (ospool.h cuts the rest). */
#define GPUOP_DRIVER_POOL_NAME_MAX 24
struct gpuop_driver_pool {
    char name[GPUOP_DRIVER_POOL_NAME_MAX + 1];
    json_t *node_selector;    /* nodeSelector: label -> value (owned), never NULL */
    char *image;              /* as gpuop_operand_spec.image, from the pool's repository,
                                 image and version, each else spec.driver's */
    bool os_tag;              /* as gpuop_operand_spec.os_tag */
    char *pull_policy;        /* imagePullPolicy, else spec.driver's */
    char *kernel_module_type; /* kernelModuleType, else spec.driver's (NULL: unset) */
    /* NVIDIADriver's DaemonSet fields, on the pool's DaemonSets: each NULL
     * when the pool leaves it out (spec.daemonsets' then); merged with
     * spec.daemonsets' once the spec is parsed (pools_merge). */
    json_t *tolerations;  /* spec.daemonsets.tolerations plus the pool's (owned) */
    char *priority_class; /* priorityClassName: in place of spec.daemonsets' */
    json_t *labels;       /* spec.daemonsets.labels with the pool's over them (owned) */
    json_t *annotations;  /* ... annotations, the same (owned) */
    bool precompiled;     /* usePrecompiled, else spec.driver's: the pool's DaemonSets per OS
                             pool and kernel; false when refused (check_precompiled) */
};

/* spec.draDriver (issue 42): the GPU Operator's GPUCluster DRADriverSpec
 * (gpu-operator v26.7.0 api/nvidia/v1alpha1/gpucluster_types.go) beside
 * gpuop's enabled; the image triple and imagePullPolicy are the operand's
 * (gpuop_operand_spec), gpus.kubeletPlugin.env and .resources its gpus
 * container's (operands[dra-driver].env, .resources). The kubelet's root
 * is spec.hostPaths.kubeletRootDir, as GPUCluster's spec.hostPaths. */
#define GPUOP_DRA_GPUS_HEALTH_PORT  51516 /* NVIDIA's defaultGPUsHealthcheckPort */
#define GPUOP_DRA_FEATURE_GATES_MAX 64
struct gpuop_dra_opts {
    json_t *feature_gates; /* featureGates: gate -> true|false (owned), never NULL; rendered
                              as FEATURE_GATES "A=true,B=false" in sorted order */
    json_t *pull_secrets;  /* imagePullSecrets as [{name}] (owned), never NULL */
    int health_port;       /* gpus.kubeletPlugin.healthcheck: the gRPC health port the
                              probes ask; 0 when healthcheck.enabled is false */
    bool compute_domains;  /* computeDomains.enabled as asked: gpuop does not implement
                              compute domains (a problem names the field); nothing of
                              them is rendered either way */
};

struct gpuop_policy_problem {
    char field[128];   /* e.g. "spec.driver.imagePullPolicy" */
    char message[256]; /* what is wrong and what was used instead */
};

struct gpuop_policy {
    /* metadata */
    char *name;
    char *uid;
    long long generation;
    long long created; /* creationTimestamp, seconds since epoch; 0 when unknown */
    /* spec */
    struct gpuop_operand_spec operands[GPUOP_OPERAND_MAX]; /* by operand index */
    json_t *tolerations;        /* array (owned); default nvidia.com/gpu Exists NoSchedule */
    char *priority_class;       /* default system-node-critical; "" means none */
    json_t *labels;             /* object (owned), extra labels for DaemonSets and pods */
    json_t *annotations;        /* object (owned) */
    char *update_strategy;      /* RollingUpdate | OnDelete; default RollingUpdate */
    json_t *max_unavailable;    /* rollingUpdate.maxUnavailable: integer or "N%" (owned), or NULL */
    json_t *image_pull_secrets; /* array of {name} (owned), never NULL */
    enum gpuop_ordering ordering;         /* spec.ordering; default report */
    enum gpuop_mig_strategy mig_strategy; /* spec.mig.strategy; default single */
    char *toolkit_install_dir;            /* spec.toolkit.installDir: the runtime's host directory;
                                             default GPUOP_TOOLKIT_INSTALL_DIR_DEFAULT */
    char *host_root;                      /* spec.hostPaths.rootFS: the host's root directory;
                                             default GPUOP_HOST_ROOT_DEFAULT */
    char *driver_install_dir;             /* spec.hostPaths.driverInstallDir: where a driver not
                                             installed on the host root is (the driver container's
                                             root, or GKE's /home/kubernetes/bin/nvidia); default
                                             GPUOP_DRIVER_INSTALL_DIR_DEFAULT */
    char *kubelet_root_dir;               /* spec.hostPaths.kubeletRootDir; default
                                             GPUOP_KUBELET_ROOT_DIR_DEFAULT */
    char *runtime_class;                  /* spec.operator.runtimeClass: the RuntimeClass gpuop
                                             applies (its handler the same name) and the GPU
                                             operands run in; default GPUOP_RUNTIME_CLASS */
    enum gpuop_container_runtime runtime; /* spec.operator.defaultRuntime; default containerd */
    bool cdi_disabled;                    /* spec.cdi.enabled false: legacy mode (no CDI); the
                                             GPU Operator's default is CDI */
    bool nri_plugin;                      /* spec.cdi.nriPluginEnabled: the toolkit runs an NRI
                                             plugin that gives the operands their devices */
    char *plugin_config_default;          /* spec.devicePlugin.config.default: the ConfigMap's
                                             key a node without the label
                                             nvidia.com/device-plugin.config reads; "" = none
                                             (config-manager's fallback, an empty config);
                                             never NULL after parsing */
    struct gpuop_sharing_cm plugin_cm;    /* not the spec's: what gpuop read of the ConfigMap
                                             config.name names (sharing.h), set by whoever
                                             judges with the policy (the controller's apply
                                             stage, gpuop check) after parsing; UNKNOWN
                                             after parsing */
    char *mps_root;                       /* spec.devicePlugin.mps.root: the MPS control daemon's
                                             host directory; default GPUOP_MPS_ROOT_DEFAULT */
    bool dcgm_host_network;               /* spec.dcgm.hostNetwork: the host engine's pod in the
                                              host's network (and its DNS policy so) */
    json_t *service_monitor;              /* spec.dcgmExporter.serviceMonitor while enabled:
                                              {interval, scrapeTimeout, honorLabels,
                                              additionalLabels, relabelings} as far as given
                                              (owned); NULL when off */
    json_t *validator_env[GPUOP_VALIDATOR_COMPONENTS]; /* spec.validator.<component>.env:
                                             arrays of {name, value} (owned), never NULL */
    bool node_labeling;                         /* spec.nodeLabeling.enabled: gpuop labels new GPU
                                                   nodes (SPEC 4a); false when absent */
    struct gpuop_upgrade_policy upgrade;        /* spec.driver.upgradePolicy */
    struct gpuop_driver_opts driver;            /* spec.driver's options, spec.gds, spec.gdrcopy */
    struct gpuop_driver_manager driver_manager; /* spec.driver.manager */
    struct gpuop_dra_opts dra;                  /* spec.draDriver's own keys */
    struct gpuop_driver_pool driver_pools[GPUOP_DRIVER_POOLS_MAX]; /* spec.driver.pools, in
                                                   their order; a problem in one holds the
                                                   driver (operands[driver].held) */
    int ndriver_pools;
    /* Driver pools gone from spec.driver.pools whose DaemonSets still run:
     * never parsed, set by the controller from its caches
     * (gpuop_ctl_pools_draining) before each reconcile reads the policy.
     * Their DaemonSets are kept as they are (neither applied nor deleted),
     * the default pool's keep off their nodes, and the labeller moves
     * their nodes through the upgrade (docs/operations.md, "Driver
     * pools"). Zero in a parsed policy. */
    char draining_pools[GPUOP_DRIVER_POOLS_MAX][GPUOP_DRIVER_POOL_NAME_MAX + 1];
    bool draining_precompiled[GPUOP_DRIVER_POOLS_MAX]; /* its DaemonSets per kernel */
    int ndraining_pools;
    /* spec.findings: grace periods in seconds (0..GPUOP_GRACE_MAX) */
    long terminating_grace_s; /* a pod deleting but still Running longer than
                                 this is its own finding; default 300 */
    long advertise_grace_s;   /* device plugin Running+Ready this long while the
                                 node advertises 0 nvidia.com/gpu; default 120 */
    long event_grace_s;       /* transient findings post an Event only after
                                 lasting this long; default 60 */
    /* validation */
    struct gpuop_policy_problem problems[GPUOP_POLICY_PROBLEMS_MAX];
    int nproblems; /* may exceed the array: count of all problems */
};

/* Parses obj (borrowed; a whole GpuPolicy object, or one with only spec)
 * into a zeroed *out. Returns 0 (problems, if any, in out->problems),
 * GPUOP_ENOMEM, or GPUOP_EINVAL when obj is not an object. On failure *out
 * is released. */
int gpuop_policy_parse(json_t *obj, struct gpuop_policy *out, struct gpuop_err *err);

/* The spec.validator key of component c ("driver", "toolkit", "plugin"); static. */
const char *gpuop_policy_validator_component(enum gpuop_validator_component c);

/* The spec.operator.defaultRuntime value of r ("containerd", "crio",
 * "docker"), also the toolkit's RUNTIME; static. */
const char *gpuop_policy_runtime_name(enum gpuop_container_runtime r);

/* The spec.mig.strategy value of s ("none", "single", "mixed"); static. */
const char *gpuop_policy_mig_name(enum gpuop_mig_strategy s);

/* The index of the driver pool named name (borrowed) in p, or -1 (NULL,
 * "" or a name p has no pool of: the default pool, spec.driver). */
int gpuop_policy_driver_pool(const struct gpuop_policy *p, const char *name);

/* True when name (borrowed) is one of p's draining pools
 * (p->draining_pools): gone from the policy, its DaemonSets still run. */
bool gpuop_policy_pool_draining(const struct gpuop_policy *p, const char *name);

/* Whether the driver pool named name (borrowed) runs a precompiled driver:
 * one of p's pools, a draining pool (as its DaemonSets were found), else
 * spec.driver's. */
bool gpuop_policy_pool_precompiled(const struct gpuop_policy *p, const char *name);

/* *view: p as the driver pool k sees it, a shallow copy of p (borrowing
 * all it points to: never freed, valid while p is) whose driver image,
 * image pull policy, kernelModuleType and usePrecompiled are the pool's.
 * k out of range: p itself (spec.driver's pool). A precompiled pool's view
 * has no repoConfig, certConfig, secretEnv, GDS or GDRCopy (NVIDIA renders
 * none with precompiled drivers; the policy's problems say so). */
void gpuop_policy_pool_view(const struct gpuop_policy *p, int k, struct gpuop_policy *view);

/* Releases everything the policy owns and zeroes it. */
void gpuop_policy_free(struct gpuop_policy *p);

/* The direct prerequisite of operand idx under policy p (borrowed, may be
 * NULL: the table's): the table's prerequisite, or its via operand when p
 * enables that (dcgm-exporter needs the DCGM host engine when dcgm is
 * enabled, container-toolkit otherwise); -1 for none. */
int gpuop_policy_prereq(const struct gpuop_policy *p, int idx);

#endif
