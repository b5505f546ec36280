package report

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
)

// Effort is `relcap report effort`: the staff time releases cost,
// with elapsed time beside it and the before/after comparison against the
// configured baseline.
//
// Staff effort is active plus off-tool time of people. Machine wait is
// reported beside it and never part of it; so is elapsed time.
type Effort struct {
	GeneratedAt time.Time `json:"generated_at"`
	From        time.Time `json:"from"`
	To          time.Time `json:"to"`
	TimeZone    string    `json:"time_zone"`
	Env         string    `json:"env,omitempty"`
	Person      string    `json:"person,omitempty"`
	// AbandonAfter is the rule used: no update for longer than this means
	// stalled, which counts as failed.
	AbandonAfter Duration `json:"abandon_after_seconds"`
	// Empty is true when no release was created in the period; Message then
	// says so in words.
	Empty   bool          `json:"empty"`
	Message string        `json:"message,omitempty"`
	Counts  ReleaseCounts `json:"releases"`
	// Coverage says for which releases, people and steps staff effort was
	// measured. Staff and active figures per release, by role, by step and
	// the before/after comparison are over measured releases only: a
	// release nobody measured has no staff figure, not a zero one.
	Coverage Coverage `json:"coverage"`

	// Per-release statistics: staff and active over the measured releases
	// (Coverage), off-tool, machine wait and elapsed over all counted ones.
	Staff   Stats `json:"staff_per_release"`
	Active  Stats `json:"active_per_release"`
	OffTool Stats `json:"off_tool_per_release"`
	Wait    Stats `json:"machine_wait_per_release"`
	Elapsed Stats `json:"elapsed_per_release"`
	// ElapsedOpen counts releases still running, whose elapsed time runs
	// to GeneratedAt.
	ElapsedOpen int `json:"elapsed_open"`

	ByRole  []RoleEffort   `json:"by_role"`
	ByStep  []StepEffort   `json:"by_step"`
	ByMonth []MonthEffort  `json:"by_month"`
	People  []PersonEffort `json:"people"`
	// Comparison is nil without a baseline and in the per-person view;
	// ComparisonNote then says why.
	Comparison     *Comparison     `json:"comparison,omitempty"`
	ComparisonNote string          `json:"comparison_note,omitempty"`
	Releases       []ReleaseEffort `json:"items"`
}

// ReleaseCounts counts the releases of the period by outcome and kind.
type ReleaseCounts struct {
	Total      int `json:"total"`
	Succeeded  int `json:"succeeded"`
	Failed     int `json:"failed"`
	RolledBack int `json:"rolled_back"`
	// Abandoned were ended on purpose before they shipped (relcap
	// release abandon): not failures.
	Abandoned int `json:"abandoned"`
	// Stalled were left unfinished past the abandon-after rule: failures.
	Stalled    int `json:"stalled"`
	InProgress int `json:"in_progress"`
	// Failures is Failed + RolledBack + Stalled.
	Failures int                          `json:"failures"`
	ByKind   map[workflow.ReleaseKind]int `json:"by_kind"`
	// BreakGlassExcluded counts break-glass records left out: they are not
	// releases.
	BreakGlassExcluded int `json:"break_glass_excluded"`
	// SandboxExcluded counts sandbox releases (relcap demo's) left out:
	// practice, not releases.
	SandboxExcluded int `json:"sandbox_excluded"`
}

func (c *ReleaseCounts) add(o ReleaseOutcome, kind workflow.ReleaseKind) {
	c.Total++
	c.ByKind[kind]++
	switch o {
	case OutcomeSucceeded:
		c.Succeeded++
	case OutcomeFailed:
		c.Failed++
	case OutcomeRolledBack:
		c.RolledBack++
	case OutcomeAbandoned:
		c.Abandoned++
	case OutcomeStalled:
		c.Stalled++
	case OutcomeInProgress:
		c.InProgress++
	}
	if o.Failure() {
		c.Failures++
	}
}

// CoverageStatus says whether a release's staff effort was measured.
type CoverageStatus string

// Coverage of a release, from its effort entries: measured when it has at
// least one active entry (a measured zero included) and no unmeasured one;
// partly measured when it has both; unmeasured when it has no active entry
// (off-tool time logged by hand and machine wait alone measure nobody's
// work in relcap). A release whose captain has no active entry counts as
// if the captain's work were marked unmeasured: someone else's measured
// minutes do not measure the release.
const (
	CoverageMeasured   CoverageStatus = "measured"
	CoveragePartly     CoverageStatus = "partly-measured"
	CoverageUnmeasured CoverageStatus = "unmeasured"
)

func coverageOf(active, unmeasured bool) CoverageStatus {
	switch {
	case active && !unmeasured:
		return CoverageMeasured
	case active:
		return CoveragePartly
	}
	return CoverageUnmeasured
}

// Coverage counts the period's releases by CoverageStatus and names who
// and which steps were measured (an active entry) and not (an unmeasured
// entry); a person or step can be in both lists, on different releases.
type Coverage struct {
	Releases         int      `json:"releases"`
	Measured         int      `json:"measured"`
	PartlyMeasured   int      `json:"partly_measured"`
	Unmeasured       int      `json:"unmeasured"`
	MeasuredPeople   []string `json:"measured_people"`
	UnmeasuredPeople []string `json:"unmeasured_people"`
	MeasuredSteps    []string `json:"measured_steps"`
	UnmeasuredSteps  []string `json:"unmeasured_steps"`
	// NotMeasured lists the partly measured and unmeasured releases,
	// oldest first.
	NotMeasured []string `json:"not_measured_releases"`
	// Work is each person's step relcap could not measure, with why and
	// on how many releases: what the counts above leave out, in words.
	Work []UnmeasuredWork `json:"unmeasured_work"`
	// Line is the coverage in words, as the table formats print it.
	Line string `json:"line"`
}

// notMeasuredText is "3 unmeasured", "1 partly measured" or "2 unmeasured,
// 1 partly measured".
func notMeasuredText(unmeasured, partly int) string {
	switch {
	case partly == 0:
		return fmt.Sprintf("%d unmeasured", unmeasured)
	case unmeasured == 0:
		return fmt.Sprintf("%d partly measured", partly)
	}
	return fmt.Sprintf("%d unmeasured, %d partly measured", unmeasured, partly)
}

// listIDs names up to five releases, then how many more, so a line stays a
// line on a ledger of thousands.
func listIDs(ids []string) string {
	const show = 5
	if len(ids) <= show {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:show], ", "), len(ids)-show)
}

// over is the coverage beside a before/after figure: "over 7 of 10
// releases; 3 unmeasured: r1, r2, r3".
func (c Coverage) over() string {
	s := fmt.Sprintf("over %d of %d releases", c.Measured, c.Releases)
	if n := c.Unmeasured + c.PartlyMeasured; n > 0 {
		s += "; " + notMeasuredText(c.Unmeasured, c.PartlyMeasured) + ": " + listIDs(c.NotMeasured)
	}
	return s
}

// emptyListsNotNull makes every list of the coverage a list in JSON,
// empty rather than null: a reader looks for names in it, not for null.
func (c *Coverage) emptyListsNotNull() {
	for _, l := range []*[]string{&c.MeasuredPeople, &c.UnmeasuredPeople, &c.MeasuredSteps, &c.UnmeasuredSteps, &c.NotMeasured} {
		if *l == nil {
			*l = []string{}
		}
	}
	if c.Work == nil {
		c.Work = []UnmeasuredWork{}
	}
}

func (c Coverage) line() string {
	s := fmt.Sprintf("Coverage: staff effort measured on %d of %d releases", c.Measured, c.Releases)
	if n := c.Unmeasured + c.PartlyMeasured; n > 0 {
		s += "; " + notMeasuredText(c.Unmeasured, c.PartlyMeasured) + ": " + listIDs(c.NotMeasured) +
			" (left out of staff figures and before/after)"
	}
	return s
}

// UnmeasuredWork is a person's step relcap could not measure, and why: an
// unmeasured entry's note, or the captain's work that left no entry at
// all.
type UnmeasuredWork struct {
	Person string `json:"person"`
	Step   string `json:"step"`
	Reason string `json:"reason"`
	// Releases is how many releases it is missing from (in Coverage.Work;
	// 1 in a release's own list).
	Releases int `json:"releases"`
}

// CaptainNotMeasured is the reason given when a release's captain has no
// entry at all: no cockpit, and a command that recorded nothing (a
// ledger from before unmeasured entries, or a script).
const CaptainNotMeasured = "no effort of the captain's was recorded: their work on the release ran outside the cockpit and any interactive command"

// RoleEffort is active effort by role (captain, approver), per release.
// Off-tool time is reported on its own, not split by role, because it is
// logged by hand against the release as a whole.
type RoleEffort struct {
	Role   effort.Role `json:"role"`
	Active Stats       `json:"active_per_release"`
}

// StepEffort is active effort by step per release, with machine wait on
// the step beside it. Step "release" holds effort outside any step.
type StepEffort struct {
	Step   string   `json:"step"`
	Active Stats    `json:"active_per_release"`
	Wait   Duration `json:"machine_wait_total_seconds"`
	// MeasuredReleases and UnmeasuredReleases count the releases with an
	// active, and with an unmeasured, entry on the step.
	MeasuredReleases   int `json:"measured_releases"`
	UnmeasuredReleases int `json:"unmeasured_releases"`
}

// MonthEffort is one calendar month of the period (in the report's time
// zone). A release belongs to the month it was created in, with all of its
// effort, even effort logged later, so that "before" and "after" count the
// same releases.
type MonthEffort struct {
	Month    string `json:"month"`
	Partial  bool   `json:"partial"`
	Releases int    `json:"releases"`
	// Staff and Active are absent (nil) when none of the month's
	// releases was measured: unmeasured, not zero.
	Staff   *Duration `json:"staff_seconds,omitempty"`
	Active  *Duration `json:"active_seconds,omitempty"`
	OffTool Duration  `json:"off_tool_seconds"`
	// Coverage of the month's releases; MeasuredStaff is the staff time of
	// its measured releases, the only ones before/after compares.
	Measured       int      `json:"measured_releases"`
	PartlyMeasured int      `json:"partly_measured_releases"`
	Unmeasured     int      `json:"unmeasured_releases"`
	MeasuredStaff  Duration `json:"measured_staff_seconds"`
	// CoverageNote says so when some of the month's releases were not
	// measured.
	CoverageNote string `json:"coverage_note,omitempty"`
	// Compared is false when the month has releases but none measured: it
	// has no before/after and is left out of the per-month average.
	Compared bool `json:"compared"`
	// MonthComparison is the month's before/after, nil (and absent from
	// the JSON) without a baseline or when the month is not compared: a
	// month nobody measured has no "freed" figure, not a zero one.
	*MonthComparison
}

// MonthComparison is a month's before/after. BeforeHours is its measured
// releases × the baseline; AfterHours their measured staff hours; Freed =
// Before − After (negative when releases cost more).
type MonthComparison struct {
	BeforeHours float64 `json:"before_hours"`
	AfterHours  float64 `json:"after_hours"`
	FreedHours  float64 `json:"freed_hours"`
}

// Comparison is the before/after table in the form a manager reads.
type Comparison struct {
	Measure                 string  `json:"measure"`
	Unit                    string  `json:"unit"`
	BaselineHoursPerRelease float64 `json:"baseline_hours_per_release"`
	// BaselineSource says where the baseline came from (relcap.yaml or
	// --baseline).
	BaselineSource string `json:"baseline_source"`
	// Releases and MeasuredReleases: the comparison is over the measured
	// ones alone; Coverage says so in words ("over 7 of 10 releases; 3
	// unmeasured: …").
	Releases         int    `json:"releases"`
	MeasuredReleases int    `json:"measured_releases"`
	Coverage         string `json:"coverage"`
	// Months is the number of calendar months compared: those the period
	// touches, less those whose releases were all unmeasured. Before and
	// After are per month: the compared totals divided by Months.
	Months     int      `json:"months"`
	Before     float64  `json:"before"`
	After      float64  `json:"after"`
	Difference float64  `json:"difference"`
	Line       string   `json:"line"`
	Conditions []string `json:"conditions"`
	// PerRelease is hours per release: before the baseline, after the
	// measured releases' staff hours over their number. AtRate is the same
	// at ReleasesPerMonth releases a month, the configured rate
	// (effort.releases_per_month) or else the period's own (RateSource
	// says which): the engagement's "3 → 1 h a release, 120 → 40 h a
	// month at 40 releases".
	PerRelease       BeforeAfter `json:"per_release"`
	ReleasesPerMonth float64     `json:"releases_per_month"`
	RateSource       string      `json:"rate_source"`
	AtRate           BeforeAfter `json:"per_month_at_rate"`
}

// BeforeAfter is a figure in hours before relcap, after, and the hours
// freed (negative: more after than before).
type BeforeAfter struct {
	Before     float64 `json:"before"`
	After      float64 `json:"after"`
	Difference float64 `json:"difference"`
}

// ComparisonConditions are printed under the comparison, because the
// numbers only mean what the headline says when these hold.
var ComparisonConditions = []string{
	"comparable scope: the baseline describes releases like the ones counted here",
	"same review and approval requirements before and after",
	"costs not included: staff hours only, no licences, infrastructure or machine time",
}

// PersonEffort is one person's staff effort in the period.
type PersonEffort struct {
	Person   string `json:"person"`
	Releases int    `json:"releases"`
	// MeasuredReleases and UnmeasuredReleases count the releases with an
	// active, and with an unmeasured, entry of theirs.
	MeasuredReleases   int `json:"measured_releases"`
	UnmeasuredReleases int `json:"unmeasured_releases"`
	// Active and Staff are absent (nil) when none of the person's work
	// was measured: unmeasured, not zero.
	Active  *Duration `json:"active_seconds,omitempty"`
	OffTool Duration  `json:"off_tool_seconds"`
	Staff   *Duration `json:"staff_seconds,omitempty"`
}

// ReleaseEffort is one counted release.
type ReleaseEffort struct {
	ID        string               `json:"id"`
	Env       string               `json:"env"`
	Kind      workflow.ReleaseKind `json:"kind"`
	Captain   string               `json:"captain"`
	Outcome   ReleaseOutcome       `json:"outcome"`
	Coverage  CoverageStatus       `json:"coverage"`
	CreatedAt time.Time            `json:"created_at"`
	Month     string               `json:"month"`
	// Staff and Active are absent (nil) for an unmeasured release: what
	// it cost in staff time is not known, which is not zero.
	Staff       *Duration `json:"staff_seconds,omitempty"`
	Active      *Duration `json:"active_seconds,omitempty"`
	OffTool     Duration  `json:"off_tool_seconds"`
	Wait        Duration  `json:"machine_wait_seconds"`
	Elapsed     Duration  `json:"elapsed_seconds"`
	ElapsedOpen bool      `json:"elapsed_open,omitempty"`
	// Unmeasured is the work relcap could not measure on this release,
	// each with why; empty when the release is measured.
	Unmeasured []UnmeasuredWork `json:"unmeasured"`
}

// Measured is d when it was measured, nil (unmeasured) otherwise.
func Measured(d time.Duration, measured bool) *Duration {
	if !measured {
		return nil
	}
	v := Duration(d)
	return &v
}

// DifferenceText is the difference as a manager reads it: "80 freed", or
// "5 more" when releases now cost more than the baseline.
func (c *Comparison) DifferenceText() string {
	if c.Difference < 0 {
		return FormatHours(math.Abs(c.Difference)) + " more"
	}
	return FormatHours(c.Difference) + " freed"
}

// FormatHours prints hours the way a manager reads them: whole hours bare
// ("120"), otherwise to two decimals without trailing zeros ("40.5").
// Two decimals of an hour are finer than a minute, so nothing the tables
// show to the minute is lost.
func FormatHours(h float64) string {
	s := strconv.FormatFloat(math.Round(h*100)/100, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

func emptyMessage(o Options, loc *time.Location) string {
	what := "no releases"
	if o.Env != "" {
		what += " in " + o.Env
	}
	if o.Person != "" {
		what += " with effort by " + o.Person
	}
	return fmt.Sprintf("%s between %s and %s (%s): nothing to report", what,
		o.From.In(loc).Format("2006-01-02 15:04"), o.To.In(loc).Format("2006-01-02 15:04"), loc)
}

// ReleaseCoverage is one release's coverage from its effort entries, by
// the rule BuildEffort applies to every release (coverageOf): a captain
// with no active entry counts as unmeasured work of the whole release.
// The work not measured comes with why. For a summary of a few releases,
// such as relcap demo's.
func ReleaseCoverage(captain string, entries []effort.Entry) (CoverageStatus, []UnmeasuredWork) {
	var a perRelease
	for _, e := range entries {
		switch e.Kind {
		case effort.Active:
			a.measured = true
			a.captainMeasured = a.captainMeasured || e.Person == captain
		case effort.Unmeasured:
			a.unmeasured = true
			a.addNotMeasured(e.Person, cmp.Or(e.Step, effort.WholeRelease), cmp.Or(e.Note, "no reason recorded"))
		}
	}
	captainMissing := captain != "" && !a.captainMeasured
	if captainMissing && !a.hasNotMeasured(captain) {
		a.addNotMeasured(captain, effort.WholeRelease, CaptainNotMeasured)
	}
	if a.notMeasured == nil {
		a.notMeasured = []UnmeasuredWork{}
	}
	return coverageOf(a.measured, a.unmeasured || captainMissing), a.notMeasured
}
