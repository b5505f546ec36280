package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// StateFile is the name of the file, inside the lab directory, that lists
// exactly what `up` started.
const StateFile = "state.json"

// stateVersion changes when State changes incompatibly.
const stateVersion = 1

// State is what `up` started and where, written after every start so that
// `down` can stop a half-started lab too.
type State struct {
	Version  int      `json:"version"`
	Dir      string   `json:"dir"`
	BinDir   string   `json:"bin_dir"`
	Versions Versions `json:"versions"`
	Ports    Ports    `json:"ports"`
	// ArgoCA is the CA file that verifies argocd-server, empty when the
	// lab serves Argo CD in plaintext (up --argocd-insecure, and labs of
	// before TLS).
	ArgoCA string `json:"argocd_ca,omitempty"`
	// Gitea is the lab's Gitea, when up ran with --gitea: its accounts'
	// passwords and tokens are why this file is 0600.
	Gitea     *GiteaState `json:"gitea,omitempty"`
	StartedAt time.Time   `json:"started_at"`
	// Ready is set once every component passed its readiness check and
	// the lab's files were written.
	Ready     bool      `json:"ready"`
	Processes []Process `json:"processes"`
}

// Process is one process `up` started, in its own session (so its process
// group id equals PID). StartTicks is the kernel's start time of PID
// (/proc/PID/stat field 22): `down` signals PID only while it still names
// the same process, never a later process that reused the id.
type Process struct {
	Name       string   `json:"name"`
	PID        int      `json:"pid"`
	StartTicks uint64   `json:"start_ticks"`
	Args       []string `json:"args"`
	// Env is what the lab added to the environment, WorkDir the working
	// directory: with Args, what `start` needs to run it again.
	Env     []string `json:"env,omitempty"`
	WorkDir string   `json:"work_dir"`
	Log     string   `json:"log"`
	Ports   []int    `json:"ports,omitempty"`
}

// WriteState writes s to dir/state.json atomically.
func WriteState(dir string, s State) error {
	s.Version = stateVersion
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode lab state: %w", err)
	}
	tmp := filepath.Join(dir, StateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write lab state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, StateFile)); err != nil {
		return fmt.Errorf("write lab state: %w", err)
	}
	return nil
}

// errNoLab means the directory holds no state file: no lab was started
// there, or it was taken down.
var errNoLab = errors.New("no lab state")

// ReadState reads dir/state.json. A missing file is errNoLab.
func ReadState(dir string) (State, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return State{}, fmt.Errorf("%w in %s: start one with relcap-lab up --dir %s, or pass the --dir it was started with", errNoLab, dir, dir)
	}
	if err != nil {
		return State{}, fmt.Errorf("read lab state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("read lab state %s: %w", filepath.Join(dir, StateFile), err)
	}
	if s.Version != stateVersion {
		return State{}, fmt.Errorf("lab state %s has version %d, this relcap-lab reads %d: stop it with the relcap-lab that started it", filepath.Join(dir, StateFile), s.Version, stateVersion)
	}
	return s, nil
}
