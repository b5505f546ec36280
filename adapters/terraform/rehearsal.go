package terraform

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/rehearsal"
)

var _ rehearsal.Roots = (*Adapter)(nil)

// The failed-apply drill's scratch roots: $XDG_STATE_HOME/relcap/
// rehearsals/<id>/root, a copy of an environment's root whose backend an
// override file replaces with the local state <id>/terraform.tfstate.
// The state sits beside the root, not in it: in the root it would be the
// implicit local state too, and terraform init would "migrate" it onto
// itself and empty it.

const (
	scratchRootDir   = "root"
	scratchState     = "terraform.tfstate"
	scratchOverride  = "relcap_rehearsal_override.tf"
	scratchWorkspace = "default"
)

// PullState implements rehearsal.Roots: terraform state pull of
// env's workspace, through the quiet client (the state holds sensitive
// values in clear). state pull reads the backend and writes nothing.
func (a *Adapter) PullState(ctx context.Context, env workflow.Environment) ([]byte, error) {
	var raw string
	err := a.inWorkspace(ctx, env, "state-pull", func(t target, quiet *tfexec.Terraform) (err error) {
		if raw, err = quiet.StatePull(ctx); err != nil {
			return a.terraformError(ctx, "state pull", t, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return []byte(raw), nil
}

// scratchDir is rehearsal id's directory, refusing an id that is not one
// plain name: it is joined to a path that is deleted.
func (a *Adapter) scratchDir(id string) (string, error) {
	if a.rehearsalDir == "" {
		return "", fmt.Errorf("%w: the terraform adapter has no rehearsal directory (Options.RehearsalDir)", fault.ErrUsage)
	}
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		return "", fmt.Errorf("%w: rehearsal id %q is not a plain name", fault.ErrUsage, id)
	}
	return filepath.Join(a.rehearsalDir, id), nil
}

// CreateScratch implements rehearsal.Roots. The copy leaves out
// what is not configuration: Terraform's working directory, local state
// files and Git's directory. The var files are env's own (read only).
func (a *Adapter) CreateScratch(_ context.Context, id string, env workflow.Environment, files []rehearsal.ScratchFile, state []byte) (workflow.TerraformTarget, error) {
	t, err := a.target(env)
	if err != nil {
		return workflow.TerraformTarget{}, err
	}
	dir, err := a.scratchDir(id)
	if err != nil {
		return workflow.TerraformTarget{}, err
	}
	// A local module outside the root would not be found from the copy
	// (its relative source points elsewhere); modules.json is there once
	// the root was initialised, as PullState does.
	outside, err := localModules(t.dir)
	if err != nil {
		return workflow.TerraformTarget{}, err
	}
	if len(outside) > 0 {
		return workflow.TerraformTarget{}, fmt.Errorf("%w: environment %s: the root %s calls local modules outside itself (%s), which a scratch copy of the root cannot reach; the failed-apply drill cannot run on it",
			fault.ErrUsage, env.Name, t.dir, strings.Join(outside, ", "))
	}
	if err := os.RemoveAll(dir); err != nil {
		return workflow.TerraformTarget{}, fmt.Errorf("removing the earlier scratch copy %s: %w", dir, err)
	}
	// The state holds sensitive values in clear.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return workflow.TerraformTarget{}, fmt.Errorf("creating the scratch directory %s: %w", dir, err)
	}
	root := filepath.Join(dir, scratchRootDir)
	if err := copyRoot(t.dir, root); err != nil {
		return workflow.TerraformTarget{}, fmt.Errorf("copying the Terraform root %s to %s: %w", t.dir, root, err)
	}
	statePath := filepath.Join(dir, scratchState)
	override := fmt.Sprintf("# relcap rehearse: this scratch copy keeps its state beside it, never in the real backend.\nterraform {\n  backend \"local\" {\n    path = %q\n  }\n}\n", statePath)
	all := append([]rehearsal.ScratchFile{{Name: scratchOverride, Content: []byte(override)}}, files...)
	for _, f := range all {
		if f.Name != filepath.Base(f.Name) || f.Name == "." || f.Name == ".." {
			return workflow.TerraformTarget{}, fmt.Errorf("%w: scratch file %q is not a plain name", fault.ErrUsage, f.Name)
		}
		if err := os.WriteFile(filepath.Join(root, f.Name), f.Content, 0o600); err != nil {
			return workflow.TerraformTarget{}, fmt.Errorf("writing %s to the scratch copy: %w", f.Name, err)
		}
	}
	if len(strings.TrimSpace(string(state))) > 0 {
		if err := os.WriteFile(statePath, state, 0o600); err != nil {
			return workflow.TerraformTarget{}, fmt.Errorf("seeding the scratch state %s: %w", statePath, err)
		}
	}
	return workflow.TerraformTarget{Dir: root, Workspace: scratchWorkspace, VarFiles: env.Terraform.VarFiles, Binary: env.Terraform.Binary}, nil
}

// copyRoot copies the configuration of the root src into dst.
func copyRoot(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		name := d.Name()
		if rel != "." && (name == ".terraform" || name == ".git" || name == "terraform.tfstate.d" ||
			name == "terraform.tfstate" || name == "terraform.tfstate.backup" || name == ".terraform.tfstate.lock.info" ||
			path == dataDir(src)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o600)
		}
		return nil // sockets, devices: not configuration
	})
}

// RemoveScratchFile implements rehearsal.Roots.
func (a *Adapter) RemoveScratchFile(_ context.Context, id, name string) error {
	dir, err := a.scratchDir(id)
	if err != nil {
		return err
	}
	if name != filepath.Base(name) || name == scratchOverride {
		return fmt.Errorf("%w: %q is not a file the drill added", fault.ErrUsage, name)
	}
	if err := os.Remove(filepath.Join(dir, scratchRootDir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s from the scratch copy: %w", name, err)
	}
	return nil
}

// DeleteScratch implements rehearsal.Roots.
func (a *Adapter) DeleteScratch(_ context.Context, id string) error {
	dir, err := a.scratchDir(id)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the scratch copy %s: %w", dir, err)
	}
	return nil
}

// StateResources implements rehearsal.Roots: terraform show -json
// of the state, through the quiet client; only addresses and taint leave.
func (a *Adapter) StateResources(ctx context.Context, env workflow.Environment) ([]workflow.StateResource, error) {
	var out []workflow.StateResource
	err := a.inWorkspace(ctx, env, "show", func(t target, quiet *tfexec.Terraform) error {
		st, err := quiet.Show(ctx, tfexec.JSONNumber(true))
		if err != nil {
			return a.terraformError(ctx, "show", t, err)
		}
		learnStateSecrets(a.secrets, st)
		out = stateResources(st)
		return nil
	})
	return out, err
}

func stateResources(st *tfjson.State) []workflow.StateResource {
	if st == nil || st.Values == nil || st.Values.RootModule == nil {
		return nil
	}
	var out []workflow.StateResource
	var walk func(m *tfjson.StateModule)
	walk = func(m *tfjson.StateModule) {
		for _, r := range m.Resources {
			if r == nil || r.Mode != tfjson.ManagedResourceMode || r.DeposedKey != "" {
				continue
			}
			out = append(out, workflow.StateResource{Address: r.Address, Tainted: r.Tainted})
		}
		for _, c := range m.ChildModules {
			if c != nil {
				walk(c)
			}
		}
	}
	walk(st.Values.RootModule)
	return out
}

// CheckStateLock implements rehearsal.Roots: terraform plan
// -lock=true -lock-timeout=0s -refresh=false, which takes the state lock
// at once or fails naming its holder, and writes nothing. -refresh=false
// because the lock is the question, not the infrastructure.
func (a *Adapter) CheckStateLock(ctx context.Context, env workflow.Environment) error {
	// The probe's plan goes nowhere: the quiet client runs it.
	return a.inWorkspace(ctx, env, "lock-check", func(t target, quiet *tfexec.Terraform) error {
		opts := []tfexec.PlanOption{tfexec.Lock(true), tfexec.LockTimeout("0s"), tfexec.Refresh(false)}
		for _, f := range t.varFiles {
			opts = append(opts, tfexec.VarFile(f))
		}
		if _, err := quiet.Plan(ctx, opts...); err != nil {
			return a.terraformError(ctx, "plan -lock-timeout=0s", t, err)
		}
		return nil
	})
}
