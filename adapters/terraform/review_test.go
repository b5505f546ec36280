package terraform

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

func changeByAddress(t *testing.T, s tfplan.Summary, addr string) tfplan.ResourceChange {
	t.Helper()
	for _, c := range s.Changes {
		if c.Address == addr {
			return c
		}
	}
	t.Fatalf("no change for %s in %v", addr, s.Changes)
	return tfplan.ResourceChange{}
}

func attrByPath(t *testing.T, c tfplan.ResourceChange, path string) tfplan.AttributeChange {
	t.Helper()
	for _, a := range c.Attributes {
		if a.Path == path {
			return a
		}
	}
	t.Fatalf("%s: no attribute change at %s in %+v", c.Address, path, c.Attributes)
	return tfplan.AttributeChange{}
}

func hasFinding(s tfplan.Summary, code, subject string) bool {
	for _, f := range s.Findings {
		if f.Code == code && f.Subject == subject {
			return true
		}
	}
	return false
}

// TestReviewJSONHandwrittenShapes covers identity and data-service
// classification, which no local provider can produce, through a
// hand-written document shaped like the AWS and Google providers' plans.
func TestReviewJSONHandwrittenShapes(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("testdata", "handwritten_aws_iam_and_rds.json"))
	require.NoError(t, err)
	defer f.Close()
	s, err := reviewJSON(f, "prod", tfplan.DefaultClassify(), secret.NewSet())
	require.NoError(t, err)

	require.Equal(t, "prod", s.Env)
	require.Equal(t, "1.5.7", s.TerraformVersion)
	require.Empty(t, s.Fingerprint, "a JSON document is not an appliable plan")
	require.Equal(t, tfplan.Counts{Update: 1, Delete: 1, ReplaceDeleteFirst: 1, ReplaceCreateFirst: 1, Read: 1, NoOp: 1}, s.Counts)
	require.Len(t, s.Changes, 5, "the no-op is counted, not listed")

	role := changeByAddress(t, s, "aws_iam_role.deployer")
	require.Equal(t, tfplan.ActionUpdate, role.Action)
	require.Equal(t, []string{tfplan.FlagIdentity}, role.Flags)
	require.True(t, hasFinding(s, "plan.identity", "aws_iam_role.deployer"))
	require.Equal(t, "3600", attrByPath(t, role, "max_session_duration").Before)
	require.Equal(t, "7200", attrByPath(t, role, "max_session_duration").After)
	owner := attrByPath(t, role, "tags.owner")
	require.Equal(t, "null", owner.Before)
	require.Equal(t, `"release"`, owner.After)
	for _, a := range role.Attributes {
		require.NotEqual(t, "arn", a.Path, "unchanged attributes are not listed")
	}

	db := changeByAddress(t, s, "module.data.aws_db_instance.main")
	require.Equal(t, tfplan.ActionReplaceDeleteFirst, db.Action)
	require.Equal(t, "module.data", db.Module)
	require.Equal(t, []string{"storage_encrypted"}, db.ReplacePaths)
	require.ElementsMatch(t, []string{tfplan.FlagDestructive, tfplan.FlagDataService}, db.Flags)
	require.True(t, hasFinding(s, "plan.destructive", db.Address))
	require.True(t, hasFinding(s, "plan.data-service", db.Address))
	pw := attrByPath(t, db, "password")
	require.Equal(t, tfplan.AttributeChange{Path: "password", Before: tfplan.SensitiveMask, After: tfplan.SensitiveMask, Sensitive: true}, pw)
	id := attrByPath(t, db, "id")
	require.True(t, id.Unknown)
	require.Equal(t, knownAfterApply, id.After)
	require.Equal(t, `"db-ABCDEFGHIJ"`, id.Before)
	endpoint := attrByPath(t, db, "endpoint")
	require.True(t, endpoint.Unknown, "an unknown attribute absent from after is still listed")
	sg := attrByPath(t, db, "vpc_security_group_ids[1]")
	require.Equal(t, `"sg-222"`, sg.After)

	bucket := changeByAddress(t, s, "google_storage_bucket.assets")
	require.Equal(t, tfplan.ActionDelete, bucket.Action)
	require.ElementsMatch(t, []string{tfplan.FlagDestructive, tfplan.FlagDataService}, bucket.Flags)
	require.Equal(t, "null", attrByPath(t, bucket, "labels.env").After)

	web := changeByAddress(t, s, "aws_security_group.web")
	require.Equal(t, tfplan.ActionReplaceCreateFirst, web.Action)
	require.Equal(t, []string{tfplan.FlagDestructive}, web.Flags)
	require.Equal(t, "443", attrByPath(t, web, "ingress[0].from_port").After)

	read := changeByAddress(t, s, "data.aws_caller_identity.current")
	require.Equal(t, tfplan.ActionRead, read.Action)
	require.Empty(t, read.Flags)

	require.Equal(t, []tfplan.OutputChange{
		{Name: "db_endpoint", Action: tfplan.ActionUpdate},
		{Name: "db_password", Action: tfplan.ActionCreate, Sensitive: true},
	}, s.Outputs)
	require.True(t, hasFinding(s, "plan.output", "output.db_password"))

	out, err := json.Marshal(s)
	require.NoError(t, err)
	require.NotContains(t, string(out), "HANDWRITTEN-SECRET")
}

// TestReviewJSONGenerated checks the generator's counts and that no
// sensitive value of a large, realistic document reaches the summary.
func TestReviewJSONGenerated(t *testing.T) {
	t.Parallel()
	g := generatePlan(300, 7)
	s, err := reviewJSON(bytes.NewReader(g.data), "staging", tfplan.DefaultClassify(), secret.NewSet())
	require.NoError(t, err)
	require.Equal(t, tfplan.Counts{
		Create: g.create, Update: g.update, Delete: g.del,
		ReplaceDeleteFirst: g.replaceDF, ReplaceCreateFirst: g.replaceCF,
		Read: g.read, NoOp: g.noop,
	}, s.Counts)
	require.Len(t, s.Outputs, g.outputs)
	out, err := json.Marshal(s)
	require.NoError(t, err)
	require.NotContains(t, string(out), genSecret)
	for _, c := range s.Changes {
		if c.Action == tfplan.ActionReplaceDeleteFirst {
			require.Equal(t, []string{"name", "tags.Name"}, c.ReplacePaths)
		}
		if c.Action == tfplan.ActionUpdate {
			tok := attrByPath(t, c, "connection.token")
			require.True(t, tok.Sensitive)
			require.Equal(t, tfplan.SensitiveMask, tok.Before)
			for _, a := range c.Attributes {
				require.NotEqual(t, "connection.host", a.Path, "an unchanged sibling of a sensitive key is not listed")
			}
		}
	}
}

// TestReviewJSONErrors: bad documents are usage errors that name the input
// and where reading failed, and never echo document content.
func TestReviewJSONErrors(t *testing.T) {
	t.Parallel()
	valid, err := os.ReadFile(filepath.Join("testdata", "handwritten_aws_iam_and_rds.json"))
	require.NoError(t, err)
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"empty", "", []string{"is empty"}},
		{"not JSON", "terraform plan output\n", []string{"line 1, column 2", "not valid JSON"}},
		{"truncated", string(valid[:len(valid)/2]), []string{"truncated", "line "}},
		{"syntax error on line 3", "{\n  \"format_version\": \"1.2\",\n  \"resource_changes\": [}\n", []string{"line 3, column 24"}},
		{"wrong shape", `{"format_version":"1.2","resource_changes":5}`, []string{"resource_changes is a JSON number, want"}},
		{"wrong action shape", `{"format_version":"1.2","resource_changes":[{"address":"a.b","change":{"actions":"HANDWRITTEN-SECRET"}}]}`, []string{"resource_changes[0].change.actions is a JSON string"}},
		{"array", `[1,2]`, []string{"document is a JSON array"}},
		{"state document", `{"format_version":"1.0","values":{"root_module":{}}}`, []string{"state document, not a plan"}},
		{"no format version", `{"planned_values":{}}`, []string{"format version is missing"}},
		{"future format", `{"format_version":"2.0","planned_values":{}}`, []string{"unsupported plan format version"}},
		{"unrelated JSON", `{"hello":"world"}`, []string{"not a Terraform plan document"}},
		{"unknown action", `{"format_version":"1.2","resource_changes":[{"address":"a.b","change":{"actions":["explode"]}}]}`, []string{`resource_changes[0] (a.b): unknown action ["explode"]`}},
		{"no change", `{"format_version":"1.2","resource_changes":[{"address":"a.b"}]}`, []string{"resource_changes[0]: no change object"}},
		{"trailing data", `{"format_version":"1.2","planned_values":{}} {}`, []string{"unexpected data after the plan document", "byte offset"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "upload.json")
			require.NoError(t, os.WriteFile(path, []byte(tc.doc), 0o600))
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			_, err = reviewJSON(f, "prod", tfplan.DefaultClassify(), secret.NewSet())
			require.Error(t, err)
			require.ErrorIs(t, err, fault.ErrUsage)
			require.Contains(t, err.Error(), path, "the error names the file")
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			require.NotContains(t, err.Error(), "HANDWRITTEN-SECRET")
		})
	}
}

// TestReviewJSONReaderName: a reader without a name is called "plan document".
func TestReviewJSONReaderName(t *testing.T) {
	t.Parallel()
	_, err := reviewJSON(strings.NewReader("{"), "prod", tfplan.DefaultClassify(), secret.NewSet())
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), "plan document: line 1, column 2 (byte offset 1): truncated")
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReviewJSONReadError(t *testing.T) {
	t.Parallel()
	_, err := reviewJSON(failingReader{}, "prod", tfplan.DefaultClassify(), secret.NewSet())
	require.ErrorContains(t, err, "reading plan document: disk on fire")
}
