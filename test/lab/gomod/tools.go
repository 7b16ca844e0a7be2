//go:build tools

// Package labtools pins the upstream programs the lab builds: the Kubernetes
// control plane, kubectl, kubelet (the real-node lab), etcd, kwok and Helm.
// Nothing here is compiled into gpuop.
package labtools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "helm.sh/helm/v3/cmd/helm"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
