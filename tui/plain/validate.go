package plain

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/finding"
)

// PrintProblems prints every problem of a configuration, one per line,
// and how many there are; command is what to run again once fixed.
func PrintProblems[P any](w io.Writer, problems []P, command string) {
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	fmt.Fprintf(w, "%d problem(s): fix them and run %s again\n", len(problems), command)
}

// ValidDocument is relcap validate --json for a valid configuration;
// people is -1 without a people file.
func ValidDocument(p *workflow.Project, people int) map[string]any {
	out := map[string]any{"valid": true, "file": p.File, "app": p.App,
		"environments": len(p.Environments), "ownership_rules": len(p.Ownership.Rules), "handoffs": len(p.Ownership.Handoffs)}
	if p.People != "" {
		out["people"] = people
	}
	return out
}

// PrintValid says what relcap validate found valid: the environments in
// promotion order, the ownership map, the people file.
func PrintValid(w io.Writer, p *workflow.Project, people int) {
	names := ""
	for i, e := range p.Environments {
		if i > 0 {
			names += " → "
		}
		names += e.Name
	}
	fmt.Fprintf(w, "ok: %s: app %s, environments %s\n", Rel(p.File), p.App, names)
	fmt.Fprintf(w, "ok: %s: %d rule(s), %d hand-off(s)\n", Rel(p.OwnershipFile), len(p.Ownership.Rules), len(p.Ownership.Handoffs))
	if p.People != "" {
		fmt.Fprintf(w, "ok: %s: %d principal(s)\n", Rel(p.People), people)
	}
}

// Rel shortens a path to the working directory when it is below it.
func Rel(path string) string {
	if r, err := filepath.Rel(".", path); err == nil && !filepath.IsAbs(r) && len(r) < len(path) && r[0] != '.' {
		return r
	}
	return path
}

// PrintCustody says, per environment, where its state lives and each
// custody blocker and warning the plan review will show.
func PrintCustody(w io.Writer, results []custody.Result) {
	for _, r := range results {
		where := r.Location
		if where == "" {
			where = "a place not known from here"
		}
		fmt.Fprintf(w, "custody: %s: %s backend, state in %s\n", r.Env, r.Backend, where)
		for _, f := range r.Findings {
			if f.Severity == finding.Info {
				continue
			}
			fmt.Fprintf(w, "  %s %s: %s\n", f.Severity, f.Code, f.Message)
			if f.NextAction != "" {
				fmt.Fprintf(w, "    next: %s\n", f.NextAction)
			}
		}
	}
}
