package workflowtest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/tfplan"
)

// The fake Terraform's scratch roots (rehearsal.Roots), for the
// failed-apply drill: a scratch root is a copy of the world's Terraform
// root, its pending changes and its resources; a file that declares
// terraform_data.relcap_rehearsal makes the plan create it, and the fake
// fails that apply as Terraform fails a local-exec provisioner that exits
// non-zero, leaving the resource tainted.

var _ rehearsal.Roots = Terraform{}

const fakeRehearsalResource = "terraform_data.relcap_rehearsal"

type scratchRoot struct {
	dir       string
	pending   []tfplan.ResourceChange // the real root's, when copied
	files     map[string]string       // name → content
	resources []workflow.StateResource
	serial    int64
	plans     map[string][]tfplan.ResourceChange // fingerprint → changes
	applied   map[string]int64
}

func (sc *scratchRoot) declaresDrill() bool {
	for _, c := range sc.files {
		if strings.Contains(c, `resource "terraform_data" "relcap_rehearsal"`) {
			return true
		}
	}
	return false
}

func (sc *scratchRoot) inputs() tfplan.Inputs {
	files := map[string]string{}
	for name, c := range sc.files {
		files[name] = hex64(c)
	}
	return tfplan.Inputs{Workspace: "default", StateLineage: "lineage-1", StateSerial: sc.serial, ConfigFiles: files}
}

func (w *World) scratchAt(dir string) *scratchRoot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.scratch[dir]
}

// ScratchDirs lists the scratch roots that exist.
func (w *World) ScratchDirs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for d := range w.scratch {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// realResources are the world's Terraform resources, as its state holds them.
func (w *World) realResources() []workflow.StateResource {
	var out []workflow.StateResource
	for _, o := range w.Objects {
		if o.Manager == ownership.OwnerTerraform && o.TerraformAddress != "" {
			out = append(out, workflow.StateResource{Address: o.TerraformAddress})
		}
	}
	return out
}

func (t Terraform) planScratch(env workflow.Environment, sc *scratchRoot, author string) tfplan.Facts {
	t.W.mu.Lock()
	defer t.W.mu.Unlock()
	t.W.plans++
	changes := append([]tfplan.ResourceChange(nil), sc.pending...)
	i := slices.IndexFunc(sc.resources, func(r workflow.StateResource) bool { return r.Address == fakeRehearsalResource })
	drill := tfplan.ResourceChange{Address: fakeRehearsalResource, Type: "terraform_data", Name: "relcap_rehearsal"}
	switch {
	case sc.declaresDrill() && i < 0:
		drill.Action = tfplan.ActionCreate
		changes = append(changes, drill)
	case sc.declaresDrill() && sc.resources[i].Tainted:
		drill.Action = tfplan.ActionReplaceDeleteFirst
		changes = append(changes, drill)
	case !sc.declaresDrill() && i >= 0:
		drill.Action = tfplan.ActionDelete
		changes = append(changes, drill)
	}
	p := tfplan.Facts{Env: env.Name, Author: author, Inputs: sc.inputs(), Changes: changes}
	p.PlanHash = hex64(fmt.Sprintf("scratch-plan-%d-%s-%d", t.W.plans, sc.dir, sc.serial))
	// Keyed by the fingerprint the core's review gives the plan, as the
	// real adapter names its plan file.
	sc.plans[tfplan.Fingerprint(p.PlanHash, p.Inputs)] = changes
	return p
}

func (t Terraform) applyScratch(req workflow.ApplyRequest, sc *scratchRoot) (workflow.ApplyResult, error) {
	t.W.mu.Lock()
	if serial, ok := sc.applied[req.Fingerprint]; ok {
		t.W.mu.Unlock()
		return workflow.ApplyResult{AlreadyApplied: true, StateSerial: serial}, nil
	}
	if reasons := tfplan.StaleReasons(req.Inputs, sc.inputs()); len(reasons) > 0 {
		t.W.mu.Unlock()
		return workflow.ApplyResult{}, fmt.Errorf("%w: fake terraform: %s", fault.ErrStalePlan, strings.Join(reasons, "; "))
	}
	var failed bool
	for _, c := range sc.plans[req.Fingerprint] {
		switch {
		case c.Address == fakeRehearsalResource && (c.Action == tfplan.ActionCreate || c.Action == tfplan.ActionReplaceDeleteFirst):
			sc.resources = slices.DeleteFunc(sc.resources, func(r workflow.StateResource) bool { return r.Address == c.Address })
			sc.resources = append(sc.resources, workflow.StateResource{Address: c.Address, Tainted: true})
			failed = true
		case c.Action == tfplan.ActionDelete:
			sc.resources = slices.DeleteFunc(sc.resources, func(r workflow.StateResource) bool { return r.Address == c.Address })
		}
	}
	sc.serial++
	serial := sc.serial
	if !failed {
		sc.applied[req.Fingerprint] = serial
	}
	t.W.mu.Unlock()
	if err := t.W.interrupt("apply"); err != nil {
		return workflow.ApplyResult{}, err
	}
	if failed {
		// What Terraform says of a local-exec provisioner that exits 1.
		return workflow.ApplyResult{}, fmt.Errorf("fake terraform apply in %s: exit status 1\n\nError: local-exec provisioner error\n\n  with %s,\n  on relcap_rehearsal_failed_apply.tf line 2\n\nError running command 'echo 'relcap rehearsal: failing on purpose' >&2; exit 1': exit status 1. Output: relcap rehearsal: failing on purpose",
			sc.dir, fakeRehearsalResource)
	}
	return workflow.ApplyResult{StateSerial: serial}, nil
}

// PullState returns a state document of the world's serial; it writes
// nothing, as terraform state pull.
func (t Terraform) PullState(ctx context.Context, _ workflow.Environment) ([]byte, error) {
	if err := t.W.gate(ctx); err != nil {
		return nil, err
	}
	t.W.mu.Lock()
	defer t.W.mu.Unlock()
	t.W.StatePulls++
	return fmt.Appendf(nil, `{"version":4,"lineage":"lineage-1","serial":%d}`, t.W.StateSerial), nil
}

// CreateScratch copies the world's root into /rehearsals/<id>/root.
func (t Terraform) CreateScratch(ctx context.Context, id string, _ workflow.Environment, files []rehearsal.ScratchFile, state []byte) (workflow.TerraformTarget, error) {
	if err := t.W.gate(ctx); err != nil {
		return workflow.TerraformTarget{}, err
	}
	if id == "" || strings.ContainsAny(id, "/\\") {
		return workflow.TerraformTarget{}, fmt.Errorf("%w: rehearsal id %q", fault.ErrUsage, id)
	}
	if !strings.Contains(string(state), `"lineage":"lineage-1"`) {
		return workflow.TerraformTarget{}, fmt.Errorf("fake terraform: the scratch copy must be seeded with the pulled state, got %q", state)
	}
	t.W.mu.Lock()
	defer t.W.mu.Unlock()
	dir := "/rehearsals/" + id + "/root"
	sc := &scratchRoot{dir: dir, pending: append([]tfplan.ResourceChange(nil), t.W.Changes...), files: map[string]string{"main.tf": "# the real root"},
		resources: t.W.realResources(), serial: t.W.StateSerial, plans: map[string][]tfplan.ResourceChange{}, applied: map[string]int64{}}
	for _, f := range files {
		sc.files[f.Name] = string(f.Content)
	}
	if t.W.scratch == nil {
		t.W.scratch = map[string]*scratchRoot{}
	}
	t.W.scratch[dir] = sc
	return workflow.TerraformTarget{Dir: dir, Workspace: "default"}, nil
}

// RemoveScratchFile deletes a file of the scratch root.
func (t Terraform) RemoveScratchFile(ctx context.Context, id, name string) error {
	if err := t.W.gate(ctx); err != nil {
		return err
	}
	t.W.mu.Lock()
	defer t.W.mu.Unlock()
	if sc := t.W.scratch["/rehearsals/"+id+"/root"]; sc != nil {
		delete(sc.files, name)
	}
	return nil
}

// DeleteScratch removes the scratch root.
func (t Terraform) DeleteScratch(ctx context.Context, id string) error {
	if err := t.W.gate(ctx); err != nil {
		return err
	}
	t.W.mu.Lock()
	defer t.W.mu.Unlock()
	delete(t.W.scratch, "/rehearsals/"+id+"/root")
	return nil
}

// StateResources reads a scratch root's resources, or the world's.
func (t Terraform) StateResources(ctx context.Context, env workflow.Environment) ([]workflow.StateResource, error) {
	if err := t.W.gate(ctx); err != nil {
		return nil, err
	}
	t.W.mu.Lock()
	defer t.W.mu.Unlock()
	if sc := t.W.scratch[env.Terraform.Dir]; sc != nil {
		return slices.Clone(sc.resources), nil
	}
	return t.W.realResources(), nil
}

// CheckStateLock fails, naming a holder, while ScratchLockHeld is set.
func (t Terraform) CheckStateLock(ctx context.Context, env workflow.Environment) error {
	if err := t.W.gate(ctx); err != nil {
		return err
	}
	t.W.mu.Lock()
	defer t.W.mu.Unlock()
	if t.W.ScratchLockHeld {
		return fmt.Errorf("%w: fake terraform: the state of %s is locked by captain@host (lock ID 1234)", fault.ErrLocked, env.Terraform.Dir)
	}
	return nil
}
