package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// SimApp is one application of the Argo CD API simulator (the fields of
// argosim.AppConfig that relcap demo's sandbox sets).
type SimApp struct {
	Name, RepoPath, Branch, Path string
	Namespace, Workload          string
	Replicas                     int
	Automated, SelfHeal          bool
	InitiallySynced              bool
	TimeToHealthy                time.Duration
}

// SimSpec is what `relcap-argocd simulate` reads on its stdin, one JSON
// line.
type SimSpec struct {
	Apps []SimApp
}

// SimReady is the line `relcap-argocd simulate` writes on its stdout once
// the simulator listens: its plaintext gRPC address and the token it
// wants.
type SimReady struct {
	Addr, Token string
}

// Simulator is a running `relcap-argocd simulate`.
type Simulator struct {
	// Addr is the simulator's address (plaintext gRPC on loopback); Token
	// is the bearer token it wants.
	Addr, Token string

	cmd    *exec.Cmd
	stdin  io.Closer
	exited chan struct{}
}

// StartSimulator runs the Argo CD API simulator in a relcap-argocd of its
// own, serving spec's applications, and passes its event lines to logf.
// It stops on Stop, when ctx ends, or when relcap exits.
func StartSimulator(ctx context.Context, spec SimSpec, cfg Config, logf func(string, ...any)) (*Simulator, error) {
	path, err := FindHelper(cfg.getenv, cfg.Build)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "simulate")
	cmd.Env = cfg.Env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("argo cd simulator: start %s: %w", path, err)
	}
	s := &Simulator{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	logs := tail{}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			_, _ = logs.Write(append(sc.Bytes(), '\n'))
			if logf != nil {
				logf("%s", sc.Text())
			}
		}
		// Wait closes the pipes: only once stderr is read to its end.
		_ = cmd.Wait()
		close(s.exited)
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Stop()
		case <-s.exited:
		}
	}()
	if err := json.NewEncoder(stdin).Encode(spec); err != nil {
		s.Stop()
		return nil, fmt.Errorf("argo cd simulator: %w", err)
	}
	var ready SimReady
	if err := json.NewDecoder(stdout).Decode(&ready); err != nil {
		s.Stop()
		if last := logs.lastLine(); last != "" {
			err = errors.New(last)
		}
		return nil, fmt.Errorf("argo cd simulator (%s simulate) did not start: %w", path, err)
	}
	s.Addr, s.Token = ready.Addr, ready.Token
	return s, nil
}

// Stop ends the simulator and waits for it. It is idempotent.
func (s *Simulator) Stop() {
	_ = s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}
