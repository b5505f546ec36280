package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/adapters/argocd/remote"
)

// Simulate runs the Argo CD API simulator for relcap demo's sandbox: it
// reads a remote.SimSpec (one JSON line) from r, starts the simulator
// with its applications, writes a remote.SimReady line to w and logs the
// simulator's events, one a line, to logw. It stops when r ends (relcap
// closed the pipe or exited) or ctx does.
func Simulate(ctx context.Context, r io.Reader, w, logw io.Writer) error {
	in := bufio.NewReader(r)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("simulate: read the specification: %w", err)
	}
	var spec remote.SimSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		return fmt.Errorf("simulate: specification: %w", err)
	}
	sim, err := argosim.New(argosim.Config{Logf: func(format string, args ...any) { fmt.Fprintf(logw, format+"\n", args...) }})
	if err != nil {
		return err
	}
	for _, a := range spec.Apps {
		err := sim.AddApp(argosim.AppConfig{Name: a.Name, RepoPath: a.RepoPath, Branch: a.Branch, Path: a.Path, Namespace: a.Namespace,
			Workload: a.Workload, Replicas: a.Replicas, Automated: a.Automated, SelfHeal: a.SelfHeal,
			InitiallySynced: a.InitiallySynced, TimeToHealthy: a.TimeToHealthy})
		if err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr, err := sim.Start(ctx)
	if err != nil {
		return err
	}
	defer sim.Stop()
	if err := json.NewEncoder(w).Encode(remote.SimReady{Addr: addr, Token: sim.Token()}); err != nil {
		return err
	}
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(ended)
	}()
	select {
	case <-ended:
	case <-ctx.Done():
	}
	return nil
}
