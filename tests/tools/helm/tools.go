//go:build tools

// Package tools pins helm, used to render and lint the chart in tests.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
