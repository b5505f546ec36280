package terraform

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// providerSelectors are the environment variables that choose which
// cluster, account, subscription, project or region Terraform's common
// providers act on (kubernetes, helm, aws, google, azurerm, vault, argocd).
// A plan reviewed against one of them must not be applied against another,
// so each one set is bound to the plan (PlanInputs.ProviderEnv) by a keyed
// hash of its value and, for those that name files, of the files' content
// (a kubeconfig switched in place). Credentials that rotate on their own
// (session tokens, secrets) are left out: rotating one does not move the
// target, and binding it would make every plan stale within the hour.
var providerSelectors = map[string]selectorKind{
	// Kubernetes and Helm.
	"KUBECONFIG":                pathList,
	"KUBE_CONFIG_PATH":          pathValue,
	"KUBE_CONFIG_PATHS":         pathList,
	"KUBE_CTX":                  plainValue,
	"KUBE_CTX_CLUSTER":          plainValue,
	"KUBE_CTX_AUTH_INFO":        plainValue,
	"KUBE_HOST":                 plainValue,
	"KUBE_CLUSTER_CA_CERT_DATA": plainValue,
	// AWS.
	"AWS_PROFILE":                 plainValue,
	"AWS_DEFAULT_PROFILE":         plainValue,
	"AWS_REGION":                  plainValue,
	"AWS_DEFAULT_REGION":          plainValue,
	"AWS_ACCESS_KEY_ID":           plainValue,
	"AWS_ROLE_ARN":                plainValue,
	"AWS_ENDPOINT_URL":            plainValue,
	"AWS_CONFIG_FILE":             pathValue,
	"AWS_SHARED_CREDENTIALS_FILE": plainValue, // its content rotates
	// Google Cloud.
	"GOOGLE_CREDENTIALS":                 pathOrContent,
	"GOOGLE_CLOUD_KEYFILE_JSON":          pathOrContent,
	"GOOGLE_APPLICATION_CREDENTIALS":     pathValue,
	"GOOGLE_PROJECT":                     plainValue,
	"GOOGLE_CLOUD_PROJECT":               plainValue,
	"GCLOUD_PROJECT":                     plainValue,
	"CLOUDSDK_CORE_PROJECT":              plainValue,
	"GOOGLE_REGION":                      plainValue,
	"GOOGLE_ZONE":                        plainValue,
	"GOOGLE_IMPERSONATE_SERVICE_ACCOUNT": plainValue,
	// Azure.
	"ARM_SUBSCRIPTION_ID": plainValue,
	"ARM_TENANT_ID":       plainValue,
	"ARM_CLIENT_ID":       plainValue,
	"ARM_ENVIRONMENT":     plainValue,
	// Vault and Argo CD.
	"VAULT_ADDR":      plainValue,
	"VAULT_NAMESPACE": plainValue,
	"ARGOCD_SERVER":   plainValue,
}

// selectorKind is how a selector's value is bound.
type selectorKind int

const (
	plainValue    selectorKind = iota // the value
	pathValue                         // the value and the content of the file it names
	pathList                          // the value and the content of each file of a path list
	pathOrContent                     // a file's path (then its content too) or the content itself
)

// providerEnvHashes are keyed hashes (HMAC-SHA256, the TF_VAR_* key) of the
// provider selectors set in env, by name: the value, then for each file it
// names the file's path and the SHA-256 of its content ("missing" when it
// cannot be read), so neither the value nor the file ever reaches the
// ledger, and a change of either shows.
func providerEnvHashes(env []string, key []byte) map[string]string {
	out := map[string]string{}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		kind, selector := providerSelectors[name]
		if !ok || !selector || value == "" {
			continue
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(value))
		var files []string
		switch kind {
		case pathValue:
			files = []string{value}
		case pathList:
			files = filepath.SplitList(value)
		case pathOrContent:
			if fi, err := os.Stat(expandHome(value)); err == nil && fi.Mode().IsRegular() {
				files = []string{value}
			}
		}
		for _, f := range files {
			mac.Write([]byte{0})
			mac.Write([]byte(f))
			mac.Write([]byte{0})
			mac.Write([]byte(fileDigest(expandHome(f))))
		}
		out[name] = hex.EncodeToString(mac.Sum(nil))
	}
	return out
}

// fileDigest is the SHA-256 of path's content, or what stands in for it
// (missing, unreadable, not a regular file).
func fileDigest(path string) string {
	if path == "" {
		return "empty"
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	case err != nil:
		return "unreadable"
	case !fi.Mode().IsRegular():
		return "not a regular file" // a FIFO would block the read
	}
	h, err := hashFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	case err != nil:
		return "unreadable"
	}
	return h
}

// expandHome expands a leading ~/ as the providers do.
func expandHome(path string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return path
}

// providerConfigPath finds the kubeconfig a provider block names with a
// literal string (config_path = "~/.kube/config", config_paths = [...], as
// the kubernetes and helm providers take): the file lives outside the
// root, so its content is bound like KUBECONFIG's. A path built from an
// expression is not followed (its variables are bound themselves).
var providerConfigPath = regexp.MustCompile(`(?m)^\s*config_paths?\s*=\s*(\[[^\]]*\]|"[^"]*")`)

// quotedLiteral is one "…" string without interpolation.
var quotedLiteral = regexp.MustCompile(`"([^"$]*)"`)

// addProviderConfigFiles adds to out, keyed "config_path PATH", a keyed
// hash of each kubeconfig the root's .tf files name literally.
func addProviderConfigFiles(root string, key []byte, out map[string]string) error {
	files, err := filepath.Glob(filepath.Join(root, "*.tf"))
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading %s: %w", f, err)
		}
		for _, m := range providerConfigPath.FindAllSubmatch(b, -1) {
			for _, lit := range quotedLiteral.FindAllSubmatch(m[1], -1) {
				path := string(lit[1])
				if path == "" {
					continue
				}
				abs := expandHome(path)
				if !filepath.IsAbs(abs) {
					abs = filepath.Join(root, abs)
				}
				mac := hmac.New(sha256.New, key)
				mac.Write([]byte(fileDigest(abs)))
				out["config_path "+path] = hex.EncodeToString(mac.Sum(nil))
			}
		}
	}
	return nil
}
