package plain

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

func TestPrintPlanShowsCountsFlagsReplacementsAndFingerprint(t *testing.T) {
	t.Parallel()
	p := workflow.PlanSummary{Env: "prod", Fingerprint: "f00d", Inputs: workflow.PlanInputs{Revision: "abc", Workspace: "default", StateSerial: 7},
		Changes: []workflow.ResourceChange{
			{Address: "aws_db_instance.main", Type: "aws_db_instance", Action: workflow.ActionReplaceDeleteFirst, ReplacePaths: []string{"engine_version"}},
			{Address: "aws_iam_role.ci", Type: "aws_iam_role", Action: workflow.ActionUpdate,
				Attributes: []workflow.AttributeChange{{Path: "password", Before: workflow.SensitiveMask, After: workflow.SensitiveMask, Sensitive: true}}},
		},
		Outputs: []workflow.OutputChange{{Name: "db_password", Action: workflow.ActionUpdate, Sensitive: true}},
	}
	workflow.Review(&p, workflow.DefaultClassify())
	var out bytes.Buffer
	require.NoError(t, PrintPlan(&out, p))
	s := out.String()
	require.Contains(t, s, "0 to create, 1 to update, 0 to delete, 1 to replace (1 delete-first, 0 create-first)")
	require.Contains(t, s, "replace (delete before create)  aws_db_instance.main")
	require.Contains(t, s, "destructive,data-service")
	require.Contains(t, s, "forces replacement: engine_version")
	require.Contains(t, s, "aws_iam_role.ci")
	require.Contains(t, s, "identity")
	require.Contains(t, s, "output db_password: update (sensitive)")
	require.Contains(t, s, "Fingerprint: f00d")
}
