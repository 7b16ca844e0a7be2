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
 * The selector holds only the operand name and the manager (selectors are
 * immutable); the policy name goes into the instance label, which may
 * change freely.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/render.h"

/* What a template contributes; every json_t is new and released by
 * tmpl_free(). NULL members are left out of the output. */
struct tmpl {
    const char *container;
    bool host_pid;
    bool host_ipc;
    const char *service_account; /* default GPUOP_OPERAND_SA (no permissions, no token) */
    bool api_token;              /* mount the service account token: the operand uses the API */
    json_t *command;
    json_t *args; /* default args, replaced by the policy's when non-empty */
    json_t *env;
    json_t *ports;
    json_t *security;
    json_t *mounts;
    json_t *volumes;
    json_t *startup;
    json_t *readiness;
    json_t *liveness;
    bool oom; /* a builder returned NULL */
};

static void tmpl_free(struct tmpl *t)
{
    json_t **all[] = {&t->command, &t->args,    &t->env,     &t->ports,     &t->security,
                      &t->mounts,  &t->volumes, &t->startup, &t->readiness, &t->liveness};
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

static json_t *hostpath(const char *name, const char *path, const char *type)
{
    return json_pack("{s:s, s:{s:s, s:s*}}", "name", name, "hostPath", "path", path, "type", type);
}

static json_t *mount(const char *name, const char *path, bool ro, const char *propagation)
{
    return json_pack("{s:s, s:s, s:o*, s:s*}", "name", name, "mountPath", path, "readOnly",
                     ro ? json_true() : NULL, "mountPropagation", propagation);
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

static json_t *drop_all(void)
{
    return json_pack("{s:b, s:{s:[s]}}", "allowPrivilegeEscalation", 0, "capabilities", "drop",
                     "ALL");
}

static json_t *privileged(void)
{
    return json_pack("{s:b}", "privileged", 1);
}

/* Where the driver lives on the host: in the driver container's root when
 * gpuop runs the driver, on the host itself when the policy says the hosts
 * provide it (driver.enabled=false). */
static const char *driver_root(const struct gpuop_policy *p)
{
    int d = gpuop_operand_by_name("driver");
    return (d >= 0 && p->operands[d].enabled) ? "/run/nvidia/driver" : "/";
}

/* ---- pod templates, one per operand ---------------------------------------- */

/* driver: builds and loads the kernel modules, then exposes its root at
 * /run/nvidia/driver for the rest of the chain. Needs the host's PID
 * namespace, full privileges, mount propagation back to the host, the host
 * root (kernel headers, os-release) and the firmware directory. Compiling
 * can take many minutes, hence the patient startup probe. */
static void tmpl_driver(const struct gpuop_policy *p, struct tmpl *t)
{
    t->container = "nvidia-driver";
    t->host_pid = true;
    t->command = need(t, json_pack("[s]", "nvidia-driver"));
    t->args = need(t, json_pack("[s]", "init"));
    t->security = need(t, privileged());
    t->mounts = need(t, json_pack("[o,o,o,o,o,o]",
                                  mount("run-nvidia", "/run/nvidia", false, "Bidirectional"),
                                  mount("host-root", "/host", true, "HostToContainer"),
                                  mount("host-os-release", "/host-etc/os-release", true, NULL),
                                  mount("firmware", "/lib/firmware", false, NULL),
                                  mount("var-log", "/var/log", false, NULL),
                                  mount("dev-log", "/dev/log", false, NULL)));
    t->volumes = need(
        t, json_pack("[o,o,o,o,o,o]", hostpath("run-nvidia", "/run/nvidia", "DirectoryOrCreate"),
                     hostpath("host-root", "/", NULL),
                     hostpath("host-os-release", "/etc/os-release", NULL),
                     hostpath("firmware", "/lib/firmware", "DirectoryOrCreate"),
                     hostpath("var-log", "/var/log", NULL), hostpath("dev-log", "/dev/log", NULL)));
    t->startup =
        need(t, json_pack("{s:{s:[s,s,s]}, s:i, s:i, s:i, s:i}", "exec", "command", "sh", "-c",
                          "nvidia-smi -L", "initialDelaySeconds", 60, "periodSeconds", 10,
                          "timeoutSeconds", 60, "failureThreshold", 120));
}

/* container-toolkit: installs the NVIDIA runtime under /usr/local/nvidia and
 * registers it in containerd (as the default runtime, so operand pods need
 * no RuntimeClass), pointing it at the driver root. */
static void tmpl_toolkit(const struct gpuop_policy *p, struct tmpl *t)
{
    const char *root = driver_root(p);
    t->container = "nvidia-container-toolkit";
    t->host_pid = true;
    t->env =
        need(t, json_pack("[o,o,o,o,o,o,o,o,o,o]", env("ROOT", "/usr/local/nvidia"),
                          env("RUNTIME", "containerd"),
                          env("CONTAINERD_CONFIG", "/runtime/config-dir/config.toml"),
                          env("CONTAINERD_SOCKET", "/runtime/sock-dir/containerd.sock"),
                          env("CONTAINERD_RUNTIME_CLASS", "nvidia"),
                          env("CONTAINERD_SET_AS_DEFAULT", "true"), env("NVIDIA_DRIVER_ROOT", root),
                          env("DRIVER_ROOT_CTR_PATH", "/driver-root"),
                          env("NVIDIA_VISIBLE_DEVICES", "void"),
                          env("TOOLKIT_PID_FILE", "/run/nvidia/toolkit/toolkit.pid")));
    t->security = need(t, privileged());
    t->mounts = need(t, json_pack("[o,o,o,o,o,o,o]",
                                  mount("run-nvidia", "/run/nvidia", false, "HostToContainer"),
                                  mount("driver-root", "/driver-root", true, "HostToContainer"),
                                  mount("host-root", "/host", true, "HostToContainer"),
                                  mount("toolkit-install", "/usr/local/nvidia", false, NULL),
                                  mount("containerd-config", "/runtime/config-dir", false, NULL),
                                  mount("containerd-socket", "/runtime/sock-dir", false, NULL),
                                  mount("cdi-root", "/var/run/cdi", false, NULL)));
    t->volumes = need(
        t, json_pack("[o,o,o,o,o,o,o]", hostpath("run-nvidia", "/run/nvidia", "DirectoryOrCreate"),
                     hostpath("driver-root", root, NULL), hostpath("host-root", "/", NULL),
                     hostpath("toolkit-install", "/usr/local/nvidia", "DirectoryOrCreate"),
                     hostpath("containerd-config", "/etc/containerd", "DirectoryOrCreate"),
                     hostpath("containerd-socket", "/run/containerd", NULL),
                     hostpath("cdi-root", "/var/run/cdi", "DirectoryOrCreate")));
}

/* device-plugin: registers with the kubelet through its socket directory
 * and advertises nvidia.com/gpu. Needs no privileges: NVML comes from the
 * NVIDIA runtime, device nodes are passed as device specs. */
static void tmpl_device_plugin(const struct gpuop_policy *p, struct tmpl *t)
{
    t->container = "nvidia-device-plugin";
    t->command = need(t, json_pack("[s]", "nvidia-device-plugin"));
    t->env =
        need(t, json_pack("[o,o,o,o,o,o,o,o,o]", env("FAIL_ON_INIT_ERROR", "true"),
                          env("DEVICE_LIST_STRATEGY", "envvar"), env("DEVICE_ID_STRATEGY", "uuid"),
                          env("PASS_DEVICE_SPECS", "true"), env("MIG_STRATEGY", "single"),
                          env("NVIDIA_DRIVER_ROOT", driver_root(p)),
                          env("CONTAINER_DRIVER_ROOT", "/driver-root"),
                          env("NVIDIA_VISIBLE_DEVICES", "all"),
                          env("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")));
    t->security = need(t, drop_all());
    t->mounts =
        need(t, json_pack("[o,o,o]",
                          mount("device-plugins", "/var/lib/kubelet/device-plugins", false, NULL),
                          mount("run-nvidia", "/run/nvidia", true, "HostToContainer"),
                          mount("driver-root", "/driver-root", true, "HostToContainer")));
    t->volumes = need(
        t, json_pack("[o,o,o]",
                     hostpath("device-plugins", "/var/lib/kubelet/device-plugins", "Directory"),
                     hostpath("run-nvidia", "/run/nvidia", "DirectoryOrCreate"),
                     hostpath("driver-root", driver_root(p), NULL)));
}

/* gpu-feature-discovery: writes GPU labels as a node-feature-discovery
 * local feature file on the host; NFD turns them into node labels. */
static void tmpl_gfd(const struct gpuop_policy *p, struct tmpl *t)
{
    t->container = "gpu-feature-discovery";
    t->command = need(t, json_pack("[s]", "gpu-feature-discovery"));
    t->env =
        need(t, json_pack("[o,o,o,o,o,o]", env_field("NODE_NAME", "spec.nodeName"),
                          env("GFD_SLEEP_INTERVAL", "60s"), env("GFD_FAIL_ON_INIT_ERROR", "true"),
                          env("MIG_STRATEGY", "single"), env("NVIDIA_VISIBLE_DEVICES", "all"),
                          env("NVIDIA_DRIVER_CAPABILITIES", "utility")));
    t->security = need(t, drop_all());
    t->mounts =
        need(t, json_pack("[o,o]",
                          mount("output-dir", "/etc/kubernetes/node-feature-discovery/features.d",
                                false, NULL),
                          mount("host-sys", "/sys", true, NULL)));
    t->volumes = need(
        t, json_pack("[o,o]",
                     hostpath("output-dir", "/etc/kubernetes/node-feature-discovery/features.d",
                              "DirectoryOrCreate"),
                     hostpath("host-sys", "/sys", "Directory")));
}

/* dcgm-exporter: Prometheus metrics on :9400, mapped to pods through the
 * kubelet's pod-resources API; profiling metrics need SYS_ADMIN. */
static void tmpl_dcgm(const struct gpuop_policy *p, struct tmpl *t)
{
    t->container = "nvidia-dcgm-exporter";
    t->env = need(t, json_pack("[o,o,o,o,o]", env("DCGM_EXPORTER_LISTEN", ":9400"),
                               env("DCGM_EXPORTER_KUBERNETES", "true"),
                               env_field("NODE_NAME", "spec.nodeName"),
                               env("NVIDIA_VISIBLE_DEVICES", "all"),
                               env("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")));
    t->ports = need(t, json_pack("[{s:s, s:i, s:s}]", "name", "metrics", "containerPort", 9400,
                                 "protocol", "TCP"));
    t->security = need(t, json_pack("{s:b, s:i, s:{s:[s]}}", "runAsNonRoot", 0, "runAsUser", 0,
                                    "capabilities", "add", "SYS_ADMIN"));
    t->mounts = need(
        t, json_pack("[o]", mount("pod-resources", "/var/lib/kubelet/pod-resources", true, NULL)));
    t->volumes =
        need(t, json_pack("[o]", hostpath("pod-resources", "/var/lib/kubelet/pod-resources",
                                          "DirectoryOrCreate")));
    t->readiness =
        need(t, json_pack("{s:{s:s, s:s}, s:i, s:i}", "httpGet", "path", "/health", "port",
                          "metrics", "initialDelaySeconds", 45, "periodSeconds", 5));
    t->liveness = need(t, json_pack("{s:{s:s, s:s}, s:i, s:i, s:i}", "httpGet", "path", "/health",
                                    "port", "metrics", "initialDelaySeconds", 45, "periodSeconds",
                                    10, "failureThreshold", 6));
}

/* operator-validator: proves the chain works on the node (driver loaded,
 * a container gets a GPU through the toolkit) and then stays Ready; not
 * Ready means a validation is still waiting or failed (see its log). */
static void tmpl_validator(const struct gpuop_policy *p, struct tmpl *t)
{
    static const char script[] = "set -e\n"
                                 "export WITH_WAIT=true\n"
                                 "COMPONENT=driver nvidia-validator\n"
                                 "COMPONENT=toolkit nvidia-validator\n"
                                 "touch /tmp/gpuop-validated\n"
                                 "echo 'driver and container-toolkit validated'\n"
                                 "exec sleep infinity\n";
    t->container = "nvidia-operator-validator";
    t->command = need(t, json_pack("[s,s]", "sh", "-c"));
    t->args = need(t, json_pack("[s]", script));
    t->env = need(t, json_pack("[o,o,o,o]", env_field("NODE_NAME", "spec.nodeName"),
                               env_field("OPERATOR_NAMESPACE", "metadata.namespace"),
                               env("NVIDIA_VISIBLE_DEVICES", "all"),
                               env("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")));
    t->security = need(t, privileged());
    t->mounts =
        need(t, json_pack("[o,o,o,o]",
                          mount("run-nvidia-validations", "/run/nvidia/validations", false,
                                "Bidirectional"),
                          mount("driver-root", "/run/nvidia/driver", true, "HostToContainer"),
                          mount("host-root", "/host", true, "HostToContainer"),
                          mount("host-dev-char", "/host-dev-char", false, NULL)));
    t->volumes = need(t, json_pack("[o,o,o,o]",
                                   hostpath("run-nvidia-validations", "/run/nvidia/validations",
                                            "DirectoryOrCreate"),
                                   hostpath("driver-root", driver_root(p), NULL),
                                   hostpath("host-root", "/", NULL),
                                   hostpath("host-dev-char", "/dev/char", NULL)));
    t->readiness =
        need(t, json_pack("{s:{s:[s,s]}, s:i, s:i}", "exec", "command", "cat",
                          "/tmp/gpuop-validated", "initialDelaySeconds", 5, "periodSeconds", 10));
}

/* mig-manager: applies the MIG layout named by the node's
 * nvidia.com/mig.config label from the config ConfigMap (spec.migManager.
 * config.name, key config.yaml), pausing the GPU operands on the node
 * through their deploy labels ("paused-for-mig-change") while it does; so it
 * needs the API (its own service account, see deploy/10-rbac.yaml), full
 * privileges, the host's PID and IPC namespaces (it stops host GPU clients
 * through systemd), /sys and the host root. */
static void tmpl_mig_manager(const struct gpuop_policy *p, struct tmpl *t)
{
    int me = gpuop_operand_by_name("mig-manager");
    const char *config = me >= 0 ? p->operands[me].config_name : NULL;
    t->container = "nvidia-mig-manager";
    t->host_pid = true;
    t->host_ipc = true;
    t->service_account = GPUOP_MIG_MANAGER_SA;
    t->api_token = true;
    t->env = need(
        t,
        json_pack("[o,o,o,o,o,o,o,o,o,o,o,o,o,o]", env_field("NODE_NAME", "spec.nodeName"),
                  env("CONFIG_FILE", "/mig-parted-config/config.yaml"),
                  env("HOST_ROOT_MOUNT", "/host"), env("HOST_NVIDIA_DIR", "/usr/local/nvidia"),
                  env("HOST_MIG_MANAGER_STATE_FILE",
                      "/etc/systemd/system/nvidia-mig-manager.service.d/override.conf"),
                  env("HOST_KUBELET_SYSTEMD_SERVICE", "kubelet.service"),
                  env_field("DEFAULT_GPU_CLIENTS_NAMESPACE", "metadata.namespace"),
                  env("WITH_REBOOT", "false"), env("WITH_SHUTDOWN_HOST_GPU_CLIENTS", "false"),
                  env("DRIVER_ROOT", driver_root(p)), env("DRIVER_ROOT_CTR_PATH", "/driver-root"),
                  env("CDI_ENABLED", "false"), env("NVIDIA_VISIBLE_DEVICES", "all"),
                  env("NVIDIA_DRIVER_CAPABILITIES", "all")));
    t->security = need(t, privileged());
    t->mounts = need(t, json_pack("[o,o,o,o,o]", mount("host-sys", "/sys", false, NULL),
                                  mount("host-root", "/host", false, "HostToContainer"),
                                  mount("driver-root", "/driver-root", true, "HostToContainer"),
                                  mount("run-nvidia", "/run/nvidia", true, "HostToContainer"),
                                  mount("mig-parted-config", "/mig-parted-config", true, NULL)));
    t->volumes =
        need(t, json_pack("[o,o,o,o,{s:s, s:{s:s}}]", hostpath("host-sys", "/sys", "Directory"),
                          hostpath("host-root", "/", NULL),
                          hostpath("driver-root", driver_root(p), NULL),
                          hostpath("run-nvidia", "/run/nvidia", "DirectoryOrCreate"), "name",
                          "mig-parted-config", "configMap", "name",
                          config ? config : "default-mig-parted-config"));
}

static const struct {
    const char *operand; /* operand name (table column "name") */
    void (*fn)(const struct gpuop_policy *p, struct tmpl *t);
} templates[] = {
    {"driver", tmpl_driver},
    {"container-toolkit", tmpl_toolkit},
    {"device-plugin", tmpl_device_plugin},
    {"gpu-feature-discovery", tmpl_gfd},
    {"dcgm-exporter", tmpl_dcgm},
    {"operator-validator", tmpl_validator},
    {"mig-manager", tmpl_mig_manager},
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

/* New: the app.kubernetes.io labels of op, NVIDIA's "app" label (MIG
 * Manager and NVIDIA's tools select the operand pods by it), then the
 * policy's labels. */
static json_t *labels(const struct gpuop_policy *p, const struct gpuop_operand *op,
                      const struct gpuop_ospool *pool)
{
    const char *inst = (p->name && label_value_ok(p->name)) ? p->name : NULL;
    json_t *l = json_pack("{s:s, s:s*, s:s, s:s, s:s, s:s*, s:s*}", GPUOP_LABEL_NAME, op->name,
                          GPUOP_LABEL_INSTANCE, inst, GPUOP_LABEL_COMPONENT, op->name,
                          GPUOP_LABEL_MANAGED_BY, GPUOP_MANAGER, GPUOP_LABEL_PART_OF, GPUOP_MANAGER,
                          GPUOP_LABEL_APP, op->app, GPUOP_LABEL_OS_POOL, pool ? pool->tag : NULL);
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

static json_t *container(const struct gpuop_policy *p, int idx, const struct tmpl *t,
                         const char *image)
{
    const struct gpuop_operand_spec *o = &p->operands[idx];
    json_t *args = json_array_size(o->args) ? o->args : t->args;
    json_t *env_all = merge_env(t->env, o->env);
    json_t *c = json_pack("{s:s, s:s, s:s}", "name", t->container, "image", image,
                          "imagePullPolicy", o->pull_policy);
    int rc = !c || !env_all;
    if (!rc && t->command)
        rc |= json_object_set(c, "command", t->command);
    if (!rc && args && json_array_size(args))
        rc |= put(c, "args", json_deep_copy(args)) || !json_object_get(c, "args");
    if (!rc && json_array_size(env_all)) {
        rc |= json_object_set_new(c, "env", env_all);
        env_all = NULL;
    }
    if (!rc && t->ports)
        rc |= json_object_set(c, "ports", t->ports);
    if (!rc && o->resources)
        rc |= put(c, "resources", json_deep_copy(o->resources)) || !json_object_get(c, "resources");
    if (!rc && t->security)
        rc |= json_object_set(c, "securityContext", t->security);
    if (!rc && t->mounts)
        rc |= json_object_set(c, "volumeMounts", t->mounts);
    if (!rc && t->startup)
        rc |= json_object_set(c, "startupProbe", t->startup);
    if (!rc && t->readiness)
        rc |= json_object_set(c, "readinessProbe", t->readiness);
    if (!rc && t->liveness)
        rc |= json_object_set(c, "livenessProbe", t->liveness);
    json_decref(env_all);
    if (rc) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* spec.ordering: enforce. A required node affinity on every prerequisite up
 * the operand's chain that the policy runs: its deploy label must be "true"
 * (gpuop runs it there) or "false" (the host provides it). A prerequisite
 * disabled in the policy is host-provided everywhere and adds no term; the
 * walk goes on above it. The DaemonSet controller evaluates the affinity
 * when it decides where the operand runs, so a node without its toolkit
 * label gets no device plugin, and loses it when the label goes. Adds
 * nothing when no prerequisite qualifies. Returns nonzero on ENOMEM. */
static int put_affinity(json_t *spec, const struct gpuop_policy *p, int idx)
{
    char key[128];
    json_t *exprs = json_array();
    int rc = !exprs;
    for (int c = gpuop_operand_prereq(idx), hops = 0; !rc && c >= 0 && hops < GPUOP_OPERAND_MAX;
         c = gpuop_operand_prereq(c), hops++) {
        if (!p->operands[c].enabled)
            continue;
        snprintf(key, sizeof(key), "%s%s", GPUOP_LABEL_PREFIX, gpuop_operand_get(c)->name);
        rc |= json_array_append_new(exprs, json_pack("{s:s, s:s, s:[s,s]}", "key", key, "operator",
                                                     "In", "values", "true", "false"));
    }
    if (!rc && json_array_size(exprs))
        rc |= json_object_set_new(spec, "affinity",
                                  json_pack("{s:{s:{s:[{s:O}]}}}", "nodeAffinity",
                                            "requiredDuringSchedulingIgnoredDuringExecution",
                                            "nodeSelectorTerms", "matchExpressions", exprs));
    json_decref(exprs);
    return rc;
}

/* New: the nodeSelector, the deploy label "true" and, for an OS pool, its
 * OS labels as NVIDIA's driver pools select them (ospool.h). */
static json_t *node_selector(const struct gpuop_operand *op, const struct gpuop_ospool *pool)
{
    char key[128];
    snprintf(key, sizeof(key), "%s%s", GPUOP_LABEL_PREFIX, op->name);
    if (!pool)
        return json_pack("{s:s}", key, "true");
    return json_pack("{s:s, s:s, s:s}", key, "true", GPUOP_LABEL_OS_ID, pool->id,
                     pool->major_only ? GPUOP_LABEL_OS_MAJOR : GPUOP_LABEL_OS_VERSION,
                     pool->version);
}

static json_t *pod_spec(const struct gpuop_policy *p, int idx, const struct tmpl *t,
                        const struct gpuop_ospool *pool, const char *image)
{
    const struct gpuop_operand *op = gpuop_operand_get(idx);
    json_t *s = json_pack("{s:s, s:b}", "serviceAccountName",
                          t->service_account ? t->service_account : GPUOP_OPERAND_SA,
                          "automountServiceAccountToken", t->api_token);
    int rc = !s;
    if (!rc && p->priority_class && *p->priority_class)
        rc |= json_object_set_new(s, "priorityClassName", json_string(p->priority_class));
    if (!rc && t->host_pid)
        rc |= json_object_set_new(s, "hostPID", json_true());
    if (!rc && t->host_ipc)
        rc |= json_object_set_new(s, "hostIPC", json_true());
    if (!rc)
        rc |= json_object_set_new(s, "nodeSelector", node_selector(op, pool));
    if (!rc && p->ordering == GPUOP_ORDERING_ENFORCE)
        rc |= put_affinity(s, p, idx);
    if (!rc && json_array_size(p->tolerations))
        rc |= put(s, "tolerations", json_deep_copy(p->tolerations)) ||
              !json_object_get(s, "tolerations");
    if (!rc && json_array_size(p->image_pull_secrets))
        rc |= put(s, "imagePullSecrets", json_deep_copy(p->image_pull_secrets)) ||
              !json_object_get(s, "imagePullSecrets");
    if (!rc)
        rc |= json_object_set_new(s, "containers", json_pack("[o]", container(p, idx, t, image)));
    if (!rc && t->volumes)
        rc |= json_object_set(s, "volumes", t->volumes);
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
                                 const struct gpuop_ospool *pool)
{
    json_t *ann = annotations(p);
    json_t *m = json_pack("{s:o}", "labels", labels(p, op, pool));
    int rc = !m || !ann;
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

static json_t *update_strategy(const struct gpuop_policy *p)
{
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

int gpuop_render_ds_name(const struct gpuop_policy *p, int operand, const struct gpuop_ospool *pool,
                         char *buf, size_t size)
{
    const struct gpuop_operand *op = gpuop_operand_get(operand);
    if (!op)
        return snprintf(buf, size, "%s", "");
    if (pool && gpuop_render_per_os(p, operand))
        return snprintf(buf, size, "%s-%s", op->ds_name, pool->tag);
    return snprintf(buf, size, "%s", op->ds_name);
}

json_t *gpuop_render_daemonset_os(const struct gpuop_policy *p, int operand,
                                  const struct gpuop_ospool *pool, const char *ns)
{
    const struct gpuop_operand *op = gpuop_operand_get(operand);
    struct tmpl t = {0};
    char name[GPUOP_RENDER_NAME_MAX], image[GPUOP_RENDER_IMAGE_MAX];
    json_t *ds, *sel;

    if (!op || !p || !ns)
        return NULL;
    if (!gpuop_render_per_os(p, operand))
        pool = NULL; /* a full reference or a digest: one DaemonSet, as it is */
    gpuop_render_ds_name(p, operand, pool, name, sizeof(name));
    snprintf(image, sizeof(image), "%s%s%s", p->operands[operand].image, pool ? "-" : "",
             pool ? pool->tag : "");
    t.container = op->name;
    for (size_t i = 0; i < sizeof(templates) / sizeof(templates[0]); i++)
        if (!strcmp(templates[i].operand, op->name))
            templates[i].fn(p, &t);
    if (t.oom) {
        tmpl_free(&t);
        return NULL;
    }
    sel = json_pack("{s:s, s:s, s:s*}", GPUOP_LABEL_NAME, op->name, GPUOP_LABEL_MANAGED_BY,
                    GPUOP_MANAGER, GPUOP_LABEL_OS_POOL, pool ? pool->tag : NULL);
    ds = json_pack("{s:s, s:s, s:o, s:{s:{s:o}, s:o, s:{s:o, s:o}}}", "apiVersion", "apps/v1",
                   "kind", "DaemonSet", "metadata", metadata(p, op, pool, name, ns), "spec",
                   "selector", "matchLabels", sel, "updateStrategy", update_strategy(p), "template",
                   "metadata", template_metadata(p, op, pool), "spec",
                   pod_spec(p, operand, &t, pool, image));
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
            if (json_array_append_new(
                    all, gpuop_render_daemonset_os(p, i, per_os ? &pools[k] : NULL, ns))) {
                json_decref(all);
                return NULL;
            }
        }
    }
    return all;
}
