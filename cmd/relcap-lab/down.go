package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Down stops exactly the processes the state file in dir lists, newest
// first (SIGTERM, then SIGKILL after grace), checks that none of them,
// their process groups or their ports is left, and removes dir.
func Down(dir string, grace time.Duration, out io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	st, err := ReadState(dir)
	if errors.Is(err, errNoLab) {
		// Nothing to stop: down is safe to run twice, or in a CI cleanup
		// step after an up that never started.
		fmt.Fprintf(out, "no lab in %s: nothing to stop\n", dir)
		return nil
	}
	if err != nil {
		return err
	}
	t := time.Now()
	var errs []error
	for i := len(st.Processes) - 1; i >= 0; i-- {
		p := st.Processes[i]
		was := alive(p)
		if err := stop(p, grace); err != nil {
			errs = append(errs, err)
			continue
		}
		if was {
			fmt.Fprintf(out, "stopped %s (pid %d)\n", p.Name, p.PID)
		} else {
			fmt.Fprintf(out, "%s (pid %d) was not running\n", p.Name, p.PID)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab in %s not fully stopped; state kept: %w", dir, err)
	}
	if err := leftovers(st); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove lab directory: %w", err)
	}
	fmt.Fprintf(out, "lab down in %s: no process or port left, %s removed\n", since(t), dir)
	return nil
}

// leftovers reports any process, process-group member or listening port
// of the lab still there. Ports get a moment: a socket closes a little
// after its process is gone.
func leftovers(st State) error {
	var left []string
	for _, p := range st.Processes {
		if alive(p) {
			left = append(left, fmt.Sprintf("%s pid %d", p.Name, p.PID))
		}
		for _, m := range groupMembers(p.PID) {
			left = append(left, fmt.Sprintf("pid %d in %s's process group", m, p.Name))
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		var busy []int
		for _, port := range st.Ports.All() {
			if port != 0 && listening(port) {
				busy = append(busy, port)
			}
		}
		if len(busy) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, port := range busy {
				left = append(left, fmt.Sprintf("port %d still accepts connections", port))
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind: %s", strings.Join(left, "; "))
	}
	return nil
}

// Status prints what the state file in dir lists and whether each process
// is running, and asks Argo CD for its Applications when the lab is up.
// It returns an error when any process of a ready lab is gone.
func Status(ctx context.Context, dir string, out io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	st, err := ReadState(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "lab %s (started %s, %s, ready: %v)\n", dir, st.StartedAt.Local().Format(time.DateTime), st.Versions.Key(), st.Ready)
	api, err := st.argoAPI()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  argo cd %s on kubernetes %s at %s%s\n", st.Versions.ArgoCD, st.Versions.Kubernetes, api.base, argoTransportNote(st.ArgoCA))
	if st.Gitea != nil {
		fmt.Fprintf(out, "  gitea %s at %s: repository %s (main protected; accounts %s, %s)\n", st.Gitea.Version, st.Gitea.URL, st.Gitea.RepoURL, GiteaCaptain, GiteaApprover)
	}
	var dead []string
	for _, p := range st.Processes {
		state := "running"
		if !alive(p) {
			state = "DEAD"
			dead = append(dead, p.Name)
		}
		fmt.Fprintf(out, "  %-30s pid %-7d %-8s ports %v  log %s\n", p.Name, p.PID, state, p.Ports, p.Log)
	}
	// A lab that never became ready was stopped by up, which printed the
	// failure already; a ready lab with a dead component needs its log.
	for _, name := range dead {
		if !st.Ready {
			break
		}
		for _, p := range st.Processes {
			if p.Name == name {
				fmt.Fprintf(out, "\n%s is not running; last lines of %s:\n%s\n", name, p.Log, logTail(p.Log, 15))
			}
		}
	}
	if tok, err := os.ReadFile(filepath.Join(dir, "argocd-token")); err == nil && st.Ready {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		apps, err := argoApps(cctx, api, strings.TrimSpace(string(tok)))
		if err != nil {
			fmt.Fprintf(out, "argo cd: %v\n", err)
		}
		for _, a := range apps {
			fmt.Fprintf(out, "  app %-20s %-10s %-12s %s\n", a.Name, a.Sync, a.Health, short(a.Revision))
		}
	}
	if len(dead) > 0 {
		return fmt.Errorf("%d component(s) not running: %s", len(dead), strings.Join(dead, ", "))
	}
	return nil
}

// argoAPI reaches the lab's argocd-server as up started it.
func (st State) argoAPI() (argoAPI, error) {
	server := fmt.Sprintf("127.0.0.1:%d", st.Ports.Server)
	if st.ArgoCA == "" {
		return newArgoAPI(server, nil), nil
	}
	ca, err := os.ReadFile(st.ArgoCA)
	if err != nil {
		return argoAPI{}, fmt.Errorf("argo cd CA: %w", err)
	}
	return newArgoAPI(server, ca), nil
}

func argoTransportNote(ca string) string {
	if ca == "" {
		return " (plaintext)"
	}
	return " (TLS, CA " + ca + ")"
}
