// Package offtool records coordination time a person spent outside relcap
// (meetings, chat) and logs by hand (relcap effort log): checked, stored
// against a release whether or not the ledger knows it yet, and journaled.
// It is a feature beside the release core, which it acts through
// (workflow.Deps: the ledger, the journal, the clock, the actor); nothing
// in a release's run needs it.
package offtool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// Request is coordination time spent outside relcap: meetings, chat.
type Request struct {
	ReleaseID string
	Minutes   float64
	What      string
	Person    string // defaults to the actor
	At        time.Time
}

// Log records off-tool coordination time against a release, as d's actor
// (or req.Person) through d's ledger and journal. The release may not be
// in the ledger yet (a planning meeting comes first); known reports
// whether it is.
func Log(ctx context.Context, d workflow.Deps, req Request) (entry effort.Entry, known bool, err error) {
	what := strings.TrimSpace(req.What)
	switch {
	case strings.TrimSpace(req.ReleaseID) == "":
		return effort.Entry{}, false, fmt.Errorf("%w: --release is required", fault.ErrUsage)
	case req.Minutes <= 0:
		return effort.Entry{}, false, fmt.Errorf("%w: --minutes must be more than 0, got %g", fault.ErrUsage, req.Minutes)
	case req.Minutes > 24*60:
		return effort.Entry{}, false, fmt.Errorf("%w: --minutes %g is more than a day; log each day separately", fault.ErrUsage, req.Minutes)
	case what == "":
		return effort.Entry{}, false, fmt.Errorf("%w: --what is required: say what the time was spent on", fault.ErrUsage)
	}
	person := req.Person
	if person == "" {
		person = d.Actor
	}
	at := req.At
	if at.IsZero() {
		at = d.Clock.Now()
	}
	entry = effort.Entry{ReleaseID: req.ReleaseID, Person: person, Role: effort.RoleCaptain, Step: effort.WholeRelease, Kind: effort.OffTool,
		Duration: time.Duration(req.Minutes * float64(time.Minute)), At: at, Note: what}
	_, err = d.Ledger.LoadRelease(ctx, req.ReleaseID)
	switch {
	case err == nil:
		known = true
	case errors.Is(err, fault.ErrNotFound):
	default:
		return effort.Entry{}, false, err
	}
	if err := d.Ledger.RecordEffort(ctx, []effort.Entry{entry}); err != nil {
		return effort.Entry{}, known, fmt.Errorf("record effort: %w", err)
	}
	if _, err := d.Journal.Append(ctx, journal.EffortLogged{Entry: entry}); err != nil {
		return entry, known, fmt.Errorf("journal %s: %w", journal.KindEffortLogged, err)
	}
	return entry, known, nil
}
