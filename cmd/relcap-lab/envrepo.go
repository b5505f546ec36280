package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// git runs git in dir with a fixed identity and no user or system config,
// so the lab's commits do not depend on the machine.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=relcap-lab", "-c", "user.email=relcap-lab@localhost", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// CreateEnvRepo creates the bare environment repository bare with one
// commit on main holding each file of files (path → content), and returns
// that commit.
func CreateEnvRepo(ctx context.Context, bare string, files map[string]string) (string, error) {
	work, err := os.MkdirTemp(filepath.Dir(bare), ".seed-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if err := writeFiles(work, files); err != nil {
		return "", err
	}
	steps := [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "relcap lab: first release"}}
	for _, s := range steps {
		if _, err := git(ctx, work, s...); err != nil {
			return "", err
		}
	}
	if _, err := git(ctx, work, "clone", "-q", "--bare", work, bare); err != nil {
		return "", err
	}
	if _, err := git(ctx, bare, "remote", "remove", "origin"); err != nil {
		return "", err
	}
	return git(ctx, bare, "rev-parse", "main")
}

// writeFiles writes each file of files (slash path → content) under dir.
func writeFiles(dir string, files map[string]string) error {
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}
