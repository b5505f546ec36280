package plain

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/tfplan"
)

// PrintPlan writes a plan review for a terminal or a CI log: counts, every
// change with its flags and the attributes forcing replacement, output
// changes, findings and the fingerprint. Attribute values are not printed
// here (the cockpit's detail pane shows them, masked); the review is about
// what changes and how risky it is.
func PrintPlan(w io.Writer, p tfplan.Summary) error {
	w = SafeWriter(w)
	c := p.Counts
	var b strings.Builder
	if p.Env != "" {
		fmt.Fprintf(&b, "Plan for %s", p.Env)
	} else {
		b.WriteString("Plan review")
	}
	if p.TerraformVersion != "" {
		fmt.Fprintf(&b, " (terraform %s)", p.TerraformVersion)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  %d to create, %d to update, %d to delete, %d to replace (%d delete-first, %d create-first), %d to read\n",
		c.Create, c.Update, c.Delete, c.ReplaceDeleteFirst+c.ReplaceCreateFirst, c.ReplaceDeleteFirst, c.ReplaceCreateFirst, c.Read)
	if !p.HasChanges() {
		b.WriteString("  no changes: the infrastructure matches the configuration\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(p.Changes) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ACTION\tRESOURCE\tFLAGS")
		for _, ch := range p.Changes {
			if ch.Action == tfplan.ActionNoop {
				continue
			}
			flags := strings.Join(ch.Flags, ",")
			if flags == "" {
				flags = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", ch.Action, ch.Address, flags)
			if len(ch.ReplacePaths) > 0 {
				fmt.Fprintf(tw, "  \t  forces replacement: %s\t\n", strings.Join(ch.ReplacePaths, ", "))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(p.Drift) > 0 {
		fmt.Fprintln(w, "\n  Changed outside Terraform since the last apply (this apply writes it back):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, d := range p.Drift {
			what := "-"
			if o := d.Object; o != nil {
				what = strings.TrimPrefix(o.Group+"/", "/") + o.Kind + " " + strings.TrimPrefix(o.Namespace+"/", "/") + o.Name
			}
			paths := make([]string, 0, len(d.Attributes))
			for _, a := range d.Attributes {
				paths = append(paths, a.Path)
			}
			fmt.Fprintf(tw, "  %s	%s	%s	%s\n", d.Action, d.Address, what, strings.Join(paths, ", "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(p.Actions) > 0 {
		fmt.Fprintln(w, "\n  Actions the apply invokes:")
		for _, a := range p.Actions {
			trigger := "invoked by the plan"
			if a.Trigger != "" {
				trigger = "on " + a.Event + " of " + a.Trigger
			}
			fmt.Fprintf(w, "  %s (%s), %s\n", a.Address, a.Type, trigger)
		}
	}
	if len(p.Checks) > 0 {
		n := map[tfplan.CheckStatus]int{}
		for _, c := range p.Checks {
			n[c.Status]++
		}
		fmt.Fprintf(w, "\n  Checks: %d pass, %d fail, %d error, %d unknown\n", n[tfplan.CheckPass], n[tfplan.CheckFail], n[tfplan.CheckError], n[tfplan.CheckUnknown])
	}
	if len(p.Outputs) > 0 {
		fmt.Fprintln(w)
		for _, o := range p.Outputs {
			s := ""
			if o.Sensitive {
				s = " " + tfplan.SensitiveMask
			}
			fmt.Fprintf(w, "  output %s: %s%s\n", o.Name, o.Action, s)
		}
	}
	if len(p.Findings) > 0 {
		fmt.Fprintln(w)
		for _, f := range p.Findings {
			fmt.Fprintf(w, "  %s\n", f)
			if docs := f.Fact("docs"); docs != "" {
				fmt.Fprintf(w, "      see %s\n", docs)
			}
		}
	}
	if p.Fingerprint != "" {
		fmt.Fprintf(w, "\nFingerprint: %s\n", p.Fingerprint)
		in := p.Inputs
		dirty := ""
		if in.Dirty {
			dirty = " (dirty working tree)"
		}
		rev := in.Revision
		if rev == "" {
			rev = "(not in Git)"
		}
		state := "none yet"
		if in.StateLineage != "" {
			state = fmt.Sprintf("%s serial %d", workflow.ShortHash(in.StateLineage), in.StateSerial)
		}
		lock := "none"
		if in.LockFileHash != "" {
			lock = workflow.ShortHash(in.LockFileHash)
		}
		fmt.Fprintf(w, "  bound to: revision %s%s, workspace %s, state %s, %d var file(s), lock file %s\n",
			rev, dirty, in.Workspace, state, len(in.VarFileHashes), lock)
	}
	return nil
}
