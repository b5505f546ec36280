package custody

import (
	"maps"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// A location names where a backend keeps states (container) and the one
// state an environment's workspace uses there (state), without a
// credential: two environments with one state overwrite each other, two
// with one container are separated by a workspace name alone.
type location struct {
	container string
	state     string
	known     bool // false when a setting that names the place is not known here
}

// defaultWorkspace is Terraform's workspace when none is selected.
const defaultWorkspace = "default"

func workspaceOf(b Backend) string {
	if b.Workspace == "" {
		return defaultWorkspace
	}
	return b.Workspace
}

// known reports whether every named setting has a literal value.
func (b Backend) known(names ...string) bool {
	for _, n := range names {
		if v := b.Settings[n]; v == "" || v == Unknown {
			return false
		}
	}
	return true
}

// or is the setting called name, or def when it is not set.
func (b Backend) or(name, def string) string {
	if v := b.Settings[name]; v != "" {
		return v
	}
	return def
}

// locate says where b keeps the environment's state, following each
// backend's documented layout of workspaces.
func locate(b Backend) location {
	ws := workspaceOf(b)
	switch b.Type {
	case "", "local":
		p := b.or("path", "terraform.tfstate")
		if !filepath.IsAbs(p) {
			p = filepath.Join(b.Dir, p)
		}
		state := p
		if ws != defaultWorkspace {
			dir := b.or("workspace_dir", "terraform.tfstate.d")
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(b.Dir, dir)
			}
			state = filepath.Join(dir, ws, "terraform.tfstate")
		}
		return location{container: "local file " + filepath.Clean(p), state: "local file " + filepath.Clean(state), known: b.Dir != "" && b.Settings["path"] != Unknown}
	case "s3":
		bucket, key := b.Setting("bucket"), b.Setting("key")
		c := "s3://" + bucket + "/" + key
		if ep := firstSet(b, "endpoints.s3", "endpoint"); ep != "" {
			c += " at " + ep
		}
		state := c
		if ws != defaultWorkspace {
			state = "s3://" + bucket + "/" + b.or("workspace_key_prefix", "env:") + "/" + ws + "/" + key
		}
		return location{container: c, state: state, known: b.known("bucket", "key")}
	case "gcs":
		c := "gs://" + b.Setting("bucket") + "/" + strings.Trim(b.Setting("prefix"), "/")
		return location{container: c, state: strings.TrimSuffix(c, "/") + "/" + ws + ".tfstate", known: b.known("bucket") && b.Settings["prefix"] != Unknown}
	case "azurerm":
		c := "azurerm://" + b.Setting("storage_account_name") + "/" + b.Setting("container_name") + "/" + b.Setting("key")
		state := c
		if ws != defaultWorkspace {
			state = c + "env:" + ws
		}
		return location{container: c, state: state, known: b.known("storage_account_name", "container_name", "key")}
	case "pg":
		host, db, ok := pgPlace(b.Setting("conn_str"))
		c := "pg://" + host + "/" + db + " schema " + b.or("schema_name", "terraform_remote_state")
		return location{container: c, state: c + " workspace " + ws, known: ok && b.Settings["schema_name"] != Unknown}
	case "http":
		// The http backend has one state and no workspaces.
		a := withoutUserinfo(b.Setting("address"))
		return location{container: a, state: a, known: b.known("address")}
	case "kubernetes":
		cluster := b.or("config_path", "in-cluster")
		if ctx := b.Setting("config_context"); ctx != "" {
			cluster += " context " + ctx
		}
		ns := b.or("namespace", "default")
		suffix := b.Setting("secret_suffix")
		c := "kubernetes " + cluster + " namespace " + ns + " secrets tfstate-*-" + suffix
		return location{container: c, state: "kubernetes " + cluster + " namespace " + ns + " secret tfstate-" + ws + "-" + suffix, known: b.known("secret_suffix")}
	case "remote", "cloud":
		host := b.or("hostname", "app.terraform.io")
		org := b.Setting("organization")
		switch {
		case b.Setting("workspaces.name") != "":
			s := host + "/" + org + " workspace " + b.Setting("workspaces.name")
			return location{container: s, state: s, known: b.known("organization", "workspaces.name")}
		case b.Setting("workspaces.prefix") != "":
			c := host + "/" + org + " workspaces " + b.Setting("workspaces.prefix") + "*"
			return location{container: c, state: host + "/" + org + " workspace " + b.Setting("workspaces.prefix") + ws, known: b.known("organization", "workspaces.prefix")}
		default:
			c := host + "/" + org + " workspaces tagged " + b.Setting("workspaces.tags")
			return location{container: c, state: host + "/" + org + " workspace " + ws, known: b.known("organization")}
		}
	case "consul":
		c := "consul://" + b.or("address", "127.0.0.1:8500") + "/" + b.Setting("path")
		state := c
		if ws != defaultWorkspace {
			state = c + "-env:" + ws
		}
		return location{container: c, state: state, known: b.known("path")}
	}
	// A backend relcap does not know: its settings (credentials left out)
	// are its place, and the workspace the state within it.
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(b.Settings)) {
		if v := b.Settings[k]; v != Redacted && !credentialLike(k) {
			parts = append(parts, k+"="+v)
		}
	}
	c := b.Type + " " + strings.Join(parts, " ")
	return location{container: c, state: c + " workspace " + ws, known: !slices.ContainsFunc(parts, func(p string) bool { return strings.HasSuffix(p, "="+Unknown) })}
}

func firstSet(b Backend, names ...string) string {
	for _, n := range names {
		if v := b.Settings[n]; v != "" {
			return v
		}
	}
	return ""
}

// pgPlace is the host:port and database a PostgreSQL connection string
// names, URL or keyword form, without its user or password.
func pgPlace(conn string) (host, db string, ok bool) {
	if conn == "" || conn == Unknown || conn == Redacted {
		return "", "", false
	}
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		host = u.Host
		db = strings.TrimPrefix(u.Path, "/")
		if h := u.Query().Get("host"); host == "" && h != "" {
			host = h
		}
		if p := u.Query().Get("port"); p != "" && !strings.Contains(host, ":") {
			host += ":" + p
		}
		return orDefault(host, "localhost"), db, true
	}
	kv := pgKeywords(conn)
	host = orDefault(kv["host"], "localhost")
	if p := kv["port"]; p != "" {
		host = net.JoinHostPort(host, p)
	}
	return host, kv["dbname"], true
}

// pgSSLMode is the sslmode a connection string asks for ("" when unset).
func pgSSLMode(conn string) string {
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		return u.Query().Get("sslmode")
	}
	return pgKeywords(conn)["sslmode"]
}

// pgUser is the user a connection string connects as ("" when unset).
func pgUser(conn string) string {
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		return u.User.Username()
	}
	return pgKeywords(conn)["user"]
}

// pgKeywords reads libpq's keyword=value form; values may be single-quoted.
func pgKeywords(conn string) map[string]string {
	out := map[string]string{}
	for rest := strings.TrimSpace(conn); rest != ""; rest = strings.TrimSpace(rest) {
		k, v, found := strings.Cut(rest, "=")
		if !found {
			break
		}
		k = strings.TrimSpace(k)
		v = strings.TrimLeft(v, " ")
		if strings.HasPrefix(v, "'") {
			end := strings.Index(v[1:], "'")
			if end < 0 {
				break
			}
			out[k], rest = v[1:1+end], v[2+end:]
			continue
		}
		val, after, _ := strings.Cut(v, " ")
		out[k], rest = val, after
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// withoutUserinfo is a URL without its user, password and query (where
// a token may ride).
func withoutUserinfo(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// credentialLike reports whether a setting of a backend relcap does not
// know may hold a credential, so its value never names a place.
func credentialLike(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"key", "secret", "token", "password", "passwd", "credential", "auth", "cert"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// loopback reports whether a host (host or host:port, or a unix socket
// directory) stays on this machine.
func loopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" || path.IsAbs(host) || host == "" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
