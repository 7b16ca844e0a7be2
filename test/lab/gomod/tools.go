//go:build tools

// Package labtools pins the upstream programs the lab builds: the Kubernetes
// control plane, kubectl, etcd and kwok. Nothing here is compiled into gpuop.
package labtools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
