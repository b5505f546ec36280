package terraform

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/secret"
)

const pemKey = `-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj
MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu
-----END PRIVATE KEY-----`

// TestCustodyBackendFromConfiguration: a root not yet initialised is read
// from its backend block: literals flattened, expressions unknown,
// credentials redacted, settings Terraform takes from the environment
// filled from it.
func TestCustodyBackendFromConfiguration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		files    map[string]string
		env      []string
		kind     string
		settings map[string]string
		fromEnv  map[string]string
		secrets  []string
	}{{
		name: "nested objects, lists, numbers and nulls",
		files: map[string]string{"main.tf": `terraform {
  backend "s3" {
    bucket                   = "acme-tfstate"
    key                      = "prod/app.tfstate"
    region                   = "eu-west-1"
    encrypt                  = true
    max_retries              = 10
    use_lockfile             = false
    assume_role              = { role_arn = "arn:aws:iam::123456789012:role/tf", duration = "1h" }
    shared_credentials_files = ["/etc/aws/a", "/etc/aws/b"]
    endpoints                = { s3 = "http://localhost:4566", dynamodb = null }
    skip_s3_checksum         = null
  }
}`},
		kind: "s3",
		settings: map[string]string{"bucket": "acme-tfstate", "key": "prod/app.tfstate", "region": "eu-west-1", "encrypt": "true",
			"max_retries": "10", "use_lockfile": "false", "assume_role.role_arn": "arn:aws:iam::123456789012:role/tf", "assume_role.duration": "1h",
			"shared_credentials_files": "/etc/aws/a,/etc/aws/b", "endpoints.s3": "http://localhost:4566"},
	}, {
		name: "numbers in their shortest decimal form",
		files: map[string]string{"main.tf": `terraform {
  backend "http" {
    address        = "https://state.example.com/app"
    retry_wait_min = 1.50
    retry_wait_max = 1e3
    retry_max      = 0.1
  }
}`},
		kind:     "http",
		settings: map[string]string{"address": "https://state.example.com/app", "retry_wait_min": "1.5", "retry_wait_max": "1000", "retry_max": "0.1"},
	}, {
		name: "an expression is unknown, a literal template is not",
		files: map[string]string{"main.tf": `terraform {
  backend "gcs" {
    bucket = var.bucket
    prefix = "env/${local.name}"
    impersonate_service_account = "tf@${"acme"}.iam.gserviceaccount.com"
    kms_encryption_key = upper("k")
  }
}`},
		kind: "gcs",
		settings: map[string]string{"bucket": custody.Unknown, "prefix": custody.Unknown,
			"impersonate_service_account": "tf@acme.iam.gserviceaccount.com", "kms_encryption_key": custody.Unknown},
	}, {
		name: "an override file replaces the backend whole, applied last",
		files: map[string]string{
			"main.tf": `terraform {
  backend "s3" { bucket = "acme" }
}`,
			"a_override.tf": `terraform {
  backend "local" { path = "first.tfstate" }
}`,
			"zz_override.tf": `terraform {
  backend "local" { path = "last.tfstate" }
}`,
			"#main.tf#": `terraform {
  backend "pg" {}
}`,
			".hidden.tf": `terraform {
  backend "pg" {}
}`,
			"sub/other.tf": `terraform {
  backend "consul" {}
}`,
			"terraform.tfvars": `bucket = "x"`,
			"backup.tf~": `terraform {
  backend "pg" {}
}`,
			"notes.tf.json.orig": `{}`,
		},
		kind:     "local",
		settings: map[string]string{"path": "last.tfstate"},
	}, {
		name: "cloud block with its token from TF_TOKEN_",
		files: map[string]string{"main.tf": `terraform {
  cloud {
    organization = "acme"
    workspaces { name = "prod" }
  }
}`},
		env:      []string{"TF_TOKEN_app_terraform_io=tok.atlasv1.SEKRETSEKRET", "TF_WORKSPACE=other"},
		kind:     "cloud",
		settings: map[string]string{"organization": "acme", "workspaces.name": "prod", "token": custody.Redacted},
		fromEnv:  map[string]string{"token": "TF_TOKEN_app_terraform_io"},
		secrets:  []string{"tok.atlasv1.SEKRETSEKRET"},
	}, {
		name: "cloud hostname and organization from the environment, hyphens as __ in the token's name",
		files: map[string]string{"main.tf": `terraform {
  cloud {
    workspaces { tags = ["app"] }
  }
}`},
		env:      []string{"TF_CLOUD_HOSTNAME=tfe.acme-corp.example", "TF_CLOUD_ORGANIZATION=acme", "TF_WORKSPACE=app-prod", "TF_TOKEN_app_terraform_io=wrong-host", "TF_TOKEN_tfe_acme__corp_example=SEKRET-tfe"},
		kind:     "cloud",
		settings: map[string]string{"hostname": "tfe.acme-corp.example", "organization": "acme", "workspaces.tags": "app", "token": custody.Redacted},
		fromEnv:  map[string]string{"hostname": "TF_CLOUD_HOSTNAME", "organization": "TF_CLOUD_ORGANIZATION", "token": "TF_TOKEN_tfe_acme__corp_example"},
		secrets:  []string{"SEKRET-tfe", "wrong-host"},
	}, {
		name: "pg keyword connection string with a quoted password",
		files: map[string]string{"main.tf": `terraform {
  backend "pg" { conn_str = "host=db.internal user=app password='a b\\' c' dbname=tf sslmode=require" }
}`},
		kind:     "pg",
		settings: map[string]string{"conn_str": "host=db.internal user=app password=" + secret.URLMask + " dbname=tf sslmode=require"},
		secrets:  []string{"a b", "' c"},
	}, {
		name: "pg URL with an escaped password, schema from the environment",
		files: map[string]string{"main.tf": `terraform {
  backend "pg" { conn_str = "postgres://app:p%40ss%2Fw0rd@db:5432/tf?sslmode=disable" }
}`},
		env:      []string{"PG_SCHEMA_NAME=team_a", "PG_CONN_STR=postgres://other:SEKRET@elsewhere/x"},
		kind:     "pg",
		settings: map[string]string{"conn_str": "postgres://app:" + secret.URLMask + "@db:5432/tf?sslmode=disable", "schema_name": "team_a"},
		fromEnv:  map[string]string{"schema_name": "PG_SCHEMA_NAME"},
		secrets:  []string{"p%40ss", "p@ss", "SEKRET"},
	}, {
		name: "http addresses with user information, a short password, a PEM key",
		files: map[string]string{"main.tf": `terraform {
  backend "http" {
    address      = "https://ci:hunter2@state.example.com/app"
    lock_address = "https://ci:hunter2@state.example.com/app/lock"
    username     = "ci"
    password     = "x"
    client_private_key_pem = <<-EOT
` + pemKey + `
    EOT
    client_certificate_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
  }
}`},
		env:  []string{"TF_HTTP_UNLOCK_ADDRESS=https://ci:env-SEKRET@state.example.com/app/lock"},
		kind: "http",
		settings: map[string]string{"address": "https://ci:" + secret.URLMask + "@state.example.com/app", "lock_address": "https://ci:" + secret.URLMask + "@state.example.com/app/lock",
			"unlock_address": "https://ci:" + secret.URLMask + "@state.example.com/app/lock",
			"username":       "ci", "password": custody.Redacted, "client_private_key_pem": custody.Redacted, "client_certificate_pem": custody.Redacted},
		fromEnv: map[string]string{"unlock_address": "TF_HTTP_UNLOCK_ADDRESS"},
		secrets: []string{"hunter2", "env-SEKRET", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj", "MIIB"},
	}, {
		name: "URL-unsafe characters in a secret",
		files: map[string]string{"main.tf": `terraform {
  backend "consul" {
    address      = "consul.internal:8500"
    path         = "tf/app"
    access_token = "p@ss:/?#%41 &x=y"
    http_auth    = "ops:a:b@c"
  }
}`},
		kind:     "consul",
		settings: map[string]string{"address": "consul.internal:8500", "path": "tf/app", "access_token": custody.Redacted, "http_auth": custody.Redacted},
		secrets:  []string{"p@ss", "a:b@c"},
	}, {
		name: "kubernetes exec environment and config paths from the environment",
		files: map[string]string{"main.tf": `terraform {
  backend "kubernetes" {
    secret_suffix = "app"
    exec {
      api_version = "client.authentication.k8s.io/v1"
      command     = "aws"
      env         = { AWS_SECRET = "SEKRET-exec" }
    }
  }
}`},
		env:      []string{"KUBE_CONFIG_PATHS=/etc/kube/a" + string(filepath.ListSeparator) + "/etc/kube/b", "KUBE_TOKEN=SEKRET-kube"},
		kind:     "kubernetes",
		settings: map[string]string{"secret_suffix": "app", "exec.api_version": "client.authentication.k8s.io/v1", "exec.command": "aws", "exec.env.AWS_SECRET": custody.Redacted, "config_paths": "/etc/kube/a,/etc/kube/b", "token": custody.Redacted},
		fromEnv:  map[string]string{"config_paths": "KUBE_CONFIG_PATHS", "token": "KUBE_TOKEN"},
		secrets:  []string{"SEKRET-exec", "SEKRET-kube"},
	}, {
		name: "gcs credentials: a path stays",
		files: map[string]string{"main.tf": `terraform {
  backend "gcs" {
    bucket         = "acme"
    credentials    = "/secrets/sa.json"
    encryption_key = "c2VrcmV0LWtleS1iYXNlNjQ="
  }
}`},
		kind:     "gcs",
		settings: map[string]string{"bucket": "acme", "credentials": "/secrets/sa.json", "encryption_key": custody.Redacted},
		secrets:  []string{"c2VrcmV0LWtleS1iYXNlNjQ="},
	}, {
		name: "gcs credentials: JSON from the environment is redacted",
		files: map[string]string{"main.tf": `terraform {
  backend "gcs" { bucket = "acme" }
}`},
		env:      []string{`GOOGLE_CREDENTIALS={"type":"service_account","private_key":"SEKRET-gcs"}`, "GOOGLE_IMPERSONATE_SERVICE_ACCOUNT=tf@acme.iam.gserviceaccount.com"},
		kind:     "gcs",
		settings: map[string]string{"bucket": "acme", "credentials": custody.Redacted, "impersonate_service_account": "tf@acme.iam.gserviceaccount.com"},
		fromEnv:  map[string]string{"credentials": "GOOGLE_CREDENTIALS", "impersonate_service_account": "GOOGLE_IMPERSONATE_SERVICE_ACCOUNT"},
		secrets:  []string{"SEKRET-gcs"},
	}, {
		name: "s3 settings from the environment, a configured alias winning",
		files: map[string]string{"main.tf": `terraform {
  backend "s3" {
    bucket   = "acme"
    key      = "k"
    endpoint = "http://minio:9000"
  }
}`},
		env: []string{"AWS_DEFAULT_REGION=eu-central-1", "AWS_PROFILE=ops", "AWS_ENDPOINT_URL_S3=http://elsewhere:9000",
			"AWS_SECRET_ACCESS_KEY=SEKRET-aws", "AWS_ENDPOINT_URL_DYNAMODB=http://dynamo:8000", "AWS_REGION="},
		kind: "s3",
		settings: map[string]string{"bucket": "acme", "key": "k", "endpoint": "http://minio:9000", "region": "eu-central-1", "profile": "ops",
			"secret_key": custody.Redacted, "endpoints.dynamodb": "http://dynamo:8000"},
		fromEnv: map[string]string{"region": "AWS_DEFAULT_REGION", "profile": "AWS_PROFILE", "secret_key": "AWS_SECRET_ACCESS_KEY", "endpoints.dynamodb": "AWS_ENDPOINT_URL_DYNAMODB"},
		secrets: []string{"SEKRET-aws"},
	}, {
		name: "azurerm service principal from the environment",
		files: map[string]string{"main.tf": `terraform {
  backend "azurerm" {
    storage_account_name = "acme"
    container_name       = "tfstate"
    key                  = "prod.tfstate"
    use_oidc             = true
  }
}`},
		env:      []string{"ARM_CLIENT_ID=00000000-0000-0000-0000-000000000001", "ARM_CLIENT_SECRET=SEKRET-arm", "ARM_TENANT_ID=t", "ARM_USE_OIDC=false"},
		kind:     "azurerm",
		settings: map[string]string{"storage_account_name": "acme", "container_name": "tfstate", "key": "prod.tfstate", "use_oidc": "true", "client_id": "00000000-0000-0000-0000-000000000001", "client_secret": custody.Redacted, "tenant_id": "t"},
		fromEnv:  map[string]string{"client_id": "ARM_CLIENT_ID", "client_secret": "ARM_CLIENT_SECRET", "tenant_id": "ARM_TENANT_ID"},
		secrets:  []string{"SEKRET-arm"},
	}, {
		name: "JSON configuration: nested blocks as objects, strings taken literally as Terraform does here",
		files: map[string]string{"main.tf.json": `{"terraform": [{"backend": {"s3": {
  "bucket": "acme", "key": "${var.key}", "assume_role": [{"role_arn": "arn:aws:iam::1:role/tf"}],
  "secret_key": "SEKRET-json", "encrypt": true, "//": "a comment"}}}]}`},
		kind:     "s3",
		settings: map[string]string{"bucket": "acme", "key": "${var.key}", "assume_role.role_arn": "arn:aws:iam::1:role/tf", "secret_key": custody.Redacted, "encrypt": "true"},
		secrets:  []string{"SEKRET-json"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := custodyRoot(t, tc.files)
			b, err := backendOf(t.Context(), custody.Root{Dir: dir}, tc.env)
			require.NoError(t, err)
			want := custody.Backend{Type: tc.kind, Settings: tc.settings, FromEnv: tc.fromEnv, Workspace: "default", Dir: dir, Source: custody.FromConfiguration}
			if want.FromEnv == nil {
				want.FromEnv = map[string]string{}
			}
			require.Equal(t, want, b)
			if len(tc.secrets) > 0 {
				requireNoSecret(t, b, tc.secrets...)
			}
		})
	}
}

// TestCustodyBackendConfigurationErrors: what Terraform refuses is an
// error naming the place, never quoting the source around it.
func TestCustodyBackendConfigurationErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src, want string
	}{
		{"syntax error", "terraform {\n  backend \"pg\" {\n    conn_str = \"postgres://u:SEKRET@h/db\"\n    schema_name = = \"x\"\n  }\n}\n", "main.tf:4:19: Invalid expression"},
		{"unterminated string", "terraform {\n  backend \"http\" {\n    password = \"SEKRET\n  }\n}\n", "main.tf:3:"},
		{"two backends", "terraform {\n  backend \"s3\" {}\n}\nterraform {\n  backend \"pg\" {}\n}\n", "main.tf:5,3-15: duplicate backend configuration: a backend is configured at "},
		{"backend and cloud", "terraform {\n  backend \"s3\" {}\n  cloud {}\n}\n", "both a backend block and a cloud block"},
		{"backend without a type", "terraform {\n  backend {}\n}\n", "main.tf:2:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := custodyRoot(t, map[string]string{"ok.tf": `resource "terraform_data" "x" {}`, "main.tf": tc.src})
			_, err := backendOf(t.Context(), custody.Root{Dir: dir}, nil)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "SEKRET")
		})
	}
}

// TestCustodyHugeNumberIsReadQuickly: 1e10000000 is a valid literal, and
// printing it in decimal took big.Float 35 seconds (found by
// FuzzBackendBlock); beyond 2^±128 a number is printed in a form that
// costs nothing.
func TestCustodyHugeNumberIsReadQuickly(t *testing.T) {
	t.Parallel()
	dir := custodyRoot(t, map[string]string{"main.tf": `terraform {
  backend "http" {
    retry_max      = 1e10000000
    retry_wait_min = 1e300
    retry_wait_max = 1e-99999999
  }
}`})
	start := time.Now()
	b, err := backendOf(t.Context(), custody.Root{Dir: dir}, nil)
	require.NoError(t, err)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, "1e+300", b.Setting("retry_wait_min"))
	require.Regexp(t, `^0x\.f71632d6a[0-9a-f]*p\+33219281$`, b.Setting("retry_max"))
	require.Regexp(t, `^0x\.[0-9a-f]+p-332192806$`, b.Setting("retry_wait_max"))
}

// TestRemoteStatesNameTheOutputsEachModuleUses: every place an expression
// can be (locals, resource arguments, templates, index forms, for
// expressions, dynamic blocks, provider blocks, module arguments,
// outputs) in the root and in the local modules it calls, inside the root
// and beside it.
func TestRemoteStatesNameTheOutputsEachModuleUses(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "live", "prod")
	custodyRootAt(t, root, map[string]string{
		"main.tf": `
data "terraform_remote_state" "net" {
  backend = "s3"
  config = {
    bucket = "acme-tfstate"
    key    = "net/${var.env}.tfstate"
    region = "eu-west-1"
    assume_role = { role_arn = "arn:aws:iam::1:role/read" }
    secret_key = "SEKRET-rs"
  }
}

data "terraform_remote_state" "core" {
  backend   = "pg"
  workspace = terraform.workspace
  config = {
    conn_str = "postgres://reader:SEKRET-pg@db/tf"
  }
}

data "terraform_remote_state" "dns" {
  backend = var.kind
  config  = local.dns_config
  workspace = "shared"
}

locals {
  vpc  = data.terraform_remote_state.net.outputs.vpc_id
  all  = data.terraform_remote_state.core.outputs
  zone = "${data.terraform_remote_state.net.outputs["zone_id"]}.zone"
  ids  = [for s in data.terraform_remote_state.net.outputs.subnet_ids : upper(s)]
}

provider "aws" {
  region = data.terraform_remote_state.net.outputs.region
}

resource "terraform_data" "x" {
  input = "${data.terraform_remote_state.net.outputs.vpc_id}-${local.vpc}"
  depends_on = [data.terraform_remote_state.dns]
  dynamic "rule" {
    for_each = data.terraform_remote_state.net.outputs.rules
    content { port = rule.value }
  }
}

module "app" {
  source = "./modules/app"
  vpc    = data.terraform_remote_state.net.outputs.app_vpc
}

module "shared" {
  source = "../../shared"
}

module "registry" {
  source = "terraform-aws-modules/vpc/aws"
}

output "db" {
  value = data.terraform_remote_state.core.outputs.db_host
}
`,
		"modules/app/main.tf": `
data "terraform_remote_state" "net" {
  backend = "s3"
  config  = { bucket = "acme-tfstate", key = "net.tfstate" }
}
locals { cidr = data.terraform_remote_state.net.outputs.cidr }
module "again" { source = "../../../../shared" }
`,
	})
	custodyRootAt(t, filepath.Join(base, "shared"), map[string]string{
		"remote.tf": `
data "terraform_remote_state" "legacy" {
  count   = 1
  backend = "local"
  config  = { path = "../legacy/terraform.tfstate" }
}
output "x" { value = data.terraform_remote_state.legacy[0].outputs.name }
output "y" { value = data.terraform_remote_state.legacy[0].backend }
`,
	})

	got, err := custodyAdapter(t).RemoteStates(t.Context(), custody.Root{Dir: root})
	require.NoError(t, err)
	require.Equal(t, []custody.RemoteState{
		{Name: "legacy", File: "../../shared/remote.tf", Line: 2, Backend: "local", Settings: map[string]string{"path": "../legacy/terraform.tfstate"}, Outputs: []string{"name"}},
		{Name: "net", File: "main.tf", Line: 2, Backend: "s3",
			Settings: map[string]string{"bucket": "acme-tfstate", "key": custody.Unknown, "region": "eu-west-1", "assume_role.role_arn": "arn:aws:iam::1:role/read", "secret_key": custody.Redacted},
			Outputs:  []string{"app_vpc", "region", "rules", "subnet_ids", "vpc_id", "zone_id"}},
		{Name: "core", File: "main.tf", Line: 13, Backend: "pg", Workspace: custody.Unknown,
			Settings: map[string]string{"conn_str": "postgres://reader:" + secret.URLMask + "@db/tf"},
			Outputs:  []string{custody.AllOutputs, "db_host"}},
		{Name: "dns", File: "main.tf", Line: 21, Backend: custody.Unknown, Workspace: "shared", Settings: map[string]string{"*": custody.Unknown}},
		{Name: "net", File: "modules/app/main.tf", Line: 2, Backend: "s3", Settings: map[string]string{"bucket": "acme-tfstate", "key": "net.tfstate"}, Outputs: []string{"cidr"}},
	}, got)
	for _, rs := range got {
		for _, v := range rs.Settings {
			require.NotContains(t, v, "SEKRET")
		}
	}
}

// TestRemoteStatesInJSONConfiguration: in .tf.json every string is a
// template, so references hide in strings (and in object keys).
func TestRemoteStatesInJSONConfiguration(t *testing.T) {
	t.Parallel()
	dir := custodyRoot(t, map[string]string{
		"main.tf.json": `{
  "data": {"terraform_remote_state": {"net": {
    "backend": "gcs",
    "config": {"bucket": "acme", "prefix": "${var.env}/net", "credentials": "{\"private_key\": \"SEKRET\"}"}
  }}},
  "locals": {"a": "${data.terraform_remote_state.net.outputs.vpc_id}", "b": ["x-${data.terraform_remote_state.net.outputs[\"zone\"]}"]},
  "resource": {"terraform_data": {"x": {"input": "${data.terraform_remote_state.net.outputs}", "depends_on": ["data.terraform_remote_state.net"]}}}
}`,
		"override.tf.json": `{"data": {"terraform_remote_state": {"net": {"workspace": "prod"}}}}`,
	})
	got, err := custodyAdapter(t).RemoteStates(t.Context(), custody.Root{Dir: dir})
	require.NoError(t, err)
	require.Equal(t, []custody.RemoteState{{Name: "net", File: "main.tf.json", Line: 2, Backend: "gcs", Workspace: "prod",
		Settings: map[string]string{"bucket": "acme", "prefix": custody.Unknown, "credentials": custody.Redacted},
		Outputs:  []string{custody.AllOutputs, "vpc_id", "zone"}}}, got)
}

// TestRemoteStatesSyntaxErrorNamesThePlace: a module that does not parse
// is an error with file:line:col.
func TestRemoteStatesSyntaxErrorNamesThePlace(t *testing.T) {
	t.Parallel()
	dir := custodyRoot(t, map[string]string{"main.tf": "module \"m\" { source = \"./m\" }\n", "m/main.tf": "locals {\n  x = \n}\n"})
	_, err := custodyAdapter(t).RemoteStates(t.Context(), custody.Root{Dir: dir})
	require.ErrorContains(t, err, filepath.Join(dir, "m", "main.tf")+":2:7: Invalid expression")
}

// FuzzBackendBlock feeds arbitrary bytes as main.tf (and as main.tf.json)
// to both readers. They must not panic; no credential setting, and no
// URL's or DSN's password, keeps a value; nothing multi-line gets out.
// The seeds put the marker SEKRET in credential positions only; a
// mutation may move it into a harmless setting (bucket = "SEKRET"), which
// may then show, so the marker is checked where it can only be a secret.
func FuzzBackendBlock(f *testing.F) {
	for _, seed := range []string{
		`terraform { backend "http" { password = "SEKRET" address = "https://u:SEKRET@h/x" } }`,
		`terraform { backend "pg" { conn_str = "host=h password='SEKRET x' user=u" } }`,
		`terraform { backend "pg" { conn_str = "postgres://u:SEKRET@h/db?password=SEKRET" } }`,
		"terraform { backend \"kubernetes\" { client_key = <<EOT\nSEKRET\nEOT\n exec { env = { A = \"SEKRET\" } } } }",
		`terraform { cloud { token = "SEKRET" workspaces { name = "p" } } }`,
		`terraform { backend "s3" { assume_role = { role_arn = "r", web_identity_token = "SEKRET" } secret_key = "SEKRET" } }`,
		`{"terraform": {"backend": {"s3": {"secret_key": "SEKRET", "bucket": "b"}}}}`,
		`data "terraform_remote_state" "n" { backend = "s3" config = { secret_key = "SEKRET", b = { password = "SEKRET" } } }
locals { x = data.terraform_remote_state.n.outputs["y"] }`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, name := range []string{"main.tf", "main.tf.json"} {
			files := []sourceFile{{path: name, src: src}}
			kind, settings, found, err := configuredBackend(files)
			if err == nil && found {
				b := custody.Backend{Type: kind, Settings: settings, FromEnv: map[string]string{}}
				settle(&b, nil)
				requireNothingLeaks(t, b.Settings)
			}
			parsedFiles, err := parseFiles(files)
			if err != nil {
				continue
			}
			states, _, err := moduleRemoteStates(".", parsedFiles, func(p string) string { return p })
			if err != nil {
				continue
			}
			for _, rs := range states {
				requireNothingLeaks(t, rs.Settings)
			}
		}
	})
}

func requireNothingLeaks(t *testing.T, settings map[string]string) {
	t.Helper()
	for k, v := range settings {
		parts := strings.Split(strings.ToLower(k), ".")
		if credentialSettings[parts[len(parts)-1]] {
			require.Contains(t, []string{"", custody.Redacted, custody.Unknown}, v, "credential %s", k)
		}
		require.NotContains(t, v, "\n", k)
		require.NotContains(t, v, "\r", k)
		if u, err := url.Parse(v); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				require.Equal(t, secret.URLMask, pw, "%s", k)
			}
		}
		for _, c := range secret.URLCredentials(v) {
			require.NotContains(t, c, "SEKRET", "%s: a URL's credential", k)
		}
		if parts[len(parts)-1] == "conn_str" && !strings.Contains(v, "://") {
			require.Equal(t, v, maskKeywordPassword(v), "%s: every password is masked", k)
		}
	}
}
