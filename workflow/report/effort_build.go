package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
)

// How the effort report is built from the ledger's releases and effort
// entries: grouped per release, role, step, month and person, and
// compared with the configured baseline.

// perRelease accumulates one release's effort.
type perRelease struct {
	active, offTool, wait time.Duration
	touched               bool // the person of a per-person view spent time on it
	// measured: an active entry (even of zero); unmeasured: an unmeasured
	// entry. Together they are the release's CoverageStatus.
	measured, unmeasured bool
	// captainMeasured: the release's captain has an active entry on it.
	captainMeasured bool
	// notMeasured is the release's unmeasured work, in entry order.
	notMeasured []UnmeasuredWork
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
		Counts:       ReleaseCounts{ByKind: map[workflow.ReleaseKind]int{}, SandboxExcluded: data.SandboxReleases},
	}

	// Index the counted releases; everything else is keyed on this.
	idx := make(map[string]int, len(data.Releases))
	facts := make([]ReleaseFact, 0, len(data.Releases))
	for _, f := range data.Releases {
		if (o.Env != "" && f.Env != o.Env) || !in(f.CreatedAt, o.From, o.To) {
			continue
		}
		if !Counted(f) {
			switch {
			case f.Sandbox:
				rep.Counts.SandboxExcluded++
			case f.Kind == workflow.KindBreakGlass:
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
	// stepMarks holds, per release and step, stepActive and stepUnmeasured.
	stepMarks := make([]uint8, len(facts)*ns)
	waitByStep := make([]time.Duration, ns)
	type personAcc struct {
		active, offTool time.Duration
		releases        []bool  // by release index: counted once each
		marks           []uint8 // by release index: stepActive, stepUnmeasured
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
			stepMarks[i*ns+int(r.step)] |= stepActive
			a.touched, a.measured = true, true
			if e.Person == facts[i].Captain {
				a.captainMeasured = true
			}
		case effort.Unmeasured:
			stepMarks[i*ns+int(r.step)] |= stepUnmeasured
			a.touched, a.unmeasured = true, true
			a.addNotMeasured(e.Person, cmp.Or(e.Step, effort.WholeRelease), cmp.Or(e.Note, "no reason recorded"))
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
				p.releases, p.marks = make([]bool, len(facts)), make([]uint8, len(facts))
			}
			p.releases[i] = true
			switch e.Kind {
			case effort.Active:
				p.active += e.Duration
				p.marks[i] |= stepActive
			case effort.Unmeasured:
				p.marks[i] |= stepUnmeasured
			default:
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
	monthStaff, monthActive := make([]time.Duration, len(months)), make([]time.Duration, len(months))
	staff, active, offTool, wait, elapsed := make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	rep.Releases = make([]ReleaseEffort, 0, n)
	// measuredKeep is keep's measured releases: the staff and active
	// figures are theirs alone.
	measuredKeep := make([]int, 0, n)
	unmeasuredCaptains := map[string]bool{}
	wholeStep := steps.of(effort.WholeRelease)
	captainMissed := map[string][]int{} // captain: the releases their work is missing from
	work := map[[3]string]int{}         // person, step, reason: releases
	for _, i := range keep {
		f, a := facts[i], acc[i]
		// A release always has its captain's work in it: when nothing of
		// the captain's was measured, the release is at most partly
		// measured, even on a ledger from before unmeasured entries
		// existed (where a scripted captain left no entry at all). The
		// per-person view holds one person's entries only, so it cannot
		// say.
		captainMissing := o.Person == "" && f.Captain != "" && !a.captainMeasured
		if captainMissing {
			unmeasuredCaptains[f.Captain] = true
			captainMissed[f.Captain] = append(captainMissed[f.Captain], i)
		}
		if captainMissing && !a.hasNotMeasured(f.Captain) {
			// Said as unmeasured work of the whole release, so no list
			// or column reads it as nothing to report.
			a.addNotMeasured(f.Captain, effort.WholeRelease, CaptainNotMeasured)
			stepMarks[i*ns+wholeStep] |= stepUnmeasured
			usedStep[wholeStep] = true
		}
		cov := coverageOf(a.measured, a.unmeasured || captainMissing)
		rep.Coverage.Releases++
		switch cov {
		case CoverageMeasured:
			rep.Coverage.Measured++
			measuredKeep = append(measuredKeep, i)
		case CoveragePartly:
			rep.Coverage.PartlyMeasured++
		default:
			rep.Coverage.Unmeasured++
		}
		if cov != CoverageMeasured {
			rep.Coverage.NotMeasured = append(rep.Coverage.NotMeasured, f.ID)
		}
		outcome := OutcomeOf(f, o.Now, o.abandonAfter())
		rep.Counts.add(outcome, f.Kind)
		el, open := ElapsedOf(f, outcome, o.Now)
		if open {
			rep.ElapsedOpen++
		}
		s := a.active + a.offTool
		if cov == CoverageMeasured {
			staff, active = append(staff, s), append(active, a.active)
		}
		offTool, wait, elapsed = append(offTool, a.offTool), append(wait, a.wait), append(elapsed, el)
		mk := monthKey(f.CreatedAt, loc)
		if mi, ok := monthIdx[mk]; ok {
			m := &rep.ByMonth[mi]
			m.Releases++
			monthStaff[mi] += s
			monthActive[mi] += a.active
			m.OffTool += Duration(a.offTool)
			switch cov {
			case CoverageMeasured:
				m.Measured++
				m.MeasuredStaff += Duration(s)
			case CoveragePartly:
				m.PartlyMeasured++
			default:
				m.Unmeasured++
			}
		}
		rep.Releases = append(rep.Releases, ReleaseEffort{ID: f.ID, Env: f.Env, Kind: f.Kind, Captain: f.Captain, Outcome: outcome, Coverage: cov,
			CreatedAt: f.CreatedAt, Month: mk, Staff: Measured(s, cov != CoverageUnmeasured), Active: Measured(a.active, cov != CoverageUnmeasured),
			OffTool: Duration(a.offTool), Wait: Duration(a.wait), Elapsed: Duration(el), ElapsedOpen: open,
			Unmeasured: slices.Clip(append([]UnmeasuredWork{}, a.notMeasured...))})
		for _, w := range a.notMeasured {
			work[[3]string{w.Person, w.Step, w.Reason}]++
		}
	}
	for pi, p := range people {
		pe := PersonEffort{Person: persons.list[pi], OffTool: Duration(p.offTool)}
		if missed := captainMissed[pe.Person]; len(missed) > 0 {
			// Their captaincy left no entry: unmeasured work of theirs.
			if p.releases == nil {
				p.releases, p.marks = make([]bool, len(facts)), make([]uint8, len(facts))
			}
			for _, i := range missed {
				p.releases[i] = true
				p.marks[i] |= stepUnmeasured
			}
			delete(captainMissed, pe.Person)
		}
		for _, i := range keep {
			// A person seen only in unmeasured entries has no releases.
			if p.releases != nil && p.releases[i] {
				pe.Releases++
				if p.marks[i]&stepActive != 0 {
					pe.MeasuredReleases++
				}
				if p.marks[i]&stepUnmeasured != 0 {
					pe.UnmeasuredReleases++
				}
			}
		}
		pe.Active, pe.Staff = Measured(p.active, pe.MeasuredReleases > 0), Measured(p.active+p.offTool, pe.MeasuredReleases > 0)
		if pe.MeasuredReleases > 0 {
			rep.Coverage.MeasuredPeople = append(rep.Coverage.MeasuredPeople, pe.Person)
		}
		if pe.UnmeasuredReleases > 0 {
			rep.Coverage.UnmeasuredPeople = append(rep.Coverage.UnmeasuredPeople, pe.Person)
		}
		if pe.Releases > 0 {
			rep.People = append(rep.People, pe)
		}
	}
	for captain, missed := range captainMissed {
		// Captains with no entry anywhere in the period.
		rep.People = append(rep.People, PersonEffort{Person: captain, Releases: len(missed), UnmeasuredReleases: len(missed)})
	}
	for p := range unmeasuredCaptains {
		if !slices.Contains(rep.Coverage.UnmeasuredPeople, p) {
			rep.Coverage.UnmeasuredPeople = append(rep.Coverage.UnmeasuredPeople, p)
		}
	}
	slices.Sort(rep.Coverage.MeasuredPeople)
	slices.Sort(rep.Coverage.UnmeasuredPeople)
	slices.SortFunc(rep.People, func(a, b PersonEffort) int {
		return cmp.Or(cmp.Compare(orUnmeasured(b.Staff), orUnmeasured(a.Staff)), strings.Compare(a.Person, b.Person))
	})

	rep.Staff, rep.Active, rep.OffTool, rep.Wait, rep.Elapsed = NewStats(staff), NewStats(active), NewStats(offTool), NewStats(wait), NewStats(elapsed)
	// Roles: captain and approver always, others in alphabetical order.
	for _, ri := range orderIdx(roles, 2) {
		ds := make([]time.Duration, 0, n)
		for _, i := range measuredKeep {
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
		for _, i := range measuredKeep {
			ds = append(ds, byStep[i*ns+si])
		}
		se := StepEffort{Step: steps.list[si], Active: NewStats(ds), Wait: Duration(waitByStep[si])}
		for _, i := range keep {
			mark := stepMarks[i*ns+si]
			if mark&stepActive != 0 {
				se.MeasuredReleases++
			}
			if mark&stepUnmeasured != 0 {
				se.UnmeasuredReleases++
			}
		}
		if se.MeasuredReleases > 0 {
			rep.Coverage.MeasuredSteps = append(rep.Coverage.MeasuredSteps, se.Step)
		}
		if se.UnmeasuredReleases > 0 {
			rep.Coverage.UnmeasuredSteps = append(rep.Coverage.UnmeasuredSteps, se.Step)
		}
		rep.ByStep = append(rep.ByStep, se)
	}

	for k, releases := range work {
		rep.Coverage.Work = append(rep.Coverage.Work, UnmeasuredWork{Person: k[0], Step: k[1], Reason: k[2], Releases: releases})
	}
	slices.SortFunc(rep.Coverage.Work, func(a, b UnmeasuredWork) int {
		return cmp.Or(cmp.Compare(b.Releases, a.Releases), cmp.Compare(a.Person, b.Person), cmp.Compare(a.Step, b.Step), cmp.Compare(a.Reason, b.Reason))
	})
	rep.Coverage.Line = rep.Coverage.line()
	for i := range rep.ByMonth {
		m := &rep.ByMonth[i]
		// A month of no releases cost nothing; one whose releases nobody
		// measured has no figure.
		known := m.Releases == 0 || m.Measured+m.PartlyMeasured > 0
		m.Staff, m.Active = Measured(monthStaff[i], known), Measured(monthActive[i], known)
		m.Compared = m.Releases == 0 || m.Measured > 0
		if n := m.Unmeasured + m.PartlyMeasured; n > 0 {
			m.CoverageNote = fmt.Sprintf("%d of %d releases not measured (%s)", n, m.Releases, notMeasuredText(m.Unmeasured, m.PartlyMeasured))
			if !m.Compared {
				m.CoverageNote += ": no before/after this month"
			}
		}
	}
	switch {
	case o.Person != "":
		rep.ComparisonNote = "no before/after in the per-person view: the baseline is a whole release's coordination effort, not one person's share"
	case o.BaselineHoursPerRelease <= 0:
		rep.ComparisonNote = "no before/after: set effort.baseline_hours_per_release in relcap.yaml (or pass --baseline HOURS)"
	case rep.Coverage.Measured == 0 && rep.Coverage.Releases > 0:
		// No measured release means no "after": reporting one would count
		// work nobody measured as hours saved.
		rep.ComparisonNote = fmt.Sprintf("no before/after: staff effort was measured on none of the %d releases (%s: %s)",
			rep.Coverage.Releases, notMeasuredText(rep.Coverage.Unmeasured, rep.Coverage.PartlyMeasured), listIDs(rep.Coverage.NotMeasured))
	case rep.Coverage.Releases == 0:
		rep.ComparisonNote = "no before/after: no releases in the period"
	default:
		rep.Comparison = compare(rep.ByMonth, o.BaselineHoursPerRelease, o.baselineSource(), rep.Coverage)
		rep.Comparison.atRate(rep.ByMonth, o)
	}
	rep.listsNotNull()
	if rep.Counts.Total == 0 {
		rep.Empty = true
		rep.Message = emptyMessage(o, loc)
	}
	return rep, nil
}

// Step marks: whether a release (or a person's share of it, or a step of
// it) has an active entry, an unmeasured one, or both.
const (
	stepActive uint8 = 1 << iota
	stepUnmeasured
)

// compare fills the months' before/after figures and the headline, over
// measured releases only: "before" is what the measured releases would
// have cost at the baseline, "after" what they cost. Months whose
// releases were all unmeasured are left out of the average rather than
// counted as months of zero effort.
func compare(months []MonthEffort, baseline float64, source string, cov Coverage) *Comparison {
	var before, after float64
	n := 0
	for i := range months {
		m := &months[i]
		if !m.Compared {
			continue
		}
		n++
		mc := &MonthComparison{BeforeHours: float64(m.Measured) * baseline, AfterHours: m.MeasuredStaff.D().Hours()}
		mc.FreedHours = mc.BeforeHours - mc.AfterHours
		m.MonthComparison = mc
		before += mc.BeforeHours
		after += mc.AfterHours
	}
	n = max(n, 1)
	c := &Comparison{
		Measure: "Release coordination effort", Unit: "hours/month", BaselineHoursPerRelease: baseline, BaselineSource: source,
		Releases: cov.Releases, MeasuredReleases: cov.Measured, Coverage: cov.over(),
		Months: n, Before: before / float64(n), After: after / float64(n),
	}
	c.Difference = c.Before - c.After
	c.Conditions = append(slices.Clone(ComparisonConditions),
		fmt.Sprintf("baseline: %s h per release, from %s", FormatHours(baseline), source),
		"coverage: "+c.Coverage+"; before and after count measured releases only")
	c.Line = fmt.Sprintf("%s, %s: %s → %s, %s (%s)", c.Measure, c.Unit, FormatHours(c.Before), FormatHours(c.After), c.DifferenceText(), c.Coverage)
	return c
}

// atRate fills hours per release and per month at a release rate: the
// configured one, or the period's own (its counted releases over the
// months it touches). Per release, after is the measured releases' staff
// hours over their number, the same releases before counts.
func (c *Comparison) atRate(months []MonthEffort, o Options) {
	var measured int
	var staff float64
	for _, m := range months {
		if m.MonthComparison != nil {
			measured += m.Measured
			staff += m.AfterHours
		}
	}
	c.PerRelease.Before = c.BaselineHoursPerRelease
	if measured > 0 {
		c.PerRelease.After = staff / float64(measured)
	}
	c.PerRelease.Difference = c.PerRelease.Before - c.PerRelease.After
	c.ReleasesPerMonth, c.RateSource = o.ReleasesPerMonth, o.RateSource
	if c.ReleasesPerMonth <= 0 {
		c.ReleasesPerMonth = float64(c.Releases) / float64(max(1, len(months)))
		c.RateSource = fmt.Sprintf("this period's rate: %d release(s) over %d month(s)", c.Releases, max(1, len(months)))
	}
	c.AtRate = BeforeAfter{Before: c.PerRelease.Before * c.ReleasesPerMonth, After: c.PerRelease.After * c.ReleasesPerMonth}
	c.AtRate.Difference = c.AtRate.Before - c.AtRate.After
	c.Conditions = append(c.Conditions, fmt.Sprintf("hours per month at %s releases a month, from %s", FormatHours(c.ReleasesPerMonth), c.RateSource))
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

// addNotMeasured notes a person's unmeasured step on the release, once.
func (a *perRelease) addNotMeasured(person, step, reason string) {
	for _, w := range a.notMeasured {
		if w.Person == person && w.Step == step {
			return
		}
	}
	a.notMeasured = append(a.notMeasured, UnmeasuredWork{Person: person, Step: step, Reason: reason, Releases: 1})
}

// hasNotMeasured reports whether person has unmeasured work on the release.
func (a *perRelease) hasNotMeasured(person string) bool {
	for _, w := range a.notMeasured {
		if w.Person == person {
			return true
		}
	}
	return false
}

// orUnmeasured orders an unmeasured figure below every measured one.
func orUnmeasured(d *Duration) Duration {
	if d == nil {
		return -1
	}
	return *d
}

// listsNotNull makes every list of the report a list in JSON, empty rather
// than null.
func (rep *Effort) listsNotNull() {
	rep.Coverage.emptyListsNotNull()
	if rep.ByRole == nil {
		rep.ByRole = []RoleEffort{}
	}
	if rep.ByStep == nil {
		rep.ByStep = []StepEffort{}
	}
	if rep.ByMonth == nil {
		rep.ByMonth = []MonthEffort{}
	}
	if rep.People == nil {
		rep.People = []PersonEffort{}
	}
	if rep.Releases == nil {
		rep.Releases = []ReleaseEffort{}
	}
}
