//go:build tools

// Package tools pins the ORAS CLI, an independent OCI 1.1 client: the evidence
// tests list referrers with `oras discover` and read the fallback tag index.
package tools

import _ "oras.land/oras/cmd/oras"
