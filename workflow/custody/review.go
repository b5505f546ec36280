package custody

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/secret"
)

// Finding codes. Every one but CodeBackend, CodeUnverified and
// CodeAcceptedUnused may be accepted for an environment in relcap.yaml
// (environments[].custody.accept), with a reason.
const (
	CodeLocalBackend       = "custody.local-backend"
	CodeNoLocking          = "custody.no-locking"
	CodeUnencrypted        = "custody.unencrypted"
	CodeCredentialInConfig = "custody.credential-in-config"
	CodeUnknownBackend     = "custody.unknown-backend"
	CodeUnknownLocation    = "custody.unknown-location"
	CodeSharedState        = "custody.shared-state"
	CodeSharedWorkspaces   = "custody.shared-workspaces"
	CodeSharedCredentials  = "custody.shared-credentials"
	CodeWholeRemoteState   = "custody.whole-remote-state"

	// CodeBackend states where the state lives and what holds (info).
	CodeBackend = "custody.backend"
	// CodeUnverified names what cannot be known from here (info).
	CodeUnverified = "custody.unverified"
	// CodeAcceptedUnused is an acceptance that matches nothing any more.
	CodeAcceptedUnused = "custody.accepted-unused"
)

// Acceptable are the codes relcap.yaml may accept, in the order the
// reference lists them.
func Acceptable() []string {
	return []string{CodeLocalBackend, CodeNoLocking, CodeUnencrypted, CodeCredentialInConfig, CodeUnknownBackend,
		CodeUnknownLocation, CodeSharedState, CodeSharedWorkspaces, CodeSharedCredentials, CodeWholeRemoteState}
}

// Env is one environment as custody sees it.
type Env struct {
	Name       string
	Production bool
	Root       Root
	// Accepted are the findings the team knowingly accepts in this
	// environment, by code, each with its reason.
	Accepted map[string]string
}

// Result is the custody review of one environment.
type Result struct {
	Env     string `json:"env"`
	Backend string `json:"backend"` // the backend type
	// Location is where the environment's state lives, without a
	// credential; "" when it is not known from here.
	Location string `json:"location,omitempty"`
	Source   Source `json:"source"`
	// Findings, most serious first. An accepted finding is a warning
	// that says so.
	Findings []finding.Finding `json:"findings"`
	// Accepted are the findings found and accepted, by code, with the
	// reason relcap.yaml gives.
	Accepted map[string]string `json:"accepted,omitempty"`
}

// Check reads the backend of every environment and the remote states of
// target's root through r, and reviews target's custody: its backend, its
// separation from every other environment, and the whole states it reads.
func Check(ctx context.Context, r Reader, envs []Env, target string) (Result, error) {
	i := slices.IndexFunc(envs, func(e Env) bool { return e.Name == target })
	if i < 0 {
		return Result{}, fmt.Errorf("custody: no environment %s", target)
	}
	backends := map[string]Backend{}
	var unreadable []finding.Finding
	for _, e := range envs {
		b, err := r.Backend(ctx, e.Root)
		if err != nil {
			if e.Name == target {
				return Result{}, fmt.Errorf("reading the Terraform backend of %s: %w", e.Name, err)
			}
			unreadable = append(unreadable, finding.Finding{Severity: finding.Warning, Code: CodeUnknownLocation, Subject: e.Name,
				Message:    fmt.Sprintf("the backend of %s could not be read (%v), so whether it shares state with %s is unverified", e.Name, err, target),
				NextAction: "fix or initialise " + e.Name + "'s Terraform root (terraform init there)"})
			continue
		}
		backends[e.Name] = b
	}
	remotes, err := r.RemoteStates(ctx, envs[i].Root)
	if err != nil {
		return Result{}, fmt.Errorf("reading the terraform_remote_state sources of %s: %w", target, err)
	}
	res := review(envs, backends, remotes, envs[i])
	res.Findings = append(res.Findings, unreadable...)
	accept(&res, envs[i])
	finding.Sort(res.Findings)
	return res, nil
}

// review judges env's custody from the backends read of the project's
// environments (by name) and the remote states env's root reads.
// Acceptances are not applied: Check does that.
func review(envs []Env, backends map[string]Backend, remotes []RemoteState, env Env) Result {
	b := backends[env.Name]
	loc := locate(b)
	res := Result{Env: env.Name, Backend: orDefault(b.Type, "local"), Source: b.Source}
	if loc.known {
		res.Location = loc.state
	}
	res.Findings = append(res.Findings, backendFindings(env, b, loc)...)
	res.Findings = append(res.Findings, separationFindings(envs, backends, env)...)
	res.Findings = append(res.Findings, remoteStateFindings(envs, backends, env, remotes)...)
	return res
}

// severityFor is a finding's weight: a blocker in production, a warning
// elsewhere.
func severityFor(production bool) finding.Severity {
	if production {
		return finding.Blocker
	}
	return finding.Warning
}

func backendFindings(env Env, b Backend, loc location) []finding.Finding {
	kind := orDefault(b.Type, "local")
	where := loc.state
	if !loc.known {
		where = "a place not known from the configuration"
	}
	subject := env.Name + " state"
	docs := finding.Of("docs", docsOf(kind))
	var out []finding.Finding
	t, known := traitsOf(b)
	if !known {
		return append(out, finding.Finding{Severity: finding.Warning, Code: CodeUnknownBackend, Subject: subject,
			Message:    fmt.Sprintf("backend %q is not one relcap knows, so its locking and encryption are unverified", b.Type),
			NextAction: "check its locking, encryption and backups by hand, then accept the finding in relcap.yaml with what you checked",
			Facts:      finding.Facts{finding.Of("backend", b.Type), finding.Of("state", where), docs}})
	}
	facts := finding.Facts{finding.Of("backend", kind), finding.Of("state", where), finding.Of("workspace", workspaceOf(b)), finding.Of("read from", sourceText(b.Source)), docs}
	if kind == "local" {
		out = append(out, finding.Finding{Severity: severityFor(env.Production), Code: CodeLocalBackend, Subject: subject,
			Message:    fmt.Sprintf("the state is a local file (%s): no access control beyond this machine, no lock across machines, no versions to restore", strings.TrimPrefix(where, "local file ")),
			NextAction: "move it to a remote backend with locking and versioning (add a backend block, then terraform init -migrate-state), or accept custody.local-backend for " + env.Name + " in relcap.yaml with the reason",
			Facts:      facts})
	} else {
		if !t.locking.held {
			out = append(out, finding.Finding{Severity: severityFor(env.Production), Code: CodeNoLocking, Subject: subject,
				Message:    fmt.Sprintf("the %s backend does not lock: %s", kind, t.locking.why),
				NextAction: lockAdvice(kind), Facts: facts})
		}
		if !t.encryption.held {
			out = append(out, finding.Finding{Severity: severityFor(env.Production), Code: CodeUnencrypted, Subject: subject,
				Message:    fmt.Sprintf("the %s backend's state may be unencrypted: %s", kind, t.encryption.why),
				NextAction: encryptAdvice(kind), Facts: facts})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b.Settings)) {
		v := b.Settings[k]
		if (v == Redacted || strings.Contains(v, secret.URLMask)) && b.FromEnv[k] == "" {
			out = append(out, finding.Finding{Severity: finding.Warning, Code: CodeCredentialInConfig, Subject: subject,
				Message:    fmt.Sprintf("a credential (%s) is written in the backend configuration: Terraform keeps it in clear in .terraform/terraform.tfstate and in every saved plan", k),
				NextAction: "remove it from the backend block and -backend-config, and give it through the environment or a credentials file instead",
				Facts:      finding.Facts{finding.Of("setting", k), docs}})
		}
	}
	if !loc.known {
		out = append(out, finding.Finding{Severity: finding.Warning, Code: CodeUnknownLocation, Subject: subject,
			Message:    "where the state lives is not known from the configuration (a setting comes from an expression or an unset variable), so separation from the other environments is unverified",
			NextAction: "run terraform init in " + b.Dir + " so relcap can read Terraform's record of the backend",
			Facts:      facts})
	}
	summary := fmt.Sprintf("state in %s (workspace %s)", where, workspaceOf(b))
	if t.locking.held {
		summary += "; locked by " + t.locking.how
	}
	if t.encryption.held {
		summary += "; protected by " + t.encryption.how
	}
	out = append(out, finding.Finding{Severity: finding.Info, Code: CodeBackend, Subject: subject, Message: summary, Facts: facts},
		finding.Finding{Severity: finding.Info, Code: CodeUnverified, Subject: subject,
			Message:    "not verifiable from here: " + t.unverified,
			NextAction: "check it with the backend's administrators; the state-restore drill (relcap rehearse --drill state-restore) proves a backup restores",
			Facts:      finding.Facts{docs}})
	return out
}

func sourceText(s Source) string {
	switch s {
	case FromInit:
		return "terraform init's record (.terraform/terraform.tfstate)"
	case FromConfiguration:
		return "the backend block (not initialised here)"
	case FromDefault:
		return "no backend block: Terraform's default local backend"
	}
	return string(s)
}

func lockAdvice(kind string) string {
	switch kind {
	case "s3":
		return "set use_lockfile = true in the backend block (or a dynamodb_table), then terraform init -reconfigure"
	case "http":
		return "set lock_address and unlock_address to the server's lock endpoint, then terraform init -reconfigure"
	case "consul":
		return "remove lock = false from the backend block, then terraform init -reconfigure"
	}
	return "enable the backend's locking, then terraform init -reconfigure"
}

func encryptAdvice(kind string) string {
	switch kind {
	case "s3":
		return "set encrypt = true (and kms_key_id for a key of your own) in the backend block, then terraform init -reconfigure"
	case "pg":
		return "connect with sslmode=verify-full (or require) in conn_str"
	case "http":
		return "serve the state over https with a verified certificate"
	case "consul":
		return "set scheme = \"https\" in the backend block"
	}
	return "make the backend encrypt the state in transit and at rest"
}

// separationFindings compares target's state with every other
// environment's: the same state is one state, the same backend's
// workspaces are separated by a name alone, and one credential reaching
// both means whoever holds it writes both.
func separationFindings(envs []Env, backends map[string]Backend, target Env) []finding.Finding {
	mine, ok := backends[target.Name]
	if !ok {
		return nil
	}
	myLoc := locate(mine)
	myCred, myWhere, myCredOK := credentialSource(mine)
	var out []finding.Finding
	for _, o := range envs {
		theirs, read := backends[o.Name]
		if o.Name == target.Name || !read {
			continue
		}
		loc := locate(theirs)
		prod := target.Production || o.Production
		docs := finding.Of("docs", "https://developer.hashicorp.com/terraform/language/state/workspaces")
		switch {
		case myLoc.known && loc.known && myLoc.state == loc.state:
			out = append(out, finding.Finding{Severity: severityFor(prod), Code: CodeSharedState, Subject: target.Name + " and " + o.Name,
				Message:    fmt.Sprintf("%s and %s keep their state in one place (%s): a plan or apply of either changes the other's infrastructure", target.Name, o.Name, myLoc.state),
				NextAction: "give each environment a state of its own: another key, prefix or database (and another workspace is not enough)",
				Facts:      finding.Facts{finding.Of(target.Name, myLoc.state), finding.Of(o.Name, loc.state), docs}})
			continue
		case myLoc.known && loc.known && myLoc.container == loc.container:
			out = append(out, finding.Finding{Severity: severityFor(prod), Code: CodeSharedWorkspaces, Subject: target.Name + " and " + o.Name,
				Message:    fmt.Sprintf("%s and %s are two workspaces of one backend (%s): a workspace is not a security boundary, whoever can write one state can write the other", target.Name, o.Name, myLoc.container),
				NextAction: "separate them by backend and credentials (another bucket, key or database with its own access policy), not by workspace name",
				Facts:      finding.Facts{finding.Of(target.Name, "workspace "+workspaceOf(mine)), finding.Of(o.Name, "workspace "+workspaceOf(theirs)), docs}})
			continue
		}
		cred, where, credOK := credentialSource(theirs)
		if myCredOK && credOK && cred == myCred && mine.Type == theirs.Type {
			out = append(out, finding.Finding{Severity: finding.Warning, Code: CodeSharedCredentials, Subject: target.Name + " and " + o.Name,
				Message:    fmt.Sprintf("%s and %s reach their state with the same credentials (%s): whoever holds them can change both", target.Name, o.Name, cred),
				NextAction: "give each environment credentials of its own (a profile, role or user per environment)",
				Facts:      finding.Facts{finding.Of(target.Name, myWhere), finding.Of(o.Name, where)}})
		}
	}
	return out
}

// remoteStateFindings reports every terraform_remote_state of target's
// root: it reads a whole state, secrets included, where a few outputs
// would do.
func remoteStateFindings(envs []Env, backends map[string]Backend, target Env, remotes []RemoteState) []finding.Finding {
	var out []finding.Finding
	for _, rs := range remotes {
		read := locate(Backend{Type: rs.Backend, Settings: rs.Settings, Workspace: orDefault(rs.Workspace, defaultWorkspace), Dir: target.Root.Dir})
		whose := ""
		production := false
		for _, e := range envs {
			if b, ok := backends[e.Name]; ok && read.known && locate(b).state == read.state && e.Name != target.Name {
				whose, production = e.Name, e.Production
			}
		}
		what := "a whole state"
		switch {
		case whose != "" && production && !target.Production:
			what = "production's whole state (" + whose + ")"
		case whose != "":
			what = whose + "'s whole state"
		case read.known:
			what = "the whole state " + read.state
		}
		uses := "uses none of its outputs"
		switch {
		case slices.Contains(rs.Outputs, AllOutputs):
			uses = "uses its outputs object whole"
		case len(rs.Outputs) > 0:
			uses = "uses only " + strings.Join(rs.Outputs, ", ")
		}
		next := "publish the outputs it uses as narrow outputs (a parameter store entry, or a small state holding only outputs) and read those; whoever can read a state can read every secret in it"
		if len(rs.Outputs) == 0 {
			next = "remove the data source: nothing uses it"
		}
		out = append(out, finding.Finding{Severity: finding.Warning, Code: CodeWholeRemoteState, Subject: fmt.Sprintf("data.terraform_remote_state.%s", rs.Name),
			Message:    fmt.Sprintf("%s reads %s through terraform_remote_state (%s:%d) and %s", target.Name, what, rs.File, rs.Line, uses),
			NextAction: next,
			Facts: finding.Facts{finding.Of("at", fmt.Sprintf("%s:%d", rs.File, rs.Line)), finding.Of("outputs", strings.Join(rs.Outputs, ", ")),
				finding.Of("docs", "https://developer.hashicorp.com/terraform/language/state/remote-state-data")}})
	}
	return out
}

// accept turns the findings env accepts into warnings that say so, and
// notes an acceptance nothing matches any more.
func accept(res *Result, env Env) {
	res.Accepted = map[string]string{}
	used := map[string]bool{}
	for i, f := range res.Findings {
		reason, ok := env.Accepted[f.Code]
		if !ok || f.Severity == finding.Info {
			continue
		}
		used[f.Code] = true
		res.Accepted[f.Code] = reason
		res.Findings[i].Severity = finding.Warning
		res.Findings[i].Message += " — accepted in relcap.yaml: " + reason
		res.Findings[i].Facts = res.Findings[i].Facts.With("accepted", reason)
	}
	for _, code := range slices.Sorted(maps.Keys(env.Accepted)) {
		if !used[code] {
			res.Findings = append(res.Findings, finding.Finding{Severity: finding.Info, Code: CodeAcceptedUnused, Subject: env.Name,
				Message:    fmt.Sprintf("relcap.yaml accepts %s for %s, but it is not found any more", code, env.Name),
				NextAction: "remove the acceptance from environments[].custody.accept"})
		}
	}
}

// Blocking reports whether findings hold a custody blocker.
func Blocking(fs []finding.Finding) bool {
	return slices.ContainsFunc(fs, func(f finding.Finding) bool { return f.Severity == finding.Blocker && isCustody(f) })
}

// Replace is findings with its custody findings replaced by fresh ones.
func Replace(findings, fresh []finding.Finding) []finding.Finding {
	out := slices.DeleteFunc(slices.Clone(findings), isCustody)
	return append(out, fresh...)
}

func isCustody(f finding.Finding) bool { return strings.HasPrefix(f.Code, "custody.") }

// Explain is the message of a release custody stops: the first blocker, what
// to do, and how many more there are.
func Explain(env string, findings []finding.Finding) string {
	var blockers []finding.Finding
	for _, f := range findings {
		if f.Severity == finding.Blocker && isCustody(f) {
			blockers = append(blockers, f)
		}
	}
	if len(blockers) == 0 {
		return ""
	}
	f := blockers[0]
	msg := fmt.Sprintf("the state custody of %s stops this release: %s (%s); next: %s, or accept %s for %s in relcap.yaml (environments[].custody.accept) with the reason", env, f.Message, f.Code, f.NextAction, f.Code, env)
	if n := len(blockers) - 1; n > 0 {
		msg += fmt.Sprintf("; and %d more custody blocker(s)", n)
	}
	return msg
}

// Record is what the journal keeps of a review: where the state lives and
// what was found, never a setting's value.
func Record(r Result) journal.CustodyReviewed {
	rec := journal.CustodyReviewed{Env: r.Env, Backend: r.Backend, Location: r.Location, Source: string(r.Source), Accepted: r.Accepted}
	for _, f := range r.Findings {
		switch f.Severity {
		case finding.Blocker:
			rec.Blockers = append(rec.Blockers, f.Code)
		case finding.Warning:
			rec.Warnings = append(rec.Warnings, f.Code)
		}
	}
	return rec
}

// Of are the custody findings among findings (a plan's), in their order.
func Of(findings []finding.Finding) []finding.Finding {
	var out []finding.Finding
	for _, f := range findings {
		if isCustody(f) {
			out = append(out, f)
		}
	}
	return out
}
