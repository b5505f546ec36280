package terraform

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/secret"
)

// These tests run the real terraform init (and, for pg, a real
// PostgreSQL), then read what it left behind as relcap does.

// custodyRoot is a Terraform root in a temp dir with the given files.
func custodyRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	custodyRootAt(t, dir, files)
	return dir
}

// custodyRootAt writes files (paths slash-separated) into dir.
func custodyRootAt(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// terraformInit runs the real terraform init in dir with a clean
// environment plus extra: no variable of this process leaks in, and any
// HTTP(S) request that is not to this machine goes to a proxy that
// refuses it, so nothing reaches the network.
func terraformInit(t *testing.T, dir string, extra []string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cliConfig := filepath.Join(home, "terraformrc")
	require.NoError(t, os.WriteFile(cliConfig, nil, 0o644))
	cmd := exec.CommandContext(t.Context(), terraformtest.Binary(t), append([]string{"init", "-input=false", "-no-color"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TF_CLI_CONFIG_FILE=" + cliConfig,
		"TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "AWS_EC2_METADATA_DISABLED=true",
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9",
	}, extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func custodyAdapter(t *testing.T) *Adapter {
	t.Helper()
	a, err := New(Options{Binary: terraformtest.Binary(t), PlanDir: filepath.Join(t.TempDir(), "plans")})
	require.NoError(t, err)
	return a
}

// requireNoSecret fails when any of secrets appears in b: in a setting,
// or anywhere in its printed form.
func requireNoSecret(t *testing.T, b custody.Backend, secrets ...string) {
	t.Helper()
	printed := fmt.Sprintf("%+v %#v", b, b)
	for _, s := range secrets {
		require.NotEmpty(t, s)
		for k, v := range b.Settings {
			require.NotContains(t, v, s, "setting %s holds a secret", k)
		}
		require.NotContains(t, printed, s)
	}
}

// TestCustodyRootWithoutBackendBlockIsTheDefaultLocalBackend: for a root
// without a backend block, terraform init records no backend at all (it
// writes no .terraform/terraform.tfstate; with only built-in providers and
// no modules, not even .terraform), so the backend is Terraform's default.
func TestCustodyRootWithoutBackendBlockIsTheDefaultLocalBackend(t *testing.T) {
	t.Parallel()
	dir := custodyRoot(t, map[string]string{"main.tf": `resource "terraform_data" "x" {}`})
	out, err := terraformInit(t, dir, nil)
	require.NoError(t, err, out)
	require.NoFileExists(t, filepath.Join(dir, ".terraform", "terraform.tfstate"))

	b, err := custodyAdapter(t).Backend(t.Context(), custody.Root{Dir: dir})
	require.NoError(t, err)
	require.Equal(t, custody.Backend{Type: "local", Settings: map[string]string{}, FromEnv: map[string]string{},
		Workspace: "default", Dir: dir, Source: custody.FromDefault}, b)
}

// TestCustodyLocalBackendIsReadFromInitsRecord: init records every
// setting of the local backend's schema (workspace_dir as null); the
// record is read, nulls left out. Once the block is removed and init
// unsets the backend, the record keeps no backend and the default holds.
func TestCustodyLocalBackendIsReadFromInitsRecord(t *testing.T) {
	t.Parallel()
	dir := custodyRoot(t, map[string]string{"main.tf": `
terraform {
  backend "local" { path = "state/x.tfstate" }
}
resource "terraform_data" "x" {}
`})
	require.NoError(t, os.Mkdir(filepath.Join(dir, "state"), 0o755))
	out, err := terraformInit(t, dir, nil)
	require.NoError(t, err, out)
	record, err := os.ReadFile(filepath.Join(dir, ".terraform", "terraform.tfstate"))
	require.NoError(t, err)
	require.Contains(t, string(record), `"workspace_dir": null`, "init records the schema's unset settings as null")

	a := custodyAdapter(t)
	b, err := a.Backend(t.Context(), custody.Root{Dir: dir, Workspace: "staging"})
	require.NoError(t, err)
	require.Equal(t, custody.Backend{Type: "local", Settings: map[string]string{"path": "state/x.tfstate"}, FromEnv: map[string]string{},
		Workspace: "staging", Dir: dir, Source: custody.FromInit}, b)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`resource "terraform_data" "x" {}`), 0o644))
	out, err = terraformInit(t, dir, nil, "-migrate-state", "-force-copy")
	require.NoError(t, err, out)
	record, err = os.ReadFile(filepath.Join(dir, ".terraform", "terraform.tfstate"))
	require.NoError(t, err)
	require.NotContains(t, string(record), `"backend"`)
	b, err = a.Backend(t.Context(), custody.Root{Dir: dir})
	require.NoError(t, err)
	require.Equal(t, custody.FromDefault, b.Source)
	require.Equal(t, "local", b.Type)
	require.Empty(t, b.Settings)
}

// TestCustodyRecordUnderTFDataDir: with TF_DATA_DIR set, init keeps its
// record there, and relcap reads it there.
// Not parallel: TF_DATA_DIR is the process's environment.
func TestCustodyRecordUnderTFDataDir(t *testing.T) {
	dir := custodyRoot(t, map[string]string{"main.tf": `terraform {
  backend "local" { path = "elsewhere.tfstate" }
}
`})
	out, err := terraformInit(t, dir, []string{"TF_DATA_DIR=tfdata"})
	require.NoError(t, err, out)
	require.FileExists(t, filepath.Join(dir, "tfdata", "terraform.tfstate"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  backend "local" { path = "changed-since-init.tfstate" }
}
`), 0o644))

	t.Setenv("TF_DATA_DIR", "tfdata")
	b, err := backendOf(t.Context(), custody.Root{Dir: dir}, nil)
	require.NoError(t, err)
	require.Equal(t, custody.FromInit, b.Source)
	require.Equal(t, map[string]string{"path": "elsewhere.tfstate"}, b.Settings)
}

// pgDatabase is a real database for the pg backend, its URL and the
// password in it.
func pgDatabase(t *testing.T) (conn, user, password string) {
	t.Helper()
	conn = pgtest.Database(t)
	u, err := url.Parse(conn)
	require.NoError(t, err)
	password, ok := u.User.Password()
	require.True(t, ok && password != "", "pgtest gives a URL with a password")
	return conn, u.User.Username(), password
}

// requirePgBackendCreated checks that init really reached the database:
// the pg backend creates its schema there.
func requirePgBackendCreated(t *testing.T, conn string) {
	t.Helper()
	db, err := pgx.Connect(t.Context(), conn)
	require.NoError(t, err)
	defer db.Close(context.Background())
	var n int
	require.NoError(t, db.QueryRow(t.Context(), "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'terraform_remote_state'").Scan(&n))
	require.Equal(t, 1, n)
}

// TestCustodyPgPartialConfigurationKeepsThePasswordOut: a conn_str given
// with -backend-config is in init's record in clear; relcap reads it with
// the password masked and the user kept, and invents no schema_name.
func TestCustodyPgPartialConfigurationKeepsThePasswordOut(t *testing.T) {
	t.Parallel()
	conn, user, password := pgDatabase(t)
	dir := custodyRoot(t, map[string]string{"main.tf": `terraform {
  backend "pg" {}
}
`})
	out, err := terraformInit(t, dir, nil, "-backend-config=conn_str="+conn)
	require.NoError(t, err, out)
	requirePgBackendCreated(t, conn)
	record, err := os.ReadFile(filepath.Join(dir, ".terraform", "terraform.tfstate"))
	require.NoError(t, err)
	require.Contains(t, string(record), password, "Terraform keeps the password in its record: the reason to redact")

	b, err := backendOf(t.Context(), custody.Root{Dir: dir}, nil)
	require.NoError(t, err)
	require.Equal(t, custody.FromInit, b.Source)
	require.Equal(t, "pg", b.Type)
	redacted, err := url.Parse(b.Setting("conn_str"))
	require.NoError(t, err)
	gotPassword, _ := redacted.User.Password()
	require.Equal(t, user, redacted.User.Username())
	require.Equal(t, secret.URLMask, gotPassword)
	require.NotContains(t, b.Settings, "schema_name", "null in the record: Terraform's default is not invented")
	require.Empty(t, b.FromEnv)
	requireNoSecret(t, b, password)
}

// TestCustodyPgConnStrFromTheEnvironment: with the whole conn_str in
// PG_CONN_STR, init records it as null; relcap fills it from its own
// environment, says so, and masks the password.
func TestCustodyPgConnStrFromTheEnvironment(t *testing.T) {
	t.Parallel()
	conn, user, password := pgDatabase(t)
	dir := custodyRoot(t, map[string]string{"main.tf": `terraform {
  backend "pg" {}
}
`})
	out, err := terraformInit(t, dir, []string{"PG_CONN_STR=" + conn})
	require.NoError(t, err, out)
	requirePgBackendCreated(t, conn)

	b, err := backendOf(t.Context(), custody.Root{Dir: dir, Workspace: "prod"}, []string{"PG_CONN_STR=" + conn})
	require.NoError(t, err)
	require.Equal(t, custody.FromInit, b.Source)
	require.Equal(t, map[string]string{"conn_str": "PG_CONN_STR"}, b.FromEnv)
	require.Contains(t, b.Setting("conn_str"), "://"+user+":"+secret.URLMask+"@")
	require.Equal(t, "prod", b.Workspace)
	requireNoSecret(t, b, password)
}

// TestCustodyS3BackendIsReadFromConfigurationWhenInitFails: init of an
// s3 backend checks its credentials with AWS STS; refused (here by a
// stand-in on this machine, nothing reaches AWS), it fails and records
// nothing, and relcap reads the backend block, keys redacted.
func TestCustodyS3BackendIsReadFromConfigurationWhenInitFails(t *testing.T) {
	t.Parallel()
	const accessKey, secretKey = "AKIAIOSFODNN7EXAMPLE", "abc/+=xyz"
	dir := custodyRoot(t, map[string]string{"main.tf": `terraform {
  backend "s3" {
    bucket     = "acme-tfstate"
    key        = "prod/app.tfstate"
    region     = "eu-west-1"
    encrypt    = true
    access_key = "` + accessKey + `"
    secret_key = "` + secretKey + `"
  }
}
`})
	// AWS STS on this machine refuses the key at once; through the
	// refusing proxy, init would retry for twenty seconds.
	var mu sync.Mutex
	var signed []string
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		signed = append(signed, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<ErrorResponse><Error><Type>Sender</Type><Code>InvalidClientTokenId</Code><Message>The security token included in the request is invalid.</Message></Error><RequestId>1</RequestId></ErrorResponse>`)
	}))
	t.Cleanup(sts.Close)
	out, err := terraformInit(t, dir, []string{"AWS_ENDPOINT_URL_STS=" + sts.URL})
	require.Error(t, err, "init must fail without AWS: %s", out)
	require.NoFileExists(t, filepath.Join(dir, ".terraform", "terraform.tfstate"))
	mu.Lock()
	require.NotEmpty(t, signed, "init asked STS about the key: %s", out)
	require.Contains(t, signed[0], "Credential="+accessKey+"/")
	mu.Unlock()

	b, err := backendOf(t.Context(), custody.Root{Dir: dir}, nil)
	require.NoError(t, err)
	require.Equal(t, custody.Backend{Type: "s3", Source: custody.FromConfiguration, Workspace: "default", Dir: dir, FromEnv: map[string]string{},
		Settings: map[string]string{"bucket": "acme-tfstate", "key": "prod/app.tfstate", "region": "eu-west-1", "encrypt": "true",
			"access_key": custody.Redacted, "secret_key": custody.Redacted}}, b)
	requireNoSecret(t, b, accessKey, secretKey)
}

// TestCustodyBackendConfigFileSecretsStayOut: an http backend given its
// address and credentials in a -backend-config file, against a real
// server on this machine; init's record holds them in clear, relcap's
// reading does not.
func TestCustodyBackendConfigFileSecretsStayOut(t *testing.T) {
	t.Parallel()
	const urlPassword, password = "u%2Fr!l-S3cret", "p@ss w0rd'\"/?#"
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r) // no state yet
	}))
	t.Cleanup(srv.Close)
	address := strings.Replace(srv.URL, "http://", "http://ci:"+urlPassword+"@", 1) + "/state/app"
	dir := custodyRoot(t, map[string]string{
		"main.tf": `terraform {
  backend "http" {}
}
`,
		"backend.hcl": fmt.Sprintf("address = %q\nusername = \"ci\"\npassword = %q\n", address, password),
	})
	out, err := terraformInit(t, dir, nil, "-backend-config=backend.hcl")
	require.NoError(t, err, out)
	mu.Lock()
	require.Contains(t, auths, "Basic "+base64.StdEncoding.EncodeToString([]byte("ci:"+password)), "init reached the server with the credentials")
	mu.Unlock()

	b, err := backendOf(t.Context(), custody.Root{Dir: dir}, nil)
	require.NoError(t, err)
	require.Equal(t, custody.FromInit, b.Source)
	require.Equal(t, "http", b.Type)
	require.Equal(t, "ci", b.Setting("username"))
	require.Equal(t, custody.Redacted, b.Setting("password"))
	require.Equal(t, strings.Replace(srv.URL, "http://", "http://ci:"+secret.URLMask+"@", 1)+"/state/app", b.Setting("address"))
	requireNoSecret(t, b, urlPassword, "r!l-S3cret", password)
}

// TestCustodyUnreadableRecordSaysRunInit: a record that is not the JSON
// init writes is an error naming the file and what to do, and never
// quoting the record (it holds credentials in clear).
func TestCustodyUnreadableRecordSaysRunInit(t *testing.T) {
	t.Parallel()
	for name, record := range map[string]string{
		"truncated":       `{"version":3,"backend":{"type":"pg","config":{"conn_str":"postgres://u:SEKRET@h/db`,
		"wrong type":      `{"version":3,"backend":"SEKRET"}`,
		"not JSON at all": `SEKRET`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := custodyRoot(t, map[string]string{"main.tf": "", ".terraform/terraform.tfstate": record})
			_, err := backendOf(t.Context(), custody.Root{Dir: dir}, nil)
			require.Error(t, err)
			require.ErrorContains(t, err, filepath.Join(dir, ".terraform", "terraform.tfstate"))
			require.ErrorContains(t, err, "run terraform init there")
			require.NotContains(t, err.Error(), "SEKRET")
			require.NotContains(t, err.Error(), "SEK")
		})
	}
}
