package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/relcap/relcap/adapters/signing"
)

// The lab directory up starts from and the files it writes there for its
// users: the lab's files, the Gitea credentials, the people's keys.

// checkFreeDir refuses a directory that holds a lab's state (running or
// not) or anything else: up never mixes two labs or overwrites files.
func checkFreeDir(dir string) error {
	if st, err := ReadState(dir); err == nil {
		for _, p := range st.Processes {
			if alive(p) {
				return fmt.Errorf("a lab is already up in %s (%s is pid %d): relcap-lab down --dir %s first", dir, p.Name, p.PID, dir)
			}
		}
		return fmt.Errorf("%s holds the state of a stopped lab: relcap-lab down --dir %s removes it", dir, dir)
	} else if !errors.Is(err, errNoLab) {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty and holds no lab: pick another --dir or remove it", dir)
	}
	return nil
}

// writeLabFiles writes what a user of the lab needs into its directory.
func writeLabFiles(lab Lab) error {
	people, err := writeLabPeople(lab.Dir)
	if err != nil {
		return err
	}
	files := map[string]string{
		PeopleFile:       people,
		"argocd-token":   lab.ArgoToken + "\n",
		"relcap.yaml":    RenderRelcapConfig(lab),
		"ownership.yaml": RenderOwnership(),
		"lab.env":        RenderEnvFile(lab.EnvVars()),
		"terraform.rc":   RenderTerraformCLIConfig(lab.TFMirror),
	}
	for _, env := range Envs {
		files[filepath.Join("infra", env, "main.tf")] = RenderTerraformRoot(env)
	}
	if lab.Gitea != nil {
		if err := writeGiteaCredentials(lab); err != nil {
			return err
		}
	}
	for name, content := range files {
		p := filepath.Join(lab.Dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// writeGiteaCredentials writes the git credential store lab.env points
// git's credential helper at: the captain's token for the lab's Gitea.
func writeGiteaCredentials(lab Lab) error {
	captain, ok := lab.Gitea.User(GiteaCaptain)
	if !ok {
		return fmt.Errorf("the lab's Gitea has no %s account", GiteaCaptain)
	}
	u, err := url.Parse(lab.Gitea.URL)
	if err != nil {
		return fmt.Errorf("gitea URL %q: %w", lab.Gitea.URL, err)
	}
	u.User = url.UserPassword(captain.Login, captain.Token)
	return os.WriteFile(lab.giteaCredentials(), []byte(u.String()+"\n"), 0o600)
}

// writeLabPeople makes (once; a lab brought up again keeps them) an SSH key
// for each of the lab's people under dir/people and returns the people file
// that gives each their key.
func writeLabPeople(dir string) (string, error) {
	keys := filepath.Join(dir, "people")
	if err := os.MkdirAll(keys, 0o700); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# The lab's people (relcap-lab up): principal and SSH public key.\n")
	for _, who := range labPeople() {
		key := filepath.Join(keys, who)
		line, err := os.ReadFile(key + ".pub")
		if errors.Is(err, fs.ErrNotExist) {
			var made string
			made, err = signing.GenerateKeyFile(key, who+"@relcap-lab")
			line = []byte(made)
		}
		if err != nil {
			return "", fmt.Errorf("key for %s: %w", who, err)
		}
		b.WriteString(who + " " + strings.TrimSpace(string(line)) + "\n")
	}
	return b.String(), nil
}
