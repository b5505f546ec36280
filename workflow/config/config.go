// Package config loads and validates relcap.yaml and the ownership map it
// names into workflow types. It reads YAML through yaml.v3's Node API so
// every problem carries the file, line, column and field it is about, and it
// reports every problem in one go rather than the first.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/input"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// FileName is the configuration file Find looks for.
const FileName = "relcap.yaml"

// Keys of relcap.yaml, per level, in the order the documentation lists them.
// Unknown-key suggestions and "known keys" lists are drawn from these.
var (
	topKeys       = []string{"version", "app", "ownership", "environments", "classify", "effort", "plans", "compatibility", "secret_env", "people", "ledger", "sandbox"}
	envKeys       = []string{"name", "production", "terraform", "registry", "envrepo", "argocd", "approvals", "approvers", "rehearsal", "custody"}
	terraformKeys = []string{"dir", "workspace", "var_files", "binary"}
	registryKeys  = []string{"repository", "require_signature"}
	envRepoKeys   = []string{"path", "branch", "file", "image", "format", "values_path", "review"}
	// reviewKeys has token so that a token written in clear is refused
	// with what to do instead, rather than as an unknown key.
	reviewKeys    = []string{"via", "forge", "url", "token_env", "ca_file", "merge", "approvals", "users", "token"}
	argoCDKeys    = []string{"server", "app", "token_env", "plaintext", "insecure", "ca_file", "client_cert_file", "client_key_file", "grpc_web", "path_prefix", "readiness_grace"}
	approvalKeys  = []string{"plan", "promotion", "distinct_from_author", "signed"}
	approverKeys  = []string{"plan", "promotion", "breakglass", "apply"}
	classifyKeys  = []string{"identity", "data_service"}
	effortKeys    = []string{"idle_threshold", "baseline_hours_per_release", "releases_per_month"}
	plansKeys     = []string{"expiry"}
	rehearsalKeys = []string{"unready_image", "interrupt", "timeout"}
	interruptKeys = []string{"stop", "start"}
	custodyKeys   = []string{"accept"}
	compatKeys    = []string{"schema", "min_schema", "max_schema"}

	formats = []string{workflow.FormatKustomize, workflow.FormatHelmValues, workflow.FormatManifest}
)

var (
	envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// scpLike is git's "user@host:path" clone address form.
	scpLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9._-]+:`)
)

// StatFunc reports on a named file the way os.Stat does.
type StatFunc func(name string) (fs.FileInfo, error)

// Option configures Parse.
type Option func(*options)

type options struct {
	stat StatFunc
	dir  string
	// people is the people file the project names, for the environments'
	// approval checks.
	people string
	// readFile, when set (Load), reads the people file so the forge
	// accounts of envrepo.review.users are checked against its
	// principals; Parse never reads files.
	readFile func(string) ([]byte, error)
}

// WithStat makes Parse check, through stat, that the files and directories
// the configuration names exist. Without it Parse never touches the
// filesystem, which is what fuzzing and callers holding generated
// configuration want.
func WithStat(stat StatFunc) Option { return func(o *options) { o.stat = stat } }

// WithDir resolves relative paths against dir instead of the directory of
// the file name given to Parse.
func WithDir(dir string) Option { return func(o *options) { o.dir = dir } }

// Find returns the path of relcap.yaml in start or the nearest parent
// directory that has one, the way git finds .git.
func Find(start string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", fmt.Errorf("%w: find %s: %w", fault.ErrUsage, FileName, err)
	}
	for {
		candidate := filepath.Join(dir, FileName)
		if fi, err := os.Stat(candidate); err == nil && fi.Mode().IsRegular() {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", fmt.Errorf("%w: no %s in %s or any parent directory; create one or pass --config", fault.ErrUsage, FileName, start)
}

// Load reads the relcap.yaml at path and the ownership map it names, checks
// that every file and directory they reference exists, and resolves relative
// paths against the directory of path. Problems name files the way path
// names them (relative stays relative), while Project.File and every path in
// the project are absolute. The error is an *Errors listing every problem
// found, or a read error; both satisfy errors.Is(err, fault.ErrUsage).
func Load(path string) (*workflow.Project, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", fault.ErrUsage, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", fault.ErrUsage, err)
	}
	var c collector
	p := &parser{file: path, probs: &c}
	proj, own := p.project(data, options{stat: os.Stat, dir: filepath.Dir(abs), readFile: os.ReadFile})
	if own.exists {
		m := readOwnership(&c, p, own)
		if proj != nil {
			proj.Ownership = m
		}
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	proj.File, proj.Dir = abs, filepath.Dir(abs)
	if r, err := filepath.Rel(proj.Dir, own.abs); err == nil && own.exists && !strings.HasPrefix(r, "..") {
		// Findings name rules as file:line; relative to the release
		// repository they read as the captain wrote them, and keep their
		// ledger identity whichever way relcap.yaml was named and
		// wherever the repository is checked out.
		proj.Ownership.File = filepath.ToSlash(r)
	}
	return proj, nil
}

// readOwnership loads the ownership map that relcap.yaml names; a read
// failure is reported at the key that names the file.
func readOwnership(c *collector, p *parser, own ownershipRef) ownership.Map {
	data, err := os.ReadFile(own.abs)
	if err != nil {
		p.add(own.node, "ownership", "cannot read %s: %v", own.abs, err)
		return ownership.Map{}
	}
	return (&parser{file: own.display, probs: c}).ownership(data)
}

// Parse decodes and validates relcap.yaml content. file names it in problem
// reports and becomes Project.File; relative paths are resolved against its
// directory (see WithDir). Parse looks at the filesystem only when given
// WithStat, and never loads the ownership map: Project.OwnershipFile names
// it and Project.Ownership is empty. The error is an *Errors.
func Parse(file string, data []byte, opts ...Option) (*workflow.Project, error) {
	o := options{dir: filepath.Dir(file)}
	for _, opt := range opts {
		opt(&o)
	}
	var c collector
	proj, _ := (&parser{file: file, probs: &c}).project(data, o)
	if err := c.err(); err != nil {
		return nil, err
	}
	proj.File, proj.Dir = file, o.dir
	return proj, nil
}

// ownershipRef is where relcap.yaml says the ownership map is.
type ownershipRef struct {
	abs     string     // resolved path
	display string     // path for problem reports, relative like the config's
	node    *yaml.Node // the value naming it, for read errors
	exists  bool       // a regular file is there (checked only with stat)
}

// project decodes the whole of relcap.yaml. It returns nil when the file is
// not even a mapping.
func (p *parser) project(data []byte, o options) (*workflow.Project, ownershipRef) {
	var own ownershipRef
	root := p.document(data, "a mapping with version, app, ownership and environments")
	if root == nil {
		return nil, own
	}
	top, ok := p.mapping(root, "", topKeys)
	if !ok {
		return nil, own
	}
	top.version()
	proj := &workflow.Project{}
	var appNode *yaml.Node
	proj.App, appNode = top.reqStr("app", "the application name, e.g. app: web")
	if appNode != nil && proj.App != "" && !input.ValidAppName(proj.App) {
		// The app starts every release ID, which a person types back.
		p.add(appNode, "app", "want letters, digits, '.', '_' and '-' starting with a letter or digit (at most %d), got %s", input.MaxAppNameLen, quote(proj.App))
	}

	if rel, n := top.reqStr("ownership", "the ownership map file, e.g. ownership: ownership.yaml"); n != nil {
		own.abs = resolvePath(o.dir, rel)
		own.display = rel
		if !filepath.IsAbs(rel) {
			own.display = filepath.Join(filepath.Dir(p.file), rel)
		}
		own.node = n
		own.exists = p.checkPath(o, n, "ownership", own.abs, false, fixPath)
		proj.OwnershipFile = own.abs
	}

	// The people file: who is who, by SSH key. Approvals are signed unless
	// an environment says otherwise, so an environment that waits for
	// approvals needs it (checked per environment).
	if rel, n := top.str("people"); n != nil {
		proj.People = resolvePath(o.dir, rel)
		p.checkPath(o, n, "people", proj.People, false, "write it in git's allowed-signers format (one line per person: principal, key type, public key) or fix the path")
		if o.readFile != nil {
			if data, err := o.readFile(proj.People); err == nil {
				if line, col, msg, bad := InvalidUTF8(data); bad {
					p.probs.add(Problem{File: proj.People, Line: line, Col: col, Message: msg})
				}
			}
		}
	}
	o.people = proj.People

	// The ledger: a team's PostgreSQL, or an SQLite file (relative to
	// this file). A URL is checked for its form only; what is wrong with
	// the server is said when relcap connects. Values are not repeated
	// in problems, since a URL may hold a password.
	if v, n := top.str("ledger"); n != nil {
		proj.Ledger = p.ledger(n, v, o)
	}
	proj.Sandbox = top.boolean("sandbox")

	if items, n, ok := top.list("environments"); ok {
		if len(items) == 0 {
			p.add(n, "environments", "want at least one environment")
		}
		seen := map[string]int{}
		for i, item := range items {
			if !p.spend() {
				break
			}
			env, ok := p.environment(item, index("environments", i), o, seen)
			if ok {
				proj.Environments = append(proj.Environments, env)
			}
		}
	} else if n == nil {
		top.require("environments", "list them in promotion order")
	}

	proj.Classify = tfplan.DefaultClassify()
	if cl, ok := top.sub("classify", classifyKeys); ok {
		if pats, ok := cl.globs("identity"); ok {
			proj.Classify.Identity = pats
		}
		if pats, ok := cl.globs("data_service"); ok {
			proj.Classify.DataService = pats
		}
	}

	proj.Effort.IdleThreshold = effort.DefaultIdleThreshold
	if ef, ok := top.sub("effort", effortKeys); ok {
		proj.Effort.IdleThreshold = ef.duration("idle_threshold", effort.DefaultIdleThreshold)
		proj.Effort.BaselineHoursPerRelease = ef.nonNegNumber("baseline_hours_per_release")
		proj.Effort.ReleasesPerMonth = ef.nonNegNumber("releases_per_month")
	}

	proj.Plans.Expiry = workflow.DefaultPlanExpiry
	if pl, ok := top.sub("plans", plansKeys); ok {
		proj.Plans.Expiry = pl.duration("expiry", workflow.DefaultPlanExpiry)
	}

	if co, ok := top.sub("compatibility", compatKeys); ok {
		proj.Compatibility = co.compatibility()
	}

	// Environment variables whose values relcap masks wherever they would
	// appear (a database password Terraform reads as TF_VAR_db_password).
	names, nodes, _ := top.strList("secret_env")
	for i, name := range names {
		if !envVarName.MatchString(name) {
			p.add(nodes[i], index("secret_env", i), "want an environment variable name like DB_PASSWORD, got %s", quote(name))
			continue
		}
		proj.SecretEnv = append(proj.SecretEnv, name)
	}
	return proj, own
}

// globs reads a list of path.Match patterns; ok is false when the key is
// absent, so the caller keeps its default.
func (m *mapNode) globs(key string) ([]string, bool) {
	pats, nodes, present := m.strList(key)
	if !present {
		return nil, false
	}
	for i, pat := range pats {
		m.p.glob(nodes[i], index(join(m.path, key), i), pat)
	}
	return pats, true
}

func (m *mapNode) compatibility() workflow.Compatibility {
	var c workflow.Compatibility
	var schemaN, minN, maxN *yaml.Node
	c.Schema, schemaN = m.nonNegInt("schema")
	c.MinSchema, minN = m.nonNegInt("min_schema")
	c.MaxSchema, maxN = m.nonNegInt("max_schema")
	if minN != nil && maxN != nil && c.MinSchema != 0 && c.MaxSchema != 0 && c.MinSchema > c.MaxSchema {
		m.p.add(maxN, join(m.path, "max_schema"), "is below min_schema (%d)", c.MinSchema)
	}
	if schemaN != nil && c.Schema != 0 && !c.Accepts(c.Schema) {
		m.p.add(schemaN, join(m.path, "schema"), "is outside min_schema..max_schema, so a release could not run against its own data")
	}
	return c
}

// fixPath is what to do about a missing file or directory.
const fixPath = "create it or fix the path"

// checkPath reports a referenced path that is missing or of the wrong kind,
// at the value that names it, and says what to do (fix). It returns whether
// the path is usable; without a stat function nothing is checked and it
// returns false, so callers never read what was not checked.
func (p *parser) checkPath(o options, n *yaml.Node, field, abs string, wantDir bool, fix string) bool {
	if o.stat == nil {
		return false
	}
	kind := "file"
	if wantDir {
		kind = "directory"
	}
	fi, err := o.stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		p.add(n, field, "%s %s does not exist; %s", kind, abs, fix)
	case err != nil:
		p.add(n, field, "cannot check %s: %v", abs, err)
	case wantDir && !fi.IsDir():
		p.add(n, field, "%s is not a directory; point it at a directory", abs)
	case !wantDir && fi.IsDir():
		p.add(n, field, "%s is a directory; point it at a file", abs)
	default:
		return true
	}
	return false
}

// resolvePath makes p absolute against dir, leaving absolute paths alone.
func resolvePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// ledger checks the value of ledger: and returns it resolved: a
// postgres:// or postgresql:// URL as written, a path made absolute.
func (p *parser) ledger(n *yaml.Node, v string, o options) string {
	const want = "want a postgres://USER@HOST:PORT/DATABASE URL or the path of an SQLite file"
	if strings.TrimSpace(v) == "" {
		p.add(n, "ledger", "must not be empty; %s, or leave the key out for the default ($XDG_DATA_HOME/relcap/ledger.db)", want)
		return ""
	}
	scheme, _, hasScheme := strings.Cut(v, "://")
	if !hasScheme || strings.ContainsAny(scheme, `/\`) {
		return resolvePath(o.dir, v)
	}
	if !strings.EqualFold(scheme, "postgres") && !strings.EqualFold(scheme, "postgresql") {
		p.add(n, "ledger", "a %s:// ledger is not supported; %s", scheme, want)
		return ""
	}
	if _, err := secret.ParseURL(v); err != nil { // its error quotes no password
		p.add(n, "ledger", "is not a URL: %v; %s", err, want)
		return ""
	}
	return v
}

// isURL reports whether an envrepo path is a clone address rather than a
// local checkout.
func isURL(s string) bool {
	return strings.Contains(s, "://") || strings.HasPrefix(s, "git@") || scpLike.MatchString(s)
}
