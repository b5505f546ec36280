package workflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/ownership"
)

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
)

// refusing are the codes that refuse a plan for apply.
var refusing = []string{CodePlanErrored, CodePlanIncomplete, CodePlanCheckFailed, CodePlanDriftOwned}

// reviewExtras adds the findings of what a plan shows besides its changes.
func reviewExtras(p *PlanSummary) {
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
func ReviewDrift(p *PlanSummary, m ownership.Map) {
	p.Findings = slices.DeleteFunc(p.Findings, func(f finding.Finding) bool { return f.Code == CodePlanDriftOwned })
	for _, d := range p.Drift {
		if d.Object == nil {
			continue
		}
		foreign, rule := ownership.ForeignFields(m, *d.Object)
		if len(foreign) == 0 {
			continue
		}
		owners := map[ownership.Owner][]string{}
		var names []ownership.Owner
		for _, f := range foreign {
			if _, ok := owners[f.Owner]; !ok {
				names = append(names, f.Owner)
			}
			owners[f.Owner] = append(owners[f.Owner], f.Field)
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

// Refused says why relcap will not apply the plan, whoever approved it:
// the blockers of an errored or incomplete plan, failing checks, and
// drift that would revert another owner's fields. ok is false for a plan
// relcap vouches for.
func (p PlanSummary) Refused() (reason string, refused bool) {
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
