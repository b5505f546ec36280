package terraform

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// lockFileName is Terraform's dependency lock file.
const lockFileName = ".terraform.lock.hcl"

// Inputs reads the current source revision, dependency lock file, var files,
// workspace and state lineage/serial of env without planning. It runs
// terraform init only when the working directory has not been initialised
// (or a command fails without it), and never upgrades providers.
func (a *Adapter) Inputs(ctx context.Context, env workflow.Environment) (tfplan.Inputs, error) {
	t, err := a.target(env)
	if err != nil {
		return tfplan.Inputs{}, err
	}
	unlock, err := a.lockWorkdir(ctx, t, "inputs")
	if err != nil {
		return tfplan.Inputs{}, err
	}
	defer unlock()
	loud, quiet, err := a.terraforms(ctx, t)
	if err != nil {
		return tfplan.Inputs{}, err
	}
	in, restore, err := a.inputsIn(ctx, t, loud, quiet)
	restore()
	return in, err
}

// inputsIn reads the current inputs in the environment's workspace, which
// it selects; restore selects the workspace that was selected before (it is
// never nil). The caller holds the working-directory lock.
func (a *Adapter) inputsIn(ctx context.Context, t target, loud, quiet *tfexec.Terraform) (tfplan.Inputs, func(), error) {
	var in tfplan.Inputs
	var restore func()
	err := a.withInit(ctx, t, loud, func() error {
		r, err := selectWorkspace(ctx, quiet, t)
		if err != nil {
			return err
		}
		if restore == nil {
			restore = r
		}
		in, err = a.currentInputs(ctx, quiet, t, a.secrets)
		return err
	})
	if restore == nil {
		restore = func() {}
	}
	return in, restore, err
}

// withInit runs fn in an initialised working directory. If the directory
// looks initialised it tries fn first and falls back to init and one retry,
// so the common case (a directory relcap planned in) costs no init.
func (a *Adapter) withInit(ctx context.Context, t target, loud *tfexec.Terraform, fn func() error) error {
	initialised, err := exists(dataDir(t.dir))
	if err != nil {
		return fmt.Errorf("terraform in %s: %w", t.dir, err)
	}
	if initialised {
		if err := fn(); err == nil || ctx.Err() != nil || errors.Is(err, fault.ErrUsage) {
			return err
		}
	}
	if _, err := a.init(ctx, t, loud); err != nil {
		return err
	}
	return fn()
}

// init runs terraform init without upgrading anything. Terraform's
// -lockfile=readonly is not offered by terraform-exec, so the same guarantee
// is kept here: if init changes a committed .terraform.lock.hcl, the file is
// restored and init fails. It reports whether a lock file was committed.
func (a *Adapter) init(ctx context.Context, t target, loud *tfexec.Terraform) (lockFileCommitted bool, err error) {
	lockPath := filepath.Join(t.dir, lockFileName)
	before, err := os.ReadFile(lockPath)
	committed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("terraform init in %s: reading %s: %w", t.dir, lockFileName, err)
	}
	if err := loud.Init(ctx, tfexec.Upgrade(false)); err != nil {
		return committed, a.terraformError(ctx, "init", t, err)
	}
	if !committed {
		return false, nil
	}
	after, err := os.ReadFile(lockPath)
	if err == nil && bytes.Equal(before, after) {
		return true, nil
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(lockPath); err == nil {
		mode = fi.Mode().Perm()
	}
	if werr := os.WriteFile(lockPath, before, mode); werr != nil {
		return true, fmt.Errorf("terraform init in %s changed %s and restoring it failed: %w", t.dir, lockFileName, werr)
	}
	return true, fmt.Errorf("%w: terraform init in %s had to change the committed %s (a provider or platform checksum is missing from it); it was restored; run terraform init there, review the lock file change and commit it", fault.ErrUsage, t.dir, lockFileName)
}

// selectWorkspace selects t.workspace, refusing to create one: a typo in
// relcap.yaml must not plan against a new, empty state. The returned restore
// selects the previous workspace again, so a captain who runs terraform by
// hand in the same directory afterwards is not silently pointed at another
// environment's state; call it when the operation is done.
func selectWorkspace(ctx context.Context, tf *tfexec.Terraform, t target) (restore func(), err error) {
	list, current, err := tf.WorkspaceList(ctx)
	if err != nil {
		return nil, fmt.Errorf("terraform workspace list in %s: %w", t.dir, err)
	}
	if !slices.Contains(list, t.workspace) {
		return nil, fmt.Errorf("%w: environment %s: terraform workspace %q does not exist in %s (have %s); create it with \"terraform workspace new %s\" if it should", fault.ErrUsage, t.env, t.workspace, t.dir, strings.Join(list, ", "), t.workspace)
	}
	if current == t.workspace {
		return func() {}, nil
	}
	if err := tf.WorkspaceSelect(ctx, t.workspace); err != nil {
		return nil, fmt.Errorf("terraform workspace select %s in %s: %w", t.workspace, t.dir, err)
	}
	if current == "" {
		return func() {}, nil
	}
	return func() {
		// Best effort, and deliberately not bound to the operation's
		// context, which may be what ended it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = tf.WorkspaceSelect(ctx, current)
	}, nil
}

// currentInputs reads everything a plan depends on. The working directory
// must be initialised and the workspace selected.
func (a *Adapter) currentInputs(ctx context.Context, quiet *tfexec.Terraform, t target, secrets *secret.Set) (tfplan.Inputs, error) {
	in, err := fileInputs(ctx, t)
	if err != nil {
		return in, err
	}
	if in.ConfigFiles, err = configFiles(t); err != nil {
		return in, err
	}
	key, err := a.envVarKey()
	if err != nil {
		return in, err
	}
	// Terraform runs with relcap's own environment (terraform-exec passes
	// it on), so that is where its TF_VAR_* values are.
	in.EnvVars = envVarHashes(os.Environ(), key)
	// And the variables that choose the providers' cluster, account or
	// project (KUBECONFIG, AWS_PROFILE, …), with the files they name.
	in.ProviderEnv = providerEnvHashes(os.Environ(), key)
	if err := addProviderConfigFiles(t.dir, key, in.ProviderEnv); err != nil {
		return in, err
	}
	in.StateLineage, in.StateSerial, err = stateIdentity(ctx, quiet, t, secrets)
	return in, err
}

// fileInputs reads the inputs that live in files: Git revision, lock file,
// var files; and the workspace name.
func fileInputs(ctx context.Context, t target) (tfplan.Inputs, error) {
	in := tfplan.Inputs{Workspace: t.workspace, VarFileHashes: map[string]string{}}
	var err error
	if in.Revision, in.Dirty, err = gitRevision(ctx, t.dir); err != nil {
		return in, err
	}
	if in.LockFileHash, err = hashFile(filepath.Join(t.dir, lockFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return in, fmt.Errorf("hashing %s in %s: %w", lockFileName, t.dir, err)
	}
	for _, f := range t.varFiles {
		h, err := hashFile(f)
		if err != nil {
			return in, fmt.Errorf("hashing var file: %w", err)
		}
		in.VarFileHashes[varFileKey(t.dir, f)] = h
	}
	return in, nil
}

// varFileKey names a var file by its path relative to the Terraform root,
// so the fingerprint survives moving the checkout.
func varFileKey(dir, f string) string {
	if rel, err := filepath.Rel(dir, f); err == nil {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(f)
}

// stateIdentity reads the lineage and serial of the selected workspace's
// state. An empty state (nothing applied yet) is lineage "" and serial 0.
// The pulled state holds sensitive values in clear; only the two fields are
// kept, and nothing of it is echoed in errors. The values the state marks
// sensitive are taught to secrets first, so Terraform's own output of the
// plan that follows (which prints provider-computed copies unmarked) is
// masked as it streams.
func stateIdentity(ctx context.Context, quiet *tfexec.Terraform, t target, secrets *secret.Set) (string, int64, error) {
	raw, err := quiet.StatePull(ctx)
	if err != nil {
		return "", 0, fmt.Errorf("terraform state pull in %s: %w", t.dir, err)
	}
	if strings.TrimSpace(raw) == "" {
		return "", 0, nil
	}
	var s rawState
	if err := decodeNumbers([]byte(raw), &s); err != nil {
		return "", 0, fmt.Errorf("terraform state pull in %s returned a state relcap cannot read (lineage and serial)", t.dir)
	}
	s.learnSecrets(secrets)
	return s.Lineage, s.Serial, nil
}

// rawState is what relcap reads of a pulled state (format version 4): its
// identity, and where it keeps values marked sensitive. Attributes stay
// raw until an instance is known to have a sensitive one.
type rawState struct {
	Lineage string `json:"lineage"`
	Serial  int64  `json:"serial"`
	Outputs map[string]struct {
		Value     any  `json:"value"`
		Sensitive bool `json:"sensitive"`
	} `json:"outputs"`
	Resources []struct {
		Instances []struct {
			Attributes json.RawMessage `json:"attributes"`
			// SensitiveAttributes are paths, each a list of steps:
			// {"type": "get_attr", "value": "input"} or {"type":
			// "index", "value": {"value": 0, "type": "number"}}.
			SensitiveAttributes []json.RawMessage `json:"sensitive_attributes"`
		} `json:"instances"`
	} `json:"resources"`
}

// pathStep is one step of a sensitive attribute's path in a state.
type pathStep struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

func (s rawState) learnSecrets(secrets *secret.Set) {
	if secrets == nil {
		return
	}
	for _, o := range s.Outputs {
		if o.Sensitive {
			learnValue(secrets, o.Value)
		}
	}
	for _, r := range s.Resources {
		for _, in := range r.Instances {
			if len(in.SensitiveAttributes) == 0 {
				continue
			}
			var attrs any
			if err := decodeNumbers(in.Attributes, &attrs); err != nil {
				continue // an instance relcap cannot read holds nothing it shows either
			}
			for _, p := range in.SensitiveAttributes {
				var steps []pathStep
				if json.Unmarshal(p, &steps) == nil {
					learnValue(secrets, follow(attrs, steps))
				}
			}
		}
	}
}

// decodeNumbers is json.Unmarshal keeping numbers as written
// (json.Number): a sensitive number is learnt in the form Terraform
// prints, not rounded through float64.
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// follow walks v along a state path; nil when the path leaves v.
func follow(v any, steps []pathStep) any {
	for _, st := range steps {
		switch st.Type {
		case "get_attr":
			var name string
			m, ok := v.(map[string]any)
			if !ok || json.Unmarshal(st.Value, &name) != nil {
				return nil
			}
			v = m[name]
		case "index":
			var key struct {
				Value any `json:"value"`
			}
			if json.Unmarshal(st.Value, &key) != nil {
				return nil
			}
			switch c := v.(type) {
			case map[string]any:
				k, _ := key.Value.(string)
				v = c[k]
			case []any:
				f, ok := key.Value.(float64)
				if !ok || f < 0 || int(f) >= len(c) {
					return nil
				}
				v = c[int(f)]
			default:
				return nil
			}
		default:
			return nil
		}
	}
	return v
}

// gitRevision returns the HEAD commit of the Git work tree holding dir and
// whether that tree has uncommitted changes. A dir outside Git, or a machine
// without git, gives "" and false; a dir inside Git whose status cannot be
// read is an error, never a silent "".
func gitRevision(ctx context.Context, dir string) (rev string, dirty bool, err error) {
	if !insideGit(dir) {
		return "", false, nil
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return "", false, nil
	}
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, git, append([]string{"-C", dir}, args...)...)
		// status must not take .git/index.lock and collide with the
		// captain's own git commands.
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return out.String(), fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(errb.String()))
			}
			return "", fmt.Errorf("git %s in %s: %w", strings.Join(args, " "), dir, err)
		}
		return out.String(), nil
	}
	// --verify -q exits 1 with no output on a repository without commits.
	out, err := run("rev-parse", "-q", "--verify", "HEAD^{commit}")
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1 && strings.TrimSpace(out) == "") {
		return "", false, err
	}
	rev = strings.TrimSpace(out)
	status, err := run("status", "--porcelain", "--untracked-files=normal")
	if err != nil {
		return "", false, err
	}
	return rev, strings.TrimSpace(status) != "", nil
}

// insideGit reports whether dir or an ancestor holds .git.
func insideGit(dir string) bool {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return false
		}
		d = parent
	}
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
