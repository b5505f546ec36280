package report

import (
	"math"
	"slices"
	"time"

	"github.com/relcap/relcap/workflow/rehearsal"
)

// RehearsalFigures are one environment's recovery drills (relcap
// rehearse) in the period: how many ran and how they ended, the medians
// of time to detect and time to recover (of the drills that got that
// far), and, per drill, how long ago it last passed, over the whole
// ledger up to the report's end, so a drill not rehearsed in the period
// still shows its age.
type RehearsalFigures struct {
	Env       string `json:"env"`
	Run       int    `json:"run"`
	Passed    int    `json:"passed"`
	Failed    int    `json:"failed"`
	Abandoned int    `json:"abandoned"`
	Running   int    `json:"running"`
	// TimeToDetect is injected → detected; TimeToRecover detected →
	// converged on the baseline again.
	TimeToDetect  Stats `json:"time_to_detect"`
	TimeToRecover Stats `json:"time_to_recover"`
	// TimeToRestore is the state-restore drill's back up → restore →
	// proof, of the drills that proved a restore.
	TimeToRestore Stats            `json:"time_to_restore"`
	Drills        []DrillFreshness `json:"drills"`
}

// DrillFreshness is when a drill last passed in an environment.
type DrillFreshness struct {
	Drill rehearsal.Drill `json:"drill"`
	// LastPassed is zero, and DaysSince -1, when it never passed.
	LastPassed time.Time `json:"last_passed,omitzero"`
	DaysSince  int       `json:"days_since_passed"`
}

// Never reports whether the drill never passed.
func (f DrillFreshness) Never() bool { return f.LastPassed.IsZero() }

// rehearsalFigures builds the figures of every environment that has a
// rehearsal (or, with o.Env, that one), in the project's order of first
// appearance.
func rehearsalFigures(rs []rehearsal.Rehearsal, o Options) []RehearsalFigures {
	end := o.To
	if !o.Now.IsZero() && (end.IsZero() || o.Now.Before(end)) {
		end = o.Now
	}
	var envs []string
	by := map[string]*RehearsalFigures{}
	detect, recover, restore := map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]time.Duration{}
	last := map[string]map[rehearsal.Drill]time.Time{}
	for _, r := range rs {
		if o.Env != "" && r.Env != o.Env {
			continue
		}
		if !end.IsZero() && !r.StartedAt.Before(end) {
			continue
		}
		f, ok := by[r.Env]
		if !ok {
			f = &RehearsalFigures{Env: r.Env}
			by[r.Env], last[r.Env] = f, map[rehearsal.Drill]time.Time{}
			envs = append(envs, r.Env)
		}
		if r.State == rehearsal.StatePassed && r.FinishedAt.After(last[r.Env][r.Drill]) {
			last[r.Env][r.Drill] = r.FinishedAt
		}
		if !in(r.StartedAt, o.From, o.To) {
			continue
		}
		f.Run++
		switch r.State {
		case rehearsal.StatePassed:
			f.Passed++
		case rehearsal.StateFailed:
			f.Failed++
		case rehearsal.StateAbandoned:
			f.Abandoned++
		default:
			f.Running++
		}
		if d, ok := r.TimeToDetect(); ok {
			detect[r.Env] = append(detect[r.Env], d)
		}
		if d, ok := r.TimeToRecover(); ok {
			recover[r.Env] = append(recover[r.Env], d)
		}
		if r.Restore != nil && r.Detected == rehearsal.VerdictStateRestored {
			restore[r.Env] = append(restore[r.Env], r.Restore.Total())
		}
	}
	slices.Sort(envs)
	out := make([]RehearsalFigures, 0, len(envs))
	for _, env := range envs {
		f := by[env]
		f.TimeToDetect, f.TimeToRecover, f.TimeToRestore = NewStats(detect[env]), NewStats(recover[env]), NewStats(restore[env])
		for _, d := range rehearsal.AllDrills {
			fr := DrillFreshness{Drill: d, DaysSince: -1}
			if at, ok := last[env][d]; ok {
				fr.LastPassed = at
				fr.DaysSince = int(math.Floor(end.Sub(at).Hours() / 24))
			}
			f.Drills = append(f.Drills, fr)
		}
		out = append(out, *f)
	}
	return out
}
