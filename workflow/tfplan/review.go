package tfplan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/ownership"
)

// The review of a plan, in one place: the Planner reads Terraform and
// returns Facts (data, secrets masked); ReviewPlan judges them (risk
// flags, counts, findings) and binds the plan to its inputs with
// Fingerprint; StaleReasons says, at apply time, whether those inputs
// moved.

// Facts are what a Planner read about one plan, translated from
// Terraform and with every sensitive value masked, before any judgement.
type Facts struct {
	Env              string
	TerraformVersion string
	Changes          []ResourceChange
	Outputs          []OutputChange
	Drift            []DriftedResource
	// NoOps counts resource changes that do nothing; they are not listed
	// (a 10,000-resource plan that touches three would bury them).
	NoOps int
	// Imports, Moves and Forgets are what Terraform's actions say beyond
	// the change's Action: objects imported into the state, resources
	// moved from another address, objects the state lets go of (counted
	// as deletes).
	Imports []string
	Moves   []Move
	Forgets []string
	// Incomplete, Errored, Deferred, Checks and Actions are what the plan
	// says about itself (Summary's fields of the same names).
	Incomplete bool
	Errored    bool
	Deferred   []DeferredChange
	Checks     []CheckResult
	Actions    []ActionInvocation

	// The rest describe a saved plan; they are empty for a plan document
	// read without Terraform, which nothing can apply.
	PlanFile  string
	PlanHash  string // SHA-256 of the plan file
	Inputs    Inputs
	Author    string
	CreatedAt time.Time
	// Root is the Terraform root planned, and MissingLockFile the name of
	// its dependency lock file when none is committed ("" when one is).
	Root            string
	MissingLockFile string
}

// Move is a resource the plan moves from another address.
type Move struct {
	Address string
	From    string
}

// ReviewPlan is the review of a plan: its facts with counts, risk flags
// and findings, and, for a saved plan, the fingerprint that binds the
// plan file to the inputs it was computed from.
func ReviewPlan(f Facts, rules Classify) Summary {
	p := Summary{Env: f.Env, TerraformVersion: f.TerraformVersion,
		Changes: f.Changes, Outputs: f.Outputs, Drift: f.Drift,
		Incomplete: f.Incomplete, Errored: f.Errored, Deferred: f.Deferred, Checks: f.Checks, Actions: f.Actions,
		PlanFile: f.PlanFile, PlanHash: f.PlanHash, Inputs: f.Inputs, Author: f.Author, CreatedAt: f.CreatedAt}
	if p.Changes == nil {
		p.Changes = []ResourceChange{}
	}
	if f.PlanHash != "" {
		p.Fingerprint = Fingerprint(f.PlanHash, f.Inputs)
	}
	Review(&p, rules)
	p.Counts.NoOp += f.NoOps
	for _, addr := range f.Imports {
		p.Findings = append(p.Findings, finding.Finding{
			Severity: finding.Info, Code: "plan.import", Subject: addr,
			Message: "an existing object will be imported into the state",
		})
	}
	for _, m := range f.Moves {
		p.Findings = append(p.Findings, finding.Finding{
			Severity: finding.Info, Code: "plan.moved", Subject: m.Address,
			Message: "moved from " + m.From,
		})
	}
	for _, addr := range f.Forgets {
		p.Findings = append(p.Findings, finding.Finding{
			Severity: finding.Warning, Code: CodePlanForget, Subject: addr,
			Message:    "Terraform will stop managing this object (removed from state, not destroyed); counted as a delete",
			NextAction: "confirm who owns the object after this release",
		})
	}
	if f.MissingLockFile != "" {
		p.Findings = append(p.Findings, finding.Finding{
			Severity: finding.Warning, Code: "plan.no-lock-file", Subject: f.Root,
			Message:    "no dependency lock file committed (" + f.MissingLockFile + "); provider versions are not pinned",
			NextAction: "run terraform init, then commit " + f.MissingLockFile,
		})
	}
	finding.Sort(p.Findings)
	return p
}

// Review fills in the counts, risk flags and findings of a plan whose
// changes have been translated. Risky changes are warnings, not blockers:
// the reviewer decides, and the approval is bound to what they saw.
func Review(p *Summary, rules Classify) {
	p.Counts = Counts{}
	p.Findings = nil
	for i := range p.Changes {
		c := &p.Changes[i]
		c.Flags = ClassifyChange(*c, rules)
		switch c.Action {
		case ActionCreate:
			p.Counts.Create++
		case ActionUpdate:
			p.Counts.Update++
		case ActionDelete:
			p.Counts.Delete++
		case ActionReplaceDeleteFirst:
			p.Counts.ReplaceDeleteFirst++
		case ActionReplaceCreateFirst:
			p.Counts.ReplaceCreateFirst++
		case ActionRead:
			p.Counts.Read++
		default:
			p.Counts.NoOp++
		}
		for _, f := range c.Flags {
			p.Findings = append(p.Findings, planFinding(*c, f))
		}
	}
	for _, o := range p.Outputs {
		p.Findings = append(p.Findings, finding.Finding{
			Severity: finding.Info, Code: "plan.output", Subject: "output." + o.Name,
			Message: fmt.Sprintf("output will %s", o.Action),
		})
	}
	reviewExtras(p)
	finding.Sort(p.Findings)
}

func planFinding(c ResourceChange, flag string) finding.Finding {
	f := finding.Finding{Severity: finding.Warning, Subject: c.Address}
	switch flag {
	case FlagDestructive:
		f.Code = "plan.destructive"
		f.Message = string(c.Action)
		if len(c.ReplacePaths) > 0 {
			f.Message += ", forced by " + strings.Join(c.ReplacePaths, ", ")
		}
		f.NextAction = "confirm the data or service loss is intended before approving"
	case FlagIdentity:
		f.Code = "plan.identity"
		f.Message = fmt.Sprintf("%s changes identity or access (%s)", c.Action, c.Type)
		f.NextAction = "have someone who owns access review this change"
	case FlagDataService:
		f.Code = "plan.data-service"
		f.Message = fmt.Sprintf("%s touches a data service (%s)", c.Action, c.Type)
		f.NextAction = "check backups and the data migration before approving"
	}
	return f
}

// planFingerprintVersion names the canonical encoding of Fingerprint;
// change it if the encoding ever changes, so old and new fingerprints
// never collide.
const planFingerprintVersion = "relcap.plan-fingerprint.v2"

// Fingerprint is a saved plan's identity, which approvals bind to: the
// SHA-256 (hex) of a canonical encoding of the plan file's SHA-256 and the
// inputs. One `name=value` line per field in a fixed order, values quoted
// with strconv.Quote (so no value can forge a line break), var files,
// configuration files and variables sorted by name. Plans and approvals in
// existing ledgers are bound to these values: the encoding never changes
// without a new planFingerprintVersion.
func Fingerprint(planHash string, in Inputs) string {
	var b strings.Builder
	field := func(name, value string) {
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(value))
		b.WriteByte('\n')
	}
	field("v", planFingerprintVersion)
	field("plan_sha256", planHash)
	field("revision", in.Revision)
	field("dirty", strconv.FormatBool(in.Dirty))
	field("lock_file_sha256", in.LockFileHash)
	for _, f := range slices.Sorted(maps.Keys(in.VarFileHashes)) {
		field("var_file "+strconv.Quote(f), in.VarFileHashes[f])
	}
	field("workspace", in.Workspace)
	field("state_lineage", in.StateLineage)
	field("state_serial", strconv.FormatInt(in.StateSerial, 10))
	for _, f := range slices.Sorted(maps.Keys(in.ConfigFiles)) {
		field("config_file "+strconv.Quote(f), in.ConfigFiles[f])
	}
	for _, n := range slices.Sorted(maps.Keys(in.EnvVars)) {
		field("env "+n, in.EnvVars[n])
	}
	for _, n := range slices.Sorted(maps.Keys(in.ProviderEnv)) {
		field("provider_env "+n, in.ProviderEnv[n])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// StaleReasons lists what differs between the inputs a plan was made from
// and the current ones; empty means the plan is still current.
func StaleReasons(planned, now Inputs) []string {
	var r []string
	if planned.Revision != now.Revision {
		r = append(r, fmt.Sprintf("source revision moved from %s to %s", revOrNone(planned.Revision), revOrNone(now.Revision)))
	}
	if planned.Dirty != now.Dirty {
		r = append(r, fmt.Sprintf("working tree dirty was %t, is %t", planned.Dirty, now.Dirty))
	}
	if planned.LockFileHash != now.LockFileHash {
		r = append(r, "dependency lock file changed")
	}
	for f, h := range planned.VarFileHashes {
		if now.VarFileHashes[f] != h {
			r = append(r, "var file changed: "+f)
		}
	}
	for f := range now.VarFileHashes {
		if _, ok := planned.VarFileHashes[f]; !ok {
			r = append(r, "var file added: "+f)
		}
	}
	// Plans made before the configuration's content was bound have no
	// ConfigFiles; their revision and dirty flag still bind them.
	if planned.ConfigFiles != nil {
		r = append(r, mapChanges("configuration file", planned.ConfigFiles, now.ConfigFiles)...)
		r = append(r, mapChanges("environment variable", planned.EnvVars, now.EnvVars)...)
	}
	// Plans saved before provider settings were bound (nil) are not
	// judged on them: they are still bound by everything else, and expire.
	if planned.ProviderEnv != nil {
		r = append(r, mapChanges("provider setting", planned.ProviderEnv, now.ProviderEnv)...)
	}
	if planned.Workspace != now.Workspace {
		r = append(r, fmt.Sprintf("workspace changed from %s to %s", planned.Workspace, now.Workspace))
	}
	if planned.StateLineage != now.StateLineage {
		r = append(r, "state lineage changed (a different state)")
	} else if planned.StateSerial != now.StateSerial {
		r = append(r, fmt.Sprintf("state moved: serial %d at plan time, %d now", planned.StateSerial, now.StateSerial))
	}
	sort.Strings(r)
	return r
}

// mapChanges names what differs between two hash maps: changed, added and
// removed keys, sorted.
func mapChanges(what string, planned, now map[string]string) []string {
	var r []string
	for _, k := range sortedKeys(planned) {
		switch h, ok := now[k]; {
		case !ok:
			r = append(r, what+" removed: "+k)
		case h != planned[k]:
			r = append(r, what+" changed: "+k)
		}
	}
	for _, k := range sortedKeys(now) {
		if _, ok := planned[k]; !ok {
			r = append(r, what+" added: "+k)
		}
	}
	return r
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// What a plan shows besides its resource changes, and which plans relcap
// cannot vouch for: an approval binds to what the reviewer saw, so a plan
// that is not the whole of what Terraform will do (incomplete, errored, a
// failing check) or that would revert another owner's fields is refused
// for apply, whoever approved it.

// Finding codes of a plan's completeness, checks, actions and drift.
const (
	CodePlanErrored      = "plan.errored"
	CodePlanIncomplete   = "plan.incomplete"
	CodePlanCheckFailed  = "plan.check-failed"
	CodePlanCheckUnknown = "plan.check-unknown"
	CodePlanAction       = "plan.action"
	CodePlanDrift        = "plan.drift"
	// CodePlanDriftOwned is drift on fields the ownership map gives to
	// another owner: the tug-of-war, caught before the apply reverts them.
	CodePlanDriftOwned = "plan.drift-owned-elsewhere"
	// CodePlanHandoffDestroys is a plan that deletes (or replaces) an
	// object the ownership map hands over from Terraform: a hand-off
	// forgets the object, it never takes it from the cluster.
	CodePlanHandoffDestroys = "plan.handoff-destroys"
	// CodePlanForget is an object the state lets go of, which stays where
	// it is (a removed block with destroy = false).
	CodePlanForget = "plan.forget"
)

// refusing are the codes that refuse a plan for apply.
var refusing = []string{CodePlanErrored, CodePlanIncomplete, CodePlanCheckFailed, CodePlanDriftOwned, CodePlanHandoffDestroys}

// reviewExtras adds the findings of what a plan shows besides its changes.
func reviewExtras(p *Summary) {
	if p.Errored {
		p.Findings = append(p.Findings, finding.Finding{
			Severity: finding.Blocker, Code: CodePlanErrored, Subject: "plan",
			Message:    "Terraform reported errors while planning: the plan is not all the configuration asks for",
			NextAction: "fix the errors terraform plan prints, then plan again",
		})
	}
	if p.Incomplete || len(p.Deferred) > 0 {
		msg := "the plan is incomplete (Terraform deferred changes it could not plan yet)"
		if len(p.Deferred) > 0 {
			parts := make([]string, 0, len(p.Deferred))
			for _, d := range p.Deferred {
				parts = append(parts, d.Address+" ("+strings.ReplaceAll(d.Reason, "_", " ")+")")
			}
			msg = fmt.Sprintf("the plan is incomplete: %d change(s) deferred: %s", len(p.Deferred), strings.Join(parts, ", "))
		}
		p.Findings = append(p.Findings, finding.Finding{
			Severity: finding.Blocker, Code: CodePlanIncomplete, Subject: "plan", Message: msg,
			NextAction: "apply what can be planned outside the release, or make the deferred values known, then plan again: relcap applies only complete plans",
		})
	}
	for _, c := range p.Checks {
		switch c.Status {
		case CheckFail, CheckError:
			msg := fmt.Sprintf("%s %s", strings.ReplaceAll(c.Kind, "_", " "), c.Status)
			if c.Status == CheckFail {
				msg = fmt.Sprintf("%s check failed", strings.ReplaceAll(c.Kind, "_", " "))
			}
			if len(c.Problems) > 0 {
				msg += ": " + strings.Join(c.Problems, "; ")
			}
			p.Findings = append(p.Findings, finding.Finding{
				Severity: finding.Blocker, Code: CodePlanCheckFailed, Subject: c.Address, Message: msg,
				NextAction: "fix what the check guards, then plan again",
			})
		case CheckUnknown:
			p.Findings = append(p.Findings, finding.Finding{
				Severity: finding.Warning, Code: CodePlanCheckUnknown, Subject: c.Address,
				Message:    "check result unknown until apply (it depends on values known only then)",
				NextAction: "read what the check guards before approving; the apply evaluates it",
			})
		}
	}
	for _, a := range p.Actions {
		msg := fmt.Sprintf("applying invokes action %s", a.Type)
		if a.Trigger != "" {
			msg += fmt.Sprintf(", triggered by %s (%s)", a.Trigger, strings.ReplaceAll(a.Event, "_", " "))
		} else {
			msg += ", invoked by the plan itself"
		}
		p.Findings = append(p.Findings, finding.Finding{
			Severity: finding.Warning, Code: CodePlanAction, Subject: a.Address, Message: msg + ": a side effect outside the listed changes",
			NextAction: "confirm what the action does before approving",
		})
	}
	for _, d := range p.Drift {
		msg := "changed outside Terraform since the last apply; this apply writes it back"
		if paths := attributePaths(d.Attributes); len(paths) > 0 {
			msg = fmt.Sprintf("%s changed outside Terraform since the last apply; this apply writes it back", strings.Join(paths, ", "))
		}
		if len(d.Fields) > 0 {
			parts := make([]string, 0, len(d.Fields))
			for _, c := range d.Fields {
				parts = append(parts, c.String())
			}
			msg = strings.Join(parts, ", ") + " changed outside Terraform since the last apply; this apply writes Terraform's values back"
		}
		p.Findings = append(p.Findings, finding.Finding{
			Severity: finding.Info, Code: CodePlanDrift, Subject: d.Address, Message: msg,
			NextAction: "find who changed it (relcap ownership check) before approving",
		})
	}
}

func attributePaths(as []AttributeChange) []string {
	paths := make([]string, 0, len(as))
	for _, a := range as {
		paths = append(paths, a.Path)
	}
	const most = 5
	if len(paths) > most {
		paths = append(paths[:most], fmt.Sprintf("and %d more", len(paths)-most))
	}
	return paths
}

// ReviewDrift ties a plan's drift to the ownership map: a drifted
// Kubernetes object whose fields the map gives to Argo CD or a third owner
// is a blocker naming those fields, because the apply would revert them
// (two green tools, one object flipping between them). It replaces the
// plan's earlier drift-ownership findings, so reviewing again is safe.
func ReviewDrift(p *Summary, m ownership.Map) {
	p.Findings = slices.DeleteFunc(p.Findings, func(f finding.Finding) bool { return f.Code == CodePlanDriftOwned })
	forgotten := p.forgotten()
	for _, d := range p.Drift {
		if d.Object == nil || forgotten[d.Address] {
			continue // a forgotten resource writes nothing back
		}
		foreign, rule := ownership.ForeignFields(m, *d.Object)
		nameDriftedFields(p, d, m)
		if len(foreign) == 0 {
			continue
		}
		owners := map[ownership.Owner][]string{}
		var names []ownership.Owner
		for _, f := range foreign {
			if _, ok := owners[f.Owner]; !ok {
				names = append(names, f.Owner)
			}
			owners[f.Owner] = append(owners[f.Owner], withValues(f.Field, d.Fields))
		}
		parts := make([]string, 0, len(names))
		for _, o := range names {
			fields := owners[o]
			const most = 6
			if len(fields) > most {
				fields = append(fields[:most:most], fmt.Sprintf("and %d more", len(owners[o])-most))
			}
			parts = append(parts, fmt.Sprintf("%s to %s", strings.Join(fields, ", "), o))
		}
		o := d.Object
		obj := strings.TrimPrefix(o.Group+"/", "/") + o.Kind + " " + strings.TrimPrefix(o.Namespace+"/", "/") + o.Name
		p.Findings = append(p.Findings, finding.Finding{
			Severity: finding.Blocker, Code: CodePlanDriftOwned, Subject: d.Address,
			Message: fmt.Sprintf("%s changed outside Terraform, and %s gives %s; this apply would revert them",
				obj, rule, strings.Join(parts, "; ")),
			NextAction: fmt.Sprintf("let the owner keep them: drop the fields from %s (or terraform state rm it), or change %s; see relcap ownership check", d.Address, rule),
			Facts:      finding.Facts{finding.Of("object", obj), finding.Of("rule", rule)},
		})
	}
	finding.Sort(p.Findings)
}

// forgotten are the addresses the plan lets go of without destroying.
func (p *Summary) forgotten() map[string]bool {
	out := map[string]bool{}
	for _, f := range p.Findings {
		if f.Code == CodePlanForget {
			out[f.Subject] = true
		}
	}
	return out
}

// ReviewAgainstMap reviews a plan against the ownership map: its drift
// (ReviewDrift) and its hand-offs (ReviewHandoffs).
func ReviewAgainstMap(p *Summary, m ownership.Map) {
	ReviewDrift(p, m)
	ReviewHandoffs(p, m)
}

// ReviewHandoffs refuses a plan that deletes or replaces an object the
// map's hand-offs give from Terraform to another owner: Terraform must let
// go of it (a removed block with destroy = false, or terraform state rm),
// and the object stays in the cluster for its new owner. It replaces the
// plan's earlier hand-off findings, so reviewing again is safe.
func ReviewHandoffs(p *Summary, m ownership.Map) {
	p.Findings = slices.DeleteFunc(p.Findings, func(f finding.Finding) bool { return f.Code == CodePlanHandoffDestroys })
	forgotten := p.forgotten()
	for _, c := range p.Changes {
		if !c.Action.Destructive() || forgotten[c.Address] {
			continue
		}
		o := ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformAddress: c.Address, TerraformType: c.Type}
		if c.Object != nil {
			o = *c.Object
		}
		h, ok := m.HandoffFor(o)
		if !ok || h.From != ownership.OwnerTerraform {
			continue
		}
		p.Findings = append(p.Findings, finding.Finding{
			Severity: finding.Blocker, Code: CodePlanHandoffDestroys, Subject: c.Address,
			Message: fmt.Sprintf("this plan would %s %s, which %s:%d hands over from terraform to %s: a hand-off never takes the object from the cluster",
				c.Action, o.Subject(), m.File, h.Line, h.To),
			NextAction: fmt.Sprintf("let Terraform forget it instead: a removed block for %s with lifecycle { destroy = false } (or terraform state rm %s), then plan again", c.Address, c.Address),
			Facts:      finding.Facts{finding.Of("handoff", fmt.Sprintf("%s:%d", m.File, h.Line)), finding.Of("to", string(h.To))},
		})
	}
	finding.Sort(p.Findings)
}

// nameDriftedFields rewrites the drift finding of d, where the plan shows
// its manifest's values, to name each changed field with its values and
// its owner in m: "spec.replicas 5 → 2 (argocd, ownership.yaml:4)".
func nameDriftedFields(p *Summary, d DriftedResource, m ownership.Map) {
	if len(d.Fields) == 0 {
		return
	}
	rule, i := m.RuleFor(*d.Object)
	parts := make([]string, 0, len(d.Fields))
	for _, c := range d.Fields {
		owner := "no rule"
		if i >= 0 {
			owner = fmt.Sprintf("%s, %s:%d", rule.FieldOwner(c.Field), m.File, rule.Line)
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", c, owner))
	}
	const most = 6
	if len(parts) > most {
		parts = append(parts[:most:most], fmt.Sprintf("and %d more", len(d.Fields)-most))
	}
	for j := range p.Findings {
		if f := &p.Findings[j]; f.Code == CodePlanDrift && f.Subject == d.Address {
			f.Message = strings.Join(parts, ", ") + " changed outside Terraform since the last apply; this apply writes Terraform's values back"
		}
	}
}

// withValues is field with the values it changed between, when fields
// (the drift's) name it: "spec.replicas 5 → 2".
func withValues(field string, fields []ownership.FieldChange) string {
	for _, c := range fields {
		if c.Field == field {
			return c.String()
		}
	}
	return field
}

// Refused says why relcap will not apply the plan, whoever approved it:
// the blockers of an errored or incomplete plan, failing checks, and
// drift that would revert another owner's fields. ok is false for a plan
// relcap vouches for.
func (p Summary) Refused() (reason string, refused bool) {
	var reasons []string
	for _, f := range p.Findings {
		if f.Severity == finding.Blocker && slices.Contains(refusing, f.Code) {
			reasons = append(reasons, f.Subject+": "+f.Message)
		}
	}
	if len(reasons) == 0 {
		return "", false
	}
	return strings.Join(reasons, "; "), true
}

// ReviewDocument finishes the review of a plan document the Terraform
// adapter read: its drift against the ownership map, when there is one,
// and an ErrPlanRefused error when it could not be applied as reviewed.
func ReviewDocument(review *Summary, own ownership.Map) error {
	if own.File != "" {
		ReviewAgainstMap(review, own)
	}
	if why, ok := review.Refused(); ok {
		return fmt.Errorf("%w: this plan cannot be applied as reviewed: %s", fault.ErrPlanRefused, why)
	}
	return nil
}

// revOrNone names a revision, or says there is none (as the core's
// messages do).
func revOrNone(rev string) string {
	if rev == "" {
		return "(none)"
	}
	return finding.ShortHash(rev)
}
