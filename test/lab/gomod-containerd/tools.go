//go:build tools

// Package tools pins the containerd 2 the real-node lab runs (CDI in the
// CRI plugin), built by test/lab/build apart from the Kubernetes module so
// the two dependency graphs do not constrain each other.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
