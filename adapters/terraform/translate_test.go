package terraform

import (
	"bytes"
	"testing"

	"encoding/json"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// decodeChange decodes a change the way ReviewJSON does (numbers as written).
func decodeChange(t *testing.T, s string) *tfjson.Change {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var c tfjson.Change
	require.NoError(t, dec.Decode(&c))
	return &c
}

func TestDiffAttributes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change string
		want   []tfplan.AttributeChange
	}{
		{
			name:   "nested maps and lists flatten to paths",
			change: `{"before":{"tags":{"env":"dev","a b":"x"},"ingress":[{"port":80}]},"after":{"tags":{"env":"prod","a b":"x"},"ingress":[{"port":443},{"port":8080}]}}`,
			want: []tfplan.AttributeChange{
				{Path: "ingress[0].port", Before: "80", After: "443"},
				{Path: "ingress[1].port", Before: "null", After: "8080"},
				{Path: "tags.env", Before: `"dev"`, After: `"prod"`},
			},
		},
		{
			name:   "a sensitive ancestor hides keys and values below it",
			change: `{"before":{"creds":{"user":"u","SECRETKEY":"SECRETVAL"}},"after":{"creds":{"user":"u","SECRETKEY":"SECRETVAL2"}},"before_sensitive":{"creds":true},"after_sensitive":{"creds":true}}`,
			want:   []tfplan.AttributeChange{{Path: "creds", Before: tfplan.SensitiveMask, After: tfplan.SensitiveMask, Sensitive: true}},
		},
		{
			name:   "an unchanged sensitive value is not listed",
			change: `{"before":{"pw":"SECRETVAL"},"after":{"pw":"SECRETVAL"},"before_sensitive":{"pw":true},"after_sensitive":{"pw":true}}`,
		},
		{
			name:   "a value becoming sensitive is listed, masked",
			change: `{"before":{"pw":"SECRETVAL"},"after":{"pw":"SECRETVAL"},"before_sensitive":{},"after_sensitive":{"pw":true}}`,
			want:   []tfplan.AttributeChange{{Path: "pw", Before: `"SECRETVAL"`, After: tfplan.SensitiveMask, Sensitive: true}},
		},
		{
			name:   "sensitive parts of a rendered container stay masked",
			change: `{"before":{"cfg":"flat"},"after":{"cfg":{"a":1,"k":"SECRETVAL"}},"after_sensitive":{"cfg":{"k":true}}}`,
			want:   []tfplan.AttributeChange{{Path: "cfg", Before: `"flat"`, After: `{"a":1,"k":(sensitive)}`}},
		},
		{
			name:   "a whole sensitive resource",
			change: `{"before":null,"after":{"x":"SECRETVAL"},"before_sensitive":false,"after_sensitive":true}`,
			want:   []tfplan.AttributeChange{{Path: "(value)", Before: "null", After: tfplan.SensitiveMask, Sensitive: true}},
		},
		{
			name:   "unknown values",
			change: `{"before":{"id":"i-1","list":[1]},"after":{"list":[1,null]},"after_unknown":{"id":true,"list":[false,true],"arn":true}}`,
			want: []tfplan.AttributeChange{
				{Path: "arn", Before: "null", After: knownAfterApply, Unknown: true},
				{Path: "id", Before: `"i-1"`, After: knownAfterApply, Unknown: true},
				{Path: "list[1]", Before: "null", After: knownAfterApply, Unknown: true},
			},
		},
		{
			name:   "null to empty container",
			change: `{"before":{"tags":null,"l":[]},"after":{"tags":{},"l":[]}}`,
			want:   []tfplan.AttributeChange{{Path: "tags", Before: "null", After: "{}"}},
		},
		{
			name:   "numbers keep their text",
			change: `{"before":{"n":12345678901234567890},"after":{"n":12345678901234567891}}`,
			want:   []tfplan.AttributeChange{{Path: "n", Before: "12345678901234567890", After: "12345678901234567891"}},
		},
		{
			name:   "shapes that do not match the value are ignored, never trusted to unmask",
			change: `{"before":{"a":"x"},"after":{"a":"SECRETVAL"},"before_sensitive":"nonsense","after_sensitive":{"a":true}}`,
			want:   []tfplan.AttributeChange{{Path: "a", Before: `"x"`, After: tfplan.SensitiveMask, Sensitive: true}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := decodeChange(t, tc.change)
			d := differ{}
			d.walk("", c.Before, c.After, c.BeforeSensitive, c.AfterSensitive, c.AfterUnknown)
			require.Equal(t, tc.want, d.out)
			if tc.name != "a value becoming sensitive is listed, masked" {
				out, err := json.Marshal(d.out)
				require.NoError(t, err)
				require.NotContains(t, string(out), "SECRET")
			}
		})
	}
}

func TestReplacePaths(t *testing.T) {
	t.Parallel()
	c := decodeChange(t, `{
		"replace_paths": [["ami"], ["tags", "x y"], ["network", 0, "id"], ["creds", "SECRETKEY"], [], "junk", [true], ["ami"]],
		"before_sensitive": {"creds": true},
		"after_sensitive": {}
	}`)
	got := replacePaths(c.ReplacePaths, c.BeforeSensitive, c.AfterSensitive)
	require.Equal(t, []string{"ami", `tags["x y"]`, "network[0].id", "creds"}, got)
}

func TestMapActions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     tfjson.Actions
		want   tfplan.Action
		forget bool
	}{
		{tfjson.Actions{"no-op"}, tfplan.ActionNoop, false},
		{tfjson.Actions{"create"}, tfplan.ActionCreate, false},
		{tfjson.Actions{"read"}, tfplan.ActionRead, false},
		{tfjson.Actions{"update"}, tfplan.ActionUpdate, false},
		{tfjson.Actions{"delete"}, tfplan.ActionDelete, false},
		{tfjson.Actions{"delete", "create"}, tfplan.ActionReplaceDeleteFirst, false},
		{tfjson.Actions{"create", "delete"}, tfplan.ActionReplaceCreateFirst, false},
		{tfjson.Actions{"forget"}, tfplan.ActionDelete, true},
		{tfjson.Actions{"create", "forget"}, tfplan.ActionReplaceCreateFirst, true},
	}
	for _, tc := range tests {
		got, forget, err := mapActions(tc.in)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, tc.in)
		require.Equal(t, tc.forget, forget, tc.in)
	}
	for _, bad := range []tfjson.Actions{nil, {}, {"create", "create"}, {"update", "delete"}, {"boom"}} {
		_, _, err := mapActions(bad)
		require.Error(t, err, bad)
	}
}

// TestTranslateFindings: imports, moves, forgets and deposed objects.
func TestTranslateFindings(t *testing.T) {
	t.Parallel()
	doc := `{"format_version":"1.2","resource_changes":[
		{"address":"a.imported","type":"a","name":"imported","change":{"actions":["no-op"],"importing":{"id":"x"}}},
		{"address":"a.new","previous_address":"a.old","type":"a","name":"new","change":{"actions":["no-op"]}},
		{"address":"a.gone","type":"a","name":"gone","change":{"actions":["forget"],"before":{"id":"1"}}},
		{"address":"a.db","deposed":"00000001","type":"a","name":"db","change":{"actions":["delete"],"before":{"id":"2"}}}
	]}`
	s, err := reviewJSON(bytes.NewReader([]byte(doc)), "dev", tfplan.DefaultClassify(), secret.NewSet())
	require.NoError(t, err)
	require.Equal(t, 2, s.Counts.NoOp)
	require.Equal(t, 2, s.Counts.Delete)
	require.True(t, hasFinding(s, "plan.import", "a.imported"))
	require.True(t, hasFinding(s, "plan.moved", "a.new"))
	require.True(t, hasFinding(s, "plan.forget", "a.gone"))
	changeByAddress(t, s, "a.db (deposed object 00000001)")
	require.Equal(t, finding.Warning, s.Findings[0].Severity, "findings stay sorted, most serious first")
}

func TestParseLockInfo(t *testing.T) {
	t.Parallel()
	msg := "exit status 1\n\nError: Error acquiring the state lock\n\nError message: resource temporarily unavailable\nLock Info:\n  ID:        9a14f24f-9024-4d15-7093-1afff3c83af6\n  Path:      terraform.tfstate\n  Operation: OperationTypeApply\n  Who:       root@vm\n  Version:   1.11.4\n  Created:   2026-11-30 14:01:31.872522457 +0000 UTC\n  Info:      \n\n\nTerraform acquires a state lock..."
	li, ok := parseLockInfo(msg)
	require.True(t, ok)
	require.Equal(t, "9a14f24f-9024-4d15-7093-1afff3c83af6", li.ID)
	require.Equal(t, "root@vm", li.Who)
	require.Equal(t, "OperationTypeApply", li.Operation)
	require.Equal(t, "terraform.tfstate", li.Path)
	require.Equal(t, 2026, li.Created.Year())

	boxed := "│ Lock Info:\n│   ID:        abc\n│   Who:       me@host\n│ \n"
	li, ok = parseLockInfo(boxed)
	require.True(t, ok)
	require.Equal(t, "abc", li.ID)
	require.Equal(t, "me@host", li.Who)

	_, ok = parseLockInfo("exit status 1\nError: something else")
	require.False(t, ok)
}
