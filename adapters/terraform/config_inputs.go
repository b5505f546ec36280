package terraform

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// What binds a plan to the configuration's content, not only to a Git
// revision: a file edited after approval, committed or not, or a TF_VAR_*
// value changed, makes the plan stale. Terraform's own stale check compares
// state lineage and serial only (hashicorp/terraform#24078).

// skippedDirs are never configuration: Terraform's working data, Git's,
// and local state of non-default workspaces.
var skippedDirs = map[string]bool{".terraform": true, ".git": true, "terraform.tfstate.d": true}

// skippedFiles change on every apply or crash and are bound elsewhere
// (state lineage and serial).
var skippedFiles = map[string]bool{
	"terraform.tfstate": true, "terraform.tfstate.backup": true, ".terraform.tfstate.lock.info": true, "crash.log": true,
}

// configFiles hashes every file of the root module and of each local
// module it calls, by path relative to the root. Local modules are those
// terraform init recorded in modules.json with a directory outside its
// own download area.
func configFiles(t target) (map[string]string, error) {
	out := map[string]string{}
	skipVar := map[string]bool{}
	for _, f := range t.varFiles {
		skipVar[filepath.Clean(f)] = true // bound by VarFileHashes already
	}
	dirs := []string{t.dir}
	mods, err := localModules(t.dir)
	if err != nil {
		return nil, err
	}
	dirs = append(dirs, mods...)
	data := dataDir(t.dir)
	seen := map[string]bool{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != dir && (skippedDirs[d.Name()] || path == data) {
					return filepath.SkipDir
				}
				return nil
			}
			if skippedFiles[d.Name()] || skipVar[filepath.Clean(path)] || !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			rel, err := filepath.Rel(t.dir, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if seen[rel] {
				return nil
			}
			seen[rel] = true
			h, err := hashFile(path)
			if err != nil {
				return err
			}
			out[rel] = h
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("hashing the configuration in %s: %w", dir, err)
		}
	}
	return out, nil
}

// localModules are the directories of the local modules the root calls,
// from .terraform/modules/modules.json (absent when it calls none).
func localModules(root string) ([]string, error) {
	data := dataDir(root)
	b, err := os.ReadFile(filepath.Join(data, "modules", "modules.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the modules terraform init recorded: %w", err)
	}
	var m struct {
		Modules []struct {
			Key string `json:"Key"`
			Dir string `json:"Dir"`
		} `json:"Modules"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s is not the modules.json terraform init writes: %w", filepath.Join(data, "modules", "modules.json"), err)
	}
	var dirs []string
	for _, mod := range m.Modules {
		if mod.Key == "" || mod.Dir == "" {
			continue // the root itself
		}
		dir := mod.Dir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		dir = filepath.Clean(dir)
		if rel, err := filepath.Rel(data, dir); err == nil && !strings.HasPrefix(rel, "..") {
			continue // downloaded from a registry or Git: pinned by its source and version
		}
		if rel, err := filepath.Rel(root, dir); err == nil && !strings.HasPrefix(rel, "..") {
			continue // inside the root: walked with it
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// envVarHashes are keyed hashes of the TF_VAR_* values in env, by name.
func envVarHashes(env []string, key []byte) map[string]string {
	out := map[string]string{}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, "TF_VAR_") {
			continue
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(value))
		out[name] = hex.EncodeToString(mac.Sum(nil))
	}
	return out
}

// envKeyFile holds the key of envVarHashes in the private plan store: the
// ledger (which a team shares) keeps only keyed hashes, which say whether
// a value changed and nothing about what it is.
const envKeyFile = ".tf-var-hmac.key"

// envVarKey reads the key, creating it on first use.
func (a *Adapter) envVarKey() ([]byte, error) {
	a.keyOnce.Do(func() {
		path := filepath.Join(a.planDir, envKeyFile)
		b, err := os.ReadFile(path)
		if err == nil && len(b) == 32 {
			a.envKey = b
			return
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			a.envKeyErr = fmt.Errorf("reading %s: %w", path, err)
			return
		}
		key := make([]byte, 32)
		_, _ = rand.Read(key) // crypto/rand.Read never fails on supported platforms
		if err := os.WriteFile(path, key, 0o600); err != nil {
			a.envKeyErr = fmt.Errorf("writing %s: %w", path, err)
			return
		}
		a.envKey = key
	})
	return a.envKey, a.envKeyErr
}
