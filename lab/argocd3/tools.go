//go:build tools

// Package tools pins the Argo CD multi-call command the lab builds with
// `go build github.com/argoproj/argo-cd/v3/cmd` inside this module.
package tools

import _ "github.com/argoproj/argo-cd/v3/cmd"
