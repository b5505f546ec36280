package custody

import (
	"fmt"
	"net/url"
	"strings"
)

// What relcap knows of each backend type's custody: whether it locks and
// encrypts, read from its settings, and what stays unverified from here.

// guarantee is one backend property: held, or not with why.
type guarantee struct {
	held bool
	why  string // when not held: what is missing
	how  string // when held: what provides it
}

// traits is a backend type's custody as its settings say.
type traits struct {
	locking    guarantee
	encryption guarantee
	// unverified is what cannot be known without the backend's own
	// administration (bucket versioning, key policies, backups).
	unverified string
	docs       string
}

// docsOf is the backend's own documentation.
func docsOf(kind string) string {
	switch kind {
	case "cloud":
		return "https://developer.hashicorp.com/terraform/cli/cloud/settings"
	case "", "local", "s3", "gcs", "azurerm", "pg", "http", "kubernetes", "remote", "consul", "cos", "oss":
		return "https://developer.hashicorp.com/terraform/language/backend/" + orDefault(kind, "local")
	}
	return "https://developer.hashicorp.com/terraform/language/backend"
}

// knownTypes are the backends whose custody relcap judges.
var knownTypes = []string{"local", "s3", "gcs", "azurerm", "pg", "http", "kubernetes", "remote", "cloud", "consul"}

func isTrue(v string) bool { return v == "true" }

// traitsOf reads b's custody from its settings. ok is false for a backend
// type relcap does not know.
func traitsOf(b Backend) (t traits, ok bool) {
	t.docs = docsOf(b.Type)
	switch b.Type {
	case "", "local":
		t.locking = guarantee{why: "a local file is locked on this machine only"}
		t.encryption = guarantee{why: "a local file is as protected as this machine's disk"}
		t.unverified = "backups of the file"
	case "s3":
		switch {
		case isTrue(b.Setting("use_lockfile")):
			t.locking = guarantee{held: true, how: "an S3 lock file (use_lockfile)"}
		case b.known("dynamodb_table"):
			t.locking = guarantee{held: true, how: "DynamoDB table " + b.Setting("dynamodb_table")}
		default:
			t.locking = guarantee{why: "neither use_lockfile = true nor dynamodb_table is set, so two applies can write the state at once"}
		}
		if isTrue(b.Setting("encrypt")) {
			how := "server-side encryption (encrypt)"
			if b.known("kms_key_id") {
				how += " with KMS key " + b.Setting("kms_key_id")
			}
			t.encryption = guarantee{held: true, how: how}
		} else {
			t.encryption = guarantee{why: "encrypt is not true, so relcap cannot tell the state is encrypted at rest (the bucket's default encryption is not visible from here)"}
		}
		t.unverified = "the bucket's versioning, its policy and the KMS key's policy"
	case "gcs":
		t.locking = guarantee{held: true, how: "the gcs backend's own lock object"}
		how := "Google-managed encryption at rest"
		if b.known("kms_encryption_key") {
			how = "customer-managed KMS key " + b.Setting("kms_encryption_key")
		}
		t.encryption = guarantee{held: true, how: how}
		t.unverified = "the bucket's object versioning and who may read it (IAM)"
	case "azurerm":
		t.locking = guarantee{held: true, how: "blob leases"}
		t.encryption = guarantee{held: true, how: "Azure Storage encryption at rest"}
		t.unverified = "blob versioning or soft delete on the container, and who may read it"
	case "pg":
		t.locking = guarantee{held: true, how: "PostgreSQL advisory locks"}
		conn := b.Setting("conn_str")
		host, _, _ := pgPlace(conn)
		switch mode := pgSSLMode(conn); {
		case conn == "" || conn == Unknown:
			t.encryption = guarantee{why: "the connection string is not known here, so neither is whether it uses TLS"}
		case (mode == "disable" || mode == "allow" || mode == "prefer" || mode == "") && !loopback(host):
			t.encryption = guarantee{why: fmt.Sprintf("the state travels to %s without required TLS (sslmode %s)", host, orDefault(mode, "unset, libpq's prefer"))}
		default:
			t.encryption = guarantee{held: true, how: "TLS to the database (sslmode " + orDefault(mode, "unset") + ") or a connection that stays on this machine"}
		}
		t.unverified = "the database's backups and who may connect to it"
	case "http":
		if b.known("lock_address") {
			t.locking = guarantee{held: true, how: "the server's lock endpoint (lock_address)"}
		} else {
			t.locking = guarantee{why: "lock_address is not set, so the http backend does not lock"}
		}
		addr := b.Setting("address")
		u, err := url.Parse(addr)
		switch {
		case err != nil || addr == Unknown:
			t.encryption = guarantee{why: "the address is not known here"}
		case u.Scheme == "http" && !loopback(u.Host):
			t.encryption = guarantee{why: "the address is plain http, so the state travels unencrypted"}
		case isTrue(b.Setting("skip_cert_verification")):
			t.encryption = guarantee{why: "skip_cert_verification is true, so anyone on the path can read or replace the state"}
		default:
			t.encryption = guarantee{held: true, how: "https to the server"}
		}
		t.unverified = "how the server stores, versions and protects the state"
	case "kubernetes":
		t.locking = guarantee{held: true, how: "a Kubernetes lease"}
		t.encryption = guarantee{held: true, how: "the API server's TLS"}
		t.unverified = "encryption of Secrets at rest (the API server's EncryptionConfiguration) and who may read Secrets in the namespace"
	case "remote", "cloud":
		t.locking = guarantee{held: true, how: "the platform's workspace lock"}
		t.encryption = guarantee{held: true, how: "the platform's encryption at rest"}
		t.unverified = "who may read the workspace's state (teams and their permissions)"
	case "consul":
		if b.Setting("lock") == "false" {
			t.locking = guarantee{why: "lock is false"}
		} else {
			t.locking = guarantee{held: true, how: "a Consul session lock"}
		}
		if b.Setting("scheme") == "https" || loopback(b.or("address", "127.0.0.1:8500")) {
			t.encryption = guarantee{held: true, how: "https to Consul, or a Consul on this machine"}
		} else {
			t.encryption = guarantee{why: "scheme is not https, so the state travels unencrypted"}
		}
		t.unverified = "Consul's snapshots and ACLs"
	default:
		return t, false
	}
	return t, true
}

// credentialSource is where Terraform gets the credentials it reaches b
// with: what (compared between environments) and where it is configured.
func credentialSource(b Backend) (what, where string, ok bool) {
	from := func(setting string) string {
		if env := b.FromEnv[setting]; env != "" {
			return "$" + env + " in relcap's environment"
		}
		return setting + " in the backend configuration (" + string(b.Source) + ")"
	}
	set := func(name string) bool { return b.known(name) && b.Settings[name] != Redacted }
	switch b.Type {
	case "s3":
		for _, role := range []string{"assume_role.role_arn", "role_arn"} {
			if set(role) {
				return "AWS role " + b.Setting(role), from(role), true
			}
		}
		if set("profile") {
			return "AWS profile " + b.Setting("profile"), from("profile"), true
		}
		if set("shared_credentials_files") {
			return "AWS credentials file " + b.Setting("shared_credentials_files"), from("shared_credentials_files"), true
		}
		if b.Settings["access_key"] == Redacted {
			if env := b.FromEnv["access_key"]; env != "" {
				// One process environment serves every environment.
				return "the AWS access key in $" + env, from("access_key"), true
			}
			return "", "", false // a key of its own, not comparable
		}
		return "the default AWS credential chain", "nothing in the backend configuration or $AWS_PROFILE", true
	case "gcs":
		if set("impersonate_service_account") {
			return "Google service account " + b.Setting("impersonate_service_account"), from("impersonate_service_account"), true
		}
		if set("credentials") {
			return "Google credentials file " + b.Setting("credentials"), from("credentials"), true
		}
		for _, k := range []string{"credentials", "access_token"} {
			if b.Settings[k] != Redacted {
				continue
			}
			if env := b.FromEnv[k]; env != "" {
				return "the Google credentials in $" + env, from(k), true
			}
			return "", "", false
		}
		return "Google application default credentials", "nothing in the backend configuration", true
	case "azurerm":
		switch {
		case set("client_id"):
			return "Azure client " + b.Setting("client_id"), from("client_id"), true
		case isTrue(b.Setting("use_msi")):
			return "the Azure managed identity", from("use_msi"), true
		}
		return "the Azure CLI's login", "nothing in the backend configuration", true
	case "pg":
		conn := b.Setting("conn_str")
		if conn == "" || conn == Unknown {
			return "", "", false
		}
		host, _, _ := pgPlace(conn)
		user := pgUser(conn)
		if user == "" {
			return "the operating-system user on " + host, from("conn_str"), true
		}
		return "database user " + user + " on " + host, from("conn_str"), true
	case "kubernetes":
		cluster := b.or("config_path", "the in-cluster service account")
		if ctx := b.Setting("config_context"); ctx != "" {
			cluster += " context " + ctx
		}
		return "kubeconfig " + cluster, from("config_path"), true
	case "http":
		if set("username") {
			return "http user " + b.Setting("username"), from("username"), true
		}
	case "remote", "cloud":
		host := b.or("hostname", "app.terraform.io")
		return "the API token for " + host, "Terraform's CLI configuration or $TF_TOKEN_" + strings.ReplaceAll(host, ".", "_"), true
	}
	return "", "", false
}
