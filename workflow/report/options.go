package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// Reports (issue 9) are pure functions of ReportData and ReportOptions:
// the store reads the period in bulk (ReportSource), these functions count,
// and the renderers in report_format.go print. Nothing here reads a clock,
// so the same ledger always gives the same report for the same Now.

// DefaultAbandonAfter is how long a release may go without an update before
// reports call it stalled. A release that is not done (not converged,
// succeeded, rolled back, ended or abandoned) and whose last update is more than this long before
// the report's Now counts as failed: nobody finished it, and counting it as
// "in progress" forever would flatter the failure rate.
const DefaultAbandonAfter = 7 * 24 * time.Hour

// Options says what a report covers and how it counts.
type Options struct {
	// From is inclusive and To exclusive, on release CreatedAt; both are
	// required (the command supplies defaults).
	From, To time.Time
	// Location is the time zone months, weeks and printed times are in;
	// nil means UTC. A release created at 23:30 UTC on 31 January belongs
	// to February in Europe/Berlin.
	Location *time.Location
	// Now is when the report is made: the end of still-running releases'
	// elapsed time and the reference for abandonment.
	Now time.Time
	// Env narrows the report to one environment; Person to one person's
	// effort (the per-person view).
	Env, Person string
	// BaselineHoursPerRelease is effort.baseline_hours_per_release; 0 means
	// none is configured and the before/after comparison is left out.
	BaselineHoursPerRelease float64
	// BaselineSource says where the baseline came from, for the conditions
	// printed beside the comparison ("relcap.yaml
	// effort.baseline_hours_per_release", "--baseline"); empty means
	// effort.baseline_hours_per_release.
	BaselineSource string
	// ReleasesPerMonth is effort.releases_per_month, the rate the
	// before/after table states hours per month at; 0 means the period's
	// own rate. RateSource says where it came from.
	ReleasesPerMonth float64
	RateSource       string
	// ProdEnv is the environment digest lead time ends in: the last of the
	// promotion order. Env, when set, takes its place.
	ProdEnv string
	// AbandonAfter overrides DefaultAbandonAfter when positive.
	AbandonAfter time.Duration
}

func (o Options) loc() *time.Location {
	if o.Location == nil {
		return time.UTC
	}
	return o.Location
}

func (o Options) baselineSource() string {
	if o.BaselineSource == "" {
		return "effort.baseline_hours_per_release"
	}
	return o.BaselineSource
}

func (o Options) abandonAfter() time.Duration {
	if o.AbandonAfter > 0 {
		return o.AbandonAfter
	}
	return DefaultAbandonAfter
}

// Validate refuses a period that selects nothing by construction.
func (o Options) Validate() error {
	switch {
	case o.From.IsZero() || o.To.IsZero():
		return fmt.Errorf("%w: a report needs a period (--from and --to)", fault.ErrUsage)
	case !o.From.Before(o.To):
		return fmt.Errorf("%w: report period is empty: --from %s is not before --to %s", fault.ErrUsage,
			o.From.In(o.loc()).Format(time.RFC3339), o.To.In(o.loc()).Format(time.RFC3339))
	case o.ReleasesPerMonth < 0:
		return fmt.Errorf("%w: releases per month cannot be negative", fault.ErrUsage)
	case o.BaselineHoursPerRelease < 0:
		return fmt.Errorf("%w: baseline hours per release cannot be negative", fault.ErrUsage)
	}
	return nil
}

// Counted reports whether a release record counts as a release in reports.
// Releases, promotions and rollbacks do; break-glass records do not: they
// are emergency access, not a release, and their effort is not release
// coordination. A sandbox release (relcap demo's) is practice: never a
// release, saved hours or a deployment.
func Counted(f ReleaseFact) bool {
	if f.Sandbox {
		return false
	}
	switch f.Kind {
	case workflow.KindRelease, workflow.KindPromotion, workflow.KindRollback:
		return true
	}
	return false
}

// ReleaseOutcome is how a release ended, as reports count it.
type ReleaseOutcome string

// Outcomes. Failed, RolledBack and Stalled are all failures. Abandoned (a
// person ended the release before it shipped, with a reason) is not: it is
// neither a failure nor a deployment.
const (
	OutcomeSucceeded  ReleaseOutcome = "succeeded"
	OutcomeFailed     ReleaseOutcome = "failed"
	OutcomeRolledBack ReleaseOutcome = "rolled-back"
	OutcomeAbandoned  ReleaseOutcome = "abandoned"
	// OutcomeStalled: not done, and no update for longer than the
	// abandon-after rule: nobody finished it nor abandoned it.
	OutcomeStalled    ReleaseOutcome = "stalled"
	OutcomeInProgress ReleaseOutcome = "in-progress"
)

// Failure reports whether the outcome counts as a failed release.
func (o ReleaseOutcome) Failure() bool {
	return o == OutcomeFailed || o == OutcomeRolledBack || o == OutcomeStalled
}

// OutcomeOf classifies a release at now. A release that is not done and
// was last updated more than abandonAfter before now is stalled; exactly
// abandonAfter is still in progress.
func OutcomeOf(f ReleaseFact, now time.Time, abandonAfter time.Duration) ReleaseOutcome {
	switch f.Status {
	case workflow.ReleaseConverged, workflow.ReleaseSucceeded, workflow.ReleaseEnded:
		return OutcomeSucceeded
	case workflow.ReleaseAbandoned:
		return OutcomeAbandoned
	case workflow.ReleaseRolledBack:
		return OutcomeRolledBack
	case workflow.ReleaseFailed:
		return OutcomeFailed
	}
	last := f.UpdatedAt
	if last.IsZero() {
		last = f.CreatedAt
	}
	if now.Sub(last) > abandonAfter {
		return OutcomeStalled
	}
	return OutcomeInProgress
}

// ElapsedOf is the release's wall-clock time, reported beside staff effort
// and never added to it: created → ended; for a release that stopped
// without an end time (failed, abandoned) created → last update; for one
// still running created → now, with open set.
func ElapsedOf(f ReleaseFact, outcome ReleaseOutcome, now time.Time) (d time.Duration, open bool) {
	end := f.EndedAt
	switch {
	case !end.IsZero():
	case outcome == OutcomeInProgress:
		end, open = now, true
	default:
		end = f.UpdatedAt
	}
	if end.Before(f.CreatedAt) {
		return 0, open
	}
	return end.Sub(f.CreatedAt), open
}

// FailureDetectedAt is when a failed release's failure became known: the
// end of its first failed or blocked step; for a rolled-back or abandoned
// release (or a failure without step times) its last update, which for a
// rolled-back release is the moment the rollback started.
func FailureDetectedAt(f ReleaseFact) time.Time {
	if f.Status != workflow.ReleaseRolledBack {
		var first time.Time
		for _, s := range f.Steps {
			if (s.Status == workflow.Failed || s.Status == workflow.Blocked) && !s.EndedAt.IsZero() && (first.IsZero() || s.EndedAt.Before(first)) {
				first = s.EndedAt
			}
		}
		if !first.IsZero() {
			return first
		}
	}
	if f.UpdatedAt.IsZero() {
		return f.CreatedAt
	}
	return f.UpdatedAt
}

// Stats summarises durations per item. Median and P90 use the nearest-rank
// definition: sort ascending and take the value at 1-based rank
// ceil(p/100 × n). It always returns an observed value (never an
// interpolation), so "median 1 h" means some release took exactly 1 h;
// for an even count the median is the lower of the two middle values.
type Stats struct {
	Count  int      `json:"count"`
	Median Duration `json:"median_seconds"`
	P90    Duration `json:"p90_seconds"`
	Max    Duration `json:"max_seconds"`
	Total  Duration `json:"total_seconds"`
}

// NewStats summarises ds; it reorders ds in place. Only two ranks are
// needed, so it selects them (quickselect, linear on average) rather than
// sorting: a report of 100,000 releases takes a dozen of these.
func NewStats(ds []time.Duration) Stats {
	s := Stats{Count: len(ds)}
	if len(ds) == 0 {
		return s
	}
	total, top := time.Duration(0), ds[0]
	for _, d := range ds {
		total += d
		top = max(top, d)
	}
	s.Total, s.Max = Duration(total), Duration(top)
	// After selecting rank r90, everything before it is no greater, so the
	// median (r50 ≤ r90) is selected among those.
	r50, r90 := nearestRank(len(ds), 50), nearestRank(len(ds), 90)
	selectRank(ds, r90-1)
	s.P90 = Duration(ds[r90-1])
	selectRank(ds[:r90], r50-1)
	s.Median = Duration(ds[r50-1])
	return s
}

// selectRank reorders ds so that ds[k] is the value sorting would put
// there, with no greater value before it and no smaller one after. It
// falls back to sorting the part left when partitioning goes badly.
func selectRank(ds []time.Duration, k int) {
	lo, hi := 0, len(ds) // ds[k] is in ds[lo:hi]
	for budget := 64; hi-lo > 16; budget-- {
		if budget == 0 {
			slices.Sort(ds[lo:hi])
			return
		}
		// Median of three as the pivot, then a three-way partition:
		// [lo,lt) < p, [lt,gt) == p, [gt,hi) > p. Durations repeat a lot
		// (zero wait, whole minutes off-tool), so equal values must not
		// make it quadratic.
		a, b, c := ds[lo], ds[lo+(hi-lo)/2], ds[hi-1]
		p := max(min(a, b), min(max(a, b), c))
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch d := ds[i]; {
			case d < p:
				ds[lt], ds[i] = ds[i], ds[lt]
				lt++
				i++
			case d > p:
				gt--
				ds[gt], ds[i] = ds[i], ds[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return
		}
	}
	slices.Sort(ds[lo:hi])
}

// NearestRank returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method: the value at 1-based rank ceil(p × n / 100). It
// works in integers so that, say, the median of 40 values is exactly the
// 20th.
func NearestRank(sorted []time.Duration, p int) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	return sorted[nearestRank(n, p)-1]
}

// nearestRank is the 1-based rank of the p-th percentile of n > 0 values.
func nearestRank(n, p int) int {
	rank := (p*n + 99) / 100
	return max(1, min(rank, n))
}

// Duration is a duration that JSON carries as exact seconds (a
// decimal number, nanosecond precision) rather than Go's nanosecond
// integer, so other tools read it without knowing Go.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Seconds is the duration in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// Minutes is the duration rounded to the nearest whole minute (halves
// away from zero): what the table, Markdown and CSV formats print.
func (d Duration) Minutes() int64 {
	return int64(math.Round(float64(d) / float64(time.Minute)))
}

// MarshalJSON writes seconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(d).Seconds(), 'f', -1, 64), nil
}

// UnmarshalJSON reads seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration in seconds: %w", err)
	}
	*d = Duration(math.Round(f * float64(time.Second)))
	return nil
}

// monthKey is the calendar month of t in loc, "2006-01".
func monthKey(t time.Time, loc *time.Location) string { return t.In(loc).Format("2006-01") }

// monthSpan is one calendar month the period touches.
type monthSpan struct {
	key        string
	start, end time.Time // the month's bounds in loc
	partial    bool      // the period covers only part of it
}

// monthsOf lists the calendar months (in loc) that [from, to) touches.
func monthsOf(from, to time.Time, loc *time.Location) []monthSpan {
	var out []monthSpan
	f := from.In(loc)
	start := time.Date(f.Year(), f.Month(), 1, 0, 0, 0, 0, loc)
	for start.Before(to) {
		end := start.AddDate(0, 1, 0)
		out = append(out, monthSpan{key: start.Format("2006-01"), start: start, end: end,
			partial: from.After(start) || to.Before(end)})
		start = end
	}
	return out
}

// weekSpan is one Monday-to-Monday week (in loc) the period touches.
type weekSpan struct {
	key        string // ISO week, "2006-W01"
	start, end time.Time
}

// weeksOf lists the weeks (Monday 00:00 in loc) that [from, to) touches.
func weeksOf(from, to time.Time, loc *time.Location) []weekSpan {
	var out []weekSpan
	f := from.In(loc)
	back := (int(f.Weekday()) + 6) % 7 // days since Monday
	start := time.Date(f.Year(), f.Month(), f.Day()-back, 0, 0, 0, 0, loc)
	for start.Before(to) {
		end := start.AddDate(0, 0, 7)
		y, w := start.ISOWeek()
		out = append(out, weekSpan{key: fmt.Sprintf("%04d-W%02d", y, w), start: start, end: end})
		start = end
	}
	return out
}

// in reports whether t is in [from, to).
func in(t, from, to time.Time) bool { return !t.Before(from) && t.Before(to) }
