//go:build tools

// Package tools pins Argo Rollouts' controller, the peer of the promotion
// benchmark (bench/promotion.py). Nothing here is Argo's code: the module is
// built from the Go module proxy by bench/peers/argo-rollouts/build.sh.
package tools

import _ "github.com/argoproj/argo-rollouts/cmd/rollouts-controller"
