/*
 * render.c - policy -> operand DaemonSets (SPEC section 4.2).
 *
 * Each operand has a pod template written here: what its NVIDIA image needs
 * on a real GPU node (host paths, privileges, environment, probes). The
 * policy adds image, pull policy, args (they replace the template's default
 * arguments when non-empty), env (merged by name: a policy entry overrides
 * the template's entry of the same name, new names are appended) and
 * resources. An operand row without a template here still renders, as a
 * plain single-container DaemonSet.
 *
 * Every object is built in a fixed key order and user maps are emitted in
 * sorted key order, so the output is byte-for-byte deterministic: it is
 * golden-tested, diffed by people reviewing `gpuop render`, and sent by
 * server-side apply, where it is the complete set of fields gpuop owns.
 *
 * Every list the render has a place for is written, empty ones included
 * (put_list): the apply owns a list the API server keeps whole
 * (tolerations, command, args) even when it is empty, so one set by hand
 * where the policy has none is put back (SPEC 4.2; left out, the field was
 * nobody's and a hand edit stayed). An empty keyed list (env, volumes,
 * imagePullSecrets: entries merged by name) records no owner; and a
 * map's keys, as a keyed list's entries, are fields of their own: an
 * entry or key added by hand belongs to whoever added it and stays, as
 * server-side apply has it. So is every optional field of the pod spec
 * (priorityClassName, hostPID, hostIPC, hostNetwork, runtimeClassName):
 * unset, it is written null or false, owned all the same, and a value set
 * by hand is put back.
 *
 * The selector holds only the operand name and the manager (selectors are
 * immutable); the policy name goes into the instance label, which may
 * change freely.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/render.h"
#include "migconfig_int.h"

/* What a template contributes; every json_t is new and released by
 * tmpl_free(). NULL members are left out of the output. */
struct tmpl {
    const char *container;
    const struct gpuop_ospool *pool; /* the OS pool rendered for, or NULL (borrowed) */
    const char *image;               /* the main container's image (borrowed) */
    bool host_pid;
    bool host_ipc;
    bool host_network;           /* hostNetwork, with dnsPolicy ClusterFirstWithHostNet */
    const char *service_account; /* default GPUOP_OPERAND_SA (no permissions, no token) */
    bool api_token;              /* mount the service account token: the operand uses the API */
    bool share_pid;              /* shareProcessNamespace (unless hostPID): a sidecar signals
                                    the main process */
    const char *runtime_class;   /* runtimeClassName, or NULL */
    const char *nri_container;   /* NRI mode: the container the toolkit's NRI plugin gives
                                    every GPU (a pod annotation), or NULL */
    const json_t *pull_secrets;  /* [{name}] added to the policy's imagePullSecrets (borrowed) */
    json_t *init;                /* initContainers: the gates (whole containers) */
    json_t *command;
    json_t *args; /* default args, replaced by the policy's when non-empty */
    json_t *env;
    json_t *env_after; /* set over the policy's env (container paths of host paths) */
    json_t *ports;
    json_t *security;
    json_t *mounts;
    json_t *volumes;
    json_t *startup;
    json_t *readiness;
    json_t *liveness;
    json_t *lifecycle;
    json_t *env_from; /* the main container's envFrom */
    json_t *sidecars; /* containers after the main one (whole containers) */
    bool oom;         /* a builder returned NULL */
};

static void tmpl_free(struct tmpl *t)
{
    json_t **all[] = {&t->init,      &t->command,  &t->args,      &t->env,      &t->env_after,
                      &t->ports,     &t->security, &t->mounts,    &t->volumes,  &t->startup,
                      &t->readiness, &t->liveness, &t->lifecycle, &t->env_from, &t->sidecars};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        json_decref(*all[i]);
        *all[i] = NULL;
    }
}

/* Records v (new) or the failure to build it. */
static json_t *need(struct tmpl *t, json_t *v)
{
    if (!v)
        t->oom = true;
    return v;
}

/* ---- small builders (all return new references, NULL on ENOMEM) ---------- */

static json_t *merge_env(json_t *base, json_t *extra);
static bool has_named(json_t *arr, const char *name);

static json_t *hostpath(const char *name, const char *path, const char *type)
{
    return json_pack("{s:s, s:{s:s, s:s*}}", "name", name, "hostPath", "path", path, "type", type);
}

static json_t *mount(const char *name, const char *path, bool ro, const char *propagation)
{
    return json_pack("{s:s, s:s, s:o*, s:s*}", "name", name, "mountPath", path, "readOnly",
                     ro ? json_true() : NULL, "mountPropagation", propagation);
}

/* One volume of a pod and where the template's container mounts it: a
 * template lists each volume once, as a row of its table, and both the
 * pod's volumes and the container's volumeMounts are generated from the
 * table (vol_table): a row without a mount path is a volume only an init
 * container mounts. */
struct vol {
    const char *name;
    const char *host;        /* hostPath path (NULL: config_map) */
    const char *type;        /* hostPath type, or NULL for none */
    const char *mount;       /* the container's mountPath, or NULL */
    bool ro;                 /* readOnly */
    const char *propagation; /* mountPropagation, or NULL */
    json_t *config_map;      /* the configMap source instead of hostPath (borrowed) */
};

#define RO            true
#define RW            false
#define DIR_OR_CREATE "DirectoryOrCreate"
#define NROWS(t)      (sizeof(t) / sizeof((t)[0]))

/* The volumeMounts of rows (new), in row order. */
static json_t *vol_mounts(const struct vol *rows, size_t n)
{
    json_t *out = json_array();
    for (size_t i = 0; out && i < n; i++)
        if (rows[i].mount && json_array_append_new(out, mount(rows[i].name, rows[i].mount,
                                                              rows[i].ro, rows[i].propagation))) {
            json_decref(out);
            out = NULL;
        }
    return out;
}

/* Appends to volumes (borrowed) the volume of every row it does not yet
 * name, in row order; nonzero on failure. */
static int vol_add(json_t *volumes, const struct vol *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t j;
        json_t *v;
        bool have = false;
        json_array_foreach(volumes, j, v)
        {
            have = have || !strcmp(json_string_value(json_object_get(v, "name")), rows[i].name);
        }
        if (have)
            continue;
        v = rows[i].config_map
                ? json_pack("{s:s, s:O}", "name", rows[i].name, "configMap", rows[i].config_map)
                : hostpath(rows[i].name, rows[i].host, rows[i].type);
        if (json_array_append_new(volumes, v))
            return -1;
    }
    return 0;
}

static int vol_add_validation(const struct gpuop_policy *p, json_t *volumes);

/* Sets t's volumeMounts and volumes from its table: the volumes of the
 * driver-validation init container first when the pod runs it, then the
 * table's in row order, each name once. */
static void vol_table(const struct gpuop_policy *p, struct tmpl *t, const struct vol *rows,
                      size_t n, bool validation)
{
    t->mounts = need(t, vol_mounts(rows, n));
    t->volumes = need(t, json_array());
    if (t->volumes &&
        ((validation && vol_add_validation(p, t->volumes)) || vol_add(t->volumes, rows, n)))
        t->oom = true;
}

static json_t *env(const char *name, const char *value)
{
    return json_pack("{s:s, s:s}", "name", name, "value", value);
}

static json_t *env_field(const char *name, const char *path)
{
    return json_pack("{s:s, s:{s:{s:s}}}", "name", name, "valueFrom", "fieldRef", "fieldPath",
                     path);
}

/* Appends every item of more (steals) to arr (borrowed); nonzero on
 * failure, arr then unchanged or partly extended. */
static int extend(json_t *arr, json_t *more)
{
    int rc = !arr || !more || json_array_extend(arr, more);
    json_decref(more);
    return rc;
}

static json_t *drop_all(void)
{
    return json_pack("{s:b, s:{s:[s]}}", "allowPrivilegeEscalation", 0, "capabilities", "drop",
                     "ALL");
}

static json_t *privileged(void)
{
    return json_pack("{s:b}", "privileged", 1);
}

/* ---- what every gated operand shares (docs/operands.md) ------------------ */

/* The directory where the validator's init containers write one file per
 * prerequisite that works on the node (driver-ready, toolkit-ready, ...);
 * driver-ready also says where the driver root is on that node. */
#define VALIDATIONS   "/run/nvidia/validations"
#define DRIVER_READY  VALIDATIONS "/driver-ready"
#define TOOLKIT_READY VALIDATIONS "/toolkit-ready"
/* the kernel's firmware search path, which NVIDIA's driver container points
 * at its own firmware directory */
#define FIRMWARE_SEARCH_PATH "/sys/module/firmware_class/parameters/path"
#define TOOLKIT_START_DELAY  "5" /* seconds; see tmpl_toolkit */
#define GATE_SLEEP           "5" /* seconds between two looks at a validation file */
#define CDI_HOOK_REL         "/toolkit/nvidia-cdi-hook" /* under spec.toolkit.installDir */
#define CDI_HOOK_MAX         320
#define HOST_PATH_MAX        320 /* a spec.hostPaths directory and a path below it */
/* the directories under the kubelet's root the operands use: pod-resources
 * follows --root-dir; device-plugins does not (see tmpl_device_plugin) */
#define KUBELET_POD_RESOURCES  "/pod-resources"
#define KUBELET_DEVICE_PLUGINS "/var/lib/kubelet/device-plugins"
#define HOST_DEV_CHAR          "/dev/char"
#define HOST_ROOT_ENV          "HOST_ROOT" /* nvidia-validator's --host-root */
#define CDI_DEFAULT_KIND       "management.nvidia.com/gpu"
/* where GFD writes its feature file: node-feature-discovery's local source */
#define NFD_FEATURES_DIR "/etc/kubernetes/node-feature-discovery/features.d"

/* Where the toolkit's container sees the runtime's config, drop-in and
 * socket directories and the NRI socket's (the GPU Operator's). */
#define RUNTIME_CONFIG_CTR_DIR "/runtime/config-dir/"
#define RUNTIME_DROPIN_CTR_DIR "/runtime/config-dir.d/"
#define RUNTIME_SOCKET_CTR_DIR "/runtime/sock-dir/"
#define NRI_SOCKET_CTR_DIR     "/runtime/nri-sock-dir/"
#define NRI_SOCKET_DEFAULT     "/var/run/nri/nri.sock"
#define RUNTIME_PATH_MAX       1024
#define RUNTIME_VOL_MAX        32 /* "<runtime>-drop-in-config" */
/* CRI-O's OCI hooks directory outside OpenShift, where the toolkit writes
 * its prestart hook in hook mode (the legacy mode on CRI-O) */
#define CRIO_HOOKS_DIR "/usr/share/containers/oci/hooks.d"
/* NRI mode: the pod annotation that asks the toolkit's NRI plugin for every
 * GPU in a container (gpu-operator v26.7.0 controllers/object_controls.go,
 * NRIAnnotationDomain, setNRIPluginAnnotation) */
#define NRI_ANNOTATION_PREFIX "nvidia.cdi.k8s.io/container."
#define NRI_ALL_GPUS          CDI_DEFAULT_KIND "=all"

/* The runtime paths the toolkit edits on the host, per spec.operator.
 * defaultRuntime: the env names that move them and their defaults, as the
 * GPU Operator's (v26.7.0 controllers/object_controls.go,
 * getRuntimeConfigFiles, getRuntimeSocketFile, Default*ConfigFile,
 * Default*SocketFile). Docker has no drop-in; CRI-O's socket is not
 * mounted: the toolkit restarts CRI-O through systemd on the host root
 * (nvidia-container-toolkit v1.20.0 cmd/nvidia-ctk-installer/container/
 * runtime/crio/crio.go, DefaultRestartMode). */
static const struct runtime_files {
    const char *config_env; /* the top-level config (RUNTIME_CONFIG is read after it) */
    const char *config;
    const char *dropin; /* its default (RUNTIME_DROP_IN_CONFIG moves it), NULL: none */
    const char *socket_env;
    const char *socket; /* NULL: none mounted */
} runtime_files[GPUOP_RUNTIMES] = {
    [GPUOP_RUNTIME_CONTAINERD] = {"CONTAINERD_CONFIG", "/etc/containerd/config.toml",
                                  "/etc/containerd/conf.d/99-nvidia.toml", "CONTAINERD_SOCKET",
                                  "/run/containerd/containerd.sock"},
    [GPUOP_RUNTIME_CRIO] = {"CRIO_CONFIG", "/etc/crio/config.toml",
                            "/etc/crio/crio.conf.d/99-nvidia.conf", NULL, NULL},
    [GPUOP_RUNTIME_DOCKER] = {"DOCKER_CONFIG", "/etc/docker/daemon.json", NULL, "DOCKER_SOCKET",
                              "/var/run/docker.sock"},
};

/* The driver's options (driver_options): where the driver image reads
 * module parameters and vGPU licensing, the NLS token's directory, MOFED's
 * paths, the volumes gpuop names (NVIDIA names the ConfigMaps' volumes
 * after the ConfigMaps, which two options naming one ConfigMap would
 * collide on), the sidecars' probe timeout, the driver pod's most volumes. */
#define DRIVERS_DIR           "/drivers"
#define NLS_TOKEN_DIR         "/drivers/ClientConfigToken"
#define MOFED_DRIVERS         "/run/mellanox/drivers"
#define MOFED_USR_SRC         "/run/mellanox/drivers/usr/src"
#define VOL_LICENSING         "licensing-config"
#define VOL_MODULE_CONF       "kernel-module-config"
#define VOL_REPO_CONF         "repo-config"
#define VOL_LIB_MODULES       "lib-modules"
#define LIB_MODULES_HOST      "/lib/modules"
#define LIB_MODULES_CTR       "/run/host/lib/modules"
#define VOL_CERT_CONF         "cert-config"
#define SIDECAR_PROBE_TIMEOUT 10 /* seconds */
/* The driver's startup probe waits this long before its first try: a
 * compiled driver builds its modules first (gpu-operator v26.7.0
 * assets/state-driver/0500_daemonset.yaml, initialDelaySeconds 60), a
 * precompiled one only loads them, so NVIDIA's NVIDIADriver default is 5
 * (internal/state/driver.go getDefaultStartupProbe). */
#define DRIVER_STARTUP_DELAY_S             60
#define DRIVER_STARTUP_DELAY_PRECOMPILED_S 5
#define DRIVER_VOLS_MAX                    11 /* the driver's 6 rows, MOFED's 2, the manager's 3 */

static int idx_of(const char *name)
{
    return gpuop_operand_by_name(name);
}

static bool enabled(const struct gpuop_policy *p, const char *name)
{
    int i = idx_of(name);
    return i >= 0 && p->operands[i].enabled;
}

/* The value the policy gives env name of operand `operand` (borrowed), or
 * NULL. */
static const char *policy_env(const struct gpuop_policy *p, const char *operand, const char *name)
{
    int i = idx_of(operand);
    size_t k;
    json_t *e;
    if (i < 0)
        return NULL;
    json_array_foreach(p->operands[i].env, k, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "name")), name))
            return json_string_value(json_object_get(e, "value"));
    }
    return NULL;
}

/* The MIG strategy operand runs with: its MIG_STRATEGY env when the policy
 * sets one for it, else spec.mig.strategy (default single, the GPU
 * Operator's). */
static const char *mig_strategy(const struct gpuop_policy *p, const char *operand)
{
    const char *s = policy_env(p, operand, "MIG_STRATEGY");
    return s ? s : gpuop_policy_mig_name(p->mig_strategy);
}

/* spec.toolkit.installDir (a policy built without gpuop_policy_parse has
 * none: the default): the same path on the host and in the container. */
static const char *install_dir(const struct gpuop_policy *p)
{
    return p->toolkit_install_dir ? p->toolkit_install_dir : GPUOP_TOOLKIT_INSTALL_DIR_DEFAULT;
}

/* spec.hostPaths (a policy built without gpuop_policy_parse has none: the
 * GPU Operator's defaults): the host's root, the directory of a driver not
 * installed on that root, the kubelet's root directory. */
static const char *host_root(const struct gpuop_policy *p)
{
    return p->host_root ? p->host_root : GPUOP_HOST_ROOT_DEFAULT;
}

/* spec.devicePlugin.mps.root, the MPS control daemon's host directory,
 * mounted at MPS_ROOT_CTR in the daemon and the device plugin. */
#define MPS_ROOT_CTR "/mps"
static const char *mps_root(const struct gpuop_policy *p)
{
    return p->mps_root ? p->mps_root : GPUOP_MPS_ROOT_DEFAULT;
}

static const char *driver_dir(const struct gpuop_policy *p)
{
    return p->driver_install_dir ? p->driver_install_dir : GPUOP_DRIVER_INSTALL_DIR_DEFAULT;
}

static bool custom_host_root(const struct gpuop_policy *p)
{
    return strcmp(host_root(p), GPUOP_HOST_ROOT_DEFAULT) != 0;
}

static bool custom_driver_dir(const struct gpuop_policy *p)
{
    return strcmp(driver_dir(p), GPUOP_DRIVER_INSTALL_DIR_DEFAULT) != 0;
}

/* sub (starting with '/') under the host root or the kubelet's root
 * directory, written into buf[HOST_PATH_MAX] (each is at most 256
 * characters, policy.c). */
static const char *under_root(const struct gpuop_policy *p, const char *sub, char *buf)
{
    snprintf(buf, HOST_PATH_MAX, "%s%s", custom_host_root(p) ? host_root(p) : "", sub);
    return buf;
}

static const char *under_kubelet(const struct gpuop_policy *p, const char *sub, char *buf)
{
    snprintf(buf, HOST_PATH_MAX, "%s%s",
             p->kubelet_root_dir ? p->kubelet_root_dir : GPUOP_KUBELET_ROOT_DIR_DEFAULT, sub);
    return buf;
}

/* spec.operator.runtimeClass (default GPUOP_RUNTIME_CLASS): the
 * RuntimeClass the GPU operands run in, gpuop's RuntimeClass's name and
 * handler, and the handler the toolkit registers in containerd, one name
 * for all three as the GPU Operator's getRuntimeClassName gives it. */
static const char *runtime_class(const struct gpuop_policy *p)
{
    return p->runtime_class ? p->runtime_class : GPUOP_RUNTIME_CLASS;
}

static bool cdi(const struct gpuop_policy *p)
{
    return !p->cdi_disabled;
}

/* How a GPU operand's container ctr gets the GPUs (the GPU Operator's
 * setRuntimeClassName and setNRIPluginAnnotation): the RuntimeClass; in NRI
 * mode the plugin's annotation instead; neither in the legacy mode on CRI-O,
 * where the toolkit's OCI hook injects them and no nvidia handler exists. */
static void gpu_access(const struct gpuop_policy *p, struct tmpl *t, const char *ctr)
{
    if (p->nri_plugin)
        t->nri_container = ctr;
    else if (cdi(p) || p->runtime != GPUOP_RUNTIME_CRIO)
        t->runtime_class = runtime_class(p);
}

/* The toolkit's CDI hook under installDir, written into buf[CDI_HOOK_MAX]
 * (installDir is at most 256 characters, policy.c). */
static const char *cdi_hook(const struct gpuop_policy *p, char *buf)
{
    snprintf(buf, CDI_HOOK_MAX, "%s%s", install_dir(p), CDI_HOOK_REL);
    return buf;
}

/* Someone on the node writes driver-ready: the toolkit's own
 * driver-validation, or the validator's. Without either, nobody would, and
 * a gate on it would hold forever. */
static bool driver_ready_written(const struct gpuop_policy *p)
{
    return enabled(p, "container-toolkit") || enabled(p, "operator-validator");
}

/* toolkit-ready is written by the validator's toolkit-validation only. */
static bool toolkit_ready_written(const struct gpuop_policy *p)
{
    return enabled(p, "operator-validator");
}

/* Where the driver lives on the host when no validation file can say it
 * per node (neither toolkit nor validator runs): in spec.hostPaths.
 * driverInstallDir when gpuop runs the driver (its container's root) or the
 * policy names one (a driver the platform installs there, as GKE's), on
 * the host root (spec.hostPaths.rootFS) otherwise. */
static bool driver_in_dir(const struct gpuop_policy *p)
{
    return enabled(p, "driver") || custom_driver_dir(p);
}

static const char *driver_root(const struct gpuop_policy *p)
{
    return driver_in_dir(p) ? driver_dir(p) : host_root(p);
}

static const char *driver_root_ctr(const struct gpuop_policy *p)
{
    return driver_in_dir(p) ? "/driver-root" : "/host";
}

/* The shell that waits for driver-ready, exports what it says (the
 * node's NVIDIA_DRIVER_ROOT, DRIVER_ROOT_CTR_PATH, NVIDIA_DEV_ROOT,
 * DEV_ROOT_CTR_PATH, IS_HOST_DRIVER) and execs "$0" "$@": the operand's
 * binary and the policy's args. `extra` runs before the exec. */
static json_t *sourcing_command(const char *binary, const char *extra)
{
    char script[1024];
    snprintf(script, sizeof(script),
             "until [ -f " DRIVER_READY " ]; do echo 'gpuop: waiting for " DRIVER_READY
             "'; sleep " GATE_SLEEP "; done\n"
             "set -a\n"
             ". " DRIVER_READY "\n"
             "set +a\n"
             "%s"
             "exec \"$0\" \"$@\"\n",
             extra ? extra : "");
    return json_pack("[s,s,s,s]", "sh", "-c", script, binary);
}

/* An init container of the validator's image (the policy's validator
 * operand: image and pull policy) that holds the pod until file exists. */
static json_t *gate(const struct gpuop_policy *p, const char *name, const char *file)
{
    const struct gpuop_operand_spec *v = &p->operands[idx_of("operator-validator")];
    char script[512];
    snprintf(script, sizeof(script),
             "until [ -f %s ]; do echo 'gpuop: waiting for %s'; sleep " GATE_SLEEP "; done", file,
             file);
    return json_pack("{s:s, s:s, s:s, s:[s,s], s:[s], s:o, s:[o]}", "name", name, "image", v->image,
                     "imagePullPolicy", v->pull_policy, "command", "sh", "-c", "args", script,
                     "securityContext", json_pack("{s:b, s:i}", "privileged", 1, "runAsUser", 0),
                     "volumeMounts",
                     json_pack("{s:s, s:s, s:s}", "name", "run-nvidia-validations", "mountPath",
                               VALIDATIONS, "mountPropagation", "HostToContainer"));
}

/* One component of nvidia-validator (COMPONENT) as an init container of
 * the validator's image, run as root; env (steals, may be NULL) comes
 * after WITH_WAIT and COMPONENT, then spec.validator.<component>.env
 * merged by name (the policy's wins, as the GPU Operator's
 * TransformValidatorComponent sets it last); mounts (steals) are its
 * volumeMounts. */
static json_t *validator_ctr(const struct gpuop_policy *p, enum gpuop_validator_component c,
                             bool wait, json_t *env, json_t *mounts)
{
    const struct gpuop_operand_spec *v = &p->operands[idx_of("operator-validator")];
    const char *component = gpuop_policy_validator_component(c);
    char name[64];
    snprintf(name, sizeof(name), "%s-validation", component);
    json_t *base = json_pack("[{s:s, s:s}, {s:s, s:s}]", "name", "WITH_WAIT", "value",
                             wait ? "true" : "false", "name", "COMPONENT", "value", component);
    if (base && env && json_array_extend(base, env)) {
        json_decref(base);
        base = NULL;
    }
    json_decref(env);
    json_t *all = base ? merge_env(base, p->validator_env[c]) : NULL;
    json_decref(base);
    return json_pack("{s:s, s:s, s:s, s:[s,s], s:[s], s:o, s:{s:b, s:i}, s:o}", "name", name,
                     "image", v->image, "imagePullPolicy", v->pull_policy, "command", "sh", "-c",
                     "args", "nvidia-validator", "env", all, "securityContext", "privileged", 1,
                     "runAsUser", 0, "volumeMounts", mounts);
}

/* driver-validation: nvidia-validator COMPONENT=driver, waiting until the
 * driver works on the node (a host driver under /host, or one in
 * spec.hostPaths.driverInstallDir, the driver container's root by default),
 * then writing driver-ready with that node's driver root. The host root
 * (spec.hostPaths.rootFS) is mounted at /host and its /dev/char at
 * /host-dev-char; driverInstallDir at its own path, which DRIVER_INSTALL_DIR
 * and DRIVER_INSTALL_DIR_CTR_PATH name when it is not the default (the GPU
 * Operator's transformForHostRoot and transformForDriverInstallDir). It
 * asks the API whether an operator manages the driver: the pod needs its
 * token (cmd/nvidia-validator/main.go). */
#define VALIDATION_VOLS 4

/* Fills rows[VALIDATION_VOLS] for p; dev_char[HOST_PATH_MAX] holds a path. */
static void validation_vols(const struct gpuop_policy *p, struct vol *rows, char *dev_char)
{
    const struct vol all[VALIDATION_VOLS] = {
        {"host-root", host_root(p), NULL, "/host", RO, "HostToContainer", NULL},
        {"driver-install-dir", driver_dir(p), DIR_OR_CREATE, driver_dir(p), RW, "HostToContainer",
         NULL},
        {"run-nvidia-validations", VALIDATIONS, DIR_OR_CREATE, VALIDATIONS, RW, "Bidirectional",
         NULL},
        {"host-dev-char", under_root(p, HOST_DEV_CHAR, dev_char), NULL, "/host-dev-char", RW, NULL,
         NULL},
    };
    memcpy(rows, all, sizeof(all));
}

static json_t *driver_validation(const struct gpuop_policy *p)
{
    struct vol rows[VALIDATION_VOLS];
    char dev_char[HOST_PATH_MAX];
    validation_vols(p, rows, dev_char);
    json_t *more = json_pack("[o]", env_field("OPERATOR_NAMESPACE", "metadata.namespace"));
    if (more && custom_driver_dir(p) &&
        extend(more, json_pack("[o,o]", env("DRIVER_INSTALL_DIR", driver_dir(p)),
                               env("DRIVER_INSTALL_DIR_CTR_PATH", driver_dir(p))))) {
        json_decref(more);
        more = NULL;
    }
    if (!more)
        return NULL;
    return validator_ctr(p, GPUOP_VALIDATOR_DRIVER, true, more, vol_mounts(rows, VALIDATION_VOLS));
}

/* Appends the volumes driver_validation mounts to volumes (borrowed). */
static int vol_add_validation(const struct gpuop_policy *p, json_t *volumes)
{
    struct vol rows[VALIDATION_VOLS];
    char dev_char[HOST_PATH_MAX];
    validation_vols(p, rows, dev_char);
    return vol_add(volumes, rows, VALIDATION_VOLS);
}

/* The device plugin's and GFD's securityContext, by their MIG strategy:
 * SYS_ADMIN with a strategy other than none (to read MIG devices), else
 * nothing beyond the default, all capabilities dropped (NVIDIA's
 * k8s-device-plugin chart, templates/_helpers.tpl). */
static json_t *plugin_security(const char *strategy)
{
    if (strcmp(strategy, "none"))
        return json_pack("{s:{s:[s]}}", "capabilities", "add", "SYS_ADMIN");
    return drop_all();
}

/* ---- pod templates, one per operand ---------------------------------------- */

/* driver: builds and loads the kernel modules, then exposes its own root at
 * /run/nvidia/driver for the rest of the chain (mount --rbind /, propagated
 * back to the host). Needs the host's PID namespace, full privileges, the
 * host's os-release, a firmware directory of its own (the host's
 * /run/nvidia/driver/lib/firmware, not the host's /lib/firmware, with the
 * kernel's firmware search path pointed there, as NVIDIA's); not the host
 * root, which
 * NVIDIA's driver container does not mount either and which the rbind would
 * expose again under /run/nvidia/driver/host. Compiling can take many
 * minutes, hence the patient startup probe. */
static void driver_options(const struct gpuop_policy *p, struct tmpl *t);
static int put_list(json_t *obj, const char *key, json_t *src, bool copy);

/* k8s-driver-manager (`driver-manager uninstall_driver`), the driver pod's
 * init container, as the GPU Operator v26.7.0 renders it
 * (assets/state-driver/0500_daemonset.yaml; controllers/object_controls.go
 * transformDriverManagerInitContainer): before a new driver container
 * starts it pauses the node's operands through their deploy labels, evicts
 * the GPU pods unless an upgrade controller owns the node (the
 * GPUOP_ANNOTATION_DRIVER_UPGRADE_ENABLED annotation), unloads the old
 * module and unmounts the old driver root, and relabels the operands back
 * (k8s-driver-manager v0.12.0 cmd/driver-manager/main.go uninstallDriver).
 * NVIDIA's env, spec.driver.manager.env set over it by name; the driver's
 * resources; DRIVER_CONFIG_DIGEST added with the driver container's. New. */
static json_t *driver_manager(const struct gpuop_policy *p)
{
    const struct gpuop_driver_manager *m = &p->driver_manager;
    json_t *e =
        json_pack("[o,o,o,o,o,o,o,o,o]", env_field("NODE_NAME", "spec.nodeName"),
                  env("NVIDIA_VISIBLE_DEVICES", "void"), env("ENABLE_GPU_POD_EVICTION", "true"),
                  env("ENABLE_AUTO_DRAIN", "false"), env("DRAIN_USE_FORCE", "false"),
                  env("DRAIN_POD_SELECTOR_LABEL", ""), env("DRAIN_TIMEOUT_SECONDS", "0s"),
                  env("DRAIN_DELETE_EMPTYDIR_DATA", "false"),
                  env_field("OPERATOR_NAMESPACE", "metadata.namespace"));
    const struct vol vols[] = {
        {"run-nvidia", NULL, NULL, "/run/nvidia", RW, "Bidirectional", NULL},
        {"host-root", NULL, NULL, "/host", RO, "HostToContainer", NULL},
        {"host-sys", NULL, NULL, "/sys", RW, NULL, NULL},
        {"run-mellanox-drivers", NULL, NULL, "/run/mellanox/drivers", RW, "HostToContainer", NULL},
    };
    /* GPUDirect RDMA: the manager waits for MOFED's driver first */
    if (e && p->driver.rdma &&
        (json_array_append_new(e, env("GPU_DIRECT_RDMA_ENABLED", "true")) ||
         (p->driver.host_mofed && json_array_append_new(e, env("USE_HOST_MOFED", "true"))))) {
        json_decref(e);
        e = NULL;
    }
    json_t *merged = e ? merge_env(e, m->env) : NULL;
    json_decref(e);
    json_t *c =
        json_pack("{s:s, s:s, s:s, s:[s], s:[s], s:o, s:o, s:o}", "name", GPUOP_DRIVER_MANAGER_CTR,
                  "image", m->image, "imagePullPolicy", m->pull_policy, "command", "driver-manager",
                  "args", "uninstall_driver", "env", merged, "securityContext", privileged(),
                  "volumeMounts", vol_mounts(vols, NROWS(vols)));
    const json_t *res = p->operands[gpuop_operand_by_key("driver")].resources;
    if (c && res && json_object_set_new(c, "resources", json_deep_copy(res))) {
        json_decref(c);
        return NULL;
    }
    return c;
}

static void tmpl_driver(const struct gpuop_policy *p, struct tmpl *t)
{
    const struct gpuop_driver_opts *o = &p->driver;
    t->container = "nvidia-driver";
    t->service_account = GPUOP_DRIVER_SA;
    t->api_token = true; /* the driver manager relabels its node and evicts */
    t->init = need(t, json_pack("[o]", driver_manager(p)));
    t->pull_secrets = p->driver_manager.pull_secrets;
    t->host_pid = true;
    t->command = need(t, json_pack("[s]", "nvidia-driver"));
    t->args = need(t, json_pack("[s]", "init"));
    /* NVIDIA's (assets/state-driver/0500_daemonset.yaml); not in the
       digest, which covers direct values only */
    t->env = need(t, json_pack("[o,o]", env_field("NODE_NAME", "spec.nodeName"),
                               env_field("NODE_IP", "status.hostIP")));
    t->security = need(t, privileged());
    struct vol vols[DRIVER_VOLS_MAX] = {
        {"run-nvidia", "/run/nvidia", DIR_OR_CREATE, "/run/nvidia", RW, "Bidirectional", NULL},
        {"host-os-release", "/etc/os-release", NULL, "/host-etc/os-release", RO, NULL, NULL},
        {"nv-firmware", "/run/nvidia/driver/lib/firmware", DIR_OR_CREATE, "/lib/firmware", RW, NULL,
         NULL},
        {"firmware-search-path", FIRMWARE_SEARCH_PATH, NULL, FIRMWARE_SEARCH_PATH, RW, NULL, NULL},
        {"var-log", "/var/log", NULL, "/var/log", RW, NULL, NULL},
        {"dev-log", "/dev/log", NULL, "/dev/log", RW, NULL, NULL},
    };
    size_t n = 6;
    if (o->rdma) { /* MOFED's sources to build nvidia-peermem, its driver-ready */
        vols[n++] = (struct vol){"mlnx-ofed-usr-src",
                                 o->host_mofed ? "/usr/src" : MOFED_USR_SRC,
                                 DIR_OR_CREATE,
                                 MOFED_USR_SRC,
                                 RW,
                                 "HostToContainer",
                                 NULL};
        vols[n++] =
            (struct vol){"run-mellanox-drivers", MOFED_DRIVERS, DIR_OR_CREATE, MOFED_DRIVERS, RW,
                         "HostToContainer",      NULL};
    }
    /* the driver manager's only (with RDMA, run-mellanox-drivers is the
       driver's row above: one volume per name) */
    vols[n++] = (struct vol){"host-root", host_root(p), NULL, NULL, RO, NULL, NULL};
    vols[n++] = (struct vol){"host-sys", "/sys", "Directory", NULL, RW, NULL, NULL};
    vols[n++] =
        (struct vol){"run-mellanox-drivers", MOFED_DRIVERS, DIR_OR_CREATE, NULL, RW, NULL, NULL};
    vol_table(p, t, vols, n, false);
    t->startup =
        need(t, json_pack("{s:{s:[s,s,s]}, s:i, s:i, s:i, s:i}", "exec", "command", "sh", "-c",
                          "nvidia-smi -L", "initialDelaySeconds",
                          p->driver.precompiled ? DRIVER_STARTUP_DELAY_PRECOMPILED_S
                                                : DRIVER_STARTUP_DELAY_S,
                          "periodSeconds", 10, "timeoutSeconds", 60, "failureThreshold", 120));
    if (!t->oom)
        driver_options(p, t);
}

/* ---- the driver's options and sidecars (docs/operands.md, "The driver's
 * options and sidecars"): gpu-operator v26.7.0 TransformDriver,
 * transformDriverContainer, applyLicensingConfig, transformPeerMemoryContainer,
 * transformGDSContainer, transformGDRCopyContainer and
 * assets/state-driver/0500_daemonset.yaml; the files and env the driver
 * image reads: gpu-driver-container ubuntu24.04/nvidia-driver. */

/* The package-repository and CA-certificate directories of each OS, where
 * repoConfig and certConfig are mounted (RepoConfigPathMap,
 * CertConfigPathMap); an OS not here gets neither, as NVIDIA's refuses
 * them. */
static const struct {
    const char *id;
    const char *repo;
    const char *cert;
} os_paths[] = {
    {"centos", "/etc/yum.repos.d", "/etc/pki/ca-trust/extracted/pem"},
    {"debian", "/etc/apt/sources.list.d", "/usr/local/share/ca-certificates"},
    {"ubuntu", "/etc/apt/sources.list.d", "/usr/local/share/ca-certificates"},
    {"rhcos", "/etc/yum.repos.d", "/etc/pki/ca-trust/extracted/pem"},
    {"rhel", "/etc/yum.repos.d", "/etc/pki/ca-trust/extracted/pem"},
    {"rocky", "/etc/yum.repos.d", "/etc/pki/ca-trust/extracted/pem"},
    {"ol", "/etc/yum.repos.d", "/etc/pki/ca-trust/extracted/pem"},
    {"sles", "/etc/zypp/repos.d", "/etc/pki/trust/anchors"},
    {"sl-micro", "/etc/zypp/repos.d", "/etc/pki/trust/anchors"},
};

/* The module parameter files the driver image reads from /drivers (one
 * line per parameter; _get_module_params). */
static const char *const module_conf_keys[] = {"nvidia.conf", "nvidia-uvm.conf",
                                               "nvidia-modeset.conf", "nvidia-peermem.conf"};

/* Where the os pool's files go (static), or NULL. */
static const char *os_path(const struct gpuop_ospool *pool, bool cert)
{
    for (size_t i = 0; pool && i < NROWS(os_paths); i++)
        if (!strcmp(os_paths[i].id, pool->id))
            return cert ? os_paths[i].cert : os_paths[i].repo;
    return NULL;
}

/* New: a read-only mount of one key of volume `name` at dir/key. */
static json_t *mount_key(const char *name, const char *dir, const char *key)
{
    char path[HOST_PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, key);
    return json_pack("{s:s, s:s, s:s, s:b}", "name", name, "mountPath", path, "subPath", key,
                     "readOnly", 1);
}

/* New: the mounts of kernelModuleConfig's files, empty without one. */
static json_t *module_conf_mounts(const struct gpuop_policy *p)
{
    json_t *m = json_array();
    for (size_t i = 0; m && p->driver.kernel_module_config && i < NROWS(module_conf_keys); i++)
        if (json_array_append_new(m,
                                  mount_key(VOL_MODULE_CONF, DRIVERS_DIR, module_conf_keys[i]))) {
            json_decref(m);
            m = NULL;
        }
    return m;
}

/* New: the mounts of repoConfig and certConfig at the pool's OS's paths,
 * empty without them. */
static json_t *repo_cert_mounts(const struct gpuop_policy *p, const struct gpuop_ospool *pool)
{
    const char *repo = os_path(pool, false), *cert = os_path(pool, true);
    json_t *m = json_array();
    if (m && p->driver.repo_config && repo &&
        json_array_append_new(m, mount(VOL_REPO_CONF, repo, RO, NULL)))
        goto oom;
    if (m && p->driver.cert_config && cert &&
        json_array_append_new(m, mount(VOL_CERT_CONF, cert, RO, NULL)))
        goto oom;
    return m;
oom:
    json_decref(m);
    return NULL;
}

/* New: envFrom the secretEnv Secret, or NULL without one (check the option
 * first to tell that from out-of-memory). */
static json_t *secret_env_from(const struct gpuop_policy *p)
{
    if (!p->driver.secret_env)
        return NULL;
    return json_pack("[{s:{s:s}}]", "secretRef", "name", p->driver.secret_env);
}

/* Appends a configMap (or, with secret, Secret) volume `name` of object
 * obj with items (steals, may be NULL) to t's volumes. */
static void add_object_volume(struct tmpl *t, const char *name, const char *obj, bool secret,
                              json_t *items, bool optional)
{
    json_t *src = secret ? json_pack("{s:s}", "secretName", obj) : json_pack("{s:s}", "name", obj);
    if (src && ((items && json_object_set(src, "items", items)) ||
                (optional && json_object_set_new(src, "optional", json_true())))) {
        json_decref(src);
        src = NULL;
    }
    json_decref(items);
    if (!src || json_array_append_new(t->volumes, json_pack("{s:s, s:o}", "name", name,
                                                            secret ? "secret" : "configMap", src)))
        t->oom = true;
}

/* New: items [{key, path: key}] of keys[n]. */
static json_t *key_items(const char *const *keys, size_t n)
{
    json_t *items = json_array();
    for (size_t i = 0; items && i < n; i++)
        if (json_array_append_new(items,
                                  json_pack("{s:s, s:s}", "key", keys[i], "path", keys[i]))) {
            json_decref(items);
            items = NULL;
        }
    return items;
}

/* The probe NVIDIA's sidecars start with (command: "sh -c <cmd>"). */
static json_t *sidecar_probe(const char *cmd, int initial, int period, int failures)
{
    return json_pack("{s:{s:[s,s,s]}, s:i, s:i, s:i, s:i, s:i}", "exec", "command", "sh", "-c", cmd,
                     "initialDelaySeconds", initial, "failureThreshold", failures,
                     "successThreshold", 1, "periodSeconds", period, "timeoutSeconds",
                     SIDECAR_PROBE_TIMEOUT);
}

/* A sidecar's own parts; the json_t members are stolen by sidecar(). */
struct sidecar_parts {
    const char *name;
    const char *image;
    const char *pull;
    json_t *command;
    json_t *args;
    json_t *mounts;
    json_t *startup;
};

/* New: a sidecar of parts x, privileged, with the driver's resources. */
static json_t *sidecar(const struct gpuop_policy *p, struct sidecar_parts x)
{
    json_t *res = p->operands[idx_of("driver")].resources;
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:O*, s:o, s:o, s:o}", "name", x.name, "image",
                     x.image, "imagePullPolicy", x.pull, "command", x.command, "args", x.args,
                     "resources", res, "securityContext", privileged(), "volumeMounts", x.mounts,
                     "startupProbe", x.startup);
}

/* The shell NVIDIA's nvidia-fs and nvidia-gdrcopy sidecars run: wait for
 * the driver's sources and module, then the image's installer. */
#define SIDECAR_WAIT                                                                               \
    "until [ -d /run/nvidia/driver/usr/src ] && lsmod | grep nvidia; do echo  Waiting for "        \
    "nvidia-driver to be installed...; sleep 10; done; exec "

/* New: the mounts every sidecar has: /run/nvidia (`run_nvidia_prop`),
 * /var/log and /dev/log read-only. */
static json_t *sidecar_mounts(const char *run_nvidia_prop)
{
    return json_pack("[o,o,o]", mount("run-nvidia", "/run/nvidia", RW, run_nvidia_prop),
                     mount("var-log", "/var/log", RW, NULL),
                     mount("dev-log", "/dev/log", RO, NULL));
}

/* nvidia-peermem-ctr: the driver image reloading nvidia-peermem whenever
 * MOFED's driver is reinstalled (nvidia-driver reload_nvidia_peermem). */
static json_t *peermem_ctr(const struct gpuop_policy *p, const struct tmpl *t)
{
    const struct gpuop_operand_spec *d = &p->operands[idx_of("driver")];
    json_t *mounts = sidecar_mounts("Bidirectional");
    if (mounts && (json_array_append_new(mounts, mount("run-mellanox-drivers", MOFED_DRIVERS, RW,
                                                       "HostToContainer")) ||
                   extend(mounts, module_conf_mounts(p)))) {
        json_decref(mounts);
        mounts = NULL;
    }
    json_t *c =
        sidecar(p, (struct sidecar_parts){
                       "nvidia-peermem-ctr", t->image, d->pull_policy,
                       json_pack("[s]", "nvidia-driver"), json_pack("[s]", "reload_nvidia_peermem"),
                       mounts, sidecar_probe("nvidia-driver probe_nvidia_peermem", 10, 10, 120)});
    json_t *e = p->driver.host_mofed ? json_pack("[o]", env("USE_HOST_MOFED", "true")) : NULL;
    if (c && ((p->driver.host_mofed && !e) || put_list(c, "env", e, false))) {
        json_decref(e);
        json_decref(c);
        return NULL;
    }
    json_decref(e);
    if (c && json_object_set_new(c, "livenessProbe",
                                 sidecar_probe("nvidia-driver probe_nvidia_peermem", 30, 30, 1))) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* nvidia-fs-ctr and nvidia-gdrcopy-ctr: their image (the node's OS tag
 * appended as to the driver's), installing their module once the driver's
 * is loaded; spec.<gds|gdrcopy>.env, secretEnv, repoConfig and certConfig
 * as the driver's. */
static json_t *module_ctr(const struct gpuop_policy *p, const struct tmpl *t,
                          const struct gpuop_driver_sidecar *sc, const char *name,
                          const char *installer, const char *module)
{
    char image[GPUOP_RENDER_IMAGE_MAX], script[256], probe[64];
    snprintf(image, sizeof(image), "%s%s%s", sc->image, sc->os_tag && t->pool ? "-" : "",
             sc->os_tag && t->pool ? t->pool->tag : "");
    snprintf(script, sizeof(script), SIDECAR_WAIT "%s install", installer);
    snprintf(probe, sizeof(probe), "lsmod | grep %s", module);
    json_t *mounts = sidecar_mounts("HostToContainer");
    if (mounts && extend(mounts, repo_cert_mounts(p, t->pool))) {
        json_decref(mounts);
        mounts = NULL;
    }
    json_t *c = sidecar(p, (struct sidecar_parts){name, image, sc->pull_policy,
                                                  json_pack("[s,s]", "bash", "-xc"),
                                                  json_pack("[s]", script), mounts,
                                                  sidecar_probe(probe, 10, 10, 120)});
    json_t *from = secret_env_from(p); /* NULL without secretEnv: an empty list */
    if (c && ((p->driver.secret_env && !from) || put_list(c, "env", sc->env, true) ||
              put_list(c, "envFrom", from, false))) {
        json_decref(from);
        goto oom;
    }
    json_decref(from);
    return c;
oom:
    json_decref(c);
    return NULL;
}

/* A precompiled driver on SUSE (sles, sl-micro) reads the host's
 * /lib/modules at runtime: NVIDIA's transformDriverContainer mounts it
 * read-only at /run/host/lib/modules (volume lib-modules, a host
 * Directory) for those OSes alone. 0 or -1 (out of memory). */
static int precompiled_host_modules(const struct gpuop_policy *p, struct tmpl *t)
{
    const struct gpuop_ospool *pool = t->pool;
    if (!p->driver.precompiled || !pool || !pool->kernel[0] ||
        (strcmp(pool->id, "sles") && strcmp(pool->id, "sl-micro")))
        return 0;
    if (!t->volumes && !(t->volumes = json_array()))
        return -1;
    if (json_array_append_new(t->mounts, mount(VOL_LIB_MODULES, LIB_MODULES_CTR, RO, NULL)))
        return -1;
    return json_array_append_new(t->volumes,
                                 hostpath(VOL_LIB_MODULES, LIB_MODULES_HOST, "Directory"));
}

/* The driver container's env, mounts, volumes and envFrom for the policy's
 * options, and its sidecars, in the order NVIDIA's transforms add them. */
static void driver_options(const struct gpuop_policy *p, struct tmpl *t)
{
    const struct gpuop_driver_opts *o = &p->driver;
    static const char *const licensing_keys[] = {"gridd.conf", "client_configuration_token.tok"};
    json_t *e = need(t, json_array());
    int rc = !e;
    /* env: KERNEL_MODULE_TYPE (and OPEN_KERNEL_MODULES_ENABLED for older
       images), then what the sidecars and RDMA need the build to know */
    if (!rc && o->kernel_module_type)
        rc |= json_array_append_new(e, env("KERNEL_MODULE_TYPE", o->kernel_module_type));
    if (!rc && o->kernel_module_type && !strcmp(o->kernel_module_type, "open"))
        rc |= json_array_append_new(e, env("OPEN_KERNEL_MODULES_ENABLED", "true"));
    if (!rc && o->gdrcopy.enabled)
        rc |= json_array_append_new(e, env("GDRCOPY_ENABLED", "true"));
    if (!rc && o->gds.enabled)
        rc |= json_array_append_new(e, env("GDS_ENABLED", "true"));
    if (!rc && o->rdma)
        rc |= json_array_append_new(e, env("GPU_DIRECT_RDMA_ENABLED", "true"));
    if (!rc && o->rdma && o->host_mofed)
        rc |= json_array_append_new(e, env("USE_HOST_MOFED", "true"));
    if (!rc && json_array_size(e)) /* after the template's NODE_NAME, NODE_IP */
        rc |= t->env ? extend(t->env, json_incref(e)) : !(t->env = json_incref(e));
    json_decref(e);
    /* licensing: gridd.conf, and the NLS client token, from a Secret or
       (deprecated) a ConfigMap */
    const char *lic = o->licensing_secret ? o->licensing_secret : o->licensing_config_map;
    if (!rc && lic) {
        size_t nkeys = o->nls ? 2 : 1;
        rc |= json_array_append_new(t->mounts,
                                    mount_key(VOL_LICENSING, DRIVERS_DIR, licensing_keys[0]));
        if (!rc && o->nls)
            rc |= json_array_append_new(t->mounts,
                                        mount_key(VOL_LICENSING, NLS_TOKEN_DIR, licensing_keys[1]));
        if (!rc)
            add_object_volume(t, VOL_LICENSING, lic, o->licensing_secret != NULL,
                              key_items(licensing_keys, nkeys), false);
    }
    /* kernel module parameters: the files the image reads, each optional */
    if (!rc && o->kernel_module_config) {
        rc |= extend(t->mounts, module_conf_mounts(p));
        if (!rc)
            add_object_volume(t, VOL_MODULE_CONF, o->kernel_module_config, false,
                              key_items(module_conf_keys, NROWS(module_conf_keys)), true);
    }
    if (!rc)
        rc |= precompiled_host_modules(p, t);
    /* package repositories and CA certificates, at the node's OS's paths */
    if (!rc)
        rc |= extend(t->mounts, repo_cert_mounts(p, t->pool));
    if (!rc && o->repo_config && os_path(t->pool, false))
        add_object_volume(t, VOL_REPO_CONF, o->repo_config, false, NULL, false);
    if (!rc && o->cert_config && os_path(t->pool, true))
        add_object_volume(t, VOL_CERT_CONF, o->cert_config, false, NULL, false);
    if (!rc && o->secret_env)
        t->env_from = need(t, secret_env_from(p));
    /* the sidecars, in NVIDIA's order */
    if (!rc && (o->rdma || o->gds.enabled || o->gdrcopy.enabled))
        t->sidecars = need(t, json_array());
    if (!rc && t->sidecars && o->rdma)
        rc |= json_array_append_new(t->sidecars, peermem_ctr(p, t));
    if (!rc && t->sidecars && o->gds.enabled)
        rc |= json_array_append_new(t->sidecars, module_ctr(p, t, &o->gds, "nvidia-fs-ctr",
                                                            "nvidia-gds-driver", "nvidia_fs"));
    if (!rc && t->sidecars && o->gdrcopy.enabled)
        rc |= json_array_append_new(t->sidecars, module_ctr(p, t, &o->gdrcopy, "nvidia-gdrcopy-ctr",
                                                            "nvidia-gdrcopy-driver", "gdrdrv"));
    if (rc)
        t->oom = true;
}

/* Splits host path into its directory (dir, size len) and base name; false
 * when it is not an absolute path with both. */
static bool split_path(const char *path, char *dir, size_t len, const char **base)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!path || path[0] != '/' || !slash || !slash[1] || strlen(path) >= len)
        return false;
    size_t n = (size_t)(slash - path);
    snprintf(dir, len, "%.*s", (int)(n ? n : 1), path);
    *base = slash + 1;
    return true;
}

/* One host file the toolkit edits (a runtime's config, drop-in or socket):
 * its host path, directory and base name, the container's path, and the
 * volume that mounts the directory. */
struct runtime_file {
    const char *host;
    const char *base;
    char dir[RUNTIME_PATH_MAX];
    char ctr[RUNTIME_PATH_MAX];
    char vol[RUNTIME_VOL_MAX];
};

/* Fills f from the policy's env env1 (else env2, when not NULL) or dflt,
 * seen in the container under ctr_dir, mounted by volume <runtime>-suffix;
 * a value that is no absolute file path is the default (validate.c's env
 * checks say what the policy holds). */
static void runtime_file(const struct gpuop_policy *p, const char *env1, const char *env2,
                         const char *dflt, const char *ctr_dir, const char *suffix,
                         struct runtime_file *f)
{
    const char *v = env1 ? policy_env(p, "container-toolkit", env1) : NULL;
    if (!v && env2)
        v = policy_env(p, "container-toolkit", env2);
    f->host = v;
    if (!split_path(f->host, f->dir, sizeof(f->dir), &f->base))
        split_path(f->host = dflt, f->dir, sizeof(f->dir), &f->base);
    snprintf(f->ctr, sizeof(f->ctr), "%s%s", ctr_dir, f->base);
    snprintf(f->vol, sizeof(f->vol), "%s%s", gpuop_policy_runtime_name(p->runtime), suffix);
}

/* Appends (name, value) to list; nonzero on failure. */
static int env_add(json_t *list, const char *name, const char *value)
{
    return !list || json_array_append_new(list, env(name, value));
}

/* container-toolkit: installs the NVIDIA runtime under /usr/local/nvidia
 * and configures the node's runtime (spec.operator.defaultRuntime) with an
 * "nvidia" handler (and nvidia-cdi, nvidia-legacy): containerd's drop-in
 * (99-nvidia.toml in conf.d, imported from the top-level config), CRI-O's
 * (99-nvidia.conf in crio.conf.d) or Docker's daemon.json. In CDI mode
 * (the GPU Operator's default) it generates the CDI specs and leaves the
 * runtime's default alone: GPU pods get their devices through CDI, the GPU
 * operands through the RuntimeClass gpuop applies. In the legacy mode
 * (spec.cdi.enabled false) "nvidia" becomes the default runtime (the
 * installer's default), and on CRI-O the toolkit installs an OCI prestart
 * hook instead (CRIO_CONFIG_MODE=hook). In NRI mode it edits no runtime
 * config and runs an NRI plugin on the runtime's NRI socket. It first runs
 * the validator's driver-validation (writing driver-ready), then takes the
 * node's driver root from driver-ready. The host paths come from the
 * policy's env as the GPU Operator reads them (k3s, RKE2: see
 * deploy/sample-gpupolicy.yaml); their directories are mounted and the
 * container sees them at fixed paths (gpu-operator v26.7.0
 * controllers/object_controls.go, TransformToolkit,
 * transformToolkitCtrForCDI, transformForRuntime). */
/* The host files the toolkit edits for the policy's runtime (NRI mode:
 * the NRI socket alone), as runtime_file reads them. */
struct toolkit_files {
    const struct runtime_files *rf;
    bool has_dropin, has_sock;
    struct runtime_file cfg, dropin, sock, nri;
};

static void toolkit_files(const struct gpuop_policy *p, struct toolkit_files *f)
{
    const struct runtime_files *rf = f->rf = &runtime_files[p->runtime];
    f->has_dropin = rf->dropin && !p->nri_plugin;
    f->has_sock = rf->socket && !p->nri_plugin;
    runtime_file(p, rf->config_env, "RUNTIME_CONFIG", rf->config, RUNTIME_CONFIG_CTR_DIR, "-config",
                 &f->cfg);
    if (f->has_dropin)
        runtime_file(p, "RUNTIME_DROP_IN_CONFIG", NULL, rf->dropin, RUNTIME_DROPIN_CTR_DIR,
                     "-drop-in-config", &f->dropin);
    if (f->has_sock)
        runtime_file(p, rf->socket_env, NULL, rf->socket, RUNTIME_SOCKET_CTR_DIR, "-socket",
                     &f->sock);
    runtime_file(p, "NRI_SOCKET", NULL, NRI_SOCKET_DEFAULT, NRI_SOCKET_CTR_DIR, "", &f->nri);
}

/* New: the container's view of the host files, in the template's order (set
 * again over the policy's values, which name host paths); NULL on ENOMEM. */
static json_t *toolkit_paths_env(const struct gpuop_policy *p, const struct toolkit_files *f)
{
    json_t *l = json_array();
    int bad = 0;
    if (p->nri_plugin) {
        bad |= env_add(l, "NRI_SOCKET", f->nri.ctr);
    } else {
        bad |= env_add(l, f->rf->config_env, f->cfg.ctr);
        bad |= env_add(l, "RUNTIME_CONFIG", f->cfg.ctr);
    }
    if (f->has_dropin) {
        bad |= env_add(l, "RUNTIME_DROP_IN_CONFIG", f->dropin.ctr);
        bad |= env_add(l, "RUNTIME_DROP_IN_CONFIG_HOST_PATH", f->dropin.host);
    }
    if (f->has_sock) {
        bad |= env_add(l, f->rf->socket_env, f->sock.ctr);
        bad |= env_add(l, "RUNTIME_SOCKET", f->sock.ctr);
    }
    if (bad) {
        json_decref(l);
        return NULL;
    }
    return l;
}

/* New: the toolkit's own env for the runtime and the CDI mode (gpu-operator
 * v26.7.0 assets/state-container-toolkit/0500_daemonset.yaml,
 * TransformToolkit, transformToolkitCtrForCDI, transformForRuntime); NULL
 * on ENOMEM. */
static json_t *toolkit_env(const struct gpuop_policy *p)
{
    json_t *l = json_array();
    int bad = env_add(l, "ROOT", install_dir(p));
    bad |= env_add(l, "RUNTIME", gpuop_policy_runtime_name(p->runtime));
    if (p->runtime == GPUOP_RUNTIME_CONTAINERD && !p->nri_plugin)
        bad |= env_add(l, "CONTAINERD_RUNTIME_CLASS", runtime_class(p));
    if (cdi(p)) {
        bad |= env_add(l, "CDI_ENABLED", "true");
        bad |= env_add(l, "NVIDIA_RUNTIME_SET_AS_DEFAULT", "false");
        bad |= env_add(l, "NVIDIA_CONTAINER_RUNTIME_MODE", "cdi");
    }
    bad |= env_add(l, "NVIDIA_CONTAINER_RUNTIME_MODES_CDI_DEFAULT_KIND", CDI_DEFAULT_KIND);
    if (cdi(p))
        bad |= env_add(l, "CRIO_CONFIG_MODE", "config");
    else if (p->runtime == GPUOP_RUNTIME_CRIO)
        bad |= env_add(l, "CRIO_CONFIG_MODE", "hook");
    if (p->nri_plugin)
        bad |= env_add(l, "ENABLE_NRI_PLUGIN", "true");
    bad |= env_add(l, "NVIDIA_VISIBLE_DEVICES", "void");
    bad |= env_add(l, "TOOLKIT_PID_FILE", "/run/nvidia/toolkit/toolkit.pid");
    bad |= !l || json_array_append_new(l, env_field("NRI_NAMESPACE", "metadata.namespace"));
    if (bad) {
        json_decref(l);
        return NULL;
    }
    return l;
}

/* The toolkit's volumes: its own, then CRI-O's hooks directory (the hook
 * mode's; mounted in both modes, as NVIDIA's), then the runtime's files'
 * directories or, in NRI mode, the NRI socket's. */
static void toolkit_vols(const struct gpuop_policy *p, struct tmpl *t,
                         const struct toolkit_files *f)
{
    struct vol vols[] = {
        {"toolkit-root", "/run/nvidia/toolkit", DIR_OR_CREATE, "/run/nvidia/toolkit", RW, NULL,
         NULL},
        {"run-nvidia-validations", VALIDATIONS, DIR_OR_CREATE, VALIDATIONS, RW, NULL, NULL},
        {"toolkit-install-dir", install_dir(p), DIR_OR_CREATE, install_dir(p), RW, NULL, NULL},
        {"driver-install-dir", driver_dir(p), DIR_OR_CREATE, "/driver-root", RW, "HostToContainer",
         NULL},
        {"host-root", host_root(p), NULL, "/host", RO, "HostToContainer", NULL},
        {"cdi-root", "/var/run/cdi", DIR_OR_CREATE, "/var/run/cdi", RW, NULL, NULL},
        {0},
        {0},
        {0},
        {0},
    };
    size_t n = 6;
    if (p->runtime == GPUOP_RUNTIME_CRIO)
        vols[n++] =
            (struct vol){"crio-hooks", CRIO_HOOKS_DIR, NULL, CRIO_HOOKS_DIR, RW, NULL, NULL};
    if (p->nri_plugin)
        vols[n++] = (struct vol){"nri-socket", f->nri.dir, DIR_OR_CREATE, NRI_SOCKET_CTR_DIR,
                                 RW,           NULL,       NULL};
    else
        vols[n++] = (struct vol){f->cfg.vol, f->cfg.dir, DIR_OR_CREATE, RUNTIME_CONFIG_CTR_DIR,
                                 RW,         NULL,       NULL};
    if (f->has_dropin)
        vols[n++] = (struct vol){
            f->dropin.vol, f->dropin.dir, DIR_OR_CREATE, RUNTIME_DROPIN_CTR_DIR, RW, NULL, NULL};
    if (f->has_sock)
        vols[n++] =
            (struct vol){f->sock.vol, f->sock.dir, NULL, RUNTIME_SOCKET_CTR_DIR, RW, NULL, NULL};
    vol_table(p, t, vols, n, true); /* driver-validation runs first */
}

static void tmpl_toolkit(const struct gpuop_policy *p, struct tmpl *t)
{
    struct toolkit_files f;
    toolkit_files(p, &f);
    t->container = "nvidia-container-toolkit-ctr";
    t->host_pid = true;
    t->service_account = GPUOP_TOOLKIT_SA;
    t->api_token = true; /* driver-validation asks the API */
    t->init = need(t, json_pack("[o]", driver_validation(p)));
    /* NVIDIA's toolkit entrypoint waits 5 s more before it starts, a
     * workaround for containerd 1.6.9 and later, which sent the toolkit a
     * SIGTERM shortly after it restarted containerd (gpu-operator v26.7.0
     * assets/state-container-toolkit/0400_configmap.yaml) */
    t->command = need(t, sourcing_command("nvidia-toolkit", "sleep " TOOLKIT_START_DELAY "\n"));
    t->env_after = need(t, toolkit_paths_env(p, &f));
    t->env = need(t, toolkit_env(p));
    if (t->env && t->env_after && extend(t->env, json_deep_copy(t->env_after)))
        t->oom = true;
    t->security = need(t, privileged());
    toolkit_vols(p, t, &f);
}

/* device-plugin: registers with the kubelet through its socket directory
 * and advertises nvidia.com/gpu, handing devices to GPU pods as CDI
 * devices (CDI annotations and the CRI field). Held until toolkit-ready;
 * takes the node's driver root from driver-ready. Runs in the nvidia
 * RuntimeClass (NVML injected). */
static void tmpl_device_plugin(const struct gpuop_policy *p, struct tmpl *t)
{
    char hook[CDI_HOOK_MAX], mps_shm[HOST_PATH_MAX];
    snprintf(mps_shm, sizeof(mps_shm), "%s/shm", mps_root(p));
    const char *mig = mig_strategy(p, "device-plugin");
    t->container = "nvidia-device-plugin";
    gpu_access(p, t, t->container);
    if (toolkit_ready_written(p))
        t->init = need(t, json_pack("[o]", gate(p, "toolkit-validation", TOOLKIT_READY)));
    if (driver_ready_written(p))
        t->command = need(t, sourcing_command("nvidia-device-plugin", NULL));
    else
        t->command = need(t, json_pack("[s]", "nvidia-device-plugin"));
    /* the legacy mode: NVIDIA_VISIBLE_DEVICES (envvar) read by the runtime's
     * hook; CDI mode: CDI devices (gpu-operator v26.7.0
     * assets/state-device-plugin/0500_daemonset.yaml, transformDevicePluginCtrForCDI) */
    t->env = need(t, json_array());
    int bad = env_add(t->env, "PASS_DEVICE_SPECS", "true");
    bad |= env_add(t->env, "FAIL_ON_INIT_ERROR", "true");
    bad |= env_add(t->env, "DEVICE_LIST_STRATEGY", cdi(p) ? "cdi-annotations,cdi-cri" : "envvar");
    bad |= env_add(t->env, "DEVICE_ID_STRATEGY", "uuid");
    if (cdi(p)) {
        bad |= env_add(t->env, "CDI_ENABLED", "true");
        bad |= env_add(t->env, "CDI_ANNOTATION_PREFIX", "cdi.k8s.io/");
    }
    bad |= env_add(t->env, "NVIDIA_VISIBLE_DEVICES", "all");
    bad |= env_add(t->env, "NVIDIA_DRIVER_CAPABILITIES", "all");
    bad |= env_add(t->env, "MPS_ROOT", mps_root(p)); /* the host's: the daemon's pipes */
    bad |= env_add(t->env, "MIG_STRATEGY", mig);
    if (strcmp(mig, "none"))
        bad |= env_add(t->env, "NVIDIA_MIG_MONITOR_DEVICES", "all");
    /* the devices of GPUDirect Storage (/dev/nvidia-fs*, /dev/infiniband)
       and GDRCopy (/dev/gdrdrv) into GPU pods (TransformDevicePlugin) */
    if (p->driver.gds.enabled) {
        bad |= env_add(t->env, "GDS_ENABLED", "true");
        bad |= env_add(t->env, "MOFED_ENABLED", "true");
    }
    if (p->driver.gdrcopy.enabled)
        bad |= env_add(t->env, "GDRCOPY_ENABLED", "true");
    if (cdi(p) && enabled(p, "container-toolkit"))
        bad |= env_add(t->env, "NVIDIA_CDI_HOOK_PATH", cdi_hook(p, hook));
    if (bad)
        t->oom = true;
    if (t->env && !driver_ready_written(p) &&
        extend(t->env, json_pack("[o,o]", env("NVIDIA_DRIVER_ROOT", driver_root(p)),
                                 env("DRIVER_ROOT_CTR_PATH", driver_root_ctr(p)))))
        t->oom = true;
    t->security = need(t, plugin_security(mig));
    const struct vol vols[] = {
        {"device-plugin", KUBELET_DEVICE_PLUGINS, NULL, KUBELET_DEVICE_PLUGINS, RW, NULL, NULL},
        {"run-nvidia-validations", VALIDATIONS, DIR_OR_CREATE, VALIDATIONS, RW, NULL, NULL},
        {"driver-install-dir", driver_dir(p), DIR_OR_CREATE, "/driver-root", RW, "HostToContainer",
         NULL},
        {"host-root", host_root(p), NULL, "/host", RO, "HostToContainer", NULL},
        {"cdi-root", "/var/run/cdi", DIR_OR_CREATE, "/var/run/cdi", RW, NULL, NULL},
        /* the MPS daemon's /dev/shm, for its health checks, and its root */
        {"mps-shm", mps_shm, NULL, "/dev/shm", RW, NULL, NULL},
        {"mps-root", mps_root(p), DIR_OR_CREATE, MPS_ROOT_CTR, RW, NULL, NULL},
    };
    vol_table(p, t, vols, NROWS(vols), false);
}

/* The MPS control daemon (spec.devicePlugin: the table's follows), as the
 * GPU Operator v26.7.0 renders it (assets/state-mps-control-daemon/
 * 0400_daemonset.yaml, TransformMPSControlDaemon): the device plugin's
 * image; held until toolkit-ready; mps-control-daemon-mounts mounts its
 * shm under the root (Bidirectional, so the host and the device plugin
 * see it); hostPID; MIG_STRATEGY (applyMIGConfiguration); the nvidia
 * RuntimeClass. With spec.devicePlugin.config, config-manager beside it
 * (plugin_config) signals /usr/bin/mps-control-daemon. */
static void tmpl_mps(const struct gpuop_policy *p, struct tmpl *t)
{
    const struct gpuop_operand_spec *o = &p->operands[idx_of("mps-control-daemon")];
    t->container = "mps-control-daemon-ctr";
    gpu_access(p, t, t->container);
    t->host_pid = true;
    t->init = need(t, json_array());
    if (t->init && toolkit_ready_written(p) &&
        json_array_append_new(t->init, gate(p, "toolkit-validation", TOOLKIT_READY)))
        t->oom = true;
    json_t *mounts = json_pack(
        "{s:s, s:s, s:s, s:[s,s], s:o, s:o*, s:[{s:s, s:s, s:s}]}", "name",
        "mps-control-daemon-mounts", "image", o->image, "imagePullPolicy", o->pull_policy,
        "command", "mps-control-daemon", "mount-shm", "securityContext", privileged(), "resources",
        o->resources ? json_deep_copy(o->resources) : NULL, "volumeMounts", "name", "mps-root",
        "mountPath", MPS_ROOT_CTR, "mountPropagation", "Bidirectional");
    if (t->init && json_array_append_new(t->init, mounts))
        t->oom = true;
    t->command = need(t, json_pack("[s]", "mps-control-daemon"));
    t->env = need(t, json_pack("[o,o,o,o]", env_field("NODE_NAME", "spec.nodeName"),
                               env("NVIDIA_VISIBLE_DEVICES", "all"),
                               env("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
                               env("MIG_STRATEGY", mig_strategy(p, "device-plugin"))));
    t->security = need(t, privileged());
    char shm[HOST_PATH_MAX];
    snprintf(shm, sizeof(shm), "%s/shm", mps_root(p));
    const struct vol vols[] = {
        {"run-nvidia-validations", VALIDATIONS, DIR_OR_CREATE, NULL, RW, NULL, NULL}, /* gate's */
        {"mps-root", mps_root(p), DIR_OR_CREATE, MPS_ROOT_CTR, RW, NULL, NULL},
        {"mps-shm", shm, NULL, "/dev/shm", RW, NULL, NULL},
    };
    vol_table(p, t, vols, NROWS(vols), false);
}

/* gpu-feature-discovery: writes GPU labels as a node-feature-discovery
 * local feature file on the host; NFD turns them into node labels (not the
 * NodeFeature API, GFD's default, which would need a token and write
 * rights on nodefeatures). Held until toolkit-ready; nvidia RuntimeClass. */
static void tmpl_gfd(const struct gpuop_policy *p, struct tmpl *t)
{
    const char *mig = mig_strategy(p, "gpu-feature-discovery");
    t->container = "gpu-feature-discovery";
    gpu_access(p, t, t->container);
    if (toolkit_ready_written(p))
        t->init = need(t, json_pack("[o]", gate(p, "toolkit-validation", TOOLKIT_READY)));
    t->command = need(t, json_pack("[s]", "gpu-feature-discovery"));
    t->env = need(t, json_pack("[o,o,o,o,o,o,o,o,o]", env("GFD_SLEEP_INTERVAL", "60s"),
                               env("GFD_FAIL_ON_INIT_ERROR", "true"),
                               env("USE_NODE_FEATURE_API", "false"),
                               env_field("NAMESPACE", "metadata.namespace"),
                               env_field("NODE_NAME", "spec.nodeName"),
                               env_field("POD_NAME", "metadata.name"), env("MIG_STRATEGY", mig),
                               env("NVIDIA_VISIBLE_DEVICES", "all"),
                               env("NVIDIA_DRIVER_CAPABILITIES", "utility")));
    if (t->env && strcmp(mig, "none") &&
        json_array_append_new(t->env, env("NVIDIA_MIG_MONITOR_DEVICES", "all")))
        t->oom = true;
    t->security = need(t, plugin_security(mig));
    const struct vol vols[] = {
        {"output-dir", NFD_FEATURES_DIR, DIR_OR_CREATE, NFD_FEATURES_DIR, RW, NULL, NULL},
        {"host-sys", "/sys", "Directory", "/sys", RO, NULL, NULL},
        {"run-nvidia-validations", VALIDATIONS, DIR_OR_CREATE, NULL, RW, NULL,
         NULL}, /* the gate's */
    };
    vol_table(p, t, vols, NROWS(vols), false);
}

/* ---- spec.devicePlugin.config: the sharing configs (docs/operands.md) ---- */

/* The GPU Operator v26.7.0's (controllers/object_controls.go
 * handleDevicePluginConfig, transformConfigManagerInitContainer,
 * transformConfigManagerSidecarContainer; assets/state-device-plugin/ and
 * assets/gpu-feature-discovery/0500_daemonset.yaml): config-manager (the
 * device plugin's image, k8s-device-plugin v0.20.0 cmd/config-manager)
 * copies the ConfigMap's key that the node's label names (DEFAULT_CONFIG
 * without the label, an empty config when that is "" too) to
 * /config/config.yaml, once before the main container starts and then on
 * every change, with a SIGHUP to the main process. */
#define PLUGIN_CONFIG_LABEL    "nvidia.com/device-plugin.config"
#define PLUGIN_CONFIG_SRCDIR   "/available-configs"
#define PLUGIN_CONFIG_DIR      "/config"
#define PLUGIN_CONFIG_FILE     PLUGIN_CONFIG_DIR "/config.yaml"
#define PLUGIN_CONFIG_VOL      "config"            /* the emptyDir */
#define PLUGIN_CONFIG_VOL_ALT  "available-configs" /* when the ConfigMap's name is taken */
#define PLUGIN_CONFIG_SIGHUP   "1"
#define PLUGIN_CONFIG_FALLBACK "empty"

/* The two mounts every container of the pod gets (new): the emptyDir, then
 * the ConfigMap's volume vol (addSharedMountsForPluginConfig). */
static json_t *plugin_config_mounts(const char *vol)
{
    return json_pack("[o,o]", mount(PLUGIN_CONFIG_VOL, PLUGIN_CONFIG_DIR, false, NULL),
                     mount(vol, PLUGIN_CONFIG_SRCDIR, false, NULL));
}

/* config-manager-init (oneshot) or the config-manager sidecar (new, NULL
 * on ENOMEM) signalling process: the device plugin's image and pull
 * policy, the operand's resources (NVIDIA's apply them to every container
 * of the pod), the env of NVIDIA's template with DEFAULT_CONFIG and
 * FALLBACK_STRATEGIES set, as its setContainerEnv sets them. */
static json_t *config_manager(const struct gpuop_policy *p, int operand, const char *vol,
                              const char *process)
{
    const struct gpuop_operand_spec *dp = &p->operands[idx_of("device-plugin")];
    const json_t *res = p->operands[operand].resources;
    bool once = !process;
    json_t *envs = json_pack(
        "[o,o,o,o,o,o,o,o,o,o,o]", env("ONESHOT", once ? "true" : "false"), env("KUBECONFIG", ""),
        env_field("NODE_NAME", "spec.nodeName"), env("NODE_LABEL", PLUGIN_CONFIG_LABEL),
        env("CONFIG_FILE_SRCDIR", PLUGIN_CONFIG_SRCDIR), env("CONFIG_FILE_DST", PLUGIN_CONFIG_FILE),
        env("DEFAULT_CONFIG", p->plugin_config_default ? p->plugin_config_default : ""),
        env("SEND_SIGNAL", once ? "false" : "true"),
        env("SIGNAL", once ? "" : PLUGIN_CONFIG_SIGHUP),
        env("PROCESS_TO_SIGNAL", once ? "" : process),
        env("FALLBACK_STRATEGIES", PLUGIN_CONFIG_FALLBACK));
    json_t *c = json_pack("{s:s, s:s, s:s, s:[s], s:o, s:o*, s:o*, s:o}", "name",
                          once ? "config-manager-init" : "config-manager", "image", dp->image,
                          "imagePullPolicy", dp->pull_policy, "command", "config-manager", "env",
                          envs, "resources", res ? json_deep_copy(res) : NULL, "securityContext",
                          once ? NULL : privileged(), "volumeMounts", plugin_config_mounts(vol));
    return c;
}

/* With spec.devicePlugin.config.name, the device plugin's and GFD's pods
 * as handleDevicePluginConfig makes them: CONFIG_FILE and the two mounts in
 * the main container, the ConfigMap's volume (named as the ConfigMap, or
 * PLUGIN_CONFIG_VOL_ALT where a volume of the pod has that name already)
 * and the emptyDir, config-manager-init after the gates, the sidecar after
 * the main container, one PID namespace (the sidecar signals the main
 * process), and an account with a token that may read nodes (the label). */
static void plugin_config(const struct gpuop_policy *p, int operand, struct tmpl *t)
{
    int dp = idx_of("device-plugin");
    const char *cm = dp >= 0 ? p->operands[dp].config_name : NULL;
    bool gfd = operand == idx_of("gpu-feature-discovery");
    bool mps = operand == idx_of("mps-control-daemon");
    if (t->oom || !cm || (operand != dp && !gfd && !mps))
        return;
    const char *vol =
        has_named(t->volumes, cm) || !strcmp(cm, PLUGIN_CONFIG_VOL) ? PLUGIN_CONFIG_VOL_ALT : cm;
    if (!t->init)
        t->init = need(t, json_array());
    if (!t->sidecars)
        t->sidecars = need(t, json_array());
    if (!t->env)
        t->env = need(t, json_array());
    if (!t->mounts)
        t->mounts = need(t, json_array());
    if (!t->volumes)
        t->volumes = need(t, json_array());
    if (t->oom || env_add(t->env, "CONFIG_FILE", PLUGIN_CONFIG_FILE) ||
        extend(t->mounts, plugin_config_mounts(vol)) ||
        extend(t->volumes, json_pack("[{s:s, s:{s:s}}, {s:s, s:{}}]", "name", vol, "configMap",
                                     "name", cm, "name", PLUGIN_CONFIG_VOL, "emptyDir")) ||
        json_array_append_new(t->init, config_manager(p, operand, vol, NULL)) ||
        json_array_append_new(t->sidecars, config_manager(p, operand, vol,
                                                          gfd   ? "gpu-feature-discovery"
                                                          : mps ? "/usr/bin/mps-control-daemon"
                                                                : "nvidia-device-plugin")))
        t->oom = true;
    t->share_pid = true;
    t->service_account = gfd ? GPUOP_GFD_SA : GPUOP_DEVICE_PLUGIN_SA;
    t->api_token = true;
}

/* The DCGM host engine's address as the exporter reads it
 * (DCGM_REMOTE_HOSTENGINE_INFO): the host engine's Service, whose
 * internalTrafficPolicy Local keeps it on the exporter's node. */
#define DCGM_REMOTE_ENV "DCGM_REMOTE_HOSTENGINE_INFO"
#define DCGM_ADDR_MAX   64
/* the metrics CSV of spec.dcgmExporter.config.name: the ConfigMap's key,
 * mounted at this path (the GPU Operator's MetricsConfigMountPath) */
#define DCGM_METRICS_KEY  "dcgm-metrics.csv"
#define DCGM_METRICS_PATH "/etc/dcgm-exporter/" DCGM_METRICS_KEY
#define DCGM_METRICS_VOL  "metrics-config"

/* dcgm (spec.dcgm): the standalone DCGM host engine, nv-hostengine on
 * port GPUOP_DCGM_PORT, privileged, probed by TCP there; the Service
 * GPUOP_DCGM_HOSTENGINE gpuop applies beside it takes the exporters of its
 * node to it. Held until toolkit-ready; nvidia RuntimeClass. The image's
 * own entrypoint runs (gpu-operator v26.7.0 assets/state-dcgm/0400_dcgm.yml,
 * TransformDCGM). */
static void tmpl_dcgm_hostengine(const struct gpuop_policy *p, struct tmpl *t)
{
    t->container = "nvidia-dcgm-ctr";
    gpu_access(p, t, t->container);
    t->host_network = p->dcgm_host_network;
    if (toolkit_ready_written(p))
        t->init = need(t, json_pack("[o]", gate(p, "toolkit-validation", TOOLKIT_READY)));
    t->ports = need(t, json_pack("[{s:s, s:i, s:s}]", "name", "dcgm", "containerPort",
                                 GPUOP_DCGM_PORT, "protocol", "TCP"));
    t->security = need(t, privileged());
    const struct vol vols[] = {
        {"run-nvidia-validations", VALIDATIONS, DIR_OR_CREATE, NULL, RW, NULL,
         NULL}, /* the gate's */
    };
    vol_table(p, t, vols, NROWS(vols), false);
    t->readiness = need(t, json_pack("{s:{s:i}, s:i}", "tcpSocket", "port", GPUOP_DCGM_PORT,
                                     "initialDelaySeconds", 15));
    t->liveness = need(t, json_pack("{s:{s:i}, s:i}", "tcpSocket", "port", GPUOP_DCGM_PORT,
                                    "initialDelaySeconds", 15));
}

/* Appends the metrics ConfigMap of spec.dcgmExporter.config.name (its
 * dcgm-metrics.csv as a file, subPath) to t's mounts and volumes, and
 * points DCGM_EXPORTER_COLLECTORS at it (TransformDCGMExporter). */
static void dcgm_metrics_config(struct tmpl *t, const char *name)
{
    size_t i;
    json_t *e;
    if (t->oom)
        return;
    if (json_array_append_new(t->mounts, json_pack("{s:s, s:s, s:s, s:b}", "name", DCGM_METRICS_VOL,
                                                   "mountPath", DCGM_METRICS_PATH, "subPath",
                                                   DCGM_METRICS_KEY, "readOnly", 1)) ||
        json_array_append_new(t->volumes,
                              json_pack("{s:s, s:{s:s, s:[{s:s, s:s}]}}", "name", DCGM_METRICS_VOL,
                                        "configMap", "name", name, "items", "key", DCGM_METRICS_KEY,
                                        "path", DCGM_METRICS_KEY)))
        t->oom = true;
    json_array_foreach(t->env, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "name")), "DCGM_EXPORTER_COLLECTORS") &&
            json_object_set_new(e, "value", json_string(DCGM_METRICS_PATH)))
            t->oom = true;
    }
}

/* dcgm-exporter: Prometheus metrics on :9400 (the Service gpuop applies
 * beside it), mapped to pods through the kubelet's pod-resources API;
 * profiling metrics need SYS_ADMIN. Held until toolkit-ready; nvidia
 * RuntimeClass. The image's own entrypoint runs (no command). With
 * spec.dcgm enabled it reads that host engine (DCGM_REMOTE_HOSTENGINE_INFO
 * the host engine's Service) instead of the one embedded in its image;
 * without, an address on localhost in the policy's env means a host
 * engine on the host (DGX OS): the pod joins the host's network, as the
 * GPU Operator's TransformDCGMExporter does. A metrics ConfigMap named in
 * spec.dcgmExporter.config.name is mounted and read. */
static void tmpl_dcgm(const struct gpuop_policy *p, struct tmpl *t)
{
    char pod_resources[HOST_PATH_MAX], addr[DCGM_ADDR_MAX];
    int me = idx_of("dcgm-exporter");
    const char *config = me >= 0 ? p->operands[me].config_name : NULL;
    const char *remote = policy_env(p, "dcgm-exporter", DCGM_REMOTE_ENV);
    t->container = "nvidia-dcgm-exporter";
    gpu_access(p, t, t->container);
    t->host_network = !enabled(p, "dcgm") && remote && !strncmp(remote, "localhost", 9);
    if (toolkit_ready_written(p))
        t->init = need(t, json_pack("[o]", gate(p, "toolkit-validation", TOOLKIT_READY)));
    t->env = need(
        t, json_pack("[o,o,o,o,o,o]", env("DCGM_EXPORTER_LISTEN", ":9400"),
                     env("DCGM_EXPORTER_KUBERNETES", "true"),
                     env("DCGM_EXPORTER_COLLECTORS", "/etc/dcgm-exporter/dcp-metrics-included.csv"),
                     env_field("NODE_NAME", "spec.nodeName"), env("NVIDIA_VISIBLE_DEVICES", "all"),
                     env("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")));
    snprintf(addr, sizeof(addr), "%s:%d", GPUOP_DCGM_HOSTENGINE, GPUOP_DCGM_PORT);
    if (t->env && enabled(p, "dcgm") && json_array_append_new(t->env, env(DCGM_REMOTE_ENV, addr)))
        t->oom = true;
    t->ports = need(t, json_pack("[{s:s, s:i, s:s}]", "name", "metrics", "containerPort", 9400,
                                 "protocol", "TCP"));
    t->security = need(t, json_pack("{s:b, s:i, s:{s:[s]}}", "runAsNonRoot", 0, "runAsUser", 0,
                                    "capabilities", "add", "SYS_ADMIN"));
    const struct vol vols[] = {
        {"pod-resources", under_kubelet(p, KUBELET_POD_RESOURCES, pod_resources), DIR_OR_CREATE,
         GPUOP_KUBELET_ROOT_DIR_DEFAULT KUBELET_POD_RESOURCES, RO, NULL, NULL},
        {"run-nvidia-validations", VALIDATIONS, DIR_OR_CREATE, NULL, RW, NULL,
         NULL}, /* the gate's */
    };
    vol_table(p, t, vols, NROWS(vols), false);
    if (config)
        dcgm_metrics_config(t, config);
    t->readiness =
        need(t, json_pack("{s:{s:s, s:s}, s:i, s:i}", "httpGet", "path", "/health", "port",
                          "metrics", "initialDelaySeconds", 45, "periodSeconds", 5));
    t->liveness = need(t, json_pack("{s:{s:s, s:s}, s:i, s:i, s:i}", "httpGet", "path", "/health",
                                    "port", "metrics", "initialDelaySeconds", 45, "periodSeconds",
                                    10, "failureThreshold", 6));
}

/* dra-driver (spec.draDriver): NVIDIA's DRA driver's kubelet plugin as
 * the GPU Operator v26.7.0 renders it (manifests/state-dra-driver/
 * 0500_daemonset.yaml, internal/state/dra_driver.go): held in
 * driver-validation (nvidia-validator COMPONENT=driver, WITH_WAIT=true,
 * with DRIVER_VALIDATION_SKIP_GPU_INIT and
 * DISABLE_DEV_CHAR_SYMLINK_CREATION as NVIDIA's), then the gpus container
 * (gpu-kubelet-plugin, privileged) registers with the kubelet through
 * <kubeletRootDir>/plugins_registry, serves from <kubeletRootDir>/plugins
 * (Bidirectional), writes its CDI specs to /var/run/cdi itself (no
 * toolkit, no RuntimeClass: NVIDIA_VISIBLE_DEVICES=void) and publishes its
 * node's ResourceSlices through the API (its account, with a token). The
 * PassthroughSupport gate adds /lib/modules, /sys and /proc. Compute
 * domains are not rendered (policy.c refuses them by name). */
static int cmp_str(const void *a, const void *b);

#define DRA_PLUGINS_REGISTRY "/plugins_registry"
#define DRA_PLUGINS          "/plugins"
#define DRA_CDI_ROOT         "/var/run/cdi"
#define DRA_GATES_MAX        2048
#define DRA_STARTUP_FAILURES 600 /* seconds, one probe a second: NVIDIA's */
#define DRA_LIVENESS_PERIOD  30
#define DRA_PROBE_TIMEOUT    10

static json_t *dra_validation(const struct gpuop_policy *p)
{
    json_t *c = driver_validation(p);
    json_t *e = json_object_get(c, "env");
    if (c && (!e || json_array_append_new(e, env("DRIVER_VALIDATION_SKIP_GPU_INIT", "true")) ||
              json_array_append_new(e, env("DISABLE_DEV_CHAR_SYMLINK_CREATION", "true")))) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* FEATURE_GATES of spec.draDriver.featureGates, "A=true,B=false" in sorted
 * order (NVIDIA's convertStringMapToCommaSeparatedString), into buf. */
static const char *dra_feature_gates(const struct gpuop_policy *p, char *buf, size_t n)
{
    const char *keys[GPUOP_DRA_FEATURE_GATES_MAX], *k;
    size_t nk = 0, used = 0;
    json_t *v;
    buf[0] = '\0';
    json_object_foreach(p->dra.feature_gates, k, v) if (nk < GPUOP_DRA_FEATURE_GATES_MAX)
        keys[nk++] = k;
    qsort(keys, nk, sizeof(*keys), cmp_str);
    for (size_t i = 0; i < nk && used < n; i++)
        used += (size_t)snprintf(
            buf + used, n - used, "%s%s=%s", i ? "," : "", keys[i],
            json_is_true(json_object_get(p->dra.feature_gates, keys[i])) ? "true" : "false");
    return buf;
}

static json_t *dra_probe(int port, int failures, int period)
{
    return json_pack("{s:{s:i, s:s}, s:i, s:i, s:i}", "grpc", "port", port, "service", "liveness",
                     "failureThreshold", failures, "periodSeconds", period, "timeoutSeconds",
                     DRA_PROBE_TIMEOUT);
}

static void dra_env(const struct gpuop_policy *p, struct tmpl *t, const char *registry,
                    const char *plugins)
{
    char port[16], gates[DRA_GATES_MAX];
    snprintf(port, sizeof(port), "%d", p->dra.health_port > 0 ? p->dra.health_port : -1);
    t->env = need(t, json_array());
    int bad = env_add(t->env, "HTTP_ENDPOINT", ":8080");
    bad |= env_add(t->env, "METRICS_PATH", "/metrics");
    bad |= env_add(t->env, "LOG_VERBOSITY", "4");
    bad |= env_add(t->env, "MASK_NVIDIA_DRIVER_PARAMS", "");
    bad |= env_add(t->env, "NVIDIA_VISIBLE_DEVICES", "void");
    bad |= env_add(t->env, "CDI_ROOT", DRA_CDI_ROOT);
    bad |= env_add(t->env, HOST_ROOT_ENV, "/host");
    bad |= env_add(t->env, "NVIDIA_MIG_CONFIG_DEVICES", "all");
    bad |= !t->env || json_array_append_new(t->env, env_field("NODE_NAME", "spec.nodeName")) ||
           json_array_append_new(t->env, env_field("NAMESPACE", "metadata.namespace"));
    bad |= env_add(t->env, "IMAGE_NAME", t->image);
    bad |= env_add(t->env, "KUBELET_REGISTRAR_DIRECTORY_PATH", registry);
    bad |= env_add(t->env, "KUBELET_PLUGINS_DIRECTORY_PATH", plugins);
    bad |= env_add(t->env, "HEALTHCHECK_PORT", port);
    if (json_object_size(p->dra.feature_gates))
        bad |= env_add(t->env, "FEATURE_GATES", dra_feature_gates(p, gates, sizeof(gates)));
    if (bad)
        t->oom = true;
}

static void tmpl_dra_driver(const struct gpuop_policy *p, struct tmpl *t)
{
    static const char script[] =
        "set -a\n"
        ". " DRIVER_READY "\n"
        "set +a\n"
        "if [ \"${MASK_NVIDIA_DRIVER_PARAMS}\" = \"true\" ]; then\n"
        "  cp /proc/driver/nvidia/params /root/gpu-params\n"
        "  sed -i 's/^ModifyDeviceFiles: 1$/ModifyDeviceFiles: 0/' /root/gpu-params\n"
        "  mount --bind /root/gpu-params /proc/driver/nvidia/params\n"
        "fi\n"
        "exec gpu-kubelet-plugin -v \"${LOG_VERBOSITY}\"\n";
    char registry[HOST_PATH_MAX], plugins[HOST_PATH_MAX];
    json_t *gate = json_object_get(p->dra.feature_gates, "PassthroughSupport");
    t->container = "gpus";
    t->service_account = GPUOP_DRA_DRIVER_SA;
    t->api_token = true;
    t->pull_secrets = p->dra.pull_secrets;
    t->init = need(t, json_pack("[o]", dra_validation(p)));
    t->command = need(t, json_pack("[s,s]", "bash", "-c"));
    t->args = need(t, json_pack("[s]", script));
    under_kubelet(p, DRA_PLUGINS_REGISTRY, registry);
    under_kubelet(p, DRA_PLUGINS, plugins);
    dra_env(p, t, registry, plugins);
    t->security = need(t, privileged());
    if (p->dra.health_port > 0) {
        t->startup = need(t, dra_probe(p->dra.health_port, DRA_STARTUP_FAILURES, 1));
        t->liveness = need(t, dra_probe(p->dra.health_port, 3, DRA_LIVENESS_PERIOD));
    }
    const struct vol vols[] = {
        {"plugins-registry", registry, NULL, registry, RW, NULL, NULL},
        {"plugins", plugins, NULL, plugins, RW, "Bidirectional", NULL},
        {"cdi", DRA_CDI_ROOT, NULL, DRA_CDI_ROOT, RW, NULL, NULL},
        {"run-nvidia-validations", VALIDATIONS, DIR_OR_CREATE, VALIDATIONS, RO, NULL, NULL},
        {"host-root", host_root(p), NULL, "/host", RO, "HostToContainer", NULL},
        {"driver-install-dir", driver_dir(p), DIR_OR_CREATE, "/driver-root", RW, "HostToContainer",
         NULL},
        /* the PassthroughSupport gate's: vfio-pci's variant (go-nvlib nvpassthrough) */
        {"lib-modules", "/lib/modules/", "Directory", "/lib/modules/", RO, "HostToContainer", NULL},
        {"sysfs", "/sys/", "Directory", "/sys/", RW, "Bidirectional", NULL},
        {"procfs", "/proc/", "Directory", "/proc/", RW, "Bidirectional", NULL},
    };
    vol_table(p, t, vols, json_is_true(gate) ? NROWS(vols) : NROWS(vols) - 3, true);
}

/* operator-validator: writes the validation files of its node, one init
 * container per component of nvidia-validator: driver-ready (waits for
 * the driver), toolkit-ready (nvidia-smi through the nvidia RuntimeClass),
 * plugin-ready (the node advertises GPUs; only when gpuop runs the device
 * plugin), then stays Ready; stopping it removes the *-ready files. Its
 * service account may list DaemonSets in the namespace and read nodes
 * (deploy/10-rbac.yaml). NVIDIA's cuda-validation is left out: it starts a
 * workload pod under the GPU Operator's own DaemonSet and ServiceAccount
 * names (docs/operands.md). */
static void tmpl_validator(const struct gpuop_policy *p, struct tmpl *t)
{
    static const char main_script[] = "echo 'gpuop: every validation passed'\n"
                                      "exec sleep infinity\n";
    t->container = "nvidia-operator-validator";
    gpu_access(p, t, "toolkit-validation"); /* the one that runs nvidia-smi */
    t->service_account = GPUOP_VALIDATOR_SA;
    t->api_token = true;
    t->init = need(
        t, json_pack("[o,o]", driver_validation(p),
                     validator_ctr(p, GPUOP_VALIDATOR_TOOLKIT, false,
                                   json_pack("[o]", env("NVIDIA_VISIBLE_DEVICES", "all")),
                                   json_pack("[o]", mount("run-nvidia-validations", VALIDATIONS,
                                                          false, "Bidirectional")))));
    if (t->init && enabled(p, "device-plugin") &&
        json_array_append_new(
            t->init, validator_ctr(p, GPUOP_VALIDATOR_PLUGIN, false,
                                   json_pack("[o,o,o,o]", env("WITH_WORKLOAD", "false"),
                                             env("MIG_STRATEGY", mig_strategy(p, "device-plugin")),
                                             env_field("NODE_NAME", "spec.nodeName"),
                                             env_field("OPERATOR_NAMESPACE", "metadata.namespace")),
                                   json_pack("[o]", mount("run-nvidia-validations", VALIDATIONS,
                                                          false, "Bidirectional")))))
        t->oom = true;
    t->command = need(t, json_pack("[s,s]", "sh", "-c"));
    t->args = need(t, json_pack("[s]", main_script));
    t->security = need(t, json_pack("{s:b, s:i}", "privileged", 1, "runAsUser", 0));
    t->lifecycle = need(t, json_pack("{s:{s:{s:[s,s,s]}}}", "preStop", "exec", "command", "sh",
                                     "-c", "rm -f " VALIDATIONS "/*-ready"));
    const struct vol vols[] = {
        {"run-nvidia-validations", VALIDATIONS, DIR_OR_CREATE, VALIDATIONS, RW, "Bidirectional",
         NULL},
    };
    vol_table(p, t, vols, NROWS(vols), true); /* driver-validation runs first */
}

/* mig-manager: applies the MIG layout named by the node's
 * nvidia.com/mig.config label, pausing the GPU operands on the node
 * through their deploy labels ("paused-for-mig-change") while it does. With
 * a ConfigMap named in spec.migManager.config.name it reads that
 * (CONFIG_FILE); otherwise v0.15 generates the layouts from the hardware,
 * writes them to a ConfigMap <node>-mig-config, and falls back to gpuop's
 * default ConfigMap (DEFAULT_CONFIG_FILE). So it needs the API (its own
 * service account, see deploy/10-rbac.yaml), full privileges, the host's
 * PID and IPC namespaces (it stops host GPU clients through systemd), /sys
 * and the host root. Held until toolkit-ready; the node's driver root from
 * driver-ready; nvidia RuntimeClass. */
static void tmpl_mig_manager(const struct gpuop_policy *p, struct tmpl *t)
{
    char hook[CDI_HOOK_MAX];
    int me = idx_of("mig-manager");
    const struct gpuop_operand *op = gpuop_operand_get(me);
    const char *config = me >= 0 ? p->operands[me].config_name : NULL;
    bool dflt = !config || (op->config && !strcmp(config, op->config));
    t->container = "nvidia-mig-manager";
    t->host_pid = true;
    t->host_ipc = true;
    gpu_access(p, t, t->container);
    t->service_account = GPUOP_MIG_MANAGER_SA;
    t->api_token = true;
    if (toolkit_ready_written(p))
        t->init = need(t, json_pack("[o]", gate(p, "toolkit-validation", TOOLKIT_READY)));
    if (driver_ready_written(p))
        t->command =
            need(t, sourcing_command("nvidia-mig-manager",
                                     ": \"${WITH_SHUTDOWN_HOST_GPU_CLIENTS:=$IS_HOST_DRIVER}\"\n"
                                     "export WITH_SHUTDOWN_HOST_GPU_CLIENTS\n"));
    else
        t->command = need(t, json_pack("[s]", "nvidia-mig-manager"));
    t->env = need(
        t, json_pack("[o,o,o,o,o,o,o,o,o,o,o,o]", env_field("NODE_NAME", "spec.nodeName"),
                     env_field("POD_NAME", "metadata.name"),
                     env_field("POD_NAMESPACE", "metadata.namespace"),
                     dflt ? env("DEFAULT_CONFIG_FILE", "/mig-parted-config/config-default.yaml")
                          : env("CONFIG_FILE", "/mig-parted-config/config.yaml"),
                     env("HOST_ROOT_MOUNT", "/host"), env("HOST_NVIDIA_DIR", install_dir(p)),
                     env("HOST_MIG_MANAGER_STATE_FILE",
                         "/etc/systemd/system/nvidia-mig-manager.service.d/override.conf"),
                     env("HOST_KUBELET_SYSTEMD_SERVICE", "kubelet.service"),
                     env_field("DEFAULT_GPU_CLIENTS_NAMESPACE", "metadata.namespace"),
                     env("WITH_REBOOT", "false"), env("NVIDIA_VISIBLE_DEVICES", "all"),
                     env("NVIDIA_DRIVER_CAPABILITIES", "all")));
    /* CDI mode (gpu-operator v26.7.0 TransformMIGManager) */
    if (cdi(p) && t->env &&
        json_array_insert_new(t->env, json_array_size(t->env) - 2, env("CDI_ENABLED", "true")))
        t->oom = true;
    if (cdi(p) && t->env && enabled(p, "container-toolkit") &&
        json_array_append_new(t->env, env("NVIDIA_CDI_HOOK_PATH", cdi_hook(p, hook))))
        t->oom = true;
    if (t->env && !driver_ready_written(p) &&
        extend(t->env, json_pack("[o,o,o]", env("DRIVER_ROOT", driver_root(p)),
                                 env("DRIVER_ROOT_CTR_PATH", driver_root_ctr(p)),
                                 env("WITH_SHUTDOWN_HOST_GPU_CLIENTS", "false"))))
        t->oom = true;
    t->security = need(t, privileged());
    json_t *cm =
        need(t, dflt ? json_pack("{s:s, s:[{s:s, s:s}]}", "name", config ? config : op->config,
                                 "items", "key", "config.yaml", "path", "config-default.yaml")
                     : json_pack("{s:s}", "name", config));
    const struct vol vols[] = {
        {"host-sys", "/sys", "Directory", "/sys", RW, NULL, NULL},
        {"host-root", host_root(p), NULL, "/host", RW, "HostToContainer", NULL},
        {"driver-install-dir", driver_dir(p), DIR_OR_CREATE, "/driver-root", RW, "HostToContainer",
         NULL},
        {"run-nvidia-validations", VALIDATIONS, DIR_OR_CREATE, VALIDATIONS, RW, NULL, NULL},
        {"cdi-root", "/var/run/cdi", DIR_OR_CREATE, "/var/run/cdi", RW, NULL, NULL},
        {"mig-parted-config", NULL, NULL, "/mig-parted-config", RO, NULL, cm},
    };
    if (cm)
        vol_table(p, t, vols, NROWS(vols), false);
    json_decref(cm);
}

/* The name of the env entry or volume e (borrowed), "" when it has none. */
static const char *name_of(json_t *e)
{
    const char *n = json_string_value(json_object_get(e, "name"));
    return n ? n : "";
}

static bool has_named(json_t *arr, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (!strcmp(name_of(e), name))
            return true;
    }
    return false;
}

/* Appends HOST_ROOT=value to list (borrowed) unless it names HOST_ROOT
 * already; nonzero on failure. */
static int add_host_root(json_t *list, const char *value)
{
    return has_named(list, HOST_ROOT_ENV) ? 0
                                          : json_array_append_new(list, env(HOST_ROOT_ENV, value));
}

/* spec.hostPaths.rootFS other than "/": every container of a pod that mounts
 * the host root learns where it is, HOST_ROOT (the GPU Operator's
 * transformHostRootVolume: every init and main container of a DaemonSet
 * with a host-root volume). Set before the policy's env, which may
 * override it, as the GPU Operator's per-operand env does. */
static void host_root_env(const struct gpuop_policy *p, struct tmpl *t)
{
    size_t i;
    json_t *c;
    if (t->oom || !custom_host_root(p) || !has_named(t->volumes, "host-root"))
        return;
    if (!t->env)
        t->env = need(t, json_array());
    if (t->env && add_host_root(t->env, host_root(p)))
        t->oom = true;
    json_array_foreach(t->init, i, c)
    {
        json_t *e = json_object_get(c, "env");
        if (!e && json_object_set_new(c, "env", e = json_array()))
            e = NULL;
        if (!e || add_host_root(e, host_root(p)))
            t->oom = true;
    }
}

static const struct {
    const char *operand; /* operand name (table column "name") */
    void (*fn)(const struct gpuop_policy *p, struct tmpl *t);
} templates[] = {
    {"driver", tmpl_driver},
    {"container-toolkit", tmpl_toolkit},
    {"device-plugin", tmpl_device_plugin},
    {"gpu-feature-discovery", tmpl_gfd},
    {"dcgm", tmpl_dcgm_hostengine},
    {"dcgm-exporter", tmpl_dcgm},
    {"operator-validator", tmpl_validator},
    {"mig-manager", tmpl_mig_manager},
    {"dra-driver", tmpl_dra_driver},
    {"mps-control-daemon", tmpl_mps},
};

/* ---- assembly ------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Copies every key of src (borrowed) into dst in sorted key order. */
static int merge_sorted(json_t *dst, json_t *src)
{
    size_t n = json_object_size(src), i = 0;
    const char *key;
    json_t *v;
    if (n == 0)
        return 0;
    const char **keys = malloc(n * sizeof(*keys));
    if (!keys)
        return GPUOP_ENOMEM;
    json_object_foreach(src, key, v)
    {
        keys[i++] = key;
    }
    qsort(keys, n, sizeof(*keys), cmp_str);
    int rc = 0;
    for (i = 0; i < n && !rc; i++)
        if (json_object_set(dst, keys[i], json_object_get(src, keys[i])))
            rc = GPUOP_ENOMEM;
    free(keys);
    return rc;
}

/* Policy names may be longer than a label value allows. */
static bool label_value_ok(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > 63)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool an = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!an && ((i == 0 || i == len - 1) || (c != '-' && c != '_' && c != '.')))
            return false;
    }
    return true;
}

/* The kernel of a precompiled driver's pool (borrowed), or NULL: pool is
 * only given for the per-OS operand, the driver. */
static const char *kernel_of(const struct gpuop_policy *p, const struct gpuop_ospool *pool)
{
    return pool && p->driver.precompiled && pool->kernel[0] ? pool->kernel : NULL;
}

/* The driver pool of pool (borrowed), or NULL: none, or the default. */
static const char *dpool_of(const struct gpuop_ospool *pool)
{
    return pool && pool->dpool[0] ? pool->dpool : NULL;
}

/* New: the app.kubernetes.io labels of op, NVIDIA's "app" label (MIG
 * Manager and NVIDIA's tools select the operand pods by it), then the
 * policy's labels. */
static json_t *labels(const struct gpuop_policy *p, const struct gpuop_operand *op,
                      const struct gpuop_ospool *pool)
{
    const char *inst = (p->name && label_value_ok(p->name)) ? p->name : NULL;
    const char *kernel = kernel_of(p, pool);
    json_t *l = json_pack(
        "{s:s, s:s*, s:s, s:s, s:s, s:s*, s:s*, s:s*, s:s*, s:s*}", GPUOP_LABEL_NAME, op->name,
        GPUOP_LABEL_INSTANCE, inst, GPUOP_LABEL_COMPONENT, op->name, GPUOP_LABEL_MANAGED_BY,
        GPUOP_MANAGER, GPUOP_LABEL_PART_OF, GPUOP_MANAGER, GPUOP_LABEL_APP, op->app,
        GPUOP_LABEL_OS_POOL, pool ? pool->tag : NULL, GPUOP_LABEL_KERNEL_POOL, kernel,
        GPUOP_LABEL_PRECOMPILED, kernel ? "true" : NULL, GPUOP_LABEL_DRIVER_POOL, dpool_of(pool));
    if (l && merge_sorted(l, p->labels)) {
        json_decref(l);
        return NULL;
    }
    return l;
}

/* New: the policy's annotations sorted, or NULL when there are none (check
 * json_object_size first to tell that from out-of-memory). */
static json_t *annotations(const struct gpuop_policy *p)
{
    json_t *a = json_object();
    if (a && merge_sorted(a, p->annotations)) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* New: the template's env with the policy's env merged in by name. */
static json_t *merge_env(json_t *base, json_t *extra)
{
    json_t *out = base ? json_deep_copy(base) : json_array();
    size_t i, j;
    json_t *e, *b;
    if (!out)
        return NULL;
    json_array_foreach(extra, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        bool replaced = false;
        json_array_foreach(out, j, b)
        {
            if (!strcmp(json_string_value(json_object_get(b, "name")), name)) {
                if (json_array_set_new(out, j, json_deep_copy(e)))
                    goto oom;
                replaced = true;
                break;
            }
        }
        if (!replaced && json_array_append_new(out, json_deep_copy(e)))
            goto oom;
    }
    return out;
oom:
    json_decref(out);
    return NULL;
}

/* Sets key to v (steals) unless v is NULL; returns nonzero on failure. */
static int put(json_t *obj, const char *key, json_t *v)
{
    return v ? json_object_set_new(obj, key, v) : 0;
}

/* Sets list key of obj to src (borrowed; NULL or empty: an empty list,
 * written all the same, see the top comment): a deep copy when copy is
 * set (the policy's), else shared (a template's, released with it).
 * Returns nonzero on ENOMEM. */
static int put_list(json_t *obj, const char *key, json_t *src, bool copy)
{
    json_t *v = !json_array_size(src) ? json_array()
                : copy                ? json_deep_copy(src)
                                      : json_incref(src);
    return !v || json_object_set_new(obj, key, v);
}

static json_t *container(const struct gpuop_policy *p, int idx, const struct tmpl *t,
                         const char *image)
{
    const struct gpuop_operand_spec *o = &p->operands[idx];
    json_t *args = json_array_size(o->args) ? o->args : t->args;
    json_t *env_pol = merge_env(t->env, o->env);
    json_t *env_all = env_pol ? merge_env(env_pol, t->env_after) : NULL;
    json_decref(env_pol);
    json_t *c = json_pack("{s:s, s:s, s:s}", "name", t->container, "image", image,
                          "imagePullPolicy", o->pull_policy);
    int rc = !c || !env_all;
    if (!rc)
        rc |= put_list(c, "command", t->command, false);
    if (!rc)
        rc |= put_list(c, "args", args, true);
    if (!rc)
        rc |= put_list(c, "env", env_all, false);
    if (!rc)
        rc |= put_list(c, "envFrom", t->env_from, false);
    if (!rc)
        rc |= put_list(c, "ports", t->ports, false);
    if (!rc && o->resources)
        rc |= put(c, "resources", json_deep_copy(o->resources)) || !json_object_get(c, "resources");
    if (!rc && t->security)
        rc |= json_object_set(c, "securityContext", t->security);
    if (!rc)
        rc |= put_list(c, "volumeMounts", t->mounts, false);
    if (!rc && t->startup)
        rc |= json_object_set(c, "startupProbe", t->startup);
    if (!rc && t->readiness)
        rc |= json_object_set(c, "readinessProbe", t->readiness);
    if (!rc && t->liveness)
        rc |= json_object_set(c, "livenessProbe", t->liveness);
    if (!rc && t->lifecycle)
        rc |= json_object_set(c, "lifecycle", t->lifecycle);
    json_decref(env_all);
    if (rc) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* New: the default driver pool's expression, its nodes those not
 * labelled GPUOP_LABEL_DRIVER_POOL with a pool's name (NotIn: a node
 * without the label, or with a value naming no pool, is the default's).
 * A draining pool's name follows the policy's: its nodes still run its
 * driver, and a second driver must not start beside it. */
static json_t *default_pool_expr(const struct gpuop_policy *p)
{
    json_t *names = json_array();
    for (int k = 0; names && k < p->ndriver_pools + p->ndraining_pools; k++)
        if (json_array_append_new(names,
                                  json_string(k < p->ndriver_pools
                                                  ? p->driver_pools[k].name
                                                  : p->draining_pools[k - p->ndriver_pools]))) {
            json_decref(names);
            names = NULL;
        }
    return names ? json_pack("{s:s, s:s, s:o}", "key", GPUOP_LABEL_DRIVER_POOL, "operator", "NotIn",
                             "values", names)
                 : NULL;
}

/* The required node affinity of every operand: one term whose first
 * expression is the node-wide opt-out, nvidia.com/gpu.deploy.operands NotIn
 * [false] (SPEC section 4.2: the GPU Operator's documented way to take a
 * whole node out; the DaemonSet controller removes the pods when the label
 * appears and brings them back when it goes; a node without the label
 * qualifies). With spec.ordering: enforce the same term also requires every
 * prerequisite up the operand's chain that the policy runs: its deploy label
 * must be "true" (gpuop runs it there) or host-provided: "false" (a person
 * says so) or "pre-installed" (NVIDIA's driver container found it). A
 * prerequisite disabled in the policy is host-provided everywhere and adds no
 * expression; the walk goes on above it. So a node without its toolkit label
 * gets no device plugin, and loses it when the label goes. The driver's
 * DaemonSets also keep off a node labelled GPUOP_LABEL_DRIVER_ROLLBACK,
 * where a failed upgrade's rollback runs the previous driver
 * (docs/upgrade.md); with driver pools, the default pool's keep off the
 * pools' nodes (default_pool_expr). Expressions of one term are ANDed.
 * Returns nonzero on ENOMEM. */
static int put_affinity(json_t *spec, const struct gpuop_policy *p, int idx,
                        const struct gpuop_ospool *pool)
{
    char key[128];
    json_t *exprs = json_pack("[{s:s, s:s, s:[s]}]", "key", GPUOP_LABEL_OPERANDS, "operator",
                              "NotIn", "values", "false");
    int rc = !exprs;
    if (!rc && idx == gpuop_operand_by_key("driver"))
        rc |=
            json_array_append_new(exprs, json_pack("{s:s, s:s}", "key", GPUOP_LABEL_DRIVER_ROLLBACK,
                                                   "operator", "DoesNotExist"));
    if (!rc && pool && !pool->dpool[0] && p->ndriver_pools + p->ndraining_pools > 0)
        rc |= json_array_append_new(exprs, default_pool_expr(p));
    for (int c = gpuop_policy_prereq(p, idx), hops = 0;
         !rc && p->ordering == GPUOP_ORDERING_ENFORCE && c >= 0 && hops < GPUOP_OPERAND_MAX;
         c = gpuop_policy_prereq(p, c), hops++) {
        if (!p->operands[c].enabled)
            continue;
        snprintf(key, sizeof(key), "%s%s", GPUOP_LABEL_PREFIX, gpuop_operand_get(c)->name);
        rc |= json_array_append_new(exprs, json_pack("{s:s, s:s, s:[s,s,s]}", "key", key,
                                                     "operator", "In", "values", "true", "false",
                                                     GPUOP_LABEL_VALUE_PREINSTALLED));
    }
    if (!rc)
        rc |= json_object_set_new(spec, "affinity",
                                  json_pack("{s:{s:{s:[{s:O}]}}}", "nodeAffinity",
                                            "requiredDuringSchedulingIgnoredDuringExecution",
                                            "nodeSelectorTerms", "matchExpressions", exprs));
    json_decref(exprs);
    return rc;
}

/* New: the nodeSelector, the deploy label "true" and, for an OS pool, its
 * OS labels as NVIDIA's driver pools select them (ospool.h), its kernel
 * for a precompiled driver (getNodePools, nfdKernelLabelKey) and its
 * driver pool's label (getNodePools, NVIDIADriverOwnerLabel). */
static json_t *node_selector(const struct gpuop_policy *p, const struct gpuop_operand *op,
                             const struct gpuop_ospool *pool)
{
    char key[128];
    const struct gpuop_operand_follow *fw = gpuop_operand_follow(gpuop_operand_by_name(op->name));
    snprintf(key, sizeof(key), "%s%s", GPUOP_LABEL_PREFIX, fw ? fw->follows : op->name);
    if (!pool) { /* and the row's also label: the MPS daemon's nvidia.com/mps.capable */
        json_t *sel = json_pack("{s:s}", key, "true");
        if (sel && fw && fw->also && json_object_set_new(sel, fw->also, json_string("true"))) {
            json_decref(sel);
            sel = NULL;
        }
        return sel;
    }
    const char *kernel = kernel_of(p, pool);
    return json_pack("{s:s, s:s, s:s, s:s*, s:s*}", key, "true", GPUOP_LABEL_OS_ID, pool->id,
                     pool->major_only ? GPUOP_LABEL_OS_MAJOR : GPUOP_LABEL_OS_VERSION,
                     pool->version, GPUOP_LABEL_KERNEL, kernel, GPUOP_LABEL_DRIVER_POOL,
                     dpool_of(pool));
}

/* New: the secrets of a (borrowed), then those of b (borrowed, may be
 * NULL) a does not name, as NVIDIA's addPullSecrets appends them. */
static json_t *pull_secrets(const json_t *a, const json_t *b)
{
    json_t *out = json_deep_copy(a), *x, *y;
    size_t i, j;
    json_array_foreach(b, i, x)
    {
        bool have = false;
        json_array_foreach(out, j, y) have =
            have || json_equal(json_object_get(x, "name"), json_object_get(y, "name"));
        if (out && !have && json_array_append_new(out, json_deep_copy(x))) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

static json_t *pod_spec(const struct gpuop_policy *p, int idx, const struct tmpl *t,
                        const struct gpuop_ospool *pool, const char *image)
{
    const struct gpuop_operand *op = gpuop_operand_get(idx);
    json_t *s = json_pack("{s:s, s:b}", "serviceAccountName",
                          t->service_account ? t->service_account : GPUOP_OPERAND_SA,
                          "automountServiceAccountToken", t->api_token);
    int rc = !s;
    /* unset: null or false, owned all the same (the top comment) */
    if (!rc)
        rc |= json_object_set_new(
            s, "priorityClassName",
            p->priority_class && *p->priority_class ? json_string(p->priority_class) : json_null());
    if (!rc)
        rc |= json_object_set_new(s, "hostPID", json_boolean(t->host_pid));
    if (!rc)
        rc |= json_object_set_new(s, "hostIPC", json_boolean(t->host_ipc));
    if (!rc)
        rc |= json_object_set_new(s, "hostNetwork", json_boolean(t->host_network));
    if (!rc && t->share_pid && !t->host_pid)
        rc |= json_object_set_new(s, "shareProcessNamespace", json_true());
    if (!rc && t->host_network) /* else the default, ClusterFirst (given up, reset by apply) */
        rc |= json_object_set_new(s, "dnsPolicy", json_string("ClusterFirstWithHostNet"));
    if (!rc)
        rc |= json_object_set_new(s, "runtimeClassName",
                                  t->runtime_class ? json_string(t->runtime_class) : json_null());
    if (!rc)
        rc |= json_object_set_new(s, "nodeSelector", node_selector(p, op, pool));
    if (!rc)
        rc |= put_affinity(s, p, idx, pool);
    if (!rc)
        rc |= put_list(s, "tolerations", p->tolerations, true);
    if (!rc) {
        json_t *ps = pull_secrets(p->image_pull_secrets, t->pull_secrets);
        rc |= !ps || put_list(s, "imagePullSecrets", ps, false);
        json_decref(ps);
    }
    if (!rc)
        rc |= put_list(s, "initContainers", t->init, false);
    if (!rc)
        rc |= json_object_set_new(s, "containers", json_pack("[o]", container(p, idx, t, image)));
    if (!rc && json_array_size(t->sidecars))
        rc |= json_array_extend(json_object_get(s, "containers"), t->sidecars);
    if (!rc)
        rc |= put_list(s, "volumes", t->volumes, false);
    if (rc) {
        json_decref(s);
        return NULL;
    }
    return s;
}

static json_t *metadata(const struct gpuop_policy *p, const struct gpuop_operand *op,
                        const struct gpuop_ospool *pool, const char *name, const char *ns)
{
    json_t *ann = annotations(p);
    json_t *m =
        json_pack("{s:s, s:s, s:o}", "name", name, "namespace", ns, "labels", labels(p, op, pool));
    int rc = !m || !ann;
    if (!rc && json_object_size(ann)) {
        rc |= json_object_set_new(m, "annotations", ann);
        ann = NULL;
    }
    if (!rc && p->uid && p->name)
        rc |=
            json_object_set_new(m, "ownerReferences",
                                json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion",
                                          GPUOP_API_VERSION, "kind", GPUOP_KIND, "name", p->name,
                                          "uid", p->uid, "controller", 1, "blockOwnerDeletion", 1));
    json_decref(ann);
    if (rc) {
        json_decref(m);
        return NULL;
    }
    return m;
}

static json_t *template_metadata(const struct gpuop_policy *p, const struct gpuop_operand *op,
                                 const struct gpuop_ospool *pool, const struct tmpl *t)
{
    json_t *ann = annotations(p);
    json_t *m = json_pack("{s:o}", "labels", labels(p, op, pool));
    int rc = !m || !ann;
    if (!rc && t->nri_container) { /* NRI mode: every GPU to that container (gpu_access) */
        char key[128];
        snprintf(key, sizeof(key), NRI_ANNOTATION_PREFIX "%s", t->nri_container);
        rc |= json_object_set_new(ann, key, json_string(NRI_ALL_GPUS));
    }
    if (!rc && json_object_size(ann)) {
        rc |= json_object_set_new(m, "annotations", ann);
        ann = NULL;
    }
    json_decref(ann);
    if (rc) {
        json_decref(m);
        return NULL;
    }
    return m;
}

/* The driver's DaemonSets are OnDelete, as the GPU Operator's are (v26.7.0
 * internal/state/testdata/golden/driver-*.yaml): gpuop replaces driver pods
 * node by node itself (docs/upgrade.md). */
static json_t *update_strategy(const struct gpuop_policy *p, const struct gpuop_operand *op)
{
    if (!strcmp(op->key, "driver"))
        return json_pack("{s:s}", "type", "OnDelete");
    const char *type = p->update_strategy ? p->update_strategy : "RollingUpdate";
    if (p->max_unavailable && !strcmp(type, "RollingUpdate"))
        return json_pack("{s:s, s:{s:O}}", "type", type, "rollingUpdate", "maxUnavailable",
                         p->max_unavailable);
    return json_pack("{s:s}", "type", type);
}

bool gpuop_render_per_os(const struct gpuop_policy *p, int operand)
{
    const struct gpuop_operand *op = gpuop_operand_get(operand);
    return op && p && op->per_os && p->operands[operand].os_tag;
}

bool gpuop_render_by_kernel(const struct gpuop_policy *p, int operand)
{
    bool any = p && p->driver.precompiled;
    for (int k = 0; p && k < p->ndriver_pools && !any; k++)
        any = p->driver_pools[k].precompiled;
    for (int k = 0; p && k < p->ndraining_pools && !any; k++)
        any = p->draining_precompiled[k];
    return any && gpuop_render_per_os(p, operand) && operand == gpuop_operand_by_key("driver");
}

bool gpuop_render_pool_by_kernel(const struct gpuop_policy *p, int operand,
                                 const struct gpuop_ospool *pool)
{
    return pool && gpuop_render_per_os(p, operand) && operand == gpuop_operand_by_key("driver") &&
           gpuop_policy_pool_precompiled(p, pool->dpool);
}

void gpuop_render_pool_norm(const struct gpuop_policy *p, const struct gpuop_ospool *pool,
                            struct gpuop_ospool *out)
{
    *out = *pool;
    if (gpuop_policy_driver_pool(p, pool->dpool) < 0 && !gpuop_policy_pool_draining(p, pool->dpool))
        out->dpool[0] = '\0';
    if (!gpuop_policy_pool_precompiled(p, out->dpool)) /* compiled: one DaemonSet, every kernel */
        out->kernel[0] = '\0';
}

bool gpuop_render_kernel_wanted(const struct gpuop_ospool *pool, const void *policy)
{
    return gpuop_render_pool_by_kernel(policy, gpuop_operand_by_key("driver"), pool);
}

size_t gpuop_render_pools(const struct gpuop_policy *p, struct gpuop_ospool *set, size_t n)
{
    struct gpuop_ospool one;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) { /* set stays sorted: a pool only loses its dpool */
        gpuop_render_pool_norm(p, &set[i], &one);
        bool dup = false;
        for (size_t j = 0; j < m && !dup; j++)
            dup = !strcmp(set[j].tag, one.tag) && !strcmp(set[j].kernel, one.kernel) &&
                  !strcmp(set[j].dpool, one.dpool);
        if (!dup)
            set[m++] = one;
    }
    return m;
}

int gpuop_render_ds_name(const struct gpuop_policy *p, int operand, const struct gpuop_ospool *pool,
                         char *buf, size_t size)
{
    const struct gpuop_operand *op = gpuop_operand_get(operand);
    struct gpuop_ospool norm;
    if (!op)
        return snprintf(buf, size, "%s", "");
    if (pool && gpuop_render_per_os(p, operand)) {
        gpuop_render_pool_norm(p, pool, &norm);
        return gpuop_ospool_ds_name(op->ds_name, &norm,
                                    gpuop_render_pool_by_kernel(p, operand, &norm), buf, size);
    }
    return snprintf(buf, size, "%s", op->ds_name);
}

json_t *gpuop_render_daemonset_os(const struct gpuop_policy *p, int operand,
                                  const struct gpuop_ospool *pool, const char *ns)
{
    const struct gpuop_operand *op = gpuop_operand_get(operand);
    struct tmpl t = {0};
    char name[GPUOP_RENDER_NAME_MAX], image[GPUOP_RENDER_IMAGE_MAX];
    json_t *ds, *sel;
    struct gpuop_ospool norm;
    struct gpuop_policy view; /* p as the node's driver pool sees it */

    if (!op || !p || !ns)
        return NULL;
    if (!gpuop_render_per_os(p, operand))
        pool = NULL; /* a full reference or a digest: one DaemonSet, as it is */
    if (pool) {
        gpuop_render_pool_norm(p, pool, &norm);
        pool = &norm;
        gpuop_policy_pool_view(p, gpuop_policy_driver_pool(p, pool->dpool), &view);
        p = &view;
    }
    gpuop_render_ds_name(p, operand, pool, name, sizeof(name));
    const char *kernel = kernel_of(p, pool); /* "<version>-<kernel>-<tag>", precompiled */
    snprintf(image, sizeof(image), "%s%s%s%s%s", p->operands[operand].image, kernel ? "-" : "",
             kernel ? kernel : "", pool ? "-" : "", pool ? pool->tag : "");
    t.container = op->name;
    t.pool = pool;
    t.image = image;
    for (size_t i = 0; i < sizeof(templates) / sizeof(templates[0]); i++)
        if (!strcmp(templates[i].operand, op->name))
            templates[i].fn(p, &t);
    host_root_env(p, &t);
    plugin_config(p, operand, &t);
    if (t.oom) {
        tmpl_free(&t);
        return NULL;
    }
    sel = json_pack("{s:s, s:s, s:s*, s:s*, s:s*}", GPUOP_LABEL_NAME, op->name,
                    GPUOP_LABEL_MANAGED_BY, GPUOP_MANAGER, GPUOP_LABEL_OS_POOL,
                    pool ? pool->tag : NULL, GPUOP_LABEL_KERNEL_POOL, kernel,
                    GPUOP_LABEL_DRIVER_POOL, dpool_of(pool));
    ds = json_pack("{s:s, s:s, s:o, s:{s:{s:o}, s:o, s:{s:o, s:o}}}", "apiVersion", "apps/v1",
                   "kind", "DaemonSet", "metadata", metadata(p, op, pool, name, ns), "spec",
                   "selector", "matchLabels", sel, "updateStrategy", update_strategy(p, op),
                   "template", "metadata", template_metadata(p, op, pool, &t), "spec",
                   pod_spec(p, operand, &t, pool, image));
    /* the driver's install configuration digest: a template change that
       leaves it alone restarts the driver with no eviction (digest.c) */
    if (ds && operand == idx_of("driver") && gpuop_render_driver_digest_set(ds, t.container) < 0) {
        json_decref(ds);
        ds = NULL;
    }
    tmpl_free(&t);
    return ds;
}

json_t *gpuop_render_daemonset(const struct gpuop_policy *p, int operand, const char *ns)
{
    return gpuop_render_daemonset_os(p, operand, NULL, ns);
}

json_t *gpuop_render_all(const struct gpuop_policy *p, const char *ns,
                         const struct gpuop_ospool *pools, size_t npools)
{
    json_t *all = json_array();
    if (!all)
        return NULL;
    for (int i = 0; i < gpuop_operand_count(); i++) {
        if (!p->operands[i].enabled)
            continue;
        bool per_os = gpuop_render_per_os(p, i);
        for (size_t k = 0; k < (per_os ? npools : 1); k++) {
            if (per_os && gpuop_render_pool_by_kernel(p, i, &pools[k]) && !pools[k].kernel[0])
                continue; /* a precompiled driver needs the pool's kernel */
            if (json_array_append_new(
                    all, gpuop_render_daemonset_os(p, i, per_os ? &pools[k] : NULL, ns))) {
                json_decref(all);
                return NULL;
            }
        }
    }
    return all;
}

/* ---- objects beside the DaemonSets ---------------------------------------- */

enum {
    EXTRA_RUNTIME_CLASS,
    EXTRA_RUNTIME_CLASS_CDI,
    EXTRA_RUNTIME_CLASS_LEGACY,
    EXTRA_MIG_CONFIG,
    EXTRA_DCGM_SERVICE,
    EXTRA_DCGM_HOSTENGINE_SERVICE,
    EXTRA_SERVICE_MONITOR,
    EXTRA_DEVICECLASS_GPU,
    EXTRA_DEVICECLASS_MIG,
    EXTRA_DEVICECLASS_VFIO,
    EXTRA_COUNT
};

/* The DRA driver's DeviceClasses (gpu-operator v26.7.0
 * manifests/state-dra-driver/0400_deviceclass-gpu.yaml, 0410_deviceclass-mig.yaml,
 * 0430_deviceclass-vfio-gpu.yaml): each selects the devices of driver
 * gpu.nvidia.com of one type by CEL. Only resource.k8s.io/v1: where the
 * API server does not serve it, the DeviceClasses condition says so. */
#define DRA_DRIVER_NAME "gpu.nvidia.com"
#define DEVICECLASS_API "resource.k8s.io/v1 DeviceClasses"

/* The RuntimeClasses are the GPU Operator's three (v26.7.0
 * assets/pre-requisites/0200_runtime_class.yaml, 0210_runtime_class_legacy.yaml,
 * 0220_runtime_class_cdi.yaml): the first named by spec.operator.runtimeClass,
 * the other two fixed, each with the handler of its name, which the toolkit
 * registers beside "nvidia" (nvidia-container-toolkit v1.20.0
 * cmd/nvidia-ctk-installer/container/operator/operator.go, GetRuntimes). */
static const struct gpuop_render_extra extras[EXTRA_COUNT] = {
    [EXTRA_RUNTIME_CLASS] = {"RuntimeClass", "node.k8s.io/v1", "runtimeclasses", false,
                             GPUOP_RUNTIME_CLASS, NULL},
    [EXTRA_RUNTIME_CLASS_CDI] = {"RuntimeClass", "node.k8s.io/v1", "runtimeclasses", false,
                                 GPUOP_RUNTIME_CLASS_CDI, NULL},
    [EXTRA_RUNTIME_CLASS_LEGACY] = {"RuntimeClass", "node.k8s.io/v1", "runtimeclasses", false,
                                    GPUOP_RUNTIME_CLASS_LEGACY, NULL},
    [EXTRA_MIG_CONFIG] = {"ConfigMap", "v1", "configmaps", true, "default-mig-parted-config", NULL},
    [EXTRA_DCGM_SERVICE] = {"Service", "v1", "services", true, GPUOP_DCGM_SERVICE, NULL},
    [EXTRA_DCGM_HOSTENGINE_SERVICE] = {"Service", "v1", "services", true, GPUOP_DCGM_HOSTENGINE,
                                       NULL},
    [EXTRA_SERVICE_MONITOR] = {"ServiceMonitor", "monitoring.coreos.com/v1", "servicemonitors",
                               true, GPUOP_DCGM_SERVICEMONITOR,
                               "servicemonitors.monitoring.coreos.com"},
    [EXTRA_DEVICECLASS_GPU] = {"DeviceClass", "resource.k8s.io/v1", "deviceclasses", false,
                               "gpu.nvidia.com", DEVICECLASS_API},
    [EXTRA_DEVICECLASS_MIG] = {"DeviceClass", "resource.k8s.io/v1", "deviceclasses", false,
                               "mig.nvidia.com", DEVICECLASS_API},
    [EXTRA_DEVICECLASS_VFIO] = {"DeviceClass", "resource.k8s.io/v1", "deviceclasses", false,
                                "vfio.gpu.nvidia.com", DEVICECLASS_API},
};
_Static_assert(EXTRA_COUNT <= GPUOP_RENDER_EXTRA_MAX, "raise GPUOP_RENDER_EXTRA_MAX");

int gpuop_render_extra_count(void)
{
    return EXTRA_COUNT;
}

const struct gpuop_render_extra *gpuop_render_extra_get(int i)
{
    return (i >= 0 && i < EXTRA_COUNT) ? &extras[i] : NULL;
}

/* Whether policy p wants extra i. */
static bool extra_wanted(const struct gpuop_policy *p, int i)
{
    static const char *const in_runtime_class[] = {
        "device-plugin", "gpu-feature-discovery", "dcgm",
        "dcgm-exporter", "operator-validator",    "mig-manager"};
    int mig = idx_of("mig-manager");
    bool gpu_operands = false;
    for (size_t k = 0; k < sizeof(in_runtime_class) / sizeof(in_runtime_class[0]); k++)
        gpu_operands = gpu_operands || enabled(p, in_runtime_class[k]);
    switch (i) {
    case EXTRA_RUNTIME_CLASS: /* none in NRI mode (the GPU Operator's isStateEnabled) */
        return gpu_operands && !p->nri_plugin;
    case EXTRA_RUNTIME_CLASS_CDI: /* CDI mode only (RuntimeClasses); not twice */
    case EXTRA_RUNTIME_CLASS_LEGACY:
        return gpu_operands && !p->nri_plugin && cdi(p) &&
               strcmp(runtime_class(p), extras[i].name) != 0;
    case EXTRA_MIG_CONFIG: /* the default is named, or none is */
        return mig >= 0 && p->operands[mig].enabled &&
               (!p->operands[mig].config_name ||
                !strcmp(p->operands[mig].config_name, extras[i].name));
    case EXTRA_DCGM_SERVICE:
        return enabled(p, "dcgm-exporter");
    case EXTRA_DCGM_HOSTENGINE_SERVICE:
        return enabled(p, "dcgm");
    case EXTRA_SERVICE_MONITOR: /* selects the exporter's Service */
        return enabled(p, "dcgm-exporter") && p->service_monitor;
    case EXTRA_DEVICECLASS_GPU:
    case EXTRA_DEVICECLASS_MIG:
    case EXTRA_DEVICECLASS_VFIO:
        return enabled(p, "dra-driver");
    default:
        return false;
    }
}

/* New metadata of extra x: gpuop's labels (component: what it serves), the
 * namespace when namespaced, the policy as owner when it has a uid. */
static json_t *extra_metadata(const struct gpuop_policy *p, const struct gpuop_render_extra *x,
                              const char *component, const char *ns)
{
    const char *inst = (p->name && label_value_ok(p->name)) ? p->name : NULL;
    json_t *m =
        json_pack("{s:s, s:s*, s:{s:s, s:s*, s:s, s:s, s:s}}", "name", x->name, "namespace",
                  x->namespaced ? ns : NULL, "labels", GPUOP_LABEL_NAME, component,
                  GPUOP_LABEL_INSTANCE, inst, GPUOP_LABEL_COMPONENT, component,
                  GPUOP_LABEL_MANAGED_BY, GPUOP_MANAGER, GPUOP_LABEL_PART_OF, GPUOP_MANAGER);
    if (m && p->uid && p->name &&
        json_object_set_new(m, "ownerReferences",
                            json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion",
                                      GPUOP_API_VERSION, "kind", GPUOP_KIND, "name", p->name, "uid",
                                      p->uid, "controller", 1, "blockOwnerDeletion", 1))) {
        json_decref(m);
        return NULL;
    }
    return m;
}

/* Adds NVIDIA's "app" label of operand name to metadata md (borrowed):
 * the GPU Operator's Service and ServiceMonitor carry it, and its value is
 * the scrape job's name (jobLabel), which dashboards and alerts written
 * for the GPU Operator select on. Nonzero on failure. */
static int app_label(json_t *md, const char *name)
{
    const struct gpuop_operand *op = gpuop_operand_get(idx_of(name));
    json_t *labels = json_object_get(md, "labels");
    return !op || !labels || json_object_set_new(labels, GPUOP_LABEL_APP, json_string(op->app));
}

/* New: the ServiceMonitor of the exporter's Service (gpu-operator v26.7.0
 * assets/state-dcgm-exporter/0500_service_monitor.yaml with
 * applyServiceMonitorCustomEdits): port gpu-metrics at /metrics, jobLabel
 * app, the namespace and the Service's labels selected; the policy's
 * additionalLabels on it (gpuop's own win), interval, scrapeTimeout,
 * honorLabels and relabelings on its endpoint. */
static json_t *service_monitor(const struct gpuop_policy *p, const struct gpuop_render_extra *x,
                               const char *ns)
{
    static const char *const endpoint_keys[][2] = {{"interval", "interval"},
                                                   {"scrapeTimeout", "scrapeTimeout"},
                                                   {"honorLabels", "honorLabels"},
                                                   {"relabelings", "relabelings"}};
    json_t *sm = p->service_monitor;
    json_t *md = extra_metadata(p, x, "dcgm-exporter", ns);
    json_t *labels = json_object();
    if (md && app_label(md, "dcgm-exporter")) {
        json_decref(md);
        md = NULL;
    }
    json_t *ep = json_pack("{s:s, s:s}", "port", "gpu-metrics", "path", "/metrics");
    int rc = !md || !labels || !ep ||
             merge_sorted(labels, json_object_get(sm, "additionalLabels")) ||
             json_object_update(labels, json_object_get(md, "labels")) ||
             json_object_set(md, "labels", labels);
    for (size_t i = 0; !rc && i < sizeof(endpoint_keys) / sizeof(endpoint_keys[0]); i++) {
        json_t *v = json_object_get(sm, endpoint_keys[i][0]);
        if (v)
            rc = json_object_set(ep, endpoint_keys[i][1], v);
    }
    json_decref(labels);
    json_t *o =
        rc ? NULL
           : json_pack("{s:s, s:s, s:O, s:{s:[O], s:s, s:{s:[s]}, s:{s:{s:s, s:s}}}}", "apiVersion",
                       x->group_version, "kind", x->kind, "metadata", md, "spec", "endpoints", ep,
                       "jobLabel", GPUOP_LABEL_APP, "namespaceSelector", "matchNames", ns,
                       "selector", "matchLabels", GPUOP_LABEL_NAME, "dcgm-exporter",
                       GPUOP_LABEL_MANAGED_BY, GPUOP_MANAGER);
    json_decref(md);
    json_decref(ep);
    return o;
}

/* New: DeviceClass x of the DRA driver, its devices of driver
 * gpu.nvidia.com whose attribute type is the class's (gpu, mig, vfio). */
static json_t *device_class(const struct gpuop_policy *p, const struct gpuop_render_extra *x,
                            const char *ns, int i)
{
    char cel[256];
    const char *type = i == EXTRA_DEVICECLASS_GPU   ? "gpu"
                       : i == EXTRA_DEVICECLASS_MIG ? "mig"
                                                    : "vfio";
    snprintf(cel, sizeof(cel),
             "device.driver == '" DRA_DRIVER_NAME "' && device.attributes['" DRA_DRIVER_NAME
             "'].type == '%s'",
             type);
    return json_pack("{s:s, s:s, s:o, s:{s:[{s:{s:s}}]}}", "apiVersion", x->group_version, "kind",
                     x->kind, "metadata", extra_metadata(p, x, "dra-driver", ns), "spec",
                     "selectors", "cel", "expression", cel);
}

bool gpuop_render_extra_held(const struct gpuop_policy *p, int i)
{
    int dra = idx_of("dra-driver");
    return (i == EXTRA_DEVICECLASS_GPU || i == EXTRA_DEVICECLASS_MIG ||
            i == EXTRA_DEVICECLASS_VFIO) &&
           dra >= 0 && p->operands[dra].enabled && p->operands[dra].hold_absent;
}

int gpuop_render_extra(const struct gpuop_policy *p, const char *ns, int i, json_t **out)
{
    const struct gpuop_render_extra *x = gpuop_render_extra_get(i);
    json_t *o = NULL;
    *out = NULL;
    if (!x || !p || !ns)
        return GPUOP_EINVAL;
    if (!extra_wanted(p, i))
        return 0;
    switch (i) {
    case EXTRA_RUNTIME_CLASS_CDI: /* handler: its own name */
    case EXTRA_RUNTIME_CLASS_LEGACY:
        o = json_pack("{s:s, s:s, s:o, s:s}", "apiVersion", x->group_version, "kind", x->kind,
                      "metadata", extra_metadata(p, x, "container-toolkit", ns), "handler",
                      x->name);
        break;
    case EXTRA_RUNTIME_CLASS: { /* the handler the toolkit registers in containerd */
        json_t *md = extra_metadata(p, x, "container-toolkit", ns);
        if (md && json_object_set_new(md, "name", json_string(runtime_class(p)))) {
            json_decref(md);
            md = NULL;
        }
        o = json_pack("{s:s, s:s, s:o, s:s}", "apiVersion", x->group_version, "kind", x->kind,
                      "metadata", md, "handler", runtime_class(p));
        break;
    }
    case EXTRA_MIG_CONFIG: { /* the default MIG layouts, from their facts: migconfig.c */
        char *layouts = gpuop_migconfig_yaml();
        o = layouts ? json_pack("{s:s, s:s, s:o, s:{s:s}}", "apiVersion", x->group_version, "kind",
                                x->kind, "metadata", extra_metadata(p, x, "mig-manager", ns),
                                "data", "config.yaml", layouts)
                    : NULL;
        free(layouts);
        break;
    }
    case EXTRA_DCGM_SERVICE: { /* the exporter's pods, by the DaemonSet's selector */
        json_t *md = extra_metadata(p, x, "dcgm-exporter", ns);
        if (md && (app_label(md, "dcgm-exporter") ||
                   json_object_set_new(md, "annotations",
                                       json_pack("{s:s}", "prometheus.io/scrape", "true")))) {
            json_decref(md);
            md = NULL;
        }
        o = json_pack("{s:s, s:s, s:o, s:{s:{s:s, s:s}, s:[{s:s, s:i, s:i, s:s}]}}", "apiVersion",
                      x->group_version, "kind", x->kind, "metadata", md, "spec", "selector",
                      GPUOP_LABEL_NAME, "dcgm-exporter", GPUOP_LABEL_MANAGED_BY, GPUOP_MANAGER,
                      "ports", "name", "gpu-metrics", "port", 9400, "targetPort", 9400, "protocol",
                      "TCP");
        break;
    }
    case EXTRA_DCGM_HOSTENGINE_SERVICE: /* the host engine of the exporter's own node */
        o = json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:i, s:i, s:s}]}}",
                      "apiVersion", x->group_version, "kind", x->kind, "metadata",
                      extra_metadata(p, x, "dcgm", ns), "spec", "type", "ClusterIP",
                      "internalTrafficPolicy", "Local", "selector", GPUOP_LABEL_NAME, "dcgm",
                      GPUOP_LABEL_MANAGED_BY, GPUOP_MANAGER, "ports", "name", "dcgm", "port",
                      GPUOP_DCGM_PORT, "targetPort", GPUOP_DCGM_PORT, "protocol", "TCP");
        break;
    case EXTRA_SERVICE_MONITOR:
        o = service_monitor(p, x, ns);
        break;
    case EXTRA_DEVICECLASS_GPU:
    case EXTRA_DEVICECLASS_MIG:
    case EXTRA_DEVICECLASS_VFIO:
        o = device_class(p, x, ns, i);
        break;
    }
    if (!o)
        return GPUOP_ENOMEM;
    *out = o;
    return 0;
}

json_t *gpuop_render_extras(const struct gpuop_policy *p, const char *ns)
{
    json_t *all = json_array();
    for (int i = 0; all && i < EXTRA_COUNT; i++) {
        json_t *o;
        if (gpuop_render_extra(p, ns, i, &o) < 0 || (o && json_array_append_new(all, o))) {
            json_decref(all);
            return NULL;
        }
    }
    return all;
}
