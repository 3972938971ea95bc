//go:build tools

// Package tools pins cosign v3, the Sigstore reference client: the evidence tests
// verify Lockstep's bundles with it, offline and from a registry.
package tools

import _ "github.com/sigstore/cosign/v3/cmd/cosign"
