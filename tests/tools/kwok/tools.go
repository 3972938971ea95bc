//go:build tools

// Package tools pins KWOK, the fake kubelets that run the test world's nodes.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
