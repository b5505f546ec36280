package plain

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/ownership"
)

// envRow and envFinding tag the matrix rows and findings of several
// environments in one JSON document.
type envRow struct {
	Env string `json:"env"`
	ownership.MatrixRow
}

type envFinding struct {
	Env string `json:"env"`
	finding.Finding
}

// envSummary is one environment's line of the --json document.
type envSummary struct {
	Env      string `json:"env"`
	Objects  int    `json:"objects"`
	Findings int    `json:"findings"`
	Blockers int    `json:"blockers"`
	// Sources: how Argo CD's side was read when the live check did not
	// run (ownership.Report.Sources).
	Sources string `json:"sources,omitempty"`
}

// OwnershipJSON is relcap ownership check --json: the matrix and findings
// of every environment checked, each entry naming its environment.
type OwnershipJSON struct {
	Environments []envSummary `json:"environments"`
	Matrix       []envRow     `json:"matrix"`
	Findings     []envFinding `json:"findings"`
	Blockers     int          `json:"blockers"`
}

// OwnershipDocument is the --json document of reports.
func OwnershipDocument(reports []ownership.Report) OwnershipJSON {
	doc := OwnershipJSON{Matrix: []envRow{}, Findings: []envFinding{}}
	for _, r := range reports {
		for _, row := range r.Matrix {
			doc.Matrix = append(doc.Matrix, envRow{r.Env, row})
		}
		for _, f := range r.Findings {
			doc.Findings = append(doc.Findings, envFinding{r.Env, f})
		}
		doc.Environments = append(doc.Environments, envSummary{Env: r.Env, Objects: r.Objects, Findings: len(r.Findings), Blockers: r.Blockers(), Sources: r.Sources})
		doc.Blockers += r.Blockers()
	}
	return doc
}

// PrintOwnership prints one environment's matrix as a table, then its
// findings, most serious first.
func PrintOwnership(w io.Writer, r ownership.Report) {
	w = SafeWriter(w)
	fmt.Fprintf(w, "%s: %d managed object(s), %d resource(s)\n", r.Env, r.Objects, len(r.Matrix))
	if r.Sources != "" {
		fmt.Fprintf(w, "Argo CD: %s\n", r.Sources)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tRULE\tOWNER\tFIELD OWNERS\tWRITTEN BY")
	for _, row := range r.Matrix {
		rule, owner := row.Rule, string(row.Owner)
		if rule == "" {
			rule, owner = "-", "(none)"
		}
		fo := "-"
		if len(row.FieldOwners) > 0 {
			var parts []string
			for _, f := range slices.Sorted(maps.Keys(row.FieldOwners)) {
				parts = append(parts, f+"="+string(row.FieldOwners[f]))
			}
			fo = strings.Join(parts, ", ")
		}
		var writers []string
		for _, wr := range row.Writers {
			s := wr.Via
			if len(wr.Fields) > 0 {
				s += fmt.Sprintf(" (%d field(s)", len(wr.Fields))
				if len(wr.IgnoredFields) > 0 {
					s += fmt.Sprintf(", %d ignored", len(wr.IgnoredFields))
				}
				s += ")"
			}
			writers = append(writers, s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", row.Subject, rule, owner, fo, strings.Join(writers, "; "))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	if len(r.Findings) == 0 {
		fmt.Fprintf(w, "%s: every managed object and field has one owner\n", r.Env)
		return
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "%s %s %s\n", strings.ToUpper(f.Severity.String()), f.Code, f.Subject)
		fmt.Fprintf(w, "  %s\n", f.Message)
		if len(f.Facts) > 0 {
			fmt.Fprintf(w, "  evidence: %s\n", f.Facts)
		}
		if f.NextAction != "" {
			fmt.Fprintf(w, "  next: %s\n", f.NextAction)
		}
	}
	var warnings, notes int
	for _, f := range r.Findings {
		switch f.Severity {
		case finding.Warning:
			warnings++
		case finding.Info:
			notes++
		}
	}
	fmt.Fprintf(w, "\n%s: %d blocker(s), %d warning(s)", r.Env, r.Blockers(), warnings)
	if notes > 0 {
		fmt.Fprintf(w, ", %d note(s)", notes)
	}
	fmt.Fprintln(w)
}

// PrintOwnerships prints each environment's ownership report, a blank
// line between two.
func PrintOwnerships(w io.Writer, reports []ownership.Report) {
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(w)
		}
		PrintOwnership(w, r)
	}
}
