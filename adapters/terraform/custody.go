package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/secret"
)

var (
	_ custody.Reader = (*Adapter)(nil)
	_ custody.Reader = StateCustody{}
)

// StateCustody reads a root's state custody as the Adapter does, for a
// command that runs no Terraform (relcap validate): it needs no plan store.
type StateCustody struct{}

// Backend is Adapter.Backend.
func (StateCustody) Backend(ctx context.Context, root custody.Root) (custody.Backend, error) {
	return backendOf(ctx, root, os.Environ())
}

// RemoteStates is Adapter.RemoteStates.
func (StateCustody) RemoteStates(ctx context.Context, root custody.Root) ([]custody.RemoteState, error) {
	return (*Adapter)(nil).RemoteStates(ctx, root)
}

// Backend reads the backend root uses, without running Terraform and
// without reaching the backend: Terraform's record of the last init
// (<data dir>/terraform.tfstate, which holds -backend-config merged in)
// when there is one, else the root's backend or cloud block (override
// files applied last), else Terraform's default local backend. Settings
// the configuration leaves out that Terraform takes from the environment
// are filled from this process's environment (envFallbacks). Credentials
// are replaced by custody.Redacted before the value leaves this package
// (credentialSettings, redactSetting); no error quotes a setting's value.
func (a *Adapter) Backend(ctx context.Context, root custody.Root) (custody.Backend, error) {
	return backendOf(ctx, root, os.Environ())
}

// RemoteStates reads the terraform_remote_state data sources of root and
// of the local modules it calls (module sources starting ./ or ../,
// followed from the configuration, so it needs no init), with the outputs
// each module's expressions use from them. Their config is read as
// literals (an expression is custody.Unknown) and redacted as Backend's
// settings are; the result is sorted by file and line.
func (a *Adapter) RemoteStates(ctx context.Context, root custody.Root) ([]custody.RemoteState, error) {
	if root.Dir == "" {
		return nil, errors.New("reading remote states: no root directory given")
	}
	rel := func(path string) string {
		if r, err := filepath.Rel(root.Dir, path); err == nil {
			return filepath.ToSlash(r)
		}
		return filepath.ToSlash(path)
	}
	var out []custody.RemoteState
	seen := map[string]bool{}
	queue := []string{filepath.Clean(root.Dir)}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dir := queue[0]
		queue = queue[1:]
		if seen[dir] {
			continue // a module called twice, or a cycle of local calls
		}
		seen[dir] = true
		files, err := moduleFiles(dir)
		if err != nil {
			return nil, err
		}
		parsedFiles, err := parseFiles(files)
		if err != nil {
			return nil, err
		}
		states, calls, err := moduleRemoteStates(dir, parsedFiles, rel)
		if err != nil {
			return nil, err
		}
		out = append(out, states...)
		for _, c := range calls {
			queue = append(queue, filepath.Clean(c))
		}
	}
	slices.SortStableFunc(out, func(x, y custody.RemoteState) int {
		if c := strings.Compare(x.File, y.File); c != 0 {
			return c
		}
		return x.Line - y.Line
	})
	return out, nil
}

// backendOf is Backend with the environment given, as os.Environ lists it.
func backendOf(ctx context.Context, root custody.Root, environ []string) (custody.Backend, error) {
	if root.Dir == "" {
		return custody.Backend{}, errors.New("reading the backend: no root directory given")
	}
	if err := ctx.Err(); err != nil {
		return custody.Backend{}, err
	}
	b := custody.Backend{Settings: map[string]string{}, FromEnv: map[string]string{}, Workspace: root.Workspace, Dir: root.Dir}
	if b.Workspace == "" {
		b.Workspace = "default"
	}
	kind, settings, recorded, err := recordedBackend(root.Dir)
	if err != nil {
		return custody.Backend{}, err
	}
	if recorded {
		b.Type, b.Settings, b.Source = kind, settings, custody.FromInit
	} else {
		files, err := moduleFiles(root.Dir)
		if err != nil {
			return custody.Backend{}, err
		}
		kind, settings, found, err := configuredBackend(files)
		switch {
		case err != nil:
			return custody.Backend{}, err
		case found:
			b.Type, b.Settings, b.Source = kind, settings, custody.FromConfiguration
		default:
			b.Type, b.Source = "local", custody.FromDefault
		}
	}
	settle(&b, environ)
	return b, nil
}

// settle fills what b leaves out from environ and then redacts every
// setting, those just filled included.
func settle(b *custody.Backend, environ []string) {
	fillFromEnv(b, environ)
	for k, v := range b.Settings {
		b.Settings[k] = redactSetting(k, v)
	}
}

// recordedBackend reads the backend terraform init recorded for dir:
// {"version":3,"backend":{"type":"s3","config":{...},"hash":1}}, where
// config holds every setting of the backend's schema (null when not
// given). recorded is false when there is no record, or the record has no
// backend: init writes none for a root without a backend block, and one
// without "backend" after the block was removed (init -migrate-state).
func recordedBackend(dir string) (kind string, settings map[string]string, recorded bool, err error) {
	path := filepath.Join(dataDir(dir), "terraform.tfstate")
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("reading terraform init's record of the backend: %w; run terraform init there", err)
	}
	var record struct {
		Backend *struct {
			Type   string                     `json:"type"`
			Config map[string]json.RawMessage `json:"config"`
		} `json:"backend"`
	}
	if err := json.Unmarshal(raw, &record); err != nil {
		// Not %w: a JSON error may quote a piece of a credential.
		why := "it is not the JSON terraform init writes"
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			why = fmt.Sprintf("it is not valid JSON (at byte %d)", syntax.Offset)
		}
		return "", nil, false, fmt.Errorf("%s: %s; run terraform init there", path, why)
	}
	if record.Backend == nil || record.Backend.Type == "" {
		return "", nil, false, nil
	}
	settings = map[string]string{}
	for name, value := range record.Backend.Config {
		v, err := jsonValue(value)
		if err != nil {
			return "", nil, false, fmt.Errorf("%s: the setting %s is not JSON terraform init writes; run terraform init there", path, name)
		}
		flatten(name, v, settings)
	}
	return record.Backend.Type, settings, true, nil
}

// jsonValue is a JSON value as cty reads it, its type implied by itself.
func jsonValue(raw []byte) (cty.Value, error) {
	ty, err := ctyjson.ImpliedType(raw)
	if err != nil {
		return cty.NilVal, err
	}
	return ctyjson.Unmarshal(raw, ty)
}

// credentialSettings are the settings whose value is a credential, by the
// last part of their flattened name (any case), gathered from the
// backends Terraform 1.11 ships (internal/backend/remote-state/*, the
// remote backend and the cloud block). Each value is replaced by
// custody.Redacted, so a check can tell one is written without seeing it.
// Settings that name a credential rather than hold it stay: paths
// (shared_credentials_files, client_certificate_path, oidc_token_file_path,
// key_file, config_path), key names (kms_key_id, kms_encryption_key), user
// and account names (username, client_id, impersonate_service_account).
// gcs's credentials and pg's conn_str are handled in redactSetting; any
// multi-line value and any URL's password are redacted whatever the name.
var credentialSettings = map[string]bool{
	"access_key":                  true, // s3 and oss access key ID (it travels with its secret), azurerm storage account key
	"secret_key":                  true, // s3, oss, cos
	"secret_id":                   true, // cos: the ID of secret_key
	"token":                       true, // s3 session token, kubernetes bearer token, remote and cloud API token
	"security_token":              true, // oss and cos STS token
	"sse_customer_key":            true, // s3 SSE-C key
	"web_identity_token":          true, // s3 assume_role_with_web_identity
	"access_token":                true, // gcs OAuth token, consul ACL token
	"encryption_key":              true, // gcs customer-supplied key
	"sas_token":                   true, // azurerm
	"client_secret":               true, // azurerm
	"client_certificate":          true, // azurerm base64 PKCS#12 bundle with its key; kubernetes PEM
	"client_certificate_password": true, // azurerm
	"oidc_token":                  true, // azurerm
	"oidc_request_token":          true, // azurerm (GitHub's and Azure DevOps' request tokens)
	"password":                    true, // http, kubernetes
	"client_key":                  true, // kubernetes PEM key
	"client_private_key_pem":      true, // http
	"http_auth":                   true, // consul "user:password"
}

// redactSetting is the value of setting key as it may leave the adapter.
func redactSetting(key, value string) string {
	if value == "" || value == custody.Unknown || value == custody.Redacted {
		return value
	}
	parts := strings.Split(strings.ToLower(key), ".")
	name := parts[len(parts)-1]
	switch {
	case credentialSettings[name]:
		return custody.Redacted
	case len(parts) > 2 && parts[len(parts)-3] == "exec" && parts[len(parts)-2] == "env":
		// kubernetes exec.env: the credential plugin's environment.
		return custody.Redacted
	case strings.ContainsAny(value, "\r\n"):
		return custody.Redacted // PEM, JSON key files, anything pasted whole
	case name == "credentials" && strings.Contains(value, "{"):
		return custody.Redacted // gcs: the key file's content; a path names the source and stays
	case name == "conn_str" && !strings.Contains(value, "://"):
		return maskKeywordPassword(value)
	case len(secret.URLCredentials(value)) > 0:
		return secret.RedactURL(value)
	}
	return value
}

// maskKeywordPassword replaces the password (and sslpassword) of a libpq
// keyword/value connection string (host=db user=app password='a b') with
// secret.URLMask, keeping the rest as written. libpq's grammar: keyword,
// optional blanks, '=', optional blanks, a value that runs to the next
// blank or is single-quoted, with a backslash escaping the next
// character. pgx parses this form only inside pgconn.ParseConfig, which
// also merges PG* variables and defaults, so it cannot give back what was
// written. A text that does not follow the grammar is redacted whole.
func maskKeywordPassword(s string) string {
	var b strings.Builder
	isBlank := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' }
	i := 0
	for i < len(s) {
		start := i
		for i < len(s) && isBlank(s[i]) {
			i++
		}
		if i == len(s) {
			b.WriteString(s[start:])
			break
		}
		kw := i
		for i < len(s) && s[i] != '=' && !isBlank(s[i]) {
			i++
		}
		keyword := strings.ToLower(s[kw:i])
		for i < len(s) && isBlank(s[i]) {
			i++
		}
		if i == len(s) || s[i] != '=' || keyword == "" {
			return custody.Redacted
		}
		i++
		for i < len(s) && isBlank(s[i]) {
			i++
		}
		valueStart := i
		if i < len(s) && s[i] == '\'' {
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(s) {
				return custody.Redacted // unterminated quote
			}
			i++
		} else {
			for i < len(s) && !isBlank(s[i]) {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i = min(i, len(s))
		}
		b.WriteString(s[start:valueStart])
		if keyword == "password" || keyword == "sslpassword" {
			b.WriteString(secret.URLMask)
		} else {
			b.WriteString(s[valueStart:i])
		}
	}
	return b.String()
}

// envFallback is a setting Terraform takes from the environment when the
// configuration leaves it out (null, absent or empty): the first of vars
// that is set. settledBy are other settings that, when set, stand for it
// (deprecated aliases) or make the variable mean something else.
type envFallback struct {
	setting   string
	vars      []string
	settledBy []string
	list      bool // a path list (KUBE_CONFIG_PATHS), read into commas
}

// envFallbacks are, by backend type, the settings Terraform 1.11 reads
// from the environment, as its backends' code does (schema
// EnvDefaultFunc, backendbase SDKLikeDefaults and GetAttrEnvDefault, the
// s3 backend's env retrievers, consul's api.DefaultConfig, the cloud
// block's configuration). remote and cloud also take their token from
// TF_TOKEN_<host> (tokenFromEnv). Checked against
// hashicorp/terraform v1.11.4.
var envFallbacks = map[string][]envFallback{
	"s3": {
		{setting: "region", vars: []string{"AWS_REGION", "AWS_DEFAULT_REGION"}},
		{setting: "profile", vars: []string{"AWS_PROFILE"}},
		{setting: "access_key", vars: []string{"AWS_ACCESS_KEY_ID"}},
		{setting: "secret_key", vars: []string{"AWS_SECRET_ACCESS_KEY"}},
		{setting: "token", vars: []string{"AWS_SESSION_TOKEN"}},
		{setting: "shared_credentials_files", vars: []string{"AWS_SHARED_CREDENTIALS_FILE"}, settledBy: []string{"shared_credentials_file"}},
		{setting: "shared_config_files", vars: []string{"AWS_SHARED_CONFIG_FILE"}},
		{setting: "custom_ca_bundle", vars: []string{"AWS_CA_BUNDLE"}},
		{setting: "endpoints.s3", vars: []string{"AWS_ENDPOINT_URL_S3", "AWS_S3_ENDPOINT"}, settledBy: []string{"endpoint"}},
		{setting: "endpoints.dynamodb", vars: []string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_DYNAMODB_ENDPOINT"}, settledBy: []string{"dynamodb_endpoint"}},
		{setting: "endpoints.iam", vars: []string{"AWS_ENDPOINT_URL_IAM", "AWS_IAM_ENDPOINT"}, settledBy: []string{"iam_endpoint"}},
		{setting: "endpoints.sts", vars: []string{"AWS_ENDPOINT_URL_STS", "AWS_STS_ENDPOINT"}, settledBy: []string{"sts_endpoint"}},
		{setting: "endpoints.sso", vars: []string{"AWS_ENDPOINT_URL_SSO"}},
		{setting: "ec2_metadata_service_endpoint", vars: []string{"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_METADATA_URL"}},
		{setting: "sse_customer_key", vars: []string{"AWS_SSE_CUSTOMER_KEY"}},
		{setting: "use_fips_endpoint", vars: []string{"AWS_USE_FIPS_ENDPOINT"}},
		{setting: "use_dualstack_endpoint", vars: []string{"AWS_USE_DUALSTACK_ENDPOINT"}},
		{setting: "retry_mode", vars: []string{"AWS_RETRY_MODE"}},
	},
	"gcs": {
		{setting: "credentials", vars: []string{"GOOGLE_BACKEND_CREDENTIALS", "GOOGLE_CREDENTIALS"}},
		{setting: "access_token", vars: []string{"GOOGLE_OAUTH_ACCESS_TOKEN"}},
		{setting: "impersonate_service_account", vars: []string{"GOOGLE_BACKEND_IMPERSONATE_SERVICE_ACCOUNT", "GOOGLE_IMPERSONATE_SERVICE_ACCOUNT"}},
		{setting: "encryption_key", vars: []string{"GOOGLE_ENCRYPTION_KEY"}},
		{setting: "kms_encryption_key", vars: []string{"GOOGLE_KMS_ENCRYPTION_KEY"}},
		{setting: "storage_custom_endpoint", vars: []string{"GOOGLE_BACKEND_STORAGE_CUSTOM_ENDPOINT", "GOOGLE_STORAGE_CUSTOM_ENDPOINT"}},
	},
	"azurerm": {
		{setting: "subscription_id", vars: []string{"ARM_SUBSCRIPTION_ID"}},
		{setting: "tenant_id", vars: []string{"ARM_TENANT_ID"}},
		{setting: "client_id", vars: []string{"ARM_CLIENT_ID"}},
		{setting: "client_id_file_path", vars: []string{"ARM_CLIENT_ID_FILE_PATH"}},
		{setting: "client_secret", vars: []string{"ARM_CLIENT_SECRET"}},
		{setting: "client_secret_file_path", vars: []string{"ARM_CLIENT_SECRET_FILE_PATH"}},
		{setting: "client_certificate", vars: []string{"ARM_CLIENT_CERTIFICATE"}},
		{setting: "client_certificate_path", vars: []string{"ARM_CLIENT_CERTIFICATE_PATH"}},
		{setting: "client_certificate_password", vars: []string{"ARM_CLIENT_CERTIFICATE_PASSWORD"}},
		{setting: "access_key", vars: []string{"ARM_ACCESS_KEY"}},
		{setting: "sas_token", vars: []string{"ARM_SAS_TOKEN"}},
		{setting: "environment", vars: []string{"ARM_ENVIRONMENT"}},
		{setting: "metadata_host", vars: []string{"ARM_METADATA_HOSTNAME", "ARM_METADATA_HOST"}},
		{setting: "use_msi", vars: []string{"ARM_USE_MSI"}},
		{setting: "msi_endpoint", vars: []string{"ARM_MSI_ENDPOINT"}},
		{setting: "use_oidc", vars: []string{"ARM_USE_OIDC"}},
		{setting: "oidc_token", vars: []string{"ARM_OIDC_TOKEN"}},
		{setting: "oidc_token_file_path", vars: []string{"ARM_OIDC_TOKEN_FILE_PATH"}},
		{setting: "oidc_request_token", vars: []string{"ARM_OIDC_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "SYSTEM_ACCESSTOKEN"}},
		{setting: "oidc_request_url", vars: []string{"ARM_OIDC_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_URL", "SYSTEM_OIDCREQUESTURI"}},
		{setting: "ado_pipeline_service_connection_id", vars: []string{"ARM_ADO_PIPELINE_SERVICE_CONNECTION_ID", "ARM_OIDC_AZURE_SERVICE_CONNECTION_ID"}},
		{setting: "use_cli", vars: []string{"ARM_USE_CLI"}},
		{setting: "use_aks_workload_identity", vars: []string{"ARM_USE_AKS_WORKLOAD_IDENTITY"}},
		{setting: "use_azuread_auth", vars: []string{"ARM_USE_AZUREAD"}},
		{setting: "lookup_blob_endpoint", vars: []string{"ARM_USE_DNS_ZONE_ENDPOINT"}},
		{setting: "snapshot", vars: []string{"ARM_SNAPSHOT"}},
	},
	"pg": {
		{setting: "conn_str", vars: []string{"PG_CONN_STR"}},
		{setting: "schema_name", vars: []string{"PG_SCHEMA_NAME"}},
		{setting: "skip_schema_creation", vars: []string{"PG_SKIP_SCHEMA_CREATION"}},
		{setting: "skip_table_creation", vars: []string{"PG_SKIP_TABLE_CREATION"}},
		{setting: "skip_index_creation", vars: []string{"PG_SKIP_INDEX_CREATION"}},
	},
	"http": {
		{setting: "address", vars: []string{"TF_HTTP_ADDRESS"}},
		{setting: "update_method", vars: []string{"TF_HTTP_UPDATE_METHOD"}},
		{setting: "lock_address", vars: []string{"TF_HTTP_LOCK_ADDRESS"}},
		{setting: "lock_method", vars: []string{"TF_HTTP_LOCK_METHOD"}},
		{setting: "unlock_address", vars: []string{"TF_HTTP_UNLOCK_ADDRESS"}},
		{setting: "unlock_method", vars: []string{"TF_HTTP_UNLOCK_METHOD"}},
		{setting: "username", vars: []string{"TF_HTTP_USERNAME"}},
		{setting: "password", vars: []string{"TF_HTTP_PASSWORD"}},
		{setting: "retry_max", vars: []string{"TF_HTTP_RETRY_MAX"}},
		{setting: "retry_wait_min", vars: []string{"TF_HTTP_RETRY_WAIT_MIN"}},
		{setting: "retry_wait_max", vars: []string{"TF_HTTP_RETRY_WAIT_MAX"}},
		{setting: "client_ca_certificate_pem", vars: []string{"TF_HTTP_CLIENT_CA_CERTIFICATE_PEM"}},
		{setting: "client_certificate_pem", vars: []string{"TF_HTTP_CLIENT_CERTIFICATE_PEM"}},
		{setting: "client_private_key_pem", vars: []string{"TF_HTTP_CLIENT_PRIVATE_KEY_PEM"}},
	},
	"kubernetes": {
		{setting: "config_path", vars: []string{"KUBE_CONFIG_PATH"}},
		{setting: "config_paths", vars: []string{"KUBE_CONFIG_PATHS"}, list: true},
		{setting: "config_context", vars: []string{"KUBE_CTX"}},
		{setting: "config_context_auth_info", vars: []string{"KUBE_CTX_AUTH_INFO"}},
		{setting: "config_context_cluster", vars: []string{"KUBE_CTX_CLUSTER"}},
		{setting: "namespace", vars: []string{"KUBE_NAMESPACE"}},
		{setting: "in_cluster_config", vars: []string{"KUBE_IN_CLUSTER_CONFIG"}},
		{setting: "load_config_file", vars: []string{"KUBE_LOAD_CONFIG_FILE"}},
		{setting: "host", vars: []string{"KUBE_HOST"}},
		{setting: "username", vars: []string{"KUBE_USER"}},
		{setting: "password", vars: []string{"KUBE_PASSWORD"}},
		{setting: "insecure", vars: []string{"KUBE_INSECURE"}},
		{setting: "client_certificate", vars: []string{"KUBE_CLIENT_CERT_DATA"}},
		{setting: "client_key", vars: []string{"KUBE_CLIENT_KEY_DATA"}},
		{setting: "cluster_ca_certificate", vars: []string{"KUBE_CLUSTER_CA_CERT_DATA"}},
		{setting: "token", vars: []string{"KUBE_TOKEN"}},
		{setting: "proxy_url", vars: []string{"KUBE_PROXY_URL"}},
	},
	"cloud": {
		{setting: "hostname", vars: []string{"TF_CLOUD_HOSTNAME"}},
		{setting: "organization", vars: []string{"TF_CLOUD_ORGANIZATION"}},
		{setting: "workspaces.project", vars: []string{"TF_CLOUD_PROJECT"}},
		// With tags, TF_WORKSPACE picks the current workspace among them
		// instead of naming the one workspace.
		{setting: "workspaces.name", vars: []string{"TF_WORKSPACE"}, settledBy: []string{"workspaces.tags"}},
	},
	"consul": {
		{setting: "address", vars: []string{"CONSUL_HTTP_ADDR"}},
		{setting: "access_token", vars: []string{"CONSUL_HTTP_TOKEN"}},
		{setting: "http_auth", vars: []string{"CONSUL_HTTP_AUTH"}},
		{setting: "ca_file", vars: []string{"CONSUL_CACERT"}},
		{setting: "cert_file", vars: []string{"CONSUL_CLIENT_CERT"}},
		{setting: "key_file", vars: []string{"CONSUL_CLIENT_KEY"}},
	},
	"cos": {
		{setting: "secret_id", vars: []string{"TENCENTCLOUD_SECRET_ID"}},
		{setting: "secret_key", vars: []string{"TENCENTCLOUD_SECRET_KEY"}},
		{setting: "security_token", vars: []string{"TENCENTCLOUD_SECURITY_TOKEN"}},
		{setting: "region", vars: []string{"TENCENTCLOUD_REGION"}},
		{setting: "endpoint", vars: []string{"TENCENTCLOUD_ENDPOINT"}},
		{setting: "domain", vars: []string{"TENCENTCLOUD_DOMAIN"}},
		{setting: "profile", vars: []string{"TENCENTCLOUD_PROFILE"}},
		{setting: "shared_credentials_dir", vars: []string{"TENCENTCLOUD_SHARED_CREDENTIALS_DIR"}},
		{setting: "cam_role_name", vars: []string{"TENCENTCLOUD_CAM_ROLE_NAME"}},
		{setting: "assume_role.role_arn", vars: []string{"TENCENTCLOUD_ASSUME_ROLE_ARN"}},
		{setting: "assume_role.session_name", vars: []string{"TENCENTCLOUD_ASSUME_ROLE_SESSION_NAME"}},
		{setting: "assume_role.session_duration", vars: []string{"TENCENTCLOUD_ASSUME_ROLE_SESSION_DURATION"}},
		{setting: "assume_role.external_id", vars: []string{"TENCENTCLOUD_ASSUME_ROLE_EXTERNAL_ID"}},
	},
	"oss": {
		{setting: "access_key", vars: []string{"ALICLOUD_ACCESS_KEY", "ALICLOUD_ACCESS_KEY_ID"}},
		{setting: "secret_key", vars: []string{"ALICLOUD_SECRET_KEY", "ALICLOUD_ACCESS_KEY_SECRET"}},
		{setting: "security_token", vars: []string{"ALICLOUD_SECURITY_TOKEN"}},
		{setting: "ecs_role_name", vars: []string{"ALICLOUD_ECS_ROLE_NAME"}},
		{setting: "region", vars: []string{"ALICLOUD_REGION", "ALICLOUD_DEFAULT_REGION"}},
		{setting: "endpoint", vars: []string{"ALICLOUD_OSS_ENDPOINT", "OSS_ENDPOINT"}},
		{setting: "sts_endpoint", vars: []string{"ALICLOUD_STS_ENDPOINT"}},
		{setting: "tablestore_endpoint", vars: []string{"ALICLOUD_TABLESTORE_ENDPOINT"}},
		{setting: "profile", vars: []string{"ALICLOUD_PROFILE"}},
		{setting: "shared_credentials_file", vars: []string{"ALICLOUD_SHARED_CREDENTIALS_FILE"}},
		{setting: "assume_role_role_arn", vars: []string{"ALICLOUD_ASSUME_ROLE_ARN"}, settledBy: []string{"assume_role.role_arn"}},
		{setting: "assume_role_session_name", vars: []string{"ALICLOUD_ASSUME_ROLE_SESSION_NAME"}, settledBy: []string{"assume_role.session_name"}},
	},
}

// defaultTokenHost is where remote and cloud connect without a hostname.
const defaultTokenHost = "app.terraform.io"

// fillFromEnv fills the settings b leaves out that Terraform would take
// from environ, naming each variable in b.FromEnv. Values are raw here;
// the caller redacts them with the rest.
func fillFromEnv(b *custody.Backend, environ []string) {
	env := map[string]string{}
	var names []string // in environ's order, for TF_TOKEN_*
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if _, dup := env[name]; ok && !dup { // the first wins, as os.Getenv
			env[name] = value
			names = append(names, name)
		}
	}
	settled := func(aliases []string) bool {
		for k, v := range b.Settings {
			for _, n := range aliases {
				if v != "" && (k == n || strings.HasPrefix(k, n+".")) {
					return true
				}
			}
		}
		return false
	}
	for _, f := range envFallbacks[b.Type] {
		if b.Settings[f.setting] != "" || settled(f.settledBy) {
			continue
		}
		for _, name := range f.vars {
			if v := env[name]; v != "" {
				if f.list {
					v = strings.Join(filepath.SplitList(v), ",")
				}
				b.Settings[f.setting], b.FromEnv[f.setting] = v, name
				break
			}
		}
	}
	if (b.Type == "remote" || b.Type == "cloud") && b.Settings["token"] == "" {
		host := b.Settings["hostname"]
		if host == "" {
			host = defaultTokenHost
		}
		if name, ok := tokenVariable(names, host); ok && env[name] != "" {
			b.Settings["token"], b.FromEnv["token"] = env[name], name
		}
	}
}

// tokenVariable finds the TF_TOKEN_ variable Terraform reads host's API
// token from: its name is the host with dots written as "_" and hyphens
// as "__" (or as they are), compared without case
// (internal/command/cliconfig collectCredentialsFromEnv).
func tokenVariable(names []string, host string) (string, bool) {
	for _, name := range names {
		raw, ok := strings.CutPrefix(name, "TF_TOKEN_")
		if !ok {
			continue
		}
		raw = strings.ReplaceAll(strings.ReplaceAll(raw, "__", "-"), "_", ".")
		if strings.EqualFold(raw, host) {
			return name, true
		}
	}
	return "", false
}
