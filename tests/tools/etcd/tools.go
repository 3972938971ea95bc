//go:build tools

// Package tools pins etcd 3.6, the storage behind the test kube-apiserver.
package tools

import _ "go.etcd.io/etcd/server/v3"
