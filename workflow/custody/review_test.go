package custody_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/finding"
)

// fakeReader is a fake custody.Reader: it answers from maps by root
// directory (the Terraform adapter's reader is tested against real
// Terraform in adapters/terraform).
type fakeReader struct {
	backends map[string]custody.Backend
	errs     map[string]error
	remotes  map[string][]custody.RemoteState
}

func (f fakeReader) Backend(_ context.Context, root custody.Root) (custody.Backend, error) {
	if err := f.errs[root.Dir]; err != nil {
		return custody.Backend{}, err
	}
	b := f.backends[root.Dir]
	b.Dir, b.Workspace = root.Dir, root.Workspace
	return b, nil
}

func (f fakeReader) RemoteStates(_ context.Context, root custody.Root) ([]custody.RemoteState, error) {
	return f.remotes[root.Dir], nil
}

func envs(prodAccepts map[string]string) []custody.Env {
	return []custody.Env{
		{Name: "staging", Root: custody.Root{Dir: "/r/staging", Workspace: "default"}},
		{Name: "prod", Production: true, Root: custody.Root{Dir: "/r/prod", Workspace: "default"}, Accepted: prodAccepts},
	}
}

func s3(bucket, key string, extra ...string) custody.Backend {
	b := custody.Backend{Type: "s3", Source: custody.FromInit, Settings: map[string]string{"bucket": bucket, "key": key, "region": "eu-west-1"}, FromEnv: map[string]string{}}
	for i := 0; i+1 < len(extra); i += 2 {
		b.Settings[extra[i]] = extra[i+1]
	}
	return b
}

func check(t *testing.T, r fakeReader, es []custody.Env, target string) custody.Result {
	t.Helper()
	res, err := custody.Check(t.Context(), r, es, target)
	require.NoError(t, err)
	return res
}

func codes(res custody.Result, sev finding.Severity) []string {
	var out []string
	for _, f := range res.Findings {
		if f.Severity == sev {
			out = append(out, f.Code)
		}
	}
	slices.Sort(out)
	return out
}

func TestALocalBackendBlocksProductionAndWarnsElsewhere(t *testing.T) {
	r := fakeReader{backends: map[string]custody.Backend{
		"/r/staging": {Type: "local", Source: custody.FromDefault},
		"/r/prod":    {Type: "local", Source: custody.FromInit, Settings: map[string]string{"path": "state/prod.tfstate"}},
	}}
	prod := check(t, r, envs(nil), "prod")
	require.Equal(t, []string{custody.CodeLocalBackend}, codes(prod, finding.Blocker))
	require.True(t, custody.Blocking(prod.Findings))
	require.Equal(t, "local file /r/prod/state/prod.tfstate", prod.Location)
	f := prod.Findings[0]
	require.Contains(t, f.Message, "/r/prod/state/prod.tfstate")
	require.Contains(t, f.NextAction, "terraform init -migrate-state")
	require.Equal(t, "https://developer.hashicorp.com/terraform/language/backend/local", f.Fact("docs"))

	staging := check(t, r, envs(nil), "staging")
	require.Empty(t, codes(staging, finding.Blocker))
	require.Contains(t, codes(staging, finding.Warning), custody.CodeLocalBackend)
	require.Equal(t, "local file /r/staging/terraform.tfstate", staging.Location)
}

func TestAnAcceptedFindingIsAWarningThatSaysSoAndAStaleAcceptanceIsNamed(t *testing.T) {
	r := fakeReader{backends: map[string]custody.Backend{
		"/r/staging": s3("acme", "staging.tfstate", "encrypt", "true", "use_lockfile", "true"),
		"/r/prod":    {Type: "local", Source: custody.FromDefault},
	}}
	accepts := map[string]string{custody.CodeLocalBackend: "one operator; the file is backed up nightly", custody.CodeNoLocking: "old"}
	res := check(t, r, envs(accepts), "prod")
	require.False(t, custody.Blocking(res.Findings), "accepted: a warning, never silent")
	i := slices.IndexFunc(res.Findings, func(f finding.Finding) bool { return f.Code == custody.CodeLocalBackend })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, finding.Warning, res.Findings[i].Severity)
	require.Contains(t, res.Findings[i].Message, "accepted in relcap.yaml: one operator; the file is backed up nightly")
	require.Equal(t, map[string]string{custody.CodeLocalBackend: "one operator; the file is backed up nightly"}, res.Accepted)
	require.Contains(t, codes(res, finding.Info), custody.CodeAcceptedUnused)
}

func TestAnS3BackendNeedsLockingAndEncryptionAndSaysWhatItCannotSee(t *testing.T) {
	r := fakeReader{backends: map[string]custody.Backend{
		"/r/staging": s3("acme", "staging.tfstate"),
		"/r/prod":    s3("acme", "prod.tfstate", "encrypt", "true", "dynamodb_table", "locks", "profile", "prod-admin"),
	}}
	staging := check(t, r, envs(nil), "staging")
	require.Equal(t, []string{custody.CodeNoLocking, custody.CodeUnencrypted}, codes(staging, finding.Warning))
	prod := check(t, r, envs(nil), "prod")
	require.Empty(t, codes(prod, finding.Blocker))
	require.Empty(t, codes(prod, finding.Warning), "%v", prod.Findings)
	require.Equal(t, "s3://acme/prod.tfstate", prod.Location)
	var info []string
	for _, f := range prod.Findings {
		info = append(info, f.Message)
	}
	joined := strings.Join(info, "\n")
	require.Contains(t, joined, "locked by DynamoDB table locks")
	require.Contains(t, joined, "not verifiable from here: the bucket's versioning")

	// The same gaps in production block.
	r.backends["/r/prod"] = s3("acme", "prod.tfstate", "encrypt", "false")
	prod = check(t, r, envs(nil), "prod")
	require.Equal(t, []string{custody.CodeNoLocking, custody.CodeUnencrypted}, codes(prod, finding.Blocker))
}

func TestOneStateOrOneBackendsWorkspacesForTwoEnvironmentsIsReported(t *testing.T) {
	good := []string{"encrypt", "true", "use_lockfile", "true"}
	r := fakeReader{backends: map[string]custody.Backend{
		"/r/staging": s3("acme", "app.tfstate", good...),
		"/r/prod":    s3("acme", "app.tfstate", good...),
	}}
	res := check(t, r, envs(nil), "staging")
	require.Equal(t, []string{custody.CodeSharedState}, codes(res, finding.Blocker), "prod is one of them")

	// Two workspaces of one root and backend.
	es := []custody.Env{
		{Name: "staging", Root: custody.Root{Dir: "/r/app", Workspace: "staging"}},
		{Name: "prod", Production: true, Root: custody.Root{Dir: "/r/app", Workspace: "prod"}},
	}
	r.backends["/r/app"] = s3("acme", "app.tfstate", good...)
	res = check(t, r, es, "prod")
	require.Equal(t, []string{custody.CodeSharedWorkspaces}, codes(res, finding.Blocker))
	require.Equal(t, "s3://acme/env:/prod/app.tfstate", res.Location)
	i := slices.IndexFunc(res.Findings, func(f finding.Finding) bool { return f.Code == custody.CodeSharedWorkspaces })
	require.Contains(t, res.Findings[i].Message, "a workspace is not a security boundary")

	// Outside production the same is a warning.
	es[1].Production = false
	res = check(t, r, es, "prod")
	require.Empty(t, codes(res, finding.Blocker))
	require.Contains(t, codes(res, finding.Warning), custody.CodeSharedWorkspaces)

	// Local workspaces of one root share the root's directory.
	r.backends["/r/app"] = custody.Backend{Type: "local", Source: custody.FromDefault}
	res = check(t, r, es, "staging")
	require.Contains(t, codes(res, finding.Warning), custody.CodeSharedWorkspaces)
	require.Equal(t, "local file /r/app/terraform.tfstate.d/staging/terraform.tfstate", res.Location)
}

func TestTheSameCredentialSourceIsAWarningWithWhereEachComesFrom(t *testing.T) {
	good := []string{"encrypt", "true", "use_lockfile", "true", "profile", "admin"}
	st, pr := s3("acme", "staging.tfstate", good...), s3("acme", "prod.tfstate", good...)
	st.FromEnv["profile"] = "AWS_PROFILE"
	r := fakeReader{backends: map[string]custody.Backend{"/r/staging": st, "/r/prod": pr}}
	res := check(t, r, envs(nil), "prod")
	require.Equal(t, []string{custody.CodeSharedCredentials}, codes(res, finding.Warning))
	f := res.Findings[slices.IndexFunc(res.Findings, func(f finding.Finding) bool { return f.Code == custody.CodeSharedCredentials })]
	require.Contains(t, f.Message, "AWS profile admin")
	require.Equal(t, "$AWS_PROFILE in relcap's environment", f.Fact("staging"))
	require.Equal(t, "profile in the backend configuration (init)", f.Fact("prod"))

	pr.Settings["profile"] = "prod-deployer"
	res = check(t, r, envs(nil), "prod")
	require.Empty(t, codes(res, finding.Warning))
}

func TestReadingProductionsWholeStateNamesTheOutputsUsed(t *testing.T) {
	good := []string{"encrypt", "true", "use_lockfile", "true"}
	r := fakeReader{
		backends: map[string]custody.Backend{"/r/staging": s3("acme", "staging.tfstate", good...), "/r/prod": s3("acme", "prod.tfstate", good...)},
		remotes: map[string][]custody.RemoteState{"/r/staging": {
			{Name: "core", File: "data.tf", Line: 3, Backend: "s3", Settings: map[string]string{"bucket": "acme", "key": "prod.tfstate"}, Outputs: []string{"db_host", "vpc_id"}},
			{Name: "legacy", File: "data.tf", Line: 12, Backend: "s3", Settings: map[string]string{"bucket": "other", "key": custody.Unknown}},
		}},
	}
	res := check(t, r, envs(nil), "staging")
	var msgs []string
	for _, f := range res.Findings {
		if f.Code == custody.CodeWholeRemoteState {
			msgs = append(msgs, f.Message+" | "+f.NextAction)
		}
	}
	require.Len(t, msgs, 2)
	require.Contains(t, msgs[0], "staging reads production's whole state (prod) through terraform_remote_state (data.tf:3) and uses only db_host, vpc_id")
	require.Contains(t, msgs[0], "narrow outputs")
	require.Contains(t, msgs[1], "reads a whole state through terraform_remote_state (data.tf:12) and uses none of its outputs | remove the data source")
}

func TestPGAndHTTPBackendsAreJudgedOnTransportAndLocking(t *testing.T) {
	r := fakeReader{backends: map[string]custody.Backend{
		"/r/staging": {Type: "pg", Source: custody.FromInit, Settings: map[string]string{"conn_str": "postgres://relcap@db.internal:5432/tf?sslmode=disable"}},
		"/r/prod":    {Type: "http", Source: custody.FromInit, Settings: map[string]string{"address": "http://state.internal/prod?token=abc", "password": custody.Redacted}},
	}}
	st := check(t, r, envs(nil), "staging")
	require.Equal(t, []string{custody.CodeUnencrypted}, codes(st, finding.Warning))
	require.Equal(t, "pg://db.internal:5432/tf schema terraform_remote_state workspace default", st.Location)
	pr := check(t, r, envs(nil), "prod")
	require.Equal(t, []string{custody.CodeNoLocking, custody.CodeUnencrypted}, codes(pr, finding.Blocker))
	require.Equal(t, []string{custody.CodeCredentialInConfig}, codes(pr, finding.Warning))
	require.Equal(t, "http://state.internal/prod", pr.Location, "no query, where a token may ride")
	for _, f := range pr.Findings {
		require.NotContains(t, fmt.Sprint(f), "abc")
	}

	// A database on this machine needs no TLS; keyword form is read too.
	r.backends["/r/staging"] = custody.Backend{Type: "pg", Source: custody.FromInit, Settings: map[string]string{"conn_str": "host=127.0.0.1 port=5432 dbname=tf user=relcap sslmode=disable"}}
	st = check(t, r, envs(nil), "staging")
	require.Empty(t, codes(st, finding.Warning))
	require.Equal(t, "pg://127.0.0.1:5432/tf schema terraform_remote_state workspace default", st.Location)
}

func TestAnUnknownBackendOrPlaceIsUnverifiedNotAssumed(t *testing.T) {
	r := fakeReader{
		backends: map[string]custody.Backend{
			"/r/staging": {Type: "oss", Source: custody.FromInit, Settings: map[string]string{"bucket": "b", "api_key_secret": "SHOULD-NOT-SHOW"}},
			"/r/prod":    s3("acme", custody.Unknown, "encrypt", "true", "use_lockfile", "true"),
		},
		errs: map[string]error{},
	}
	st := check(t, r, envs(nil), "staging")
	require.Equal(t, []string{custody.CodeUnknownBackend}, codes(st, finding.Warning))
	for _, f := range st.Findings {
		require.NotContains(t, fmt.Sprint(f), "SHOULD-NOT-SHOW")
	}
	pr := check(t, r, envs(nil), "prod")
	require.Equal(t, []string{custody.CodeUnknownLocation}, codes(pr, finding.Warning))
	require.Empty(t, pr.Location)

	// Another environment that cannot be read leaves separation unverified;
	// the target's own backend unread is an error.
	r.errs["/r/staging"] = errors.New("main.tf:3,1: syntax error")
	pr = check(t, r, envs(nil), "prod")
	require.Contains(t, codes(pr, finding.Warning), custody.CodeUnknownLocation)
	_, err := custody.Check(t.Context(), r, envs(nil), "staging")
	require.ErrorContains(t, err, "reading the Terraform backend of staging: main.tf:3,1: syntax error")
}

func TestAPasswordWrittenInAConnectionStringIsACredentialInTheConfiguration(t *testing.T) {
	r := fakeReader{backends: map[string]custody.Backend{
		// As the Terraform adapter hands it over: the password masked.
		"/r/staging": {Type: "pg", Source: custody.FromInit, Settings: map[string]string{"conn_str": "postgres://relcap:xxxxx@127.0.0.1:5432/tf"}},
		"/r/prod":    {Type: "pg", Source: custody.FromInit, Settings: map[string]string{"conn_str": "postgres://relcap@127.0.0.1:5432/tf2"}, FromEnv: map[string]string{}},
	}}
	st := check(t, r, envs(nil), "staging")
	require.Contains(t, codes(st, finding.Warning), custody.CodeCredentialInConfig)
	// From PG_CONN_STR it is the environment's, not the configuration's.
	r.backends["/r/staging"] = custody.Backend{Type: "pg", Source: custody.FromInit, Settings: map[string]string{"conn_str": "postgres://relcap:xxxxx@127.0.0.1:5432/tf"}, FromEnv: map[string]string{"conn_str": "PG_CONN_STR"}}
	st = check(t, r, envs(nil), "staging")
	require.NotContains(t, codes(st, finding.Warning), custody.CodeCredentialInConfig)
	require.Contains(t, codes(st, finding.Warning), custody.CodeSharedCredentials, "one database user for both")
}

func TestAKeyFromRelcapsEnvironmentIsOneCredentialForEveryEnvironment(t *testing.T) {
	good := []string{"encrypt", "true", "use_lockfile", "true", "access_key", custody.Redacted, "secret_key", custody.Redacted}
	st, pr := s3("acme", "staging.tfstate", good...), s3("acme", "prod.tfstate", good...)
	for _, b := range []custody.Backend{st, pr} {
		b.FromEnv["access_key"], b.FromEnv["secret_key"] = "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"
	}
	r := fakeReader{backends: map[string]custody.Backend{"/r/staging": st, "/r/prod": pr}}
	res := check(t, r, envs(nil), "prod")
	require.Equal(t, []string{custody.CodeSharedCredentials}, codes(res, finding.Warning), "from the environment: no credential in the configuration")

	// Written in each backend block: a credential in the configuration,
	// and not comparable.
	st2, pr2 := s3("acme", "staging.tfstate", good...), s3("acme", "prod.tfstate", good...)
	r = fakeReader{backends: map[string]custody.Backend{"/r/staging": st2, "/r/prod": pr2}}
	res = check(t, r, envs(nil), "prod")
	require.Equal(t, []string{custody.CodeCredentialInConfig, custody.CodeCredentialInConfig}, codes(res, finding.Warning))
}
