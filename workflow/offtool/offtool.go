// Package offtool records coordination time a person spent outside relcap
// (meetings, chat) and logs by hand (relcap effort log): checked, stored
// against a release the ledger holds, and journaled.
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
// (or req.Person) through d's ledger and journal. The release must be in
// the ledger: time logged against a mistyped ID would count for no
// release in any report, so it is refused before anything is recorded.
func Log(ctx context.Context, d workflow.Deps, req Request) (effort.Entry, error) {
	what := strings.TrimSpace(req.What)
	switch {
	case strings.TrimSpace(req.ReleaseID) == "":
		return effort.Entry{}, fmt.Errorf("%w: --release is required", fault.ErrUsage)
	case req.Minutes <= 0:
		return effort.Entry{}, fmt.Errorf("%w: --minutes must be more than 0, got %g", fault.ErrUsage, req.Minutes)
	case req.Minutes > 24*60:
		return effort.Entry{}, fmt.Errorf("%w: --minutes %g is more than a day; log each day separately", fault.ErrUsage, req.Minutes)
	case what == "":
		return effort.Entry{}, fmt.Errorf("%w: --what is required: say what the time was spent on", fault.ErrUsage)
	}
	person := req.Person
	if person == "" {
		person = d.Actor
	}
	at := req.At
	if at.IsZero() {
		at = d.Clock.Now()
	}
	entry := effort.Entry{ReleaseID: req.ReleaseID, Person: person, Role: effort.RoleCaptain, Step: effort.WholeRelease, Kind: effort.OffTool,
		Duration: time.Duration(req.Minutes * float64(time.Minute)), At: at, Note: what}
	if _, err := d.Ledger.LoadRelease(ctx, req.ReleaseID); errors.Is(err, fault.ErrNotFound) {
		return effort.Entry{}, fmt.Errorf("%w: --release %s: no such release in the ledger; relcap journal list shows the releases recorded (log the time once the release has started)", fault.ErrUsage, req.ReleaseID)
	} else if err != nil {
		return effort.Entry{}, err
	}
	if err := d.Ledger.RecordEffort(ctx, []effort.Entry{entry}); err != nil {
		return effort.Entry{}, fmt.Errorf("record effort: %w", err)
	}
	if _, err := d.Journal.Append(ctx, journal.EffortLogged{Entry: entry}); err != nil {
		return entry, fmt.Errorf("journal %s: %w", journal.KindEffortLogged, err)
	}
	return entry, nil
}
