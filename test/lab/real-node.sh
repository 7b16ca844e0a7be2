# shellcheck shell=bash
# test/lab/real-node.sh — the real-node lab's parts (`test/lab/up
# --real-node`): a network namespace the lab owns, containerd and a real
# kubelet in it, and the teardown that leaves nothing behind. Sourced by
# up and down after common.sh, never run. See docs/lab.md, "A real node".
#
# The whole lab runs inside the network namespace $LAB_NETNS (nsenter
# --net, so it shares the machine's mount namespace and `down` can see and
# undo every mount). Inside it: loopback (etcd, the API server and the
# other control-plane components bind 127.0.0.1 there), and the bridge
# $RN_BRIDGE carrying the node's address $RN_NODE_IP; the CNI bridge plugin
# plugs every pod into it with an address from $RN_POD_SUBNET. A nat rule
# sends the `kubernetes` Service address $RN_SERVICE_IP:443 to the API
# server on the namespace's 127.0.0.1 (kube-proxy's job; there is none).
#
# What the lab creates outside $LAB_DIR, and `down` removes: the network
# namespace (and /run/netns if it made it), the cgroup $RN_CGROUP_ROOT in
# every hierarchy (kubelet's --cgroup-root), the entries the kubelet and
# containerd write in fixed places (RN_OUTSIDE), the lock file
# $RN_OWNER_FILE (one real node per machine: the kubelet's device-plugin
# socket lives at a fixed path), and the six kernel settings the kubelet
# insists on (saved at up, put back at down).

RN_NODE=real-node
RN_BRIDGE=gpuoplab0
RN_NODE_IP=10.250.0.1
RN_POD_SUBNET=10.250.0.0/24
RN_SERVICE_IP=10.96.0.1
RN_CHAIN=GPUOP-LAB-SVC
RN_OWNER_FILE=/run/gpuop-lab-real-node.owner
RN_DIR=$LAB_DIR/real-node
RN_SOCK=$RN_DIR/containerd/containerd.sock
# Fixed paths the kubelet, containerd and its shims write whatever their
# configured roots are.
RN_OUTSIDE=(/var/lib/kubelet /var/log/pods /var/log/containers /run/containerd /var/lib/cni /run/netns)
# Kernel settings the kubelet sets (it cannot be told not to; it refuses
# to start if told to only check them).
RN_SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops
	kernel/keys/root_maxkeys kernel/keys/root_maxbytes)
# Deadlines (seconds).
RN_NODE_READY_TIMEOUT=180
RN_DRAIN_TIMEOUT=90

# rn_id: a short stable id of this LAB_DIR; names the netns and cgroup.
rn_id() { printf '%s' "$LAB_DIR" | sha256sum | cut -c1-10; }
RN_NETNS=gpuop-lab-$(rn_id)
RN_CGROUP_ROOT=/$RN_NETNS

# containerd 2 (test/lab/build --part containerd): CDI in its CRI plugin,
# which Debian's containerd 1.6 lacks (scripts/deps installs none). Its
# ctr beside it, linked into the lab's bin once the node starts; before
# that (a lab that never started) there is nothing to talk to.
RN_CONTAINERD_BIN=""
rn_ctr() {
	local c=$LAB_DIR/bin/ctr
	[[ -x $c ]] || return 1
	"$c" --address "$RN_SOCK" --namespace k8s.io "$@"
}

# rn_is_real_node: true if this LAB_DIR holds a real-node lab (running or
# left over).
rn_is_real_node() { [[ -e $LAB_DIR/netns || -d $RN_DIR ]]; }

rn_check_tools() {
	local t
	for t in ip iptables nsenter runc cc strip jq; do
		command -v "$t" >/dev/null || lab_die "missing tool for --real-node: $t (scripts/deps installs it)"
	done
	[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] ||
		lab_die "missing CNI plugins in /usr/lib/cni (Debian package containernetworking-plugins)"
	[[ $(id -u) == 0 ]] || lab_die "--real-node needs root (network namespace, containerd, kubelet)"
}

# rn_claim: one real-node lab per machine.
rn_claim() {
	local owner
	if [[ -r $RN_OWNER_FILE ]]; then
		owner=$(<"$RN_OWNER_FILE")
		if [[ $owner != "$LAB_DIR" ]] &&
			LAB_DIR=$owner bash -c 'source "$1/common.sh"; lab_pid kubelet || lab_pid containerd' _ "$LAB_SRC" >/dev/null 2>&1; then
			lab_die "another real-node lab runs in $owner (one per machine); stop it with LAB_DIR=$owner test/lab/down"
		fi
	fi
	printf '%s\n' "$LAB_DIR" >"$RN_OWNER_FILE"
}

# rn_record_outside: remembers what existed in the fixed paths before the
# lab, so down removes only what the lab added.
rn_record_outside() {
	local p e rec=$RN_DIR/outside.rec
	[[ -e $rec ]] && return 0 # kept from an up that failed: still the truth
	: >"$rec.tmp"
	for p in "${RN_OUTSIDE[@]}"; do
		if [[ -e $p ]]; then
			if mountpoint -q "$p"; then
				printf 'present-mount\t%s\n' "$p" >>"$rec.tmp"
			else
				printf 'present\t%s\n' "$p" >>"$rec.tmp"
			fi
			for e in "$p"/* "$p"/.[!.]*; do
				[[ -e $e || -L $e ]] && printf 'entry\t%s\n' "$e" >>"$rec.tmp"
			done
		else
			printf 'absent\t%s\n' "$p" >>"$rec.tmp"
		fi
	done
	mv "$rec.tmp" "$rec"
}

rn_save_sysctls() {
	local s f=$RN_DIR/sysctl.saved
	[[ -e $f ]] && return 0
	for s in "${RN_SYSCTLS[@]}"; do
		printf '%s %s\n' "$s" "$(<"/proc/sys/$s")"
	done >"$f.tmp"
	mv "$f.tmp" "$f"
}

rn_restore_sysctls() {
	local f=$RN_DIR/sysctl.saved s v
	[[ -r $f ]] || return 0
	while read -r s v; do
		[[ -n $s && -w /proc/sys/$s ]] || continue
		[[ "$(<"/proc/sys/$s")" == "$v" ]] || printf '%s\n' "$v" >"/proc/sys/$s" ||
			lab_log "warning: could not restore $s to $v"
	done <"$f"
	rm -f "$f"
}

# rn_netns_up API_PORT: the namespace, its loopback and bridge, the
# Service nat rule.
rn_netns_up() {
	local api_port=$1
	ip netns add "$RN_NETNS"
	printf '%s\n' "$RN_NETNS" >"$LAB_DIR/netns"
	lab_set_netns "$RN_NETNS"
	lab_in ip link set lo up
	lab_in ip link add "$RN_BRIDGE" type bridge
	lab_in ip addr add "$RN_NODE_IP/${RN_POD_SUBNET#*/}" dev "$RN_BRIDGE"
	lab_in ip link set "$RN_BRIDGE" up
	# Local processes (hostNetwork pods, tests) reach the Service range
	# through the bridge too; the OUTPUT rule below rewrites it first.
	lab_in ip route add 10.96.0.0/16 dev "$RN_BRIDGE"
	# Packets from pods may be sent to 127.0.0.1 only with route_localnet.
	lab_in sysctl -qw "net.ipv4.conf.$RN_BRIDGE.route_localnet=1"
	lab_in sysctl -qw net.ipv4.conf.all.route_localnet=1
	lab_in iptables -w -t nat -N "$RN_CHAIN"
	lab_in iptables -w -t nat -A "$RN_CHAIN" -d "$RN_SERVICE_IP/32" -p tcp --dport 443 \
		-j DNAT --to-destination "127.0.0.1:$api_port"
	lab_in iptables -w -t nat -A PREROUTING -j "$RN_CHAIN"
	lab_in iptables -w -t nat -A OUTPUT -j "$RN_CHAIN"
}

rn_netns_down() {
	local ns=$RN_NETNS
	[[ -e /run/netns/$ns ]] || return 0
	nsenter "--net=/run/netns/$ns" -- iptables -w -t nat -D PREROUTING -j "$RN_CHAIN" 2>/dev/null || true
	nsenter "--net=/run/netns/$ns" -- iptables -w -t nat -D OUTPUT -j "$RN_CHAIN" 2>/dev/null || true
	nsenter "--net=/run/netns/$ns" -- iptables -w -t nat -F "$RN_CHAIN" 2>/dev/null || true
	nsenter "--net=/run/netns/$ns" -- iptables -w -t nat -X "$RN_CHAIN" 2>/dev/null || true
	ip netns del "$ns" || lab_log "warning: ip netns del $ns failed"
}

# rn_pki: the kubelet's client and serving certificates and the API
# server's client certificate towards kubelets (`cert` from up).
rn_pki() {
	local client_ext=$'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'
	[[ -s $pki/kubelet.crt && -s $pki/kubelet-serving.crt && -s $pki/apiserver-kubelet-client.crt ]] && return 0
	cert kubelet "/O=system:nodes/CN=system:node:$RN_NODE" "$client_ext"
	cert kubelet-serving "/CN=$RN_NODE" \
		$'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n'"subjectAltName=IP:$RN_NODE_IP,DNS:$RN_NODE"
	cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client_ext"
}

# The NVIDIA runtime handlers the node's containerd has: "nvidia" (the
# GPU Operator's default RuntimeClass) and "nvidia-container-runtime" (the
# handler AKS's GPU node images ship, which operator.runtimeClass names
# there). Each is runc behind the lab's stand-in for the NVIDIA runtime
# (rn_nvidia_runtimes).
RN_NVIDIA_HANDLERS=(nvidia nvidia-container-runtime)
# Where the toolkit stand-in registers the runtime name it was given and
# its install folder (test/lab/standins.c, toolkit_register): what the real
# installer writes into containerd's config.
RN_RUNTIME_REGISTRATION=/run/nvidia/toolkit/.gpuop-lab-runtime

# rn_nvidia_runtimes_toml DIR: containerd's runtimes for the handlers.
rn_nvidia_runtimes_toml() {
	local h
	for h in "${RN_NVIDIA_HANDLERS[@]}"; do
		cat <<EOF
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'$h']
        runtime_type = "io.containerd.runc.v2"
        runtime_path = "$RN_CONTAINERD_BIN/containerd-shim-runc-v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'$h'.options]
          BinaryName = "$1/containerd/handlers/$h"
          Root = "$1/containerd/runc"
          SystemdCgroup = false
EOF
	done
}

# rn_nvidia_runtimes DIR: the NVIDIA runtime's stand-in (docs/lab.md,
# "Stand-in operand images"), DIR/containerd/nvidia-runtime HANDLER
# RUNC_ARGS..., and per handler DIR/containerd/handlers/HANDLER calling it:
# runc, except that a container created under HANDLER while the toolkit
# stand-in has registered the runtime under that very name
# (RN_RUNTIME_REGISTRATION, whose install folder holds
# toolkit/.gpuop-lab-standin naming the driver root) and whose
# NVIDIA_VISIBLE_DEVICES asks for GPUs gets the driver's nvidia-smi and
# libnvidia-ml.so.1 (looked up as internal/driver/root.go of the GPU
# Operator does) copied into its root filesystem, as the NVIDIA runtime's
# hook mounts them. Without the toolkit, or under a name it did not
# register: nothing. Each create is logged in LAB_DIR/logs/nvidia-runtime.log
# (emptied here, at every up: a test reads this run's lines only).
rn_nvidia_runtimes() {
	local d=$1 h
	mkdir -p "$d/containerd/handlers" "$LAB_DIR/logs"
	: >"$LAB_DIR/logs/nvidia-runtime.log"
	cat >"$d/containerd/nvidia-runtime" <<EOF
#!/bin/bash
runc=$(command -v runc)
reg=$RN_RUNTIME_REGISTRATION
log=$LAB_DIR/logs/nvidia-runtime.log
EOF
	cat >>"$d/containerd/nvidia-runtime" <<'EOF'
handler=$1
shift
# find_in ROOT NAME DIR...: ROOT/DIR/NAME for the first DIR that has it.
find_in() {
	local r=$1 n=$2 dir
	shift 2
	for dir in "" "$@"; do
		[[ -e $r$dir/$n ]] && {
			printf '%s\n' "$r$dir/$n"
			return 0
		}
	done
	return 1
}
bundle="" create=0 prev=""
for a in "$@"; do
	[[ $a == create ]] && create=1
	[[ $prev == --bundle || $prev == -b ]] && bundle=$a
	prev=$a
done
if ((create)) && [[ -n $bundle && -r $bundle/config.json ]]; then
	what="nothing injected (no toolkit registered)"
	if [[ -r $reg ]]; then
		name=$(sed -n 's/^runtime=//p' "$reg")
		inst=$(sed -n 's/^install_dir=//p' "$reg")
		installed=$inst/toolkit/.gpuop-lab-standin
		what="nothing injected (the toolkit registered '$name', not '$handler')"
		if [[ $name == "$handler" && -r $installed ]]; then
			vis=$(jq -r '.process.env[]? | select(startswith("NVIDIA_VISIBLE_DEVICES=")) | sub("^[^=]*="; "")' "$bundle/config.json" | tail -1)
			root=$(jq -r '.root.path' "$bundle/config.json")
			[[ $root == /* ]] || root=$bundle/$root
			droot=$(sed -n 's/^driver_root=//p' "$installed")
			smi=$(find_in "$droot" nvidia-smi /usr/bin /usr/sbin /bin /sbin) || smi=""
			lib=$(find_in "$droot" libnvidia-ml.so.1 /usr/lib64 /usr/lib/x86_64-linux-gnu \
				/usr/lib/aarch64-linux-gnu /lib64 /lib/x86_64-linux-gnu /lib/aarch64-linux-gnu) || lib=""
			what="nothing injected (NVIDIA_VISIBLE_DEVICES='$vis')"
			if [[ -n $vis && $vis != void && $vis != none ]]; then
				what="nothing injected (no nvidia-smi or libnvidia-ml.so.1 under the driver root $droot)"
				if [[ -n $smi && -n $lib ]]; then
					mkdir -p "$root/usr/bin" "$root/usr/lib/x86_64-linux-gnu"
					cp "$smi" "$root/usr/bin/nvidia-smi"
					cp "$lib" "$root/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
					what="injected $smi and $lib (driver root $droot, toolkit in $inst)"
				fi
			fi
		fi
	fi
	printf '%s handler=%s create %s: %s\n' "$(date +%s.%N)" "$handler" "${bundle##*/}" "$what" >>"$log"
fi
exec "$runc" "$@"
EOF
	chmod 755 "$d/containerd/nvidia-runtime"
	for h in "${RN_NVIDIA_HANDLERS[@]}"; do
		printf '#!/bin/sh\nexec %s %s "$@"\n' "$d/containerd/nvidia-runtime" "$h" >"$d/containerd/handlers/$h"
		chmod 755 "$d/containerd/handlers/$h"
	done
}

# rn_configs: containerd's, the CNI network's and the kubelet's
# configuration, the pause image.
rn_configs() {
	local d=$RN_DIR
	rm -rf "$d/containerd" "$d/kubelet" "$d/cni" "$d/pod-logs"
	mkdir -p "$d/containerd" "$d/kubelet" "$d/cni/net.d" "$d/cni/ipam" "$d/pod-logs"
	"$LAB_SRC/pause-image" "$d/pause.tar"
	cat >"$d/containerd/config.toml" <<EOF
# The real-node lab's containerd 2 (config version 3): its own root, state
# and socket; the CRI plugin with runc (crun fails on cgroup v1 hybrid),
# cgroupfs, and restrict_oom_score_adj (root here lacks CAP_SYS_RESOURCE,
# so the kubelet's oom_score_adj -998 for sandboxes would fail every pod).
# CDI: containerd 2.4 always resolves the CDI devices a device plugin
# names (enable_cdi is gone, always on); the specs are read from
# /var/run/cdi only, where the toolkit writes them.
version = 3
root = "$d/containerd/root"
state = "$d/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.erofs", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$RN_SOCK"
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "$("$LAB_SRC/pause-image" --name)"
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = ""
  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    disable_apparmor = true
    cdi_spec_dirs = ["/var/run/cdi"]
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        runtime_path = "$RN_CONTAINERD_BIN/containerd-shim-runc-v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "$(command -v runc)"
          Root = "$d/containerd/runc"
          SystemdCgroup = false
$(rn_nvidia_runtimes_toml "$d")
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["/usr/lib/cni"]
      conf_dir = "$d/cni/net.d"
      max_conf_num = 1
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
EOF
	rn_nvidia_runtimes "$d"
	cat >"$d/cni/net.d/10-gpuop-lab.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "gpuop-lab",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$RN_BRIDGE",
      "isGateway": true,
      "isDefaultGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$d/cni/ipam",
        "ranges": [[{"subnet": "$RN_POD_SUBNET", "gateway": "$RN_NODE_IP"}]]
      }
    }
  ]
}
EOF
	cat >"$d/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# kubelet 1.36 refuses cgroup v1 unless told; the kubelet's own cgroup
# driver setting agrees with containerd's (cgroupfs).
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $RN_CGROUP_ROOT
containerRuntimeEndpoint: unix://$RN_SOCK
imageServiceEndpoint: unix://$RN_SOCK
address: $RN_NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: AlwaysAllow
podLogsDir: $d/pod-logs
clusterDomain: cluster.local
failSwapOn: false
maxPods: 30
# The filesystem statistics cannot be read here; no disk-pressure eviction.
evictionHard:
  memory.available: "100Mi"
mergeDefaultEvictionSettings: false
localStorageCapacityIsolation: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
EOF
}

# rn_cgroups_up: kubelet's --cgroup-root must exist in every hierarchy.
rn_cgroups_up() {
	local h
	for h in /sys/fs/cgroup/*/; do
		[[ -e $h/cgroup.procs ]] || continue
		mkdir -p "$h${RN_CGROUP_ROOT#/}"
	done
}

# rn_cgroups_down: kills what is left in the lab's cgroups (only the
# lab's pods live there), then removes them, deepest first.
rn_cgroups_down() {
	local h d pid i left
	for ((i = 0; i < 50; i++)); do
		left=0
		for h in /sys/fs/cgroup/*/; do
			d=$h${RN_CGROUP_ROOT#/}
			[[ -d $d ]] || continue
			while read -r pid; do
				[[ -n $pid ]] || continue
				left=1
				kill -KILL "$pid" 2>/dev/null || true
			done < <(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null)
		done
		((left)) || break
		sleep 0.2
	done
	for h in /sys/fs/cgroup/*/; do
		d=$h${RN_CGROUP_ROOT#/}
		[[ -d $d ]] || continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
		[[ -d $d ]] && lab_log "warning: could not remove cgroup $d"
	done
	return 0
}

rn_kubelet_args() {
	args kubelet \
		--config="$RN_DIR/kubelet/config.yaml" \
		--kubeconfig="$LAB_DIR/config/kubelet.kubeconfig" \
		--root-dir="$RN_DIR/kubelet" \
		--cert-dir="$RN_DIR/kubelet/pki" \
		--hostname-override="$RN_NODE" \
		--node-ip="$RN_NODE_IP" \
		--node-labels=gpuop.dev/lab-node=real \
		--v=1
}

rn_containerd_args() {
	args containerd --config="$RN_DIR/containerd/config.toml"
}

# rn_start_containerd: starts containerd, imports the pause image.
rn_start_containerd() {
	ln -sfn "$RN_CONTAINERD_BIN/containerd" "$LAB_DIR/bin/containerd"
	ln -sfn "$RN_CONTAINERD_BIN/ctr" "$LAB_DIR/bin/ctr"
	lab_start containerd
	lab_wait containerd 60 rn_ctr version
	rn_ctr images import "$RN_DIR/pause.tar" >/dev/null ||
		lab_fail_component containerd "could not import the pause image"
}

rn_node_ready() {
	[[ "$(lab_kubectl get node "$RN_NODE" \
		-o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

rn_start_kubelet() {
	rn_save_sysctls
	rn_cgroups_up
	lab_start kubelet
	lab_wait kubelet "$RN_NODE_READY_TIMEOUT" rn_node_ready
}

# --- teardown -------------------------------------------------------------------

# rn_drain: asks the kubelet to stop every pod on the node (while the API
# server and kubelet still run and the controllers are stopped), so pods
# end the normal way: containers stopped, volumes unmounted, sandboxes and
# their network namespaces removed.
rn_drain() {
	local deadline n
	lab_pid kubelet >/dev/null || return 0
	[[ -r $LAB_DIR/apiserver.addr ]] && lab_https_ok "$(lab_apiserver_port)" /readyz || return 0
	lab_kubectl delete pods --all-namespaces --field-selector "spec.nodeName=$RN_NODE" \
		--wait=false >/dev/null 2>&1 || true
	deadline=$((SECONDS + RN_DRAIN_TIMEOUT))
	while ((SECONDS < deadline)); do
		n=$(lab_kubectl get pods --all-namespaces --field-selector "spec.nodeName=$RN_NODE" \
			-o name 2>/dev/null | wc -l) || n=1
		((n == 0)) && return 0
		sleep 0.5
	done
	lab_log "warning: pods still on $RN_NODE after ${RN_DRAIN_TIMEOUT}s; removing them by force"
}

# rn_force_containers: whatever the kubelet left: kill and delete every
# task and container through containerd.
rn_force_containers() {
	local id
	lab_pid containerd >/dev/null || return 0
	while read -r id; do
		[[ -n $id ]] || continue
		rn_ctr tasks kill --all --signal SIGKILL "$id" >/dev/null 2>&1 || true
		rn_ctr tasks delete --force "$id" >/dev/null 2>&1 || true
	done < <(rn_ctr tasks list --quiet 2>/dev/null)
	while read -r id; do
		[[ -n $id ]] || continue
		rn_ctr containers delete "$id" >/dev/null 2>&1 || true
	done < <(rn_ctr containers list --quiet 2>/dev/null)
}

# rn_kill_shims: shims still running after containerd stopped, by the pid
# files in their bundles (only if the pid still runs a shim).
rn_kill_shims() {
	local f pid exe
	for f in "$RN_DIR"/containerd/state/io.containerd.runtime.v2.task/*/*/shim.pid; do
		[[ -r $f ]] || continue
		pid=$(<"$f")
		[[ $pid =~ ^[0-9]+$ ]] || continue
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
		[[ ${exe##*/} == containerd-shim* ]] && kill -KILL "$pid" 2>/dev/null
	done
	return 0
}

# rn_mounts: every mount point under the lab's folder, or under one of the
# fixed paths that did not exist before the lab (another user's mounts
# under an existing /run/containerd are not ours), deepest first.
rn_mounts() {
	local p kind q ours=("$LAB_DIR")
	if [[ -r $RN_DIR/outside.rec ]]; then
		while IFS=$'\t' read -r kind q; do
			[[ $kind == absent && $q != /run/netns ]] && ours+=("$q")
		done <"$RN_DIR/outside.rec"
	fi
	awk '{ print $5 }' /proc/self/mountinfo | while read -r p; do
		p=$(printf '%b' "${p//\\/\\0}")
		for q in "${ours[@]}"; do
			if [[ $p == "$q"/* ]]; then
				printf '%s\n' "$p"
				break
			fi
		done
	done | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2-
}

rn_unmount_all() {
	local p
	while read -r p; do
		umount "$p" 2>/dev/null || umount -l "$p" 2>/dev/null ||
			lab_log "warning: could not unmount $p"
	done < <(rn_mounts)
	[[ -z "$(rn_mounts)" ]]
}

# rn_clean_outside: removes what the lab added to the fixed paths.
rn_clean_outside() {
	local rec=$RN_DIR/outside.rec kind p e
	[[ -r $rec ]] || return 0
	declare -A had=()
	while IFS=$'\t' read -r kind p; do
		[[ $kind == entry ]] && had[$p]=1
	done <"$rec"
	while IFS=$'\t' read -r kind p; do
		case $kind in
		absent)
			[[ -e $p ]] || continue
			if [[ $p == /run/netns ]]; then
				# Left by `ip netns add` as a bind mount of itself; only
				# if nobody else put a namespace there meanwhile.
				if [[ -n "$(ls -A "$p")" ]]; then
					lab_log "warning: /run/netns kept, others use it: $(ls -A "$p" | tr '\n' ' ')"
					continue
				fi
				mountpoint -q "$p" && umount "$p"
				rmdir "$p" || lab_log "warning: could not remove /run/netns"
				continue
			fi
			rm -rf "$p"
			;;
		present | present-mount)
			[[ $p == /run/netns ]] && continue # only our namespace, gone already
			for e in "$p"/* "$p"/.[!.]*; do
				[[ -e $e || -L $e ]] || continue
				[[ -n ${had[$e]:-} ]] || rm -rf "$e"
			done
			;;
		esac
	done <"$rec"
	rm -f "$rec"
}

# rn_down: everything after the control plane and containerd stopped.
rn_down() {
	rn_kill_shims
	rn_cgroups_down
	rn_unmount_all || lab_log "warning: mounts left: $(rn_mounts | tr '\n' ' ')"
	rn_netns_down
	rm -f "$LAB_DIR/netns"
	lab_set_netns ""
	rn_restore_sysctls
	if [[ -z "$(rn_mounts)" ]]; then
		rn_clean_outside
		rm -rf "$RN_DIR/containerd" "$RN_DIR/kubelet" "$RN_DIR/cni" "$RN_DIR/pod-logs" "$RN_DIR/pause.tar"
	fi
	if [[ -r $RN_OWNER_FILE && "$(<"$RN_OWNER_FILE")" == "$LAB_DIR" ]]; then
		rm -f "$RN_OWNER_FILE"
	fi
	rmdir "$RN_DIR" 2>/dev/null || true
}
