package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/relcap/relcap/workflow/fault"
)

// FuzzLoadConfig checks that no relcap.yaml content makes the loader panic,
// and that it always answers with either a project or a usage error listing
// at least one located problem.
func FuzzLoadConfig(f *testing.F) {
	for _, seed := range []string{
		designConfig,
		minimalConfig,
		minimalConfig + configEnv,
		minimalConfig + "effort: {idle_threshold: 2 minutes, baseline_hours_per_release: .nan}\n",
		minimalConfig + "plans: {expiry: -1h}\ncompatibility: {schema: 7, min_schema: 9, max_schema: 3}\n",
		minimalConfig + "classify: {identity: [\"[\"], data_service: x}\n",
		strings.Replace(minimalConfig, "format: kustomize", "format: helm-values", 1),
		strings.Replace(minimalConfig, "format: kustomize}", "format: kustomize, review: {via: pull_request, forge: gitea, url: 'https://u:p@h/o/r', token: x, users: {a: b, a: [c]}, ca_file: c.pem, merge: person, approvals: both}}", 1),
		strings.Replace(minimalConfig, "format: kustomize}", "format: kustomize, review: {forge: gitlab, via: push, users: x}}", 1),
		strings.Replace(minimalConfig, "{dir: infra}", "{dir: missing, var_files: [a.tfvars, {x: 1}]}", 1),
		strings.Replace(minimalConfig, "format: kustomize}", "format: kustomize}\n    rehearsal: {unready_image: r.test/ci/web@sha256:00, interrupt: {stop: [a, '', {b: c}], start: \"x y\"}, timeout: 0s}", 1),
		strings.Replace(minimalConfig, "format: kustomize}", "format: kustomize}\n    rehearsal: {unready_image: '@sha256:', interrupt: {stop: []}}", 1),
		strings.Replace(minimalConfig, "app: web-staging}", "app: web-staging, readiness_grace: 90h}", 1),
		strings.Replace(minimalConfig, "app: web-staging}", "app: web-staging, readiness_grace: [1m]}", 1),
		configHead + "  - &e {name: a}\n  - <<: [*e, *e]\n    name: b\n  - *e\n",
		"version: 1\napp: [\n",
		"---\n---\n",
		"- a\n",
		"",
		"a: &a [*a]\n",
		"? [a]\n: b\n",
		"version: 1\napp: web\xff\n",
		minimalConfig + "# caf\xe9 in Latin-1\n",
		"version: 1\n\xc3\n",
		"\xef\xbb\xbfversion: 1\napp: \xed\xa0\x80\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("/repo/relcap.yaml", data, WithStat(fakeStat))
		checkResult(t, p != nil, err)
		checkUTF8Located(t, data, err)
		if err == nil && len(p.Environments) == 0 {
			t.Fatal("valid project without environments")
		}
	})
}

// FuzzLoadOwnership is FuzzLoadConfig for ownership.yaml.
func FuzzLoadOwnership(f *testing.F) {
	for _, seed := range []string{
		designOwnership,
		ownershipBase,
		ownershipBase + "  - match: {}\n    owner: Argocd\n    fields: {spec.replicas: '', x: [1]}\n",
		ownershipBase + "handoffs:\n  - match: {name: \"[\"}\n    from: hpa\n    to: hpa\n",
		"version: 1\nrules:\n  - &r {match: {kind: x}, owner: terraform}\n  - <<: *r\n  - *r\n",
		"version: 1\nrules: [\n",
		"~",
		ownershipBase + "  - match: {kind: Deployment}\n    owner: terr\xe0form\n",
		"version: 1\nrules:\n  - match: {name: \"\xff\"}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseOwnership("ownership.yaml", data)
		checkResult(t, m.File != "", err)
		checkUTF8Located(t, data, err)
		if err == nil {
			for _, r := range m.Rules {
				if r.Match.IsZero() || r.Owner == "" || r.Line < 1 {
					t.Fatalf("accepted rule %+v", r)
				}
			}
		}
	})
}

// checkUTF8Located: a file that is not UTF-8 is refused, its first
// problem the invalid byte's line and column.
func checkUTF8Located(t *testing.T, data []byte, err error) {
	t.Helper()
	line, col, _, bad := InvalidUTF8(data)
	if !bad {
		return
	}
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("invalid UTF-8 accepted: %v", err)
	}
	if p := errs.Problems[0]; p.Line != line || p.Col != col || p.Line < 1 || p.Col < 1 || !strings.Contains(p.Message, "UTF-8") {
		t.Fatalf("invalid UTF-8 at %d:%d reported as %+v", line, col, p)
	}
}

// checkResult holds the contract every Parse result keeps: a value or an
// *Errors, never both; the error a usage error; each problem in the named
// file with a message.
func checkResult(t *testing.T, gotValue bool, err error) {
	t.Helper()
	if err == nil {
		if !gotValue {
			t.Fatal("no value and no error")
		}
		return
	}
	if gotValue {
		t.Fatal("both a value and an error")
	}
	if !errors.Is(err, fault.ErrUsage) {
		t.Fatalf("error is not a usage error: %v", err)
	}
	var errs *Errors
	if !errors.As(err, &errs) || len(errs.Problems) == 0 {
		t.Fatalf("want *Errors with problems, got %T %v", err, err)
	}
	// The cap, plus "stopped checking" and "n more not shown".
	if len(errs.Problems) > maxProblems+2 {
		t.Fatalf("%d problems, want at most %d", len(errs.Problems), maxProblems+2)
	}
	for _, p := range errs.Problems {
		if p.File == "" || p.Message == "" || p.Line < 0 || p.Col < 0 {
			t.Fatalf("malformed problem %+v", p)
		}
	}
}
