// Command nvidia-device-plugin is the real-node lab's stand-in for NVIDIA's
// device plugin (k8s-device-plugin v0.20.0) in its image
// (test/lab/standin-images; docs/lab.md, "Stand-in operand images").
//
// It keeps the C stand-in's gates (test/lab/standins.c, applet
// nvidia-device-plugin-gates: NVML injected, toolkit-ready, driver-ready,
// the kubelet's device-plugins folder a host mount, kubelet.sock there),
// then does what the real plugin does with the kubelet
// (internal/plugin/server.go): serves the v1beta1 DevicePlugin API on
// DEVICE_PLUGIN_DIR/nvidia-gpu.sock, registers nvidia.com/gpu with the
// kubelet's kubelet.sock, advertises its devices in ListAndWatch and
// answers Allocate.
//
// Devices: STANDIN_GPU_COUNT fake GPUs (default 2), ids GPU-STANDIN-<i>,
// each multiplied by the replicas a time-slicing config gives
// nvidia.com/gpu (CONFIG_FILE, default /config/config.yaml, NVIDIA's
// sharing.timeSlicing.resources[] format, api/config/v1/sharing.go);
// a replica's id is "<id>::<n>" as NVIDIA annotates them (replicas.go).
//
// Allocate, by DEVICE_LIST_STRATEGY (comma-separated, NVIDIA's names):
// cdi-cri puts CDI device names nvidia.com/gpu=<id> in the response's
// CDIDevices (<id> the GPU's UUID, or its index with DEVICE_ID_STRATEGY=index;
// a replica's GPU once); cdi-annotations the same names in the cdi.k8s.io/ annotation;
// envvar sets NVIDIA_VISIBLE_DEVICES to the ids. The names resolve against
// the spec the toolkit stand-in writes (/var/run/cdi/nvidia.yaml): without
// the toolkit the container runtime cannot create the container. (NVIDIA's
// plugin writes a spec of its own, vendor k8s.device-plugin.nvidia.com,
// whose hooks are the toolkit's nvidia-cdi-hook: docs/lab.md says why the
// stand-in names the toolkit's.)
//
// Every line it logs is "[nvidia-device-plugin t=SECONDS.NANOS] ...", as
// the C stand-ins do, so tests order events from `kubectl logs`.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"sigs.k8s.io/yaml"
)

const (
	resourceName     = "nvidia.com/gpu"
	cdiKind          = "nvidia.com/gpu"
	socketName       = "nvidia-gpu.sock"
	defaultGPUs      = 2
	defaultConfig    = "/config/config.yaml"
	gatesProgram     = "/usr/bin/nvidia-device-plugin-gates"
	registerTimeout  = 30 * time.Second
	kubeletSockPoll  = time.Second
	cdiAnnotationKey = "cdi.k8s.io/nvidia-device-plugin_"
)

func say(format string, a ...any) {
	now := time.Now()
	fmt.Printf("[nvidia-device-plugin t=%d.%09d] %s\n", now.Unix(), now.Nanosecond(), fmt.Sprintf(format, a...))
}

func die(format string, a ...any) {
	say("FAIL: "+format, a...)
	os.Exit(1)
}

// sharingConfig is the part of NVIDIA's config (api/config/v1) read here.
type sharingConfig struct {
	Sharing struct {
		TimeSlicing struct {
			Resources []struct {
				Name     string `json:"name"`
				Replicas int    `json:"replicas"`
			} `json:"resources"`
		} `json:"timeSlicing"`
	} `json:"sharing"`
}

// replicasOf: the time-slicing replicas the config gives nvidia.com/gpu
// (1 without a config file or without a time-slicing entry).
func replicasOf(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		say("check: no sharing config at %s (%v): 1 replica per GPU", path, err)
		return 1
	}
	var c sharingConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		die("the sharing config %s does not parse: %v", path, err)
	}
	for _, r := range c.Sharing.TimeSlicing.Resources {
		if r.Name == resourceName && r.Replicas > 1 {
			say("check: sharing config %s: time-slicing, %d replicas of %s", path, r.Replicas, resourceName)
			return r.Replicas
		}
	}
	say("check: sharing config %s: no time-slicing of %s: 1 replica per GPU", path, resourceName)
	return 1
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices    []*pluginapi.Device
	strategies map[string]bool
	byIndex    bool // DEVICE_ID_STRATEGY=index: CDI names by index, else by UUID
	stop       chan struct{}
}

func gpuIndex(id string) string {
	base := strings.SplitN(id, "::", 2)[0]
	return strings.TrimPrefix(base, "GPU-STANDIN-")
}

func newPlugin(gpus, replicas int, strategies string) *plugin {
	p := &plugin{strategies: map[string]bool{}, stop: make(chan struct{})}
	for _, s := range strings.Split(strategies, ",") {
		p.strategies[strings.TrimSpace(s)] = true
	}
	for i := 0; i < gpus; i++ {
		id := fmt.Sprintf("GPU-STANDIN-%d", i)
		for r := 0; r < replicas; r++ {
			rid := id
			if replicas > 1 {
				rid = fmt.Sprintf("%s::%d", id, r)
			}
			p.devices = append(p.devices, &pluginapi.Device{ID: rid, Health: pluginapi.Healthy})
		}
	}
	return p
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *plugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	say("ListAndWatch: advertising %d devices of %s", len(p.devices), resourceName)
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-p.stop
	return nil
}

func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		r := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{}}
		var names, ids []string
		seen := map[string]bool{}
		for _, id := range c.DevicesIds {
			uuid := strings.SplitN(id, "::", 2)[0]
			if seen[uuid] {
				continue
			}
			seen[uuid] = true
			name := uuid
			if p.byIndex {
				name = gpuIndex(id)
			}
			names = append(names, cdiKind+"="+name)
			ids = append(ids, uuid)
		}
		if p.strategies["cdi-cri"] {
			for _, n := range names {
				r.CdiDevices = append(r.CdiDevices, &pluginapi.CDIDevice{Name: n})
			}
		}
		if p.strategies["cdi-annotations"] {
			r.Annotations = map[string]string{cdiAnnotationKey + strconv.FormatInt(time.Now().UnixNano(), 10): strings.Join(names, ",")}
		}
		if p.strategies["envvar"] {
			r.Envs["NVIDIA_VISIBLE_DEVICES"] = strings.Join(ids, ",")
		}
		say("Allocate: %s -> CDI devices %s (strategies %s)", strings.Join(c.DevicesIds, ","), strings.Join(names, ","), strategyList(p.strategies))
		resp.ContainerResponses = append(resp.ContainerResponses, r)
	}
	return resp, nil
}

func strategyList(m map[string]bool) string {
	var l []string
	for k := range m {
		l = append(l, k)
	}
	return strings.Join(l, ",")
}

func (p *plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// register: tells the kubelet the plugin's socket and resource.
func register(dir string) error {
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     socketName,
		ResourceName: resourceName,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	return err
}

func main() {
	gates := exec.Command(gatesProgram)
	gates.Stdout, gates.Stderr = os.Stdout, os.Stderr
	if err := gates.Run(); err != nil {
		os.Exit(1) // the gates logged why
	}
	dir := envOr("DEVICE_PLUGIN_DIR", pluginapi.DevicePluginPath)
	gpus := defaultGPUs
	if v := os.Getenv("STANDIN_GPU_COUNT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			die("STANDIN_GPU_COUNT=%q is not a count", v)
		}
		gpus = n
	}
	replicas := replicasOf(envOr("CONFIG_FILE", defaultConfig))
	p := newPlugin(gpus, replicas, envOr("DEVICE_LIST_STRATEGY", "envvar"))
	p.byIndex = envOr("DEVICE_ID_STRATEGY", "uuid") == "index"

	sock := filepath.Join(dir, socketName)
	_ = os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		die("listen on %s: %v", sock, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(l) }()
	say("serving the device plugin API on %s", sock)
	if err := register(dir); err != nil {
		die("register %s with the kubelet (%s/kubelet.sock): %v", resourceName, dir, err)
	}
	say("registered %s with the kubelet: %d GPUs x %d replicas = %d devices", resourceName, gpus, replicas, len(p.devices))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	// The kubelet forgets plugins when it restarts and recreates its
	// socket: register again then, as NVIDIA's plugin does (its watcher).
	kubeletSock := filepath.Join(dir, "kubelet.sock")
	st, _ := os.Stat(kubeletSock)
	tick := time.NewTicker(kubeletSockPoll)
	defer tick.Stop()
	for {
		select {
		case s := <-sig:
			say("signal %v: stopping", s)
			close(p.stop)
			srv.Stop()
			_ = os.Remove(sock)
			return
		case <-tick.C:
			now, err := os.Stat(kubeletSock)
			if err == nil && (st == nil || !os.SameFile(st, now)) {
				say("kubelet.sock recreated: registering again")
				if err := register(dir); err != nil {
					say("register again: %v", err)
					continue
				}
				st = now
			}
		}
	}
}
