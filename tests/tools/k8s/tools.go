//go:build tools

// Package tools pins the upstream Kubernetes control-plane binaries that the
// Lockstep test world runs: kube-apiserver, kube-controller-manager,
// kube-scheduler and kubectl, all from one k8s.io/kubernetes release.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubectl/pkg/cmd"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
