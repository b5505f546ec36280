package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/ownership"
)

func TestRenderedOwnershipReadsBackAsTheSameMap(t *testing.T) {
	m := ownership.Map{File: "ownership.draft.yaml",
		Rules: []ownership.Rule{
			{Match: ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web-staging", Name: "web"}, Owner: "argocd",
				Fields: map[string]ownership.Owner{
					"spec.replicas": "hpa",
					`metadata.labels["app.kubernetes.io/name"]`: "terraform",
					"spec.template.spec.containers[web].image":  "argocd",
				}},
			{Match: ownership.Match{Kind: "ConfigMap", Name: "yes"}, Owner: "argocd"},
			{Match: ownership.Match{App: "web-staging"}, Owner: "argocd"},
			{Match: ownership.Match{TerraformType: "*"}, Owner: "terraform"},
		},
		Handoffs: []ownership.Handoff{{Match: ownership.Match{Kind: "Namespace", Name: "argocd"}, From: "terraform", To: "argocd", Note: "bootstrap: #1"}},
	}
	out, err := config.RenderOwnership(m, []string{"drafted by relcap ownership infer", "two\nlines"},
		map[int][]string{0: {"contested: spec.replicas # a comment sign", "written by argocd-controller (Update)"}})
	require.NoError(t, err)
	text := string(out)
	require.Contains(t, text, "# drafted by relcap ownership infer\n# two\n# lines\n")
	require.Contains(t, text, "# contested: spec.replicas # a comment sign\n")
	require.Contains(t, text, "match: {group: apps, kind: Deployment, namespace: web-staging, name: web}")

	back, err := config.ParseOwnership("ownership.draft.yaml", out)
	require.NoError(t, err, text)
	require.Len(t, back.Rules, 4)
	for i, r := range back.Rules {
		require.Equal(t, m.Rules[i].Match, r.Match)
		require.Equal(t, m.Rules[i].Owner, r.Owner)
		require.Equal(t, len(m.Rules[i].Fields), len(r.Fields))
		for f, o := range m.Rules[i].Fields {
			require.Equal(t, o, r.Fields[f], "field %s", f)
		}
	}
	require.Equal(t, m.Handoffs[0].Note, back.Handoffs[0].Note)
	require.Equal(t, "yes", back.Rules[1].Match.Name, "a YAML 1.1 boolean word stays a string")
}

func TestANoteCannotEndItsCommentAndWriteYAML(t *testing.T) {
	m := ownership.Map{File: "ownership.draft.yaml", Rules: []ownership.Rule{{Match: ownership.Match{Kind: "Deployment"}, Owner: "argocd"}}}
	for _, evil := range []string{"a\rrules: []", "a\nversion: 2", "a\u0085handoffs: x", "a\u2028rules:", "a\x1b[31mred\x00"} {
		out, err := config.RenderOwnership(m, []string{evil}, map[int][]string{0: {"manager " + evil}})
		require.NoError(t, err, "%q", evil)
		back, err := config.ParseOwnership(m.File, out)
		require.NoError(t, err)
		require.Len(t, back.Rules, 1, "%q", evil)
		require.NotContains(t, string(out), "\x1b")
		require.NotContains(t, string(out), "\r")
	}
}

func TestRenderOwnershipRefusesAMapValidateWouldRefuse(t *testing.T) {
	m := ownership.Map{File: "ownership.draft.yaml", Rules: []ownership.Rule{{Match: ownership.Match{Kind: "Deployment"}, Owner: "Not An Owner"}}}
	_, err := config.RenderOwnership(m, nil, nil)
	require.ErrorContains(t, err, "does not read back")
}
