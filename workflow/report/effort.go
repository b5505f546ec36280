package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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
	// abandoned, which counts as failed.
	AbandonAfter Duration `json:"abandon_after_seconds"`
	// Empty is true when no release was created in the period; Message then
	// says so in words.
	Empty   bool          `json:"empty"`
	Message string        `json:"message,omitempty"`
	Counts  ReleaseCounts `json:"releases"`

	// Per-release statistics over the counted releases.
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
	Abandoned  int `json:"abandoned"`
	InProgress int `json:"in_progress"`
	// Failures is Failed + RolledBack + Abandoned.
	Failures int                          `json:"failures"`
	ByKind   map[workflow.ReleaseKind]int `json:"by_kind"`
	// BreakGlassExcluded counts break-glass records left out: they are not
	// releases.
	BreakGlassExcluded int `json:"break_glass_excluded"`
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
	case OutcomeInProgress:
		c.InProgress++
	}
	if o.Failure() {
		c.Failures++
	}
}

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
}

// MonthEffort is one calendar month of the period (in the report's time
// zone). A release belongs to the month it was created in, with all of its
// effort, even effort logged later, so that "before" and "after" count the
// same releases.
type MonthEffort struct {
	Month    string   `json:"month"`
	Partial  bool     `json:"partial"`
	Releases int      `json:"releases"`
	Staff    Duration `json:"staff_seconds"`
	Active   Duration `json:"active_seconds"`
	OffTool  Duration `json:"off_tool_seconds"`
	// BeforeHours is Releases × the baseline; AfterHours the measured staff
	// hours; Freed = Before − After (negative when releases cost more).
	// All three are zero without a baseline.
	BeforeHours float64 `json:"before_hours"`
	AfterHours  float64 `json:"after_hours"`
	FreedHours  float64 `json:"freed_hours"`
}

// Comparison is the before/after table in the form a manager reads.
type Comparison struct {
	Measure                 string  `json:"measure"`
	Unit                    string  `json:"unit"`
	BaselineHoursPerRelease float64 `json:"baseline_hours_per_release"`
	// Months is the number of calendar months the period touches; Before
	// and After are per month: the period's totals divided by Months.
	Months     int      `json:"months"`
	Before     float64  `json:"before"`
	After      float64  `json:"after"`
	Difference float64  `json:"difference"`
	Line       string   `json:"line"`
	Conditions []string `json:"conditions"`
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
	Person   string   `json:"person"`
	Releases int      `json:"releases"`
	Active   Duration `json:"active_seconds"`
	OffTool  Duration `json:"off_tool_seconds"`
	Staff    Duration `json:"staff_seconds"`
}

// ReleaseEffort is one counted release.
type ReleaseEffort struct {
	ID          string               `json:"id"`
	Env         string               `json:"env"`
	Kind        workflow.ReleaseKind `json:"kind"`
	Captain     string               `json:"captain"`
	Outcome     ReleaseOutcome       `json:"outcome"`
	CreatedAt   time.Time            `json:"created_at"`
	Month       string               `json:"month"`
	Staff       Duration             `json:"staff_seconds"`
	Active      Duration             `json:"active_seconds"`
	OffTool     Duration             `json:"off_tool_seconds"`
	Wait        Duration             `json:"machine_wait_seconds"`
	Elapsed     Duration             `json:"elapsed_seconds"`
	ElapsedOpen bool                 `json:"elapsed_open,omitempty"`
}

// perRelease accumulates one release's effort.
type perRelease struct {
	active, offTool, wait time.Duration
	touched               bool // the person of a per-person view spent time on it
}

// names numbers the distinct roles, steps or people of a report, so
// per-release breakdowns are dense slices rather than a map per release:
// on a ledger of 100,000 releases the maps alone cost more than the rest.
type names struct {
	idx  map[string]int
	list []string
}

func newNames(seed ...string) *names {
	n := &names{idx: map[string]int{}}
	for _, s := range seed {
		n.of(s)
	}
	return n
}

func (n *names) of(s string) int {
	if i, ok := n.idx[s]; ok {
		return i
	}
	n.idx[s] = len(n.list)
	n.list = append(n.list, s)
	return len(n.list) - 1
}

// BuildEffort computes the effort report. It does not fail on odd
// data: effort against releases outside the period is ignored, and unknown
// roles are reported under their own name.
func BuildEffort(data Data, o Options) (*Effort, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	loc := o.loc()
	rep := &Effort{
		GeneratedAt: o.Now, From: o.From, To: o.To, TimeZone: loc.String(), Env: o.Env, Person: o.Person,
		AbandonAfter: Duration(o.abandonAfter()),
		Counts:       ReleaseCounts{ByKind: map[workflow.ReleaseKind]int{}},
	}

	// Index the counted releases; everything else is keyed on this.
	idx := make(map[string]int, len(data.Releases))
	facts := make([]ReleaseFact, 0, len(data.Releases))
	for _, f := range data.Releases {
		if (o.Env != "" && f.Env != o.Env) || !in(f.CreatedAt, o.From, o.To) {
			continue
		}
		if !Counted(f) {
			if f.Kind == workflow.KindBreakGlass {
				rep.Counts.BreakGlassExcluded++
			}
			continue
		}
		if _, dup := idx[f.ID]; dup {
			continue
		}
		idx[f.ID] = len(facts)
		facts = append(facts, f)
	}
	// Oldest first, whatever order the source returned them in, so the
	// report is the same for the same ledger.
	slices.SortFunc(facts, func(a, b ReleaseFact) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	for i, f := range facts {
		idx[f.ID] = i
	}
	// First pass: which roles, steps and people occur, so the second pass
	// can fill dense per-release matrices. It numbers each entry's release,
	// role, step and person once, for the second pass to use.
	var (
		lastID     string
		lastI      = -1
		lastCached bool
	)
	release := func(id string) int {
		// Entries of one release usually come together.
		if !lastCached || id != lastID {
			i, ok := idx[id]
			if !ok {
				i = -1
			}
			lastID, lastI, lastCached = id, i, true
		}
		return lastI
	}
	stepOrder := make([]string, 0, len(workflow.StepKinds)+1)
	for _, k := range workflow.StepKinds {
		stepOrder = append(stepOrder, k.String())
	}
	roles, steps, persons := newNames(string(effort.RoleCaptain), string(effort.RoleApprover)), newNames(append(stepOrder, effort.WholeRelease)...), newNames()
	usedStep := make([]bool, len(steps.list))
	type entryRef struct{ release, role, step, person int32 }
	refs := make([]entryRef, len(data.Effort))
	for ei, e := range data.Effort {
		r := &refs[ei]
		r.release = -1
		i := release(e.ReleaseID)
		if i < 0 || (o.Person != "" && e.Person != o.Person) {
			continue
		}
		r.release = int32(i)
		if e.Kind == effort.Active {
			r.role = int32(roles.of(string(cmp.Or(e.Role, "unknown"))))
		}
		si := steps.of(cmp.Or(e.Step, effort.WholeRelease))
		r.step = int32(si)
		if e.Kind != effort.OffTool {
			usedStep = append(usedStep, make([]bool, len(steps.list)-len(usedStep))...)
			usedStep[si] = true
		}
		if e.Person != "" && e.Kind != effort.Wait {
			r.person = int32(persons.of(e.Person))
		}
	}
	nr, ns, np := len(roles.list), len(steps.list), len(persons.list)
	usedStep = append(usedStep, make([]bool, ns-len(usedStep))...)
	acc := make([]perRelease, len(facts))
	byRole := make([]time.Duration, len(facts)*nr)
	byStep := make([]time.Duration, len(facts)*ns)
	waitByStep := make([]time.Duration, ns)
	type personAcc struct {
		active, offTool time.Duration
		releases        []bool // by release index: counted once each
	}
	people := make([]personAcc, np)
	for ei, e := range data.Effort {
		r := refs[ei]
		if r.release < 0 {
			continue
		}
		i := int(r.release)
		a := &acc[i]
		switch e.Kind {
		case effort.Active:
			a.active += e.Duration
			byRole[i*nr+int(r.role)] += e.Duration
			byStep[i*ns+int(r.step)] += e.Duration
			a.touched = true
		case effort.OffTool:
			a.offTool += e.Duration
			a.touched = true
		case effort.Wait:
			a.wait += e.Duration
			waitByStep[r.step] += e.Duration
			continue
		default:
			continue
		}
		if e.Person != "" {
			p := &people[r.person]
			if p.releases == nil {
				p.releases = make([]bool, len(facts))
			}
			p.releases[i] = true
			if e.Kind == effort.Active {
				p.active += e.Duration
			} else {
				p.offTool += e.Duration
			}
		}
	}

	// The per-person view keeps the releases the person worked on or
	// captained: a captain's own history.
	keep := make([]int, 0, len(facts))
	for i, f := range facts {
		if o.Person == "" || acc[i].touched || f.Captain == o.Person {
			keep = append(keep, i)
		}
	}

	months := monthsOf(o.From, o.To, loc)
	monthIdx := make(map[string]int, len(months))
	rep.ByMonth = make([]MonthEffort, len(months))
	for i, m := range months {
		monthIdx[m.key] = i
		rep.ByMonth[i] = MonthEffort{Month: m.key, Partial: m.partial}
	}

	n := len(keep)
	staff, active, offTool, wait, elapsed := make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	rep.Releases = make([]ReleaseEffort, 0, n)
	for _, i := range keep {
		f, a := facts[i], acc[i]
		outcome := OutcomeOf(f, o.Now, o.abandonAfter())
		rep.Counts.add(outcome, f.Kind)
		el, open := ElapsedOf(f, outcome, o.Now)
		if open {
			rep.ElapsedOpen++
		}
		s := a.active + a.offTool
		staff, active, offTool, wait, elapsed = append(staff, s), append(active, a.active), append(offTool, a.offTool), append(wait, a.wait), append(elapsed, el)
		mk := monthKey(f.CreatedAt, loc)
		if mi, ok := monthIdx[mk]; ok {
			m := &rep.ByMonth[mi]
			m.Releases++
			m.Staff += Duration(s)
			m.Active += Duration(a.active)
			m.OffTool += Duration(a.offTool)
		}
		rep.Releases = append(rep.Releases, ReleaseEffort{ID: f.ID, Env: f.Env, Kind: f.Kind, Captain: f.Captain, Outcome: outcome,
			CreatedAt: f.CreatedAt, Month: mk, Staff: Duration(s), Active: Duration(a.active),
			OffTool: Duration(a.offTool), Wait: Duration(a.wait), Elapsed: Duration(el), ElapsedOpen: open})
	}
	for pi, p := range people {
		pe := PersonEffort{Person: persons.list[pi], Active: Duration(p.active), OffTool: Duration(p.offTool),
			Staff: Duration(p.active + p.offTool)}
		for _, i := range keep {
			// A person seen only in unmeasured entries has no releases.
			if p.releases != nil && p.releases[i] {
				pe.Releases++
			}
		}
		if pe.Releases > 0 {
			rep.People = append(rep.People, pe)
		}
	}
	slices.SortFunc(rep.People, func(a, b PersonEffort) int {
		return cmp.Or(cmp.Compare(b.Staff, a.Staff), strings.Compare(a.Person, b.Person))
	})

	rep.Staff, rep.Active, rep.OffTool, rep.Wait, rep.Elapsed = NewStats(staff), NewStats(active), NewStats(offTool), NewStats(wait), NewStats(elapsed)
	// Roles: captain and approver always, others in alphabetical order.
	for _, ri := range orderIdx(roles, 2) {
		ds := make([]time.Duration, 0, n)
		for _, i := range keep {
			ds = append(ds, byRole[i*nr+ri])
		}
		rep.ByRole = append(rep.ByRole, RoleEffort{Role: effort.Role(roles.list[ri]), Active: NewStats(ds)})
	}
	// Steps: in run order, then "release", then others alphabetically;
	// only steps someone or something spent time on.
	for _, si := range orderIdx(steps, len(stepOrder)+1) {
		if !usedStep[si] {
			continue
		}
		ds := make([]time.Duration, 0, n)
		for _, i := range keep {
			ds = append(ds, byStep[i*ns+si])
		}
		rep.ByStep = append(rep.ByStep, StepEffort{Step: steps.list[si], Active: NewStats(ds), Wait: Duration(waitByStep[si])})
	}

	switch {
	case o.Person != "":
		rep.ComparisonNote = "no before/after in the per-person view: the baseline is a whole release's coordination effort, not one person's share"
	case o.BaselineHoursPerRelease <= 0:
		rep.ComparisonNote = "no before/after: set effort.baseline_hours_per_release in relcap.yaml (or pass --baseline HOURS)"
	default:
		rep.Comparison = compare(rep.ByMonth, o.BaselineHoursPerRelease)
	}
	if rep.Counts.Total == 0 {
		rep.Empty = true
		rep.Message = emptyMessage(o, loc)
	}
	return rep, nil
}

// compare fills the months' before/after figures and the headline.
func compare(months []MonthEffort, baseline float64) *Comparison {
	var before, after float64
	for i := range months {
		m := &months[i]
		m.BeforeHours = float64(m.Releases) * baseline
		m.AfterHours = m.Staff.D().Hours()
		m.FreedHours = m.BeforeHours - m.AfterHours
		before += m.BeforeHours
		after += m.AfterHours
	}
	n := max(len(months), 1)
	c := &Comparison{
		Measure: "Release coordination effort", Unit: "hours/month", BaselineHoursPerRelease: baseline,
		Months: n, Before: before / float64(n), After: after / float64(n), Conditions: ComparisonConditions,
	}
	c.Difference = c.Before - c.After
	c.Line = fmt.Sprintf("%s, %s: %s → %s, %s", c.Measure, c.Unit, FormatHours(c.Before), FormatHours(c.After), c.DifferenceText())
	return c
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

// orderIdx lists the indices of n: the first fixed in their order, the
// rest sorted by name.
func orderIdx(n *names, fixed int) []int {
	out := make([]int, 0, len(n.list))
	for i := 0; i < fixed && i < len(n.list); i++ {
		out = append(out, i)
	}
	rest := make([]int, 0, len(n.list))
	for i := fixed; i < len(n.list); i++ {
		rest = append(rest, i)
	}
	slices.SortFunc(rest, func(a, b int) int { return strings.Compare(n.list[a], n.list[b]) })
	return append(out, rest...)
}
