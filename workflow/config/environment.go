package config

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/input"
)

// One environment of relcap.yaml: its Terraform, registry, environment
// repository, Argo CD and rehearsal sections.

// environment decodes one entry of environments. seen maps names to the
// line that first used them.
func (p *parser) environment(n *yaml.Node, field string, o options, seen map[string]int) (workflow.Environment, bool) {
	var env workflow.Environment
	m, ok := p.mapping(n, field, envKeys)
	if !ok {
		return env, false
	}
	if name, nn := m.reqStr("name", "e.g. name: staging"); nn != nil {
		switch first, dup := seen[name]; {
		case dup:
			p.add(nn, join(field, "name"), "duplicate environment name %s (first at line %d)", quote(name), first)
		case len(name) > input.MaxEnvNameLen:
			p.add(nn, join(field, "name"), "at most %d characters (it starts every release ID), got %d", input.MaxEnvNameLen, len(name))
		case !input.ValidEnvName(name):
			p.add(nn, join(field, "name"), "want lowercase letters, digits and dashes starting with a letter or digit, got %s", quote(name))
		default:
			seen[name] = nn.Line
		}
		env.Name = name
	}
	env.Production = m.boolean("production")

	if tf, ok := m.reqSub("terraform", terraformKeys); ok {
		env.Terraform = tf.terraform(o)
	}
	if rg, ok := m.reqSub("registry", registryKeys); ok {
		env.Registry = rg.registry()
	}
	if er, ok := m.reqSub("envrepo", envRepoKeys); ok {
		env.EnvRepo = er.envRepo(o)
	}
	if ac, ok := m.reqSub("argocd", argoCDKeys); ok {
		env.ArgoCD = ac.argoCD(o)
	}
	signedSet := false
	if ap, ok := m.sub("approvals", approvalKeys); ok {
		env.Approvals.Plan, _ = ap.nonNegInt("plan")
		env.Approvals.Promotion, _ = ap.nonNegInt("promotion")
		env.Approvals.DistinctFromAuthor = ap.boolean("distinct_from_author")
		env.Approvals.Signed = o.people != ""
		if set, signed := ap.optBoolean("signed"); set {
			env.Approvals.Signed = signed
			signedSet = true
		}
	} else {
		env.Approvals.Signed = o.people != ""
	}
	if who, ok := m.sub("approvers", approverKeys); ok {
		env.Approvals.Approvers.Plan, _, _ = who.strList("plan")
		env.Approvals.Approvers.Promotion, _, _ = who.strList("promotion")
		env.Approvals.Approvers.BreakGlass, _, _ = who.strList("breakglass")
		env.Approvals.Approvers.Apply, _, _ = who.strList("apply")
	}
	if rh, ok := m.sub("rehearsal", rehearsalKeys); ok {
		env.Rehearsal = rh.rehearsal()
	}
	if cu, ok := m.sub("custody", custodyKeys); ok {
		env.CustodyAccepted = cu.custodyAccepted()
	}
	// With a people file, approvals are signed unless an environment outside
	// production says otherwise. Without one they cannot be, and reports
	// and journal verify say every approval was unsigned.
	switch {
	case env.Production && signedSet && !env.Approvals.Signed:
		m.p.add(m.node, join(field, "approvals.signed"), "%s is a production environment: its approvals are signed; remove signed: false", env.Name)
	case o.people == "" && env.Approvals.Signed:
		m.p.add(m.node, join(field, "approvals.signed"), "%s's approvals are signed with each person's SSH key: name the people file (people: allowed_signers)", env.Name)
	}
	return env, true
}

func (m *mapNode) terraform(o options) workflow.TerraformTarget {
	t := workflow.TerraformTarget{Workspace: "default"}
	dir, dn := m.reqStr("dir", "the Terraform root module, e.g. dir: infra/staging")
	dirOK := false
	if dn != nil {
		t.Dir = resolvePath(o.dir, dir)
		dirOK = m.p.checkPath(o, dn, join(m.path, "dir"), t.Dir, true, fixPath)
	}
	if ws, n := m.str("workspace"); n != nil {
		if ws == "" {
			m.p.add(n, join(m.path, "workspace"), "must not be empty; leave it out for the default workspace")
		} else {
			t.Workspace = ws
		}
	}
	files, nodes, _ := m.strList("var_files")
	for i, f := range files {
		abs := resolvePath(t.Dir, f)
		t.VarFiles = append(t.VarFiles, abs)
		// A missing dir already explains why its var files are missing.
		if dirOK {
			m.p.checkPath(o, nodes[i], index(join(m.path, "var_files"), i), abs, false, "create it or fix the path (var files are relative to terraform.dir)")
		}
	}
	if bin, n := m.str("binary"); n != nil {
		switch {
		case bin == "":
			m.p.add(n, join(m.path, "binary"), "must not be empty; leave it out to use terraform from PATH")
		case strings.ContainsRune(bin, '/') || strings.ContainsRune(bin, filepath.Separator):
			// A path is relative to the config like every other path; a bare
			// name is looked up on PATH when it runs.
			t.Binary = resolvePath(o.dir, bin)
		default:
			t.Binary = bin
		}
	}
	return t
}

func (m *mapNode) registry() workflow.RegistryTarget {
	var r workflow.RegistryTarget
	repo, n := m.reqStr("repository", "e.g. repository: registry.example.com/staging/web")
	if n != nil {
		last := repo[strings.LastIndex(repo, "/")+1:]
		// relcap promotes by digest; a tag or digest here would pin the
		// repository to one image.
		if strings.Contains(repo, "@") || strings.Contains(last, ":") || strings.Contains(repo, "://") {
			m.p.add(n, join(m.path, "repository"), "want a repository without scheme, tag or digest, e.g. registry.example.com/staging/web, got %s", quote(repo))
		}
	}
	r.Repository = repo
	r.RequireSignature = m.boolean("require_signature")
	return r
}

func (m *mapNode) envRepo(o options) workflow.EnvRepoTarget {
	t := workflow.EnvRepoTarget{Branch: "main"}
	p, pn := m.reqStr("path", "a local checkout or a clone URL, e.g. path: ../env")
	if pn != nil {
		if isURL(p) {
			t.Path = p
		} else {
			t.Path = resolvePath(o.dir, p)
			m.p.checkPath(o, pn, join(m.path, "path"), t.Path, true, "create it (clone the environment repository there) or fix the path")
		}
	}
	if br, n := m.str("branch"); n != nil {
		if br == "" {
			m.p.add(n, join(m.path, "branch"), "must not be empty; leave it out for main")
		} else {
			t.Branch = br
		}
	}
	file, fn := m.reqStr("file", "the file that pins the image, e.g. file: apps/web/staging/kustomization.yaml")
	if fn != nil {
		clean := path.Clean(filepath.ToSlash(file))
		if path.IsAbs(clean) || filepath.IsAbs(file) || clean == ".." || strings.HasPrefix(clean, "../") {
			m.p.add(fn, join(m.path, "file"), "want a path inside the environment repository, got %s", quote(file))
		}
		t.File = file
	}
	t.Image, _ = m.reqStr("image", "the image name to pin, e.g. image: web")
	format, formN := m.reqStr("format", "kustomize, helm-values or manifest")
	if formN != nil {
		switch format {
		case workflow.FormatKustomize, workflow.FormatHelmValues, workflow.FormatManifest:
			t.Format = format
		default:
			hint := ""
			if s := suggest(format, formats); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			m.p.add(formN, join(m.path, "format"), "want kustomize, helm-values or manifest, got %s%s", quote(format), hint)
		}
	}
	vp, vn := m.str("values_path")
	switch {
	case format == workflow.FormatHelmValues && vn == nil:
		if _, present := m.entries["values_path"]; present {
			m.require("values_path", "")
		} else {
			m.p.add(m.node, m.path, "format helm-values needs values_path, the YAML path of the image reference, e.g. values_path: image.digest")
		}
	case format == workflow.FormatHelmValues && vp == "":
		m.p.add(vn, join(m.path, "values_path"), "must not be empty")
	case vn != nil && t.Format != "" && t.Format != workflow.FormatHelmValues:
		m.p.add(vn, join(m.path, "values_path"), "is only used with format helm-values; remove it")
	}
	t.ValuesPath = vp
	t.Review = forge.EnvRepoReview{Via: forge.ReviewByPush}
	if rv, ok := m.sub("review", reviewKeys); ok {
		t.Review = rv.review(o)
	}
	return t
}

// maxReadinessGrace bounds argocd.readiness_grace: longer is a typo (1h
// for 1m) that would leave a failed rollout unnamed for the whole watch.
const maxReadinessGrace = 30 * time.Minute

func (m *mapNode) argoCD(o options) workflow.ArgoCDTarget {
	t := workflow.ArgoCDTarget{TokenEnv: workflow.DefaultArgoCDTokenEnv}
	// server may be left out: like the argocd CLI, relcap then reads
	// $ARGOCD_SERVER when it connects.
	server, sn := m.str("server")
	if sn != nil && strings.Contains(server, "://") {
		m.p.add(sn, join(m.path, "server"), "want host:port without a scheme, e.g. argocd.example.com:443, got %s", quote(server))
	}
	t.Server = server
	t.App, _ = m.reqStr("app", "the Argo CD application name, e.g. app: web-staging")
	if te, n := m.str("token_env"); n != nil {
		if !envVarName.MatchString(te) {
			m.p.add(n, join(m.path, "token_env"), "want an environment variable name like %s, got %s", workflow.DefaultArgoCDTokenEnv, quote(te))
		} else {
			t.TokenEnv = te
		}
	}
	t.ReadinessGrace = m.duration("readiness_grace", 0)
	if t.ReadinessGrace > maxReadinessGrace {
		m.p.add(m.valueNode("readiness_grace"), join(m.path, "readiness_grace"),
			"want at most %s: a rollout not ready after that has failed (Kubernetes' own progress deadline is 10m), got %s", maxReadinessGrace, t.ReadinessGrace)
	}
	t.PlainText = m.boolean("plaintext")
	t.Insecure = m.boolean("insecure")
	t.GRPCWeb = m.boolean("grpc_web")
	// Certificate files are relative to relcap.yaml, like every path.
	for _, f := range []struct {
		key string
		dst *string
	}{{"ca_file", &t.CAFile}, {"client_cert_file", &t.ClientCertFile}, {"client_key_file", &t.ClientKeyFile}} {
		if v, n := m.str(f.key); n != nil {
			*f.dst = resolvePath(o.dir, v)
			m.p.checkPath(o, n, join(m.path, f.key), *f.dst, false, "create it or fix the path (relative to relcap.yaml)")
		}
	}
	certNode, keyNode := m.valueNode("client_cert_file"), m.valueNode("client_key_file")
	switch {
	case certNode != nil && keyNode == nil:
		m.p.add(certNode, join(m.path, "client_cert_file"), "needs client_key_file too: a client certificate is a certificate and its key")
	case keyNode != nil && certNode == nil:
		m.p.add(keyNode, join(m.path, "client_key_file"), "needs client_cert_file too: a client certificate is a certificate and its key")
	}
	if t.PlainText && (t.CAFile != "" || t.ClientCertFile != "") {
		m.p.add(m.valueNode("plaintext"), join(m.path, "plaintext"), "plaintext talks without TLS, so ca_file and client certificates would not be used; remove one or the other")
	}
	if p, n := m.str("path_prefix"); n != nil {
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " ?#") {
			m.p.add(n, join(m.path, "path_prefix"), "want the path Argo CD is served under, starting with /, e.g. /argo-cd, got %s", quote(p))
		} else {
			t.PathPrefix = strings.TrimRight(p, "/")
		}
	}
	return t
}

// rehearsal reads an environment's drill settings (relcap rehearse): the
// never-ready build, by digest so the drill runs exactly those bytes, and
// the argv lists that stop and start reconciliation.
func (m *mapNode) rehearsal() workflow.RehearsalTarget {
	r := workflow.RehearsalTarget{Timeout: m.duration("timeout", 0)}
	if img, n := m.str("unready_image"); n != nil {
		if at := strings.Index(img, "@sha256:"); at <= 0 || !validDigest(img[at+1:]) {
			m.p.add(n, join(m.path, "unready_image"), "want a digest reference (repository@sha256:<64 hex>) of a build whose pods never become ready, got %s", quote(img))
		} else {
			r.UnreadyImage = img
		}
	}
	if in, ok := m.sub("interrupt", interruptKeys); ok {
		stop, _, stopSet := in.strList("stop")
		start, _, startSet := in.strList("start")
		switch {
		case !stopSet || !startSet:
			m.p.add(in.node, join(m.path, "interrupt"), "give both stop and start (argv lists, e.g. stop: [relcap-lab, stop, argocd-application-controller]), or leave interrupt out to pause with break-glass")
		case len(stop) == 0 || stop[0] == "":
			m.p.add(in.node, join(m.path, "interrupt.stop"), "must name a command to run (an argv list, not a shell string)")
		case len(start) == 0 || start[0] == "":
			m.p.add(in.node, join(m.path, "interrupt.start"), "must name a command to run (an argv list, not a shell string)")
		default:
			r.InterruptStop, r.InterruptStart = stop, start
		}
	}
	return r
}

func validDigest(s string) bool {
	_, err := image.ParseDigest(s)
	return err == nil
}

// custodyAccepted reads custody.accept: the custody findings an
// environment knowingly accepts, by code, each with a reason. A code
// relcap does not know is refused (an acceptance that matches nothing
// would look like a decision and be none).
func (m *mapNode) custodyAccepted() map[string]string {
	known := custody.Acceptable()
	out := map[string]string{}
	present := m.stringPairs("accept", "a mapping of finding codes to reasons, e.g. accept: {custody.local-backend: one operator; backed up nightly}", "a finding code",
		func(code string, kn, v *yaml.Node, at string) {
			if !slices.Contains(known, code) {
				hint := ""
				if s := suggest(code, known); s != "" {
					hint = fmt.Sprintf(" (did you mean %q?)", s)
				} else if s := suggest("custody."+code, known); s != "" {
					hint = fmt.Sprintf(" (did you mean %q?)", s)
				}
				m.p.add(kn, at, "unknown custody finding %s%s; want one of %s", quote(code), hint, strings.Join(known, ", "))
				return
			}
			if _, dup := out[code]; dup {
				m.p.add(kn, at, "accepted twice")
				return
			}
			if v.Kind != yaml.ScalarNode || isNull(v) || strings.TrimSpace(v.Value) == "" {
				m.p.add(v, at, "want the reason the team accepts it, e.g. %s: one operator; the state file is backed up nightly", code)
				return
			}
			out[code] = strings.TrimSpace(v.Value)
		})
	if !present {
		return nil
	}
	return out
}
