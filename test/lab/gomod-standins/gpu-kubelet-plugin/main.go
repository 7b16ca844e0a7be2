// Command gpu-kubelet-plugin is the real-node lab's stand-in for the
// kubelet plugin of NVIDIA's DRA driver (k8s-dra-driver-gpu,
// cmd/gpu-kubelet-plugin) in its image (test/lab/standin-images; docs/lab.md,
// "Stand-in operand images"). gpuop renders its DaemonSet as the GPU
// Operator does (src/policy/render.c, tmpl_dra_driver): the driver-validation
// init container, then `bash -c` sourcing /run/nvidia/validations/driver-ready
// and exec'ing `gpu-kubelet-plugin -v LOG_VERBOSITY`.
//
// What it keeps of NVIDIA's plugin (cmd/gpu-kubelet-plugin/main.go,
// driver.go, cdi.go, health.go, deviceinfo.go): the driver name
// gpu.nvidia.com; the same environment (NODE_NAME, CDI_ROOT,
// KUBELET_REGISTRAR_DIRECTORY_PATH, KUBELET_PLUGINS_DIRECTORY_PATH,
// HEALTHCHECK_PORT, IMAGE_NAME) and defaults; the same library,
// k8s.io/dynamic-resource-allocation/kubeletplugin, started with the same
// options (registration socket gpu.nvidia.com-reg.sock in the registrar
// directory, dra.sock in <plugins>/gpu.nvidia.com), which registers with the
// kubelet and publishes one ResourceSlice pool named after the node through
// the API as the pod's service account; devices gpu-<i> with the attributes
// type=gpu (what the DeviceClass gpu.nvidia.com selects), uuid and
// productName; on NodePrepareResources a transient CDI spec per claim,
// <CDI_ROOT>/k8s.gpu.nvidia.com-claim_<claimUID>.yaml, whose devices
// k8s.gpu.nvidia.com/claim=<claimUID>-gpu-<i> are the CDI names returned
// to the kubelet (removed on unprepare); and the gRPC health service
// "liveness" on HEALTHCHECK_PORT, SERVING when the registration socket
// answers GetInfo and the DRA socket a no-op NodePrepareResources.
//
// What it fakes: STANDIN_GPU_COUNT GPUs (default 2), uuid GPU-STANDIN-<i>;
// a device's CDI edits are those of the toolkit stand-in's spec
// (test/lab/standins.c): /dev/nvidia<i> (a node of the host's /dev/null)
// and NVIDIA_STANDIN_GPU_<i>=GPU-STANDIN-<i>. No NVML, no MIG, no
// checkpoint, no feature gates.
//
// Files it reads (bounded, fileMax bytes each): driver-ready (a check: the
// script sourced it) and the pod's service-account token and CA (its API
// client; the token is read once, which the API server's extended token
// expiry allows for a lab's hours).
//
// Every line it logs itself is "[gpu-kubelet-plugin t=SECONDS.NANOS] ...",
// as the other stand-ins do, so tests order events from `kubectl logs`;
// the library logs through klog (-v).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"sigs.k8s.io/yaml"
)

const (
	driverName     = "gpu.nvidia.com"
	cdiVendor      = "k8s." + driverName
	cdiClass       = "claim"
	cdiVersion     = "0.5.0" // deviceNodes with hostPath
	defaultCDIRoot = "/etc/cdi"
	defaultGPUs    = 2
	maxGPUs        = 128 // a ResourceSlice holds at most 128 devices
	driverReady    = "/run/nvidia/validations/driver-ready"
	saDir          = "/var/run/secrets/kubernetes.io/serviceaccount"
	fileMax        = 64 << 10
	registerPoll   = time.Second
	stopGrace      = 10 * time.Second
)

func say(format string, a ...any) {
	now := time.Now()
	fmt.Printf("[gpu-kubelet-plugin t=%d.%09d] %s\n", now.Unix(), now.Nanosecond(), fmt.Sprintf(format, a...))
}

func die(format string, a ...any) {
	say("FAIL: "+format, a...)
	os.Exit(1)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// readBounded: the file at path, at most fileMax bytes (longer is an error).
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, fileMax+1))
	if err == nil && len(b) > fileMax {
		err = fmt.Errorf("longer than %d bytes", fileMax)
	}
	return b, err
}

// client: the API as the pod's service account (rest.InClusterConfig's
// sources, read bounded).
func client() (kubernetes.Interface, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined")
	}
	token, err := readBounded(filepath.Join(saDir, "token"))
	if err != nil {
		return nil, fmt.Errorf("service-account token: %w", err)
	}
	ca, err := readBounded(filepath.Join(saDir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("service-account CA: %w", err)
	}
	return kubernetes.NewForConfig(&rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerToken:     strings.TrimSpace(string(token)),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		UserAgent:       "gpu-kubelet-plugin-standin",
	})
}

type driver struct {
	node    string
	cdiRoot string
	gpus    int
	mu      sync.Mutex
	owner   map[int]types.UID // GPU index -> the claim it is prepared for
}

func gpuName(i int) string { return fmt.Sprintf("gpu-%d", i) }
func gpuUUID(i int) string { return fmt.Sprintf("GPU-STANDIN-%d", i) }

// devices: the pool's devices as NVIDIA's GpuInfo.GetDevice names and
// attributes them (a subset).
func (d *driver) devices() []resourceapi.Device {
	product := "Stand-in GPU"
	devs := make([]resourceapi.Device, 0, d.gpus)
	for i := 0; i < d.gpus; i++ {
		typ, uuid := "gpu", gpuUUID(i)
		devs = append(devs, resourceapi.Device{
			Name: gpuName(i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type":        {StringValue: &typ},
				"uuid":        {StringValue: &uuid},
				"productName": {StringValue: &product},
			},
		})
	}
	return devs
}

func specPath(root string, uid types.UID) string {
	return filepath.Join(root, cdiVendor+"-"+cdiClass+"_"+string(uid)+".yaml")
}

type cdiDevice struct {
	Name           string `json:"name"`
	ContainerEdits struct {
		Env         []string `json:"env"`
		DeviceNodes []struct {
			Path     string `json:"path"`
			HostPath string `json:"hostPath"`
		} `json:"deviceNodes"`
	} `json:"containerEdits"`
}

type cdiSpec struct {
	Version string      `json:"cdiVersion"`
	Kind    string      `json:"kind"`
	Devices []cdiDevice `json:"devices"`
}

// writeSpec: the claim's transient spec, written to a temporary name and
// renamed (the runtime never reads half a spec).
func (d *driver) writeSpec(uid types.UID, gpus []int) error {
	s := cdiSpec{Version: cdiVersion, Kind: cdiVendor + "/" + cdiClass}
	for _, i := range gpus {
		var c cdiDevice
		c.Name = fmt.Sprintf("%s-%s", uid, gpuName(i))
		c.ContainerEdits.Env = []string{fmt.Sprintf("NVIDIA_STANDIN_GPU_%d=%s", i, gpuUUID(i))}
		c.ContainerEdits.DeviceNodes = append(c.ContainerEdits.DeviceNodes, struct {
			Path     string `json:"path"`
			HostPath string `json:"hostPath"`
		}{fmt.Sprintf("/dev/nvidia%d", i), "/dev/null"})
		s.Devices = append(s.Devices, c)
	}
	b, err := yaml.Marshal(s)
	if err != nil {
		return err
	}
	p := specPath(d.cdiRoot, uid)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// gpusOf: the indexes of this node's GPUs the claim is allocated, or why not.
func (d *driver) gpusOf(c *resourceapi.ResourceClaim) ([]int, []string, error) {
	if c.Status.Allocation == nil {
		return nil, nil, errors.New("not allocated")
	}
	var gpus []int
	var reqs []string
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != driverName {
			continue
		}
		i, err := strconv.Atoi(strings.TrimPrefix(r.Device, "gpu-"))
		if r.Pool != d.node || !strings.HasPrefix(r.Device, "gpu-") || err != nil || i < 0 || i >= d.gpus {
			return nil, nil, fmt.Errorf("device %s/%s is not one of this node's", r.Pool, r.Device)
		}
		if o, held := d.owner[i]; held && o != c.UID {
			return nil, nil, fmt.Errorf("device %s is prepared for claim %s", r.Device, o)
		}
		gpus = append(gpus, i)
		reqs = append(reqs, r.Request)
	}
	return gpus, reqs, nil
}

func (d *driver) prepare(c *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	d.mu.Lock()
	defer d.mu.Unlock()
	gpus, reqs, err := d.gpusOf(c)
	if err == nil {
		err = d.writeSpec(c.UID, gpus)
	}
	if err != nil {
		say("NodePrepareResources: claim %s/%s (%s): %v", c.Namespace, c.Name, c.UID, err)
		return kubeletplugin.PrepareResult{Err: err}
	}
	var res kubeletplugin.PrepareResult
	names := make([]string, 0, len(gpus))
	for k, i := range gpus {
		d.owner[i] = c.UID
		id := fmt.Sprintf("%s/%s=%s-%s", cdiVendor, cdiClass, c.UID, gpuName(i))
		names = append(names, id)
		res.Devices = append(res.Devices, kubeletplugin.Device{
			Requests: []string{reqs[k]}, PoolName: d.node, DeviceName: gpuName(i), CDIDeviceIDs: []string{id},
		})
	}
	say("NodePrepareResources: claim %s/%s (%s) -> CDI devices %s (spec %s)",
		c.Namespace, c.Name, c.UID, strings.Join(names, " "), specPath(d.cdiRoot, c.UID))
	return res
}

func (d *driver) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		out[c.UID] = d.prepare(c)
	}
	return out, nil
}

func (d *driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		for i, o := range d.owner {
			if o == c.UID {
				delete(d.owner, i)
			}
		}
		err := os.Remove(specPath(d.cdiRoot, c.UID))
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		out[c.UID] = err
		say("NodeUnprepareResources: claim %s (%s): spec removed (%v)", c.NamespacedName, c.UID, err)
	}
	return out, nil
}

func (d *driver) HandleError(_ context.Context, err error, msg string) {
	say("%s: %v", msg, err)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) {
		die("a fatal error: %s", msg)
	}
}

// health: NVIDIA's healthcheck (health.go): "" and "liveness" SERVING when
// the registration socket answers GetInfo and the DRA socket a no-op
// NodePrepareResources.
type health struct {
	grpc_health_v1.UnimplementedHealthServer
	reg registerapi.RegistrationClient
	dra drapb.DRAPluginClient
}

func (h *health) Check(ctx context.Context, req *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	if s := req.GetService(); s != "" && s != "liveness" {
		return nil, status.Error(codes.NotFound, "unknown service")
	}
	r := &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_NOT_SERVING}
	if _, err := h.reg.GetInfo(ctx, &registerapi.InfoRequest{}); err != nil {
		return r, nil
	}
	if _, err := h.dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{}); err != nil {
		return r, nil
	}
	r.Status = grpc_health_v1.HealthCheckResponse_SERVING
	return r, nil
}

func unixClient(path string) (*grpc.ClientConn, error) {
	u := (&url.URL{Scheme: "unix", Path: path}).String()
	return grpc.NewClient(u, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

func startHealth(port int, regSock, draSock string) (*grpc.Server, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	rc, err := unixClient(regSock)
	if err != nil {
		return nil, err
	}
	dc, err := unixClient(draSock)
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer()
	grpc_health_v1.RegisterHealthServer(srv, &health{reg: registerapi.NewRegistrationClient(rc), dra: drapb.NewDRAPluginClient(dc)})
	go func() { _ = srv.Serve(l) }()
	say("serving the gRPC health service (liveness) on %s", l.Addr())
	return srv, nil
}

// checks: what the plugin needs of its pod, logged as the C stand-ins'
// gates are ("check: ...").
func checks(registrar, plugins, cdiRoot string) {
	b, err := readBounded(driverReady)
	if err != nil {
		die("%s: %v (the driver-validation gate has not passed)", driverReady, err)
	}
	say("check: %s present (%d bytes)", driverReady, len(b))
	// NVIDIA's plugin takes the driver root from its environment, which
	// the pod's script fills by sourcing driver-ready (set -a).
	root := os.Getenv("NVIDIA_DRIVER_ROOT")
	if root == "" {
		die("NVIDIA_DRIVER_ROOT is not set: driver-ready was not sourced")
	}
	say("check: NVIDIA_DRIVER_ROOT=%s (from driver-ready)", root)
	for _, p := range []string{registrar, plugins, cdiRoot} {
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			die("%s is not a directory (a host mount of the pod): %v", p, err)
		}
	}
	say("check: %s, %s and %s are directories", registrar, plugins, cdiRoot)
}

func gpuCount() int {
	v := os.Getenv("STANDIN_GPU_COUNT")
	if v == "" {
		return defaultGPUs
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxGPUs {
		die("STANDIN_GPU_COUNT=%q is not a count of 0 to %d", v, maxGPUs)
	}
	return n
}

// waitRegistered: until the kubelet has called NotifyRegistrationStatus.
func waitRegistered(ctx context.Context, h *kubeletplugin.Helper) {
	t := time.NewTicker(registerPoll)
	defer t.Stop()
	refused := ""
	for {
		if s := h.RegistrationStatus(); s != nil {
			if s.PluginRegistered {
				say("registered %s with the kubelet", driverName)
				return
			}
			if s.Error != refused {
				refused = s.Error
				say("the kubelet refused the registration: %s", s.Error)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func main() {
	klog.InitFlags(nil)
	flag.Parse()
	node := os.Getenv("NODE_NAME")
	if node == "" {
		die("NODE_NAME is not set")
	}
	registrar := envOr("KUBELET_REGISTRAR_DIRECTORY_PATH", kubeletplugin.KubeletRegistryDir)
	plugins := envOr("KUBELET_PLUGINS_DIRECTORY_PATH", kubeletplugin.KubeletPluginsDir)
	d := &driver{node: node, cdiRoot: envOr("CDI_ROOT", defaultCDIRoot), gpus: gpuCount(), owner: map[int]types.UID{}}
	port, err := strconv.Atoi(envOr("HEALTHCHECK_PORT", "-1"))
	if err != nil {
		die("HEALTHCHECK_PORT=%q is not a port", os.Getenv("HEALTHCHECK_PORT"))
	}
	say("image %s, node %s, %d GPUs", os.Getenv("IMAGE_NAME"), node, d.gpus)
	checks(registrar, plugins, d.cdiRoot)
	kc, err := client()
	if err != nil {
		die("API client: %v", err)
	}
	dataDir := filepath.Join(plugins, driverName)
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		die("mkdir %s: %v", dataDir, err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT)
	defer cancel()
	h, err := kubeletplugin.Start(ctx, d, kubeletplugin.KubeClient(kc), kubeletplugin.NodeName(node),
		kubeletplugin.DriverName(driverName), kubeletplugin.RegistrarDirectoryPath(registrar),
		kubeletplugin.PluginDataDirectoryPath(dataDir))
	if err != nil {
		die("start the kubelet plugin: %v", err)
	}
	say("serving %s on %s, registration socket %s", driverName, filepath.Join(dataDir, "dra.sock"),
		filepath.Join(registrar, driverName+"-reg.sock"))
	pools := map[string]resourceslice.Pool{node: {Slices: []resourceslice.Slice{{Devices: d.devices()}}}}
	if err := h.PublishResources(ctx, resourceslice.DriverResources{Pools: pools}); err != nil {
		die("publish the ResourceSlice: %v", err)
	}
	say("publishing pool %s: %d devices (gpu-0..gpu-%d)", node, d.gpus, d.gpus-1)
	var hs *grpc.Server
	if port > 0 {
		if hs, err = startHealth(port, filepath.Join(registrar, driverName+"-reg.sock"), filepath.Join(dataDir, "dra.sock")); err != nil {
			die("health service on port %d: %v", port, err)
		}
	}
	waitRegistered(ctx, h)
	<-ctx.Done()
	say("signal: stopping (the kubelet removes the slice once the plugin is gone)")
	if hs != nil {
		hs.Stop()
	}
	stopped := make(chan struct{})
	go func() { h.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(stopGrace):
		say("the plugin helper did not stop within %s", stopGrace)
	}
}
