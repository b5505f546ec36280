//go:build tools

// Package tools pins the Kubernetes 1.37 commands the lab builds with
// `go build k8s.io/kubernetes/cmd/...` inside this module.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
