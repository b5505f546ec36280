package terraform

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

// planSuffix ends every saved plan's file name: <fingerprint>.tfplan.
const planSuffix = ".tfplan"

// Plan runs terraform init (never upgrading providers, keeping a committed
// dependency lock file unchanged), selects env's workspace (which must
// exist), and runs terraform plan -out into the private plan store with
// state locking on. It returns what it read of the saved plan as
// tfplan.Facts, for the core to review (tfplan.ReviewPlan): the
// changes, the plan file's SHA-256 and the inputs it was computed from
// (tfplan.Inputs). The plan file is PlanDir/<fingerprint>.tfplan with
// mode 0600, named by the fingerprint the review gives the plan.
//
// Errors wrap fault.ErrUsage for configuration mistakes,
// fault.ErrLocked when another writer holds the state lock, and the
// context's error on cancellation. Terraform's stderr is kept in the error.
func (a *Adapter) Plan(ctx context.Context, env workflow.Environment, author string) (tfplan.Facts, error) {
	t, err := a.target(env)
	if err != nil {
		return tfplan.Facts{}, err
	}
	unlock, err := a.lockWorkdir(ctx, t, "plan")
	if err != nil {
		return tfplan.Facts{}, err
	}
	defer unlock()
	loud, quiet, err := a.terraforms(ctx, t)
	if err != nil {
		return tfplan.Facts{}, err
	}

	committed, err := a.init(ctx, t, loud)
	if err != nil {
		return tfplan.Facts{}, err
	}
	restore, err := selectWorkspace(ctx, quiet, t)
	if err != nil {
		return tfplan.Facts{}, err
	}
	defer restore()
	// Inputs are read before planning, so they describe what Terraform
	// read; the state is read again afterwards to catch a writer that
	// slipped in between.
	in, err := a.currentInputs(ctx, quiet, t, a.secrets)
	if err != nil {
		return tfplan.Facts{}, err
	}
	// Learnt before Terraform prints a line (the state's sensitive values
	// were, as the inputs were read): the plan's output streams to the
	// screen, the recording and the journal as it comes.
	if err := a.learnBeforeRun(ctx, t); err != nil {
		return tfplan.Facts{}, err
	}

	tmp, err := os.CreateTemp(a.planDir, ".plan-*.tmp")
	if err != nil {
		return tfplan.Facts{}, fmt.Errorf("creating plan file in %s: %w", a.planDir, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	kept := false
	defer func() {
		if !kept {
			_ = os.Remove(tmpPath)
		}
	}()

	// Detached, as terraform-exec's Plan with Out, Lock(true) and the var
	// files would run it (exit 2: changes): Terraform holds the state
	// lock while it plans, and relcap's death must not kill it then.
	args := []string{"plan", "-no-color", "-input=false", "-detailed-exitcode", "-lock-timeout=0s", "-out=" + tmpPath}
	for _, f := range t.varFiles {
		args = append(args, "-var-file="+f)
	}
	args = append(args, "-lock=true", "-parallelism=10", "-refresh=true")
	if _, err := a.runDetachedCommand(ctx, t, "plan", args, 0, 2); err != nil {
		return tfplan.Facts{}, err
	}
	lineage, serial, err := stateIdentity(ctx, quiet, t, a.secrets)
	if err != nil {
		return tfplan.Facts{}, err
	}
	if lineage != in.StateLineage || serial != in.StateSerial {
		return tfplan.Facts{}, fmt.Errorf("%w: the state of %s (%s) changed while planning (serial %d, now %d); run relcap plan again", fault.ErrStalePlan, t.dir, t.workspace, in.StateSerial, serial)
	}
	// Terraform creates the plan file with its own mode; saved plans hold
	// sensitive values in clear.
	if err := os.Chmod(tmpPath, 0o600); err != nil {
		return tfplan.Facts{}, fmt.Errorf("securing plan file: %w", err)
	}
	planHash, err := hashFile(tmpPath)
	if err != nil {
		return tfplan.Facts{}, fmt.Errorf("hashing plan file: %w", err)
	}

	// The plan JSON holds sensitive values in clear: it goes to a buffer,
	// never to the captain's terminal, and is read exactly as an uploaded
	// document is (ReadPlanJSON), so both see drift, checks, actions and
	// completeness alike.
	doc, err := a.showPlanJSON(ctx, t, tmpPath)
	if err != nil {
		return tfplan.Facts{}, err
	}
	facts, err := readDocument(doc, "the plan of "+t.dir, t.env, a.secrets)
	if err != nil {
		return tfplan.Facts{}, fmt.Errorf("reviewing the plan of %s: %w", t.dir, err)
	}
	facts.PlanHash, facts.Inputs, facts.Author, facts.CreatedAt, facts.Root = planHash, in, author, a.clock.Now(), t.dir
	if !committed {
		facts.MissingLockFile = lockFileName
	}
	if facts.TerraformVersion == "" {
		if v, _, err := quiet.Version(ctx, false); err == nil {
			facts.TerraformVersion = v.String()
		}
	}
	// The review is the domain's (tfplan.ReviewPlan), and so is the
	// fingerprint formula; the file is named by the fingerprint the review
	// will give it, so a fingerprint finds its plan file.
	facts.PlanFile = filepath.Join(a.planDir, tfplan.Fingerprint(planHash, in)+planSuffix)
	if err := os.Rename(tmpPath, facts.PlanFile); err != nil {
		return tfplan.Facts{}, fmt.Errorf("saving plan file: %w", err)
	}
	kept = true
	return facts, nil
}

// showPlanJSON is `terraform show -json` of a saved plan, as bytes.
// terraform-exec offers it only decoded; its stdout copy is the document
// as Terraform wrote it.
func (a *Adapter) showPlanJSON(ctx context.Context, t target, planFile string) ([]byte, error) {
	tf, err := tfexec.NewTerraform(t.dir, t.binary)
	if err != nil {
		return nil, fmt.Errorf("terraform in %s: %w", t.dir, err)
	}
	// Asked first, so terraform-exec's own version -json (which it copies
	// to stdout too) is cached and stays out of the document.
	if _, _, err := tf.Version(ctx, false); err != nil {
		return nil, a.terraformError(ctx, "version", t, err)
	}
	var doc bytes.Buffer
	tf.SetStdout(&doc)
	if _, err := tf.ShowPlanFile(ctx, planFile, tfexec.JSONNumber(true)); err != nil {
		return nil, a.terraformError(ctx, "show", t, err)
	}
	return doc.Bytes(), nil
}
