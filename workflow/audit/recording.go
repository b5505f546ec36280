package audit

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// NoRecording says why a session has no screen recording on this machine:
// it has none (only cockpit sessions do), or its journal, read from the
// ledger (from), names recordings that stay on the machine that recorded
// them.
func NoRecording(id string, entries []journal.Entry, from JournalSource) error {
	var names []string
	for _, e := range entries {
		var rec journal.ScreenRecorded
		if from == JournalFromLedger && e.Kind == journal.KindScreenRecorded && json.Unmarshal(e.Data, &rec) == nil {
			names = append(names, rec.File)
		}
	}
	if len(names) > 0 {
		return fmt.Errorf("%w: session %s was recorded on another machine; its screen recording (%s) stays there: replay it on that machine", fault.ErrUsage, id, strings.Join(names, ", "))
	}
	return fmt.Errorf("%w: session %s has no screen recording (only cockpit sessions do)", fault.ErrUsage, id)
}
