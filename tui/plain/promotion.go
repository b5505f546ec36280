package plain

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/forge"
)

// PrintPromotion summarises what a promotion established, for the captain.
func PrintPromotion(w io.Writer, r *workflow.Release) {
	w = SafeWriter(w)
	st := r.Step(workflow.StepPromotion)
	for _, e := range st.Evidence {
		switch d := e.Detail.(type) {
		case evidence.DigestResolved:
			fmt.Fprintf(w, "digest     %s\n           %s, %d bytes, created %s", e.Subject, d.MediaType, d.Size, d.Created.UTC().Format(time.RFC3339))
			if len(d.Platforms) > 0 {
				fmt.Fprintf(w, ", platforms %s", d.Platforms)
			}
			fmt.Fprintln(w)
		case evidence.DigestVerified:
			fmt.Fprintf(w, "copied     into %s: verified, signed %t, %d referrer(s), %d blob(s) uploaded\n", d.Repository, d.Signed, d.Referrers, d.BlobsUploaded)
		case evidence.EnvPinned:
			fmt.Fprintf(w, "pinned     on branch %s at %s\n", d.Branch, e.Subject)
		case evidence.EnvLanded:
			fmt.Fprintf(w, "landed     on %s at %s (the revision Argo CD must sync)\n", d.Branch, e.Subject)
		}
	}
	if pr := r.Checkpoints.PullRequest; pr != nil {
		PrintPullRequest(w, pr)
	}
	if diff := r.Checkpoints.EnvDiff; diff != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(diff, "\n"))
	}
	fmt.Fprintf(w, "\nrelease %s: promotion %s", r.ID, st.Status)
	if st.Message != "" {
		fmt.Fprintf(w, ": %s", st.Message)
	}
	fmt.Fprintln(w)
}

// PrintPullRequest says where the promotion's pull request is and how its
// reviews counted, so a headless captain knows where to send reviewers.
func PrintPullRequest(w io.Writer, pr *forge.PullRequestRecord) {
	w = SafeWriter(w)
	fmt.Fprintf(w, "pull request #%d %s (%s into %s)", pr.Number, pr.URL, pr.Head, pr.Base)
	switch {
	case pr.MergeCommit != "":
		by := "by relcap"
		if !pr.ByRelcap {
			by = "on the forge"
			if pr.MergedBy != "" {
				by += " by " + pr.MergedBy
			}
		}
		fmt.Fprintf(w, ": merged %s at %s", by, workflow.ShortHash(pr.MergeCommit))
	case pr.State != "":
		fmt.Fprintf(w, ": %s", pr.State)
	}
	fmt.Fprintln(w)
	for _, v := range pr.Reviews {
		who := v.Login
		if v.Principal != v.Login {
			who += " → " + v.Principal
		}
		verdict := "counted"
		if !v.Counted {
			verdict = "not counted: " + v.Why
		}
		fmt.Fprintf(w, "  review   %s %s on %s: %s\n", who, v.State, workflow.ShortHash(v.Commit), verdict)
	}
}
