package terraform

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// tfjsonTestdata is terraform-json's own testdata directory, in the module
// cache (it is a dependency, so go test has it).
func tfjsonTestdata(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hashicorp/terraform-json").Output()
	require.NoError(t, err, "go list the terraform-json module")
	dir := filepath.Join(strings.TrimSpace(string(out)), "testdata")
	require.DirExists(t, dir)
	return dir
}

// TestTerraformJSONTestdataPlansAgreeWithTerraformJSON reviews every plan
// document of terraform-json's testdata: none panics, the valid ones
// review, and the counts agree with terraform-json's own parse of the
// same bytes; its deliberately invalid document is refused as input.
func TestTerraformJSONTestdataPlansAgreeWithTerraformJSON(t *testing.T) {
	t.Parallel()
	dir := tfjsonTestdata(t)
	docs, err := filepath.Glob(filepath.Join(dir, "*", "plan*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(docs), 20)
	for _, path := range docs {
		name, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var want tfjson.Plan
		parseErr := json.Unmarshal(data, &want)
		if parseErr == nil {
			parseErr = want.Validate()
		}
		got, err := reviewJSON(bytes.NewReader(data), "test", tfplan.DefaultClassify(), secret.NewSet())
		if parseErr != nil {
			require.ErrorIs(t, err, fault.ErrUsage, "%s: terraform-json refuses it (%v), so does relcap", name, parseErr)
			continue
		}
		require.NoError(t, err, name)
		require.Equal(t, countsOf(t, want.ResourceChanges), got.Counts, name)
		require.Len(t, got.Actions, len(want.ActionInvocations), name)
		require.Len(t, got.Checks, len(want.Checks), name)
		require.Len(t, got.Drift, len(want.ResourceDrift), name)
	}
}

// countsOf counts changes as terraform-json parsed them.
func countsOf(t *testing.T, rcs []*tfjson.ResourceChange) tfplan.Counts {
	t.Helper()
	var c tfplan.Counts
	for _, rc := range rcs {
		a, _, err := mapActions(rc.Change.Actions)
		require.NoError(t, err, rc.Address)
		switch a {
		case tfplan.ActionCreate:
			c.Create++
		case tfplan.ActionUpdate:
			c.Update++
		case tfplan.ActionDelete:
			c.Delete++
		case tfplan.ActionReplaceDeleteFirst:
			c.ReplaceDeleteFirst++
		case tfplan.ActionReplaceCreateFirst:
			c.ReplaceCreateFirst++
		case tfplan.ActionRead:
			c.Read++
		default:
			c.NoOp++
		}
	}
	return c
}

// TestAnActionInvocationIsASideEffectToReview: terraform-json's actions
// document has no resource change but an action the apply will invoke;
// it is not "no changes".
func TestAnActionInvocationIsASideEffectToReview(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join(tfjsonTestdata(t), "actions", "plan.json"))
	require.NoError(t, err)
	defer f.Close()
	s, err := reviewJSON(f, "test", tfplan.DefaultClassify(), secret.NewSet())
	require.NoError(t, err)
	require.True(t, s.HasChanges(), "an action to invoke is a change to review")
	require.Equal(t, []tfplan.ActionInvocation{{Address: "action.bufo_print.success", Type: "bufo_print"}}, s.Actions)
	fd := findingOf(t, s, tfplan.CodePlanAction)
	require.Equal(t, "action.bufo_print.success", fd.Subject)
	require.Contains(t, fd.Message, "applying invokes action bufo_print, invoked by the plan itself")
	_, refused := s.Refused()
	require.False(t, refused, "an action is reviewed, not refused")
}

func TestChecksOfTerraformJSONTestdataAreReported(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join(tfjsonTestdata(t), "has_checks", "plan.json"))
	require.NoError(t, err)
	defer f.Close()
	s, err := reviewJSON(f, "test", tfplan.DefaultClassify(), secret.NewSet())
	require.NoError(t, err)
	require.NotEmpty(t, s.Checks)
	for _, c := range s.Checks {
		require.NotEmpty(t, c.Address)
		require.NotEmpty(t, c.Status)
	}
}

func findingOf(t *testing.T, s tfplan.Summary, code string) (f finding.Finding) {
	t.Helper()
	for _, x := range s.Findings {
		if x.Code == code {
			return x
		}
	}
	t.Fatalf("no %s finding in %+v", code, s.Findings)
	return f
}
