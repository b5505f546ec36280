package plain

import (
	"fmt"
	"io"
	"strings"

	"github.com/relcap/relcap/workflow/setup"
)

// PrintFound says what relcap init found before it asks anything.
func PrintFound(out io.Writer, d setup.Discovery) {
	fmt.Fprintf(out, "relcap init in %s\n", d.Dir)
	fmt.Fprintf(out, "  Terraform roots: %d\n", len(d.Roots))
	for _, r := range d.Roots {
		var what []string
		if r.Backend {
			what = append(what, "backend")
		}
		if r.Providers {
			what = append(what, "providers")
		}
		suffix := ""
		if len(what) > 0 {
			suffix = " (" + strings.Join(what, ", ") + ")"
		}
		fmt.Fprintf(out, "    %s%s\n", Rel(r.Dir), suffix)
	}
	fmt.Fprintf(out, "  environment repositories: %d\n", len(d.Repos))
	for _, r := range d.Repos {
		fmt.Fprintf(out, "    %s: %d files pin images, %d Argo CD applications\n", Rel(r.Dir), len(r.Files), len(r.Apps))
	}
	if d.Server != "" {
		fmt.Fprintf(out, "  Argo CD at %s: %d applications\n", d.Server, len(d.Apps))
	}
}

// PrintInit says what relcap init wrote and what to check.
func PrintInit(out io.Writer, res setup.Result) {
	for _, n := range res.Notes {
		fmt.Fprintln(out, "note: "+n)
	}
	for _, p := range res.Written {
		fmt.Fprintf(out, "wrote %s\n", Rel(p))
	}
	if len(res.Plan.Envs) == 1 {
		fmt.Fprint(out, "1 environment: ")
	} else {
		fmt.Fprintf(out, "%d environments: ", len(res.Plan.Envs))
	}
	names := make([]string, len(res.Plan.Envs))
	for i, e := range res.Plan.Envs {
		names[i] = e.Name
	}
	fmt.Fprintln(out, strings.Join(names, " → "))
}

// PrintInitNext says what to run after relcap init.
func PrintInitNext(out io.Writer) {
	fmt.Fprintln(out, "next: relcap validate, then relcap ownership check")
}
