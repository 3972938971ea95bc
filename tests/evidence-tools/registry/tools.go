//go:build tools

// Package tools pins go-containerregistry, whose pkg/registry (an OCI registry
// with the OCI 1.1 referrers API) main.go serves over TLS with Basic auth.
package tools

import _ "github.com/google/go-containerregistry/pkg/registry"
