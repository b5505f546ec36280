package main

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// Ports are the loopback TCP ports one lab listens on. They are picked
// free at start; nothing assumes a default port is available.
type Ports struct {
	Etcd              int `json:"etcd"`
	EtcdPeer          int `json:"etcd_peer"`
	Redis             int `json:"redis"`
	APIServer         int `json:"apiserver"`
	ControllerManager int `json:"controller_manager"`
	Scheduler         int `json:"scheduler"`
	Kwok              int `json:"kwok"`
	RepoServer        int `json:"repo_server"`
	RepoServerMetrics int `json:"repo_server_metrics"`
	Server            int `json:"server"`
	ServerMetrics     int `json:"server_metrics"`
	ControllerMetrics int `json:"controller_metrics"`
	Git               int `json:"git"`
	Registry          int `json:"registry"`
	// ImageWebhook is the lab's admission webhook (webhook.go).
	ImageWebhook int `json:"image_webhook,omitempty"`
	// Gitea is picked only for a lab with Gitea (up --gitea), so it is
	// not among fields.
	Gitea int `json:"gitea,omitempty"`
}

// fields lists pointers to every port, so picking and checking never
// forget one.
func (p *Ports) fields() []*int {
	return []*int{&p.Etcd, &p.EtcdPeer, &p.Redis, &p.APIServer, &p.ControllerManager, &p.Scheduler, &p.Kwok,
		&p.RepoServer, &p.RepoServerMetrics, &p.Server, &p.ServerMetrics, &p.ControllerMetrics, &p.Git, &p.Registry, &p.ImageWebhook}
}

// All returns every port in a fixed order.
func (p Ports) All() []int {
	var out []int
	for _, f := range p.fields() {
		out = append(out, *f)
	}
	if p.Gitea != 0 {
		out = append(out, p.Gitea)
	}
	return out
}

// pickPorts asks the kernel for n distinct free ports on 127.0.0.1. All
// listeners stay open until every port is picked, so the kernel cannot hand
// out the same port twice; there is still a window between closing them and
// the components binding, which is why every start is followed by a
// readiness check.
func pickPorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// PickPorts fills a Ports with distinct free loopback ports.
func PickPorts() (Ports, error) { return pickLabPorts(false) }

// pickLabPorts is PickPorts, with Gitea's port too when gitea is set
// (picked together, so it is distinct from the others).
func pickLabPorts(gitea bool) (Ports, error) {
	var p Ports
	fs := p.fields()
	if gitea {
		fs = append(fs, &p.Gitea)
	}
	got, err := pickPorts(len(fs))
	if err != nil {
		return Ports{}, err
	}
	for i, f := range fs {
		*f = got[i]
	}
	return p, nil
}

// listening reports whether something accepts TCP connections on
// 127.0.0.1:port.
func listening(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 300*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
