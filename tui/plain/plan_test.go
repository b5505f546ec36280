package plain

import (
	"bytes"
	"testing"

	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/stretchr/testify/require"
)

func TestPrintPlanShowsCountsFlagsReplacementsAndFingerprint(t *testing.T) {
	t.Parallel()
	p := tfplan.Summary{Env: "prod", Fingerprint: "f00d", Inputs: tfplan.Inputs{Revision: "abc", Workspace: "default", StateSerial: 7},
		Changes: []tfplan.ResourceChange{
			{Address: "aws_db_instance.main", Type: "aws_db_instance", Action: tfplan.ActionReplaceDeleteFirst, ReplacePaths: []string{"engine_version"}},
			{Address: "aws_iam_role.ci", Type: "aws_iam_role", Action: tfplan.ActionUpdate,
				Attributes: []tfplan.AttributeChange{{Path: "password", Before: tfplan.SensitiveMask, After: tfplan.SensitiveMask, Sensitive: true}}},
		},
		Outputs: []tfplan.OutputChange{{Name: "db_password", Action: tfplan.ActionUpdate, Sensitive: true}},
	}
	tfplan.Review(&p, tfplan.DefaultClassify())
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
