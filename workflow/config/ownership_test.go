package config

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/ownership"
)

func TestLoadOwnershipDesignExample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"ownership.yaml": designOwnership})
	// File is the path as given, for messages.
	path := filepath.Join(dir, "ownership.yaml")

	m, err := LoadOwnership(path)
	require.NoError(t, err)
	require.Equal(t, path, m.File)
	require.Equal(t, []int{3, 5, 7}, []int{m.Rules[0].Line, m.Rules[1].Line, m.Rules[2].Line})
	require.Equal(t, ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web"}, m.Rules[2].Match)
	require.Equal(t, map[string]ownership.Owner{"spec.replicas": "hpa"}, m.Rules[2].Fields)
	require.Len(t, m.Handoffs, 1)
	require.Equal(t, 11, m.Handoffs[0].Line)

	// The loaded map drives the domain check: a Deployment owned by Argo CD
	// is fine, the same one written by Terraform is a finding at line 7.
	findings := ownership.Check(m, []ownership.ManagedObject{{
		Manager: ownership.OwnerTerraform, TerraformAddress: "kubernetes_deployment.web",
		TerraformType: "kubernetes_deployment", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web",
	}})
	require.NotEmpty(t, findings)
	require.Contains(t, findings[0].Message, path+":7")
}

// ownershipBase is a valid ownership.yaml whose only rule ends on line 4.
const ownershipBase = "version: 1\nrules:\n  - match: {terraform_type: \"aws_*\"}\n    owner: terraform\n"

func TestParseOwnershipReportsProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want string
	}{
		{
			name: "invalid YAML",
			data: "version: 1\nrules:\n  - match: {kind: [}\n",
			want: `ownership.yaml:3: invalid YAML: did not find expected node content`,
		},
		{
			name: "unknown top-level key",
			data: ownershipBase + "handoff: []\n",
			want: `ownership.yaml:5:1: handoff: unknown key "handoff" (did you mean "handoffs"?)`,
		},
		{
			name: "unknown rule key",
			data: ownershipBase + "    ownr: argocd\n",
			want: `ownership.yaml:5:5: rules[0].ownr: unknown key "ownr" (did you mean "owner"?)`,
		},
		{
			name: "unknown match key is not also called empty",
			data: ownershipBase + "  - match: {knd: Deployment}\n    owner: argocd\n",
			want: `ownership.yaml:5:13: rules[1].match.knd: unknown key "knd" (did you mean "kind"?)`,
		},
		{
			name: "missing version",
			data: strings.TrimPrefix(ownershipBase, "version: 1\n"),
			want: `ownership.yaml:1:1: missing required key "version" (want version: 1)`,
		},
		{
			name: "no rules",
			data: "version: 1\nrules: []\n",
			want: `ownership.yaml:2:8: rules: want at least one rule; every managed object must match one`,
		},
		{
			name: "rules not a list",
			data: "version: 1\nrules: {owner: terraform}\n",
			want: `ownership.yaml:2:8: rules: want a list, got a mapping`,
		},
		{
			name: "missing owner",
			data: ownershipBase + "  - match: {kind: Namespace}\n",
			want: `ownership.yaml:5:5: rules[1]: missing required key "owner" (e.g. owner: terraform)`,
		},
		{
			name: "empty owner",
			data: strings.Replace(ownershipBase, "owner: terraform", `owner: ""`, 1),
			want: `ownership.yaml:4:12: rules[0].owner: must not be empty`,
		},
		{
			name: "owner in the wrong case",
			data: strings.Replace(ownershipBase, "owner: terraform", "owner: Terraform", 1),
			want: `ownership.yaml:4:12: rules[0].owner: want "terraform", got "Terraform" (owners are lowercase)`,
		},
		{
			name: "owner misspelt",
			data: strings.Replace(ownershipBase, "owner: terraform", "owner: terrafrom", 1),
			want: `ownership.yaml:4:12: rules[0].owner: unknown owner "terrafrom" (did you mean "terraform"?)`,
		},
		{
			name: "missing match",
			data: ownershipBase + "  - owner: argocd\n",
			want: `ownership.yaml:5:5: rules[1]: missing required key "match" (e.g. match: {kind: Deployment})`,
		},
		{
			name: "empty match would match everything",
			data: ownershipBase + "  - match: {}\n    owner: argocd\n",
			want: `ownership.yaml:5:12: rules[1].match: empty match would select every object; name at least one of terraform_type, terraform_address, group, kind, namespace, name, app`,
		},
		{
			name: "match of empty strings is empty too",
			data: ownershipBase + "  - match: {kind: \"\"}\n    owner: argocd\n",
			want: `ownership.yaml:5:12: rules[1].match: empty match would select every object; name at least one of terraform_type, terraform_address, group, kind, namespace, name, app`,
		},
		{
			name: "invalid glob",
			data: ownershipBase + "  - match: {name: \"web-[\"}\n    owner: argocd\n",
			want: `ownership.yaml:5:19: rules[1].match.name: invalid glob pattern "web-[": syntax error in pattern`,
		},
		{
			name: "rule shadowed by an identical earlier match",
			data: ownershipBase + "  - match: {terraform_type: \"aws_*\"}\n    owner: argocd\n",
			want: `ownership.yaml:5:5: rules[1]: same match as the rule at line 3, which wins; this rule is never used`,
		},
		{
			name: "field owner missing",
			data: ownershipBase + "    fields: {spec.replicas: }\n",
			want: `ownership.yaml:5:29: rules[0].fields.spec.replicas: want an owner name such as hpa, got nothing`,
		},
		{
			name: "fields not a mapping",
			data: ownershipBase + "    fields: [spec.replicas]\n",
			want: `ownership.yaml:5:13: rules[0].fields: want a mapping of field paths to owners, got a list`,
		},
		{
			name: "hand-off to itself",
			data: ownershipBase + "handoffs:\n  - match: {terraform_address: helm_release.argocd}\n    from: argocd\n    to: argocd\n",
			want: `ownership.yaml:8:9: handoffs[0].to: hand-off from argocd to itself; from and to must differ`,
		},
		{
			name: "hand-off without from",
			data: ownershipBase + "handoffs:\n  - match: {terraform_address: helm_release.argocd}\n    to: argocd\n",
			want: `ownership.yaml:6:5: handoffs[0]: missing required key "from" (the owner that bootstraps it, e.g. from: terraform)`,
		},
		{
			name: "every problem is reported",
			data: `version: 1
rules:
  - match: {}
    owner: terraform
  - match: {kind: "["}
    owner: Argocd
  - match: {kind: Deployment}
handoffs:
  - match: {name: x}
    from: terraform
    to: terraform
    notes: oops
`,
			want: strings.Join([]string{
				`ownership.yaml:3:12: rules[0].match: empty match would select every object; name at least one of terraform_type, terraform_address, group, kind, namespace, name, app`,
				`ownership.yaml:5:19: rules[1].match.kind: invalid glob pattern "[": syntax error in pattern`,
				`ownership.yaml:6:12: rules[1].owner: want "argocd", got "Argocd" (owners are lowercase)`,
				`ownership.yaml:7:5: rules[2]: missing required key "owner" (e.g. owner: terraform)`,
				`ownership.yaml:11:9: handoffs[0].to: hand-off from terraform to itself; from and to must differ`,
				`ownership.yaml:12:5: handoffs[0].notes: unknown key "notes" (did you mean "note"?)`,
			}, "\n"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := ParseOwnership("ownership.yaml", []byte(tt.data))
			require.Equal(t, ownership.Map{}, m)
			require.ErrorIs(t, err, fault.ErrUsage)
			var errs *Errors
			require.ErrorAs(t, err, &errs)
			require.Equal(t, tt.want, err.Error())
		})
	}
}

func TestParseOwnershipAcceptsThirdOwners(t *testing.T) {
	t.Parallel()
	m, err := ParseOwnership("ownership.yaml", []byte(ownershipBase+
		"  - match: {kind: HorizontalPodAutoscaler}\n    owner: keda\n"+
		"  - match: {kind: Certificate}\n    owner: cert-manager\n"))
	require.NoError(t, err)
	require.Equal(t, []ownership.Owner{"terraform", "keda", "cert-manager"},
		[]ownership.Owner{m.Rules[0].Owner, m.Rules[1].Owner, m.Rules[2].Owner})
}

func TestErrorsFormat(t *testing.T) {
	t.Parallel()
	err := &Errors{Problems: []Problem{
		{File: "relcap.yaml", Line: 12, Col: 5, Field: "environments[1].approvals.plan", Message: `want a non-negative integer, got "two"`},
		{File: "relcap.yaml", Line: 3, Message: "invalid YAML: oops"},
		{File: "relcap.yaml", Message: "file is empty"},
	}}
	require.Equal(t, `relcap.yaml:12:5: environments[1].approvals.plan: want a non-negative integer, got "two"
relcap.yaml:3: invalid YAML: oops
relcap.yaml: file is empty`, err.Error())
	require.ErrorIs(t, err, fault.ErrUsage)
}

func TestTooManyProblemsAreCut(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(minimalConfig)
	for i := range 150 {
		b.WriteString("unknown" + strings.Repeat("x", i) + ": 1\n")
	}
	_, err := Parse("relcap.yaml", []byte(b.String()))
	var errs *Errors
	require.ErrorAs(t, err, &errs)
	require.Len(t, errs.Problems, maxProblems+1)
	require.Equal(t, "50 more problems not shown; fix the ones above first", errs.Problems[maxProblems].Message)
}

// TestAliasBombIsBounded protects against a small file that names one large
// node thousands of times through aliases: yaml.v3 does not expand aliases
// for the Node API, so without the work budget the checks would run for
// minutes and report millions of problems.
func TestAliasBombIsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("version: 1\nrules:\n  - &r {owner: terraform, match: {kind: x, <<: {")
	for i := range 1000 {
		b.WriteString("k" + strconv.Itoa(i) + ": 1, ")
	}
	b.WriteString("}}}\n")
	for range 2000 {
		b.WriteString("  - *r\n")
	}
	_, err := ParseOwnership("ownership.yaml", []byte(b.String()))
	var errs *Errors
	require.ErrorAs(t, err, &errs)
	require.LessOrEqual(t, len(errs.Problems), maxProblems+2)
	require.Contains(t, err.Error(), "ownership.yaml: aliases expand this document too far; stopped checking")
}
