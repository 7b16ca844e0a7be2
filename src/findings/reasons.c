/*
 * reasons.c - the finding kinds and reasons (SPEC section 5) as one table.
 *
 * This is the only place that names a reason, words its message or says
 * what to do about it: analysis.c picks the index and fills the template's
 * placeholders (reasons.h lists them), status/report/metrics/Events print
 * the strings, and docs/findings.md is written from the same rows. Adding
 * a reason is one enum entry in reasons.h plus one row here (the static
 * assert checks).
 */
#include <string.h>

#include "gpuop/reasons.h"

static const struct {
    const char *name;
    const char *summary;
} kinds[GPUOP_KIND_COUNT] = {
    [GPUOP_KIND_MISSING] = {"Missing", "The operand should run on the node but no Ready pod of it "
                                       "runs there."},
    [GPUOP_KIND_NOT_SCHEDULED] = {"NotScheduled",
                                  "The operand is enabled and the node is a GPU node, but the "
                                  "node's deploy label is not \"true\" (nor \"false\" or "
                                  "\"pre-installed\"), so nothing happens here."},
    [GPUOP_KIND_UNEXPECTED] = {"Unexpected", "A pod of the operand runs on a node where it is not "
                                             "expected."},
    [GPUOP_KIND_ORDERING] = {"OrderingViolation",
                             "The operand runs while one of its prerequisites is neither "
                             "running nor provided by the host."},
    [GPUOP_KIND_HELD] = {"Held",
                         "The operand is labelled to run on the node, but with spec.ordering: "
                         "enforce its DaemonSet keeps off the node until every prerequisite's "
                         "label says \"true\", \"false\" or \"pre-installed\" (not a "
                         "violation: the order is kept)."},
};

/* Message templates: every pod state reads the same ("<pod> is Pending:
 * ImagePullBackOff - ..., 2 restarts"); a pod left running where it is not
 * expected may be on its way out. */
#define POD_STATE_MESSAGE "Pod <detail>."
#define TERMINATING_NOTE                                                                           \
    "[terminating: It is terminating since <terminating> and still serves until it stops.]"

/* Rows: kind, name, message template, summary, action template, ordering
 * pair (or NULL, NULL), transient (true: Events wait out the grace period;
 * GPUOP_WAIT_STALL: and their node's progress, events_int.h), progress (what
 * the finding says of its node's progress, reasons.h). */
#define M GPUOP_KIND_MISSING
#define N GPUOP_KIND_NOT_SCHEDULED
#define U GPUOP_KIND_UNEXPECTED
#define O GPUOP_KIND_ORDERING
#define H GPUOP_KIND_HELD

static const struct gpuop_reason_info reasons[] = {
    [GPUOP_REASON_DAEMONSET_ABSENT] =
        {M, "DaemonSetAbsent", "DaemonSet <ds> does not exist.",
         "The operand's DaemonSet does not exist.",
         "gpuop creates it when the policy is applied: check the GpuPolicy's Reconciled "
         "condition and the operator's log.",
         NULL, NULL, true},
    [GPUOP_REASON_OS_LABELS_MISSING] =
        {M, "OsLabelsMissing",
         "The <operand> image is chosen by the node's OS, and the node lacks <detail>, so no "
         "<operand> DaemonSet selects it.",
         "The driver image's tag names the node's OS (<version>-<ID><VERSION_ID>, from "
         "node-feature-discovery's OS labels), and the node lacks those labels or carries "
         "values that make no OS tag, so no per-OS driver DaemonSet selects it.",
         "Run node-feature-discovery on the node (it sets the "
         "feature.node.kubernetes.io/system-os_release.* labels), or give spec.<key>.image a "
         "full reference (or spec.<key>.version a sha256: digest): then one DaemonSet runs on "
         "every node whatever its OS.",
         NULL, NULL, true},
    [GPUOP_REASON_KERNEL_LABEL_MISSING] =
        {M, "KernelLabelMissing",
         "The <operand> is precompiled (spec.<key>.usePrecompiled), its image chosen by the "
         "node's OS and kernel, and the node lacks "
         "feature.node.kubernetes.io/kernel-version.full, so no <operand> DaemonSet selects it.",
         "With precompiled drivers the image's tag names the node's kernel "
         "(<version>-<kernel>-<ID><VERSION_ID>, the kernel from node-feature-discovery's "
         "kernel-version.full label) and each kernel has its own DaemonSet, as NVIDIA's GPU "
         "Operator does; a node without the label is in none.",
         "Run node-feature-discovery on the node (its kernel source sets "
         "feature.node.kubernetes.io/kernel-version.full), or set spec.<key>.usePrecompiled: "
         "false to build the driver on the node.",
         NULL, NULL, true},
    [GPUOP_REASON_TAINT_NOT_TOLERATED] =
        {M, "TaintNotTolerated",
         "Taint <detail> on the node is not tolerated by DaemonSet <ds>, so no <operand> pod "
         "runs here.",
         "A NoSchedule or NoExecute taint on the node is not tolerated by the DaemonSet, so "
         "the DaemonSet controller places no pod here (the node also drops out of "
         "desiredNumberScheduled).",
         "Add a matching toleration under spec.daemonsets.tolerations of the GpuPolicy, or "
         "remove the taint from the node.",
         NULL, NULL, false, GPUOP_PROGRESS_FAILED},
    [GPUOP_REASON_POD_NOT_CREATED] =
        {M, "PodNotCreated",
         "DaemonSet <ds> has no pod on this node yet[since: (the DaemonSet and the node both exist "
         "since <since>)].[controller: The DaemonSet controller says: <controller>]",
         "The DaemonSet exists and should place a pod here, but none exists.",
         "The DaemonSet controller normally adds the pod within seconds of the label; if this "
         "lasts, look at the DaemonSet's events and the kube-controller-manager.",
         NULL, NULL, GPUOP_WAIT_STALL, GPUOP_PROGRESS_STEP},
    [GPUOP_REASON_POD_UNSCHEDULABLE] =
        {M, "PodUnschedulable", POD_STATE_MESSAGE,
         "The pod exists but the scheduler cannot bind it to the node.",
         "Read the scheduler's message: usually the node lacks CPU or memory for the "
         "requests under spec.<key>.resources, or a host port is taken.",
         NULL, NULL, false, GPUOP_PROGRESS_FAILED},
    [GPUOP_REASON_IMAGE_PULL_FAILED] =
        {M, "ImagePullFailed", POD_STATE_MESSAGE, "The node cannot pull the operand's image.",
         "Check the image reference under spec.<key>.image, the registry's reachability "
         "from the node and any image pull secret.",
         NULL, NULL, true, GPUOP_PROGRESS_FAILED},
    [GPUOP_REASON_CRASH_LOOP] =
        {M, "CrashLoopBackOff", POD_STATE_MESSAGE,
         "A container of the pod keeps exiting and is being restarted.",
         "Read the container's log (kubectl logs --previous); for the driver, check the kernel "
         "headers and that no driver is preinstalled on the host.",
         NULL, NULL, false, GPUOP_PROGRESS_FAILED},
    [GPUOP_REASON_WAITING_FOR_GATE] =
        {M, "WaitingForGate",
         "Pod <detail> is held in init container <gate>[since: since <since>]: waiting for "
         "<gate-file> (under /run/nvidia/validations), which appears once <gate-what> works on "
         "this node.",
         "The pod waits in one of the GPU Operator's readiness gates, an init container that "
         "holds it until a prerequisite's validation file appears: a step of the rollout, not "
         "a failure (an init container that crash-loops or cannot pull is reported as that).",
         "Nothing, while the prerequisite is on its way (a driver takes minutes to build): see "
         "its own finding on this node. If the prerequisite runs and the gate still holds, read "
         "the init container's log (kubectl logs <detail> -c <gate> in gpuop's namespace).",
         NULL, NULL, GPUOP_WAIT_STALL, GPUOP_PROGRESS_STEP},
    [GPUOP_REASON_POD_PENDING] =
        {M, "PodPending", POD_STATE_MESSAGE,
         "The pod is bound to the node but its containers have not started.",
         "Usually transient (image download, volume mounts); if it lasts, describe the pod and "
         "read its events.",
         NULL, NULL, GPUOP_WAIT_STALL, GPUOP_PROGRESS_STEP},
    [GPUOP_REASON_POD_NOT_READY] =
        {M, "PodNotReady", POD_STATE_MESSAGE, "The pod is Running but not Ready.",
         "Its readiness probe fails or a container is still starting: read the pod's events and "
         "logs.",
         NULL, NULL, GPUOP_WAIT_STALL, GPUOP_PROGRESS_STEP},
    [GPUOP_REASON_POD_FAILED] =
        {M, "PodFailed", POD_STATE_MESSAGE,
         "The pod ended (Failed or Succeeded) or its state is Unknown.",
         "Describe the pod and read its logs; delete it to let the DaemonSet controller create "
         "a new one.",
         NULL, NULL, false, GPUOP_PROGRESS_FAILED},
    [GPUOP_REASON_POD_TERMINATING] =
        {M, "PodTerminating", POD_STATE_MESSAGE,
         "The pod is being deleted and no replacement runs yet.",
         "Usually transient (rolling update); if the pod stays Terminating, the node's kubelet "
         "may be unreachable.",
         NULL, NULL, GPUOP_WAIT_STALL, GPUOP_PROGRESS_STEP},
    [GPUOP_REASON_DEVICE_PLUGIN_ADVERTISES_NOTHING] =
        {M, "DevicePluginAdvertisesNothing",
         "Pod <detail> is Running and Ready since <since>, but the node advertises no "
         "<gpu-resource> (capacity <capacity>, allocatable <allocatable>).",
         "The device plugin has been Running and Ready for longer than the policy's advertise "
         "grace (spec.findings.advertiseGracePeriodSeconds) and the node still advertises no "
         "nvidia.com/gpu: GPU pods cannot be scheduled here.",
         "Read the device plugin's log: it finds no GPU when the driver or the container "
         "toolkit does not work on the node, or it cannot register with the kubelet "
         "(/var/lib/kubelet/device-plugins). Check nvidia-smi on the host.",
         "device-plugin", NULL, false, GPUOP_PROGRESS_FAILED},
    [GPUOP_REASON_SHARING_CONFIG_KEY_MISSING] =
        {M, "SharingConfigKeyMissing",
         "The node's label nvidia.com/device-plugin.config is \"<detail>\"[config-keys:, a key "
         "ConfigMap <config-map> lacks (its keys: <config-keys>)][config-absent:, and ConfigMap "
         "<config-map> does not exist]: the device plugin's config-manager fails on it "
         "(\"specified config <detail> does not exist\") and the device plugin gets no "
         "config here.",
         "The node picks a sharing config (label nvidia.com/device-plugin.config) that the "
         "ConfigMap spec.devicePlugin.config.name lacks: NVIDIA's config-manager, in the device "
         "plugin's and GFD's pods, fails on a key that is not there, so the node's GPUs are not "
         "advertised with its config (or at all).",
         "Label the node with one of the ConfigMap's keys (kubectl label node <node> "
         "nvidia.com/device-plugin.config=KEY --overwrite), remove the label to take the "
         "policy's default (spec.devicePlugin.config.default), or add the key \"<detail>\" to "
         "ConfigMap <config-map>.",
         "device-plugin", NULL, false, GPUOP_PROGRESS_FAILED},
    [GPUOP_REASON_SHARED_ALLOCATABLE_DIFFERS] =
        {M, "SharedAllocatableDiffers",
         "The node advertises <allocatable> <gpu-resource> (allocatable)[other-name:, and "
         "<other-resource> instead, where its sharing config names <gpu-resource>], but GFD "
         "labels it <gpu-count> GPUs shared <replicas> ways "
         "(<strategy>): <shared> <gpu-resource> expected; the device plugin pod <detail> is "
         "Ready since <since>.",
         "GFD's labels say the node's GPUs are shared (nvidia.com/gpu.sharing-strategy, "
         "nvidia.com/gpu.count x nvidia.com/gpu.replicas), and the device plugin, Ready past "
         "the advertise grace, advertises another number of nvidia.com/gpu: the scheduler "
         "hands out what allocatable says, not what the config says.",
         "Read the device plugin's log (and its config-manager's): a config change it has not "
         "applied yet (restart its pod on the node), a config whose resource is renamed "
         "(renameByDefault: nvidia.com/gpu.shared; its config and the name it advertises must "
         "agree), or GPUs it does not find.",
         "device-plugin", NULL, false, GPUOP_PROGRESS_FAILED},
    [GPUOP_REASON_NO_SLICES_PUBLISHED] =
        {M, "NoSlicesPublished",
         "Pod <detail> is Running and Ready since <since>, but no ResourceSlice of driver "
         "gpu.nvidia.com advertises a device of the node.",
         "The DRA driver's kubelet plugin has been Running and Ready for longer than the "
         "policy's advertise grace (spec.findings.advertiseGracePeriodSeconds) and no "
         "ResourceSlice of driver gpu.nvidia.com (resource.k8s.io/v1) names the node with a "
         "device: no claim can be allocated here.",
         "Read the kubelet plugin's log (container gpus): it publishes no device when it finds "
         "no GPU (the driver, NVML), or when it cannot register with the kubelet "
         "(/var/lib/kubelet/plugins_registry; the kubelet's log says why).",
         NULL, NULL, false, GPUOP_PROGRESS_FAILED},
    [GPUOP_REASON_LABEL_ABSENT] =
        {N, "LabelAbsent", "Label nvidia.com/gpu.deploy.<operand> is absent: nothing happens here.",
         "The node has no nvidia.com/gpu.deploy.<operand> label.",
         "Label the node nvidia.com/gpu.deploy.<operand>=true to run the operand here, or "
         "=false if the host provides it.",
         NULL, NULL},
    [GPUOP_REASON_LABEL_EMPTY] =
        {N, "LabelEmpty",
         "Label nvidia.com/gpu.deploy.<operand> is \"\" (empty): nothing happens here.",
         "The node's nvidia.com/gpu.deploy.<operand> label has an empty value.",
         "An empty value selects nothing: set it to \"true\" to run the operand here, or "
         "\"false\" if the host provides it.",
         NULL, NULL},
    [GPUOP_REASON_LABEL_PAUSED] =
        {N, "LabelPaused",
         "Label nvidia.com/gpu.deploy.<operand> is \"<detail>\": <operand> is paused here, nothing "
         "runs.",
         "The node's nvidia.com/gpu.deploy.<operand> label is \"paused...\" (the GPU Operator "
         "pauses operands this way during upgrades).",
         "When the maintenance is over, set the label back to \"true\" (or \"false\" if the host "
         "provides the operand).",
         NULL, NULL, GPUOP_WAIT_STALL, GPUOP_PROGRESS_STEP},
    [GPUOP_REASON_LABEL_PAUSED_LEFT_OVER] =
        {N, "LabelPausedLeftOver",
         "Label nvidia.com/gpu.deploy.<operand> is \"<detail>\" but no driver upgrade is in "
         "progress here (nvidia.com/gpu-driver-upgrade-state is <upgrade-state>): the pause was "
         "left over, and <operand> does not run.",
         "The node's deploy label still says \"paused-for-driver-upgrade\", the value the GPU "
         "Operator's driver manager sets while it upgrades the driver, but no upgrade is in "
         "progress on the node (its upgrade-state label is absent, \"upgrade-done\" or "
         "\"upgrade-failed\"): nothing will set it back.",
         "Resume the operand: kubectl label node <node> nvidia.com/gpu.deploy.<operand>=true "
         "--overwrite (or =false if the host provides it).",
         NULL, NULL},
    [GPUOP_REASON_LABEL_INVALID] =
        {N, "LabelInvalid",
         "Label nvidia.com/gpu.deploy.<operand> is \"<detail>\", which is neither \"true\", "
         "\"false\" nor \"pre-installed\": nothing happens here.",
         "The node's nvidia.com/gpu.deploy.<operand> label has a value other than true, false "
         "or pre-installed.",
         "Only \"true\" runs the operand: set \"true\", or \"false\" if the host provides it "
         "(\"pre-installed\", which NVIDIA's driver container writes, means the same).",
         NULL, NULL},
    [GPUOP_REASON_LABEL_CHANGED] =
        {N, "LabelChanged",
         "Label nvidia.com/gpu.deploy.<operand> was set to \"true\" by gpuop (node labelling) and "
         "is now <label-now>: gpuop does not put it back.",
         "A deploy label gpuop set when it labelled the node (annotation gpuop.dev/node-labels) "
         "was removed or changed since, by someone else; gpuop reports it and never relabels.",
         "If the change is meant, make the node yours: kubectl annotate node <node> "
         "gpuop.dev/node-labels- (gpuop then leaves every label of the node alone and this "
         "finding clears); else set the label back to \"true\".",
         NULL, NULL},
    [GPUOP_REASON_DRIVER_POOL_CONFLICT] =
        {N, "DriverPoolConflict",
         "Driver pools <detail> all select the node (spec.driver.pools: their nodeSelectors "
         "match its labels, or one is the pool its gpuop.dev/driver-pool label names by hand), "
         "so gpuop moves it to none of them: it keeps its driver and its gpuop.dev/driver-pool "
         "label as they are.",
         "Two or more driver pools select one node; as NVIDIA's GPU Operator does with "
         "NVIDIADriver objects whose nodeSelectors overlap, gpuop fails closed: the node's pool "
         "label is neither moved nor removed (annotation gpuop.dev/driver-pool-conflict names "
         "the pools) and its driver keeps running.",
         "Make the pools' nodeSelectors exclusive (each pool's spec.driver.pools nodeSelector), or "
         "change "
         "the node's labels so that one pool selects it (kubectl label node <node> ...); gpuop "
         "then moves it there and the finding clears.",
         NULL, NULL},
    [GPUOP_REASON_OPERAND_DISABLED] =
        {U, "OperandDisabled",
         "Pod <detail> runs although <operand> is disabled in the policy "
         "(spec.<key>.enabled=false)." TERMINATING_NOTE,
         "The operand is disabled in the policy but a pod of it still runs.",
         "gpuop deletes the DaemonSet of a disabled operand; if the pod stays, delete it, or "
         "enable the operand again.",
         NULL, NULL, true},
    [GPUOP_REASON_NODE_OPTED_OUT] =
        {U, "NodeOptedOut",
         "Pod <detail> runs although the node is labelled "
         "nvidia.com/gpu.deploy.operands=false." TERMINATING_NOTE,
         "The node is labelled nvidia.com/gpu.deploy.operands=false but a pod of the operand "
         "runs there (its own deploy label is still \"true\").",
         "Remove or set to \"false\" the operand's deploy label on the node, or drop the "
         "operands=false label if the node should run operands.",
         NULL, NULL},
    [GPUOP_REASON_LABEL_NOT_TRUE] =
        {U, "LabelNotTrue",
         "Pod <detail> runs although label nvidia.com/gpu.deploy.<operand> is "
         "<label-state>." TERMINATING_NOTE,
         "A pod of the operand runs although the node's deploy label is not \"true\" (a pod left "
         "after its label went).",
         "The DaemonSet controller removes such pods within seconds; if it stays, delete the pod "
         "or set the label back to \"true\".",
         NULL, NULL, true},
    [GPUOP_REASON_NOT_GPU_NODE] =
        {U, "NotGpuNode",
         "Pod <detail> runs on a node that has none of the GPU node labels." TERMINATING_NOTE,
         "A pod of the operand runs on a node that is not a GPU node.",
         "Delete the pod; label the node nvidia.com/gpu.present=true if it does have a GPU.", NULL,
         NULL},
    [GPUOP_REASON_POD_STUCK_TERMINATING] =
        {U, "PodStuckTerminating",
         "Pod <detail> was deleted at <since>, more than <grace> s ago, and still runs.",
         "A pod of the operand was deleted longer ago than the policy's terminating grace "
         "(spec.findings.terminatingGracePeriodSeconds) and still runs: something holds it.",
         "Look at the pod's metadata.finalizers: a finalizer whose controller is gone keeps the "
         "pod for ever (remove it with kubectl patch). If the node is NotReady, its kubelet "
         "stopped answering: bring it back, or once the machine is known dead delete the pod "
         "with --force --grace-period=0.",
         NULL, NULL, false, GPUOP_PROGRESS_FAILED},
    [GPUOP_REASON_GPUS_ADVERTISED_TWICE] =
        {U, "GpusAdvertisedTwice",
         "The node's GPUs are advertised twice: <allocatable> nvidia.com/gpu (allocatable) by the "
         "device plugin, and <dra-devices> device(s) in <dra-slices> ResourceSlice(s) of driver "
         "gpu.nvidia.com by the DRA driver; the scheduler counts each apart and may admit more "
         "GPU pods than the node has GPUs (those pods fail to start)."
         "[overadmit: It has: the pods bound here hold <overadmit-held> GPUs "
         "(<overadmit-requests> through nvidia.com/gpu requests, <overadmit-claims> through "
         "claims' devices) of the node's <overadmit-gpus>, so these <overadmit-count> cannot all "
         "have one: <overadmit>.]",
         "The device plugin advertises the node's GPUs as nvidia.com/gpu and the DRA driver "
         "publishes them in ResourceSlices (resource.k8s.io/v1): the scheduler hands out both, "
         "so pods requesting nvidia.com/gpu and pods with claims may together be given more "
         "GPUs than the node has.",
         "Advertise the node's GPUs one way: label it nvidia.com/gpu.deploy.device-plugin=false "
         "(or disable spec.devicePlugin) to allocate them through DRA only, or "
         "nvidia.com/gpu.deploy.dra-driver=false (or disable spec.draDriver) to keep the device "
         "plugin.",
         NULL, NULL, GPUOP_WAIT_GRACE},
    [GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_TOOLKIT] =
        {O, "DevicePluginWithoutToolkit",
         "<operand> runs but <prereq> neither runs nor is host-provided: the node "
         "[advertised:advertises <allocatable> <gpu-resource>][unadvertised:will advertise "
         "nvidia.com/gpu once the plugin registers], so GPU pods will be scheduled here and fail "
         "to get a GPU."
         "[stranded: GPU pods bound here now (<stranded-count>): <stranded>.]" TERMINATING_NOTE,
         "The device plugin runs while the container toolkit does not: the node advertises "
         "nvidia.com/gpu, the scheduler places GPU pods here, and they fail to get a GPU.",
         "Make the container toolkit run on the node (label "
         "nvidia.com/gpu.deploy.container-toolkit=true, or =false if the host provides it), or "
         "stop the device plugin there until it does.",
         "device-plugin", "container-toolkit", GPUOP_WAIT_STALL},
    [GPUOP_REASON_PREREQUISITE_NOT_RUNNING] =
        {O, "PrerequisiteNotRunning",
         "<operand> runs but its prerequisite <prereq> neither runs nor is host-provided here"
         "[chain: (chain: <chain>)]."
         "[stranded: GPU pods bound here now (<stranded-count>): <stranded>.]" TERMINATING_NOTE,
         "The operand runs while a direct or transitive prerequisite is neither running nor "
         "provided by the host.",
         "Make <prereq> run on the node (label nvidia.com/gpu.deploy.<prereq>=true), or set "
         "that label to \"false\" if the host provides it.",
         NULL, NULL, GPUOP_WAIT_STALL},
    [GPUOP_REASON_GPUS_ADVERTISED_WITHOUT_TOOLKIT] =
        {O, "GpusAdvertisedWithoutToolkit",
         "The node advertises <allocatable> <gpu-resource>[mig: and MIG devices] (allocatable) but "
         "<prereq> neither runs nor is host-provided, and no <operand> pod runs: GPU pods will be "
         "scheduled here and fail to get a GPU."
         "[stranded: GPU pods bound here now (<stranded-count>): <stranded>.]",
         "The node advertises nvidia.com/gpu to the scheduler while the container toolkit "
         "neither runs nor is host-provided (the capacity outlives the device plugin's pod for "
         "a while): GPU pods are scheduled here and fail to get a GPU.",
         "Make the container toolkit run on the node (label "
         "nvidia.com/gpu.deploy.container-toolkit=true, or =false if the host provides it); "
         "until then cordon the node, or move the GPU pods bound here elsewhere.",
         "device-plugin", "container-toolkit", GPUOP_WAIT_STALL},
    [GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_MPS_DAEMON] =
        {O, "DevicePluginWithoutMpsDaemon",
         "<operand> runs but <prereq> does not, on a node whose sharing config is MPS (GFD's "
         "nvidia.com/mps.capable=true): the device plugin waits for the daemon (\"error waiting "
         "for MPS daemon\") and shares no GPU here."
         "[stranded: GPU pods bound here now (<stranded-count>): <stranded>.]" TERMINATING_NOTE,
         "The node's sharing config is an MPS one (GFD labels it nvidia.com/mps.capable=true), so "
         "its device plugin waits for the MPS control daemon, which does not run there.",
         "See the node's mps-control-daemon finding for why the daemon does not run (its "
         "DaemonSet, a taint, its pod), or give the node a config without MPS (its label "
         "nvidia.com/device-plugin.config).",
         "device-plugin", "mps-control-daemon", GPUOP_WAIT_STALL},
    [GPUOP_REASON_SLICES_WITHOUT_DRIVER] =
        {O, "SlicesWithoutDriver",
         "<dra-devices> device(s) in <dra-slices> ResourceSlice(s) of driver gpu.nvidia.com "
         "name the node, but <prereq> neither runs nor is host-provided: claims allocated here "
         "will fail to prepare, and their pods stay in ContainerCreating.",
         "The DRA driver's ResourceSlices advertise the node's GPUs while the NVIDIA driver "
         "neither runs nor is host-provided: the scheduler allocates claims here that the "
         "kubelet plugin cannot prepare.",
         "Make <prereq> run on the node (label nvidia.com/gpu.deploy.<prereq>=true), or set that "
         "label to \"false\" if the host provides it; until then cordon the node. The slices go "
         "once the DRA kubelet plugin stops (the kubelet deletes them 30 s later).",
         NULL, NULL, GPUOP_WAIT_STALL},
    [GPUOP_REASON_HELD_BY_PREREQUISITE] =
        {H, "HeldByPrerequisite",
         "<operand> is labelled to run here, but with spec.ordering: enforce DaemonSet <ds> "
         "requires label nvidia.com/gpu.deploy.<prereq> to be \"true\", \"false\" or "
         "\"pre-installed\", and it is <prereq-label>.",
         "The operand's label is \"true\" but the label of a prerequisite up its chain is "
         "neither \"true\" nor host-provided (\"false\", \"pre-installed\"), so the enforced "
         "order keeps the operand off the node.",
         "Label the node nvidia.com/gpu.deploy.<prereq>=true to run <prereq> here (<operand> "
         "follows once it runs), or =false if the host provides it.",
         NULL, NULL},
    [GPUOP_REASON_DRA_PLUGIN_STALE] =
        {O, "DraPluginStale",
         "DRA kubelet plugin pod <detail> Ready since <since>, before the node's <prereq> pod "
         "running now was created: it still holds the driver it found when it started, so claims "
         "it "
         "prepares here may fail.",
         "The DRA driver's kubelet plugin must restart after a driver reload (NVIDIA pauses it "
         "with the driver's other dependents); this one has been Ready since before the node's "
         "current driver pod was created, and that driver pod Ready past a short grace.",
         "Restart it: kubectl delete pod <detail> in gpuop's namespace (its DaemonSet starts "
         "it again on the running driver). gpuop's own driver upgrade "
         "(spec.driver.upgradePolicy) restarts it with the other dependents: this comes from a "
         "driver pod restarted outside it.",
         NULL, NULL, GPUOP_WAIT_NONE},
    [GPUOP_REASON_CLAIM_WITHOUT_PLUGIN] =
        {O, "ClaimWithoutPlugin",
         "ResourceClaims holding devices of driver gpu.nvidia.com are allocated on the node and "
         "reserved by pods, but no DRA kubelet plugin runs Ready here or it has not registered "
         "(<dra-slices> ResourceSlice(s) of it name the node): the kubelet cannot prepare their "
         "devices, and the pods stay in ContainerCreating."
         "[claim-pods: Pods reserving them (<claim-pods-count>): <claim-pods>.]",
         "A claim allocated on a node is prepared by the DRA driver's kubelet plugin there: "
         "while no plugin pod runs Ready on the node (or the plugin runs but never registered "
         "with the kubelet, so none of its ResourceSlices names the node), the pods reserving "
         "the claim wait in ContainerCreating. The DRA form of a stranded pod.",
         "Make the DRA driver run on the node (label nvidia.com/gpu.deploy.dra-driver=true; see "
         "its dra-driver finding for why it does not run), or, when it runs and publishes no "
         "slice, read its log and the kubelet's (registration under the kubelet's "
         "plugins_registry; spec.draDriver.hostPaths.kubeletRootDir). Or delete the pods named "
         "so that their claims are allocated elsewhere.",
         NULL, NULL, GPUOP_WAIT_GRACE},
    [GPUOP_REASON_SHARING_CONFIG_NOT_APPLIED] =
        {M, "SharingConfigNotApplied",
         "The node's sharing config \"<config-key>\" (ConfigMap <config-map>) says "
         "<config-strategy> with <config-replicas> replica(s), but GFD labels the node "
         "<strategy> with <replicas> (nvidia.com/gpu.sharing-strategy, nvidia.com/gpu.replicas), "
         "since <since>: the device plugin has not applied its config.",
         "The node's config (the ConfigMap's data for its key nvidia.com/device-plugin.config, "
         "else spec.devicePlugin.config.default) changed, or the node's label did, and GFD's "
         "labels still say the old sharing longer than the advertise grace "
         "(spec.findings.advertiseGracePeriodSeconds) after gpuop saw the change: the "
         "config-manager sidecars of the device plugin and GFD did not reload, so the node's "
         "allocatable is still the old config's.",
         "Read the config-manager container's log of the device plugin pod on the node (kubectl "
         "logs POD -c config-manager) and of GFD's; restart the device plugin pod on the node "
         "(kubectl delete pod) so that it starts on the config.",
         "device-plugin", NULL, false, GPUOP_PROGRESS_FAILED},
};

#undef M
#undef N
#undef U
#undef O
#undef H

_Static_assert(sizeof(reasons) / sizeof(reasons[0]) == GPUOP_REASON_COUNT,
               "one row per enum gpuop_reason");

const struct gpuop_reason_info *gpuop_reason_get(int reason)
{
    return (reason >= 0 && reason < GPUOP_REASON_COUNT) ? &reasons[reason] : NULL;
}

const char *gpuop_kind_name(int kind)
{
    return (kind >= 0 && kind < GPUOP_KIND_COUNT) ? kinds[kind].name : "Unknown";
}

const char *gpuop_kind_summary(int kind)
{
    return (kind >= 0 && kind < GPUOP_KIND_COUNT) ? kinds[kind].summary : "";
}

int gpuop_reason_by_name(const char *name)
{
    for (int i = 0; name && i < GPUOP_REASON_COUNT; i++)
        if (strcmp(reasons[i].name, name) == 0)
            return i;
    return -1;
}

/* The first ordering row of the pair: DevicePluginWithoutToolkit (a
 * running plugin) comes before GpusAdvertisedWithoutToolkit, which the
 * analysis picks by index when no plugin runs. */
int gpuop_reason_ordering(const char *op, const char *prereq)
{
    for (int i = 0; op && prereq && i < GPUOP_REASON_COUNT; i++)
        if (reasons[i].kind == GPUOP_KIND_ORDERING && reasons[i].operand &&
            strcmp(reasons[i].operand, op) == 0 && strcmp(reasons[i].prereq, prereq) == 0)
            return i;
    return GPUOP_REASON_PREREQUISITE_NOT_RUNNING;
}
