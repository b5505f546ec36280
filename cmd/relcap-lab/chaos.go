package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// StopComponent stops one component of a running lab, as a crash or an
// operator would (SIGTERM, then SIGKILL after grace; grace 0 is a crash).
// It stays in the state file: `status` reports it as not running, `start`
// brings it back, `down` still accounts for it. The end-to-end suite uses
// it to interrupt Argo CD's application controller mid-rollout.
func StopComponent(dir, name string, grace time.Duration, out io.Writer) error {
	_, p, _, err := component(dir, name)
	if err != nil {
		return err
	}
	if !alive(p) {
		fmt.Fprintf(out, "%s (pid %d) was not running\n", p.Name, p.PID)
		return nil
	}
	if grace == 0 {
		// A crash: no SIGTERM, no chance to clean up.
		_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	}
	if err := stop(p, grace); err != nil {
		return err
	}
	fmt.Fprintf(out, "stopped %s (pid %d)\n", p.Name, p.PID)
	return nil
}

// StartComponent starts a stopped component again with the arguments,
// environment and working directory `up` gave it, waits until each of its
// ports accepts connections, and records the new process in the state
// file.
func StartComponent(ctx context.Context, dir, name string, timeout time.Duration, out io.Writer) error {
	st, p, i, err := component(dir, name)
	if err != nil {
		return err
	}
	if alive(p) {
		return usageError{fmt.Errorf("%s is running (pid %d): stop it first", p.Name, p.PID)}
	}
	t := time.Now()
	r, err := start(st.Dir, Component{Name: p.Name, Path: p.Args[0], Args: p.Args[1:], Env: p.Env, Dir: p.WorkDir, Ports: p.Ports})
	if err != nil {
		return err
	}
	st.Processes[i] = r.Process
	if err := WriteState(st.Dir, st); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, port := range p.Ports {
		if err := r.waitReady(ctx, tcpProbe(port)); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "started %s (pid %d) in %s\n", r.Name, r.PID, since(t))
	return nil
}

// component finds name among the processes of the lab in dir.
func component(dir, name string) (State, Process, int, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return State{}, Process{}, 0, err
	}
	st, err := ReadState(dir)
	if err != nil {
		return State{}, Process{}, 0, err
	}
	if !st.Ready {
		return State{}, Process{}, 0, errors.New("the lab in " + dir + " is not ready: run relcap-lab up")
	}
	i := slices.IndexFunc(st.Processes, func(p Process) bool { return p.Name == name })
	if i < 0 {
		names := make([]string, len(st.Processes))
		for j, p := range st.Processes {
			names[j] = p.Name
		}
		return State{}, Process{}, 0, usageError{fmt.Errorf("the lab runs no component %q; it runs %s", name, strings.Join(names, ", "))}
	}
	return st, st.Processes[i], i, nil
}
