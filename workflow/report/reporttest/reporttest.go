// Package reporttest builds report data with known figures, for the tests
// of the reports and of their renderers.
package reporttest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/report"
)

// Jan1 is where the generated ledgers begin.
var Jan1 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ReleaseAt is a converged release of kind release created at t, ended an
// hour later.
func ReleaseAt(id string, t time.Time) report.ReleaseFact {
	return report.ReleaseFact{ID: id, App: "web", Env: "prod", Kind: workflow.KindRelease, Captain: "alice",
		Status: workflow.ReleaseConverged, CreatedAt: t, UpdatedAt: t.Add(time.Hour), EndedAt: t.Add(time.Hour)}
}

func Entry(id, person string, role effort.Role, step string, kind effort.Kind, d time.Duration, at time.Time) effort.Entry {
	return effort.Entry{ReleaseID: id, Person: person, Role: role, Step: step, Kind: kind, Duration: d, At: at}
}

// Truth is a generated ledger's figures, computed without the report code.
type Truth struct {
	Staff, Active, OffTool, Wait, Elapsed []time.Duration // per counted release
	ByRole                                map[effort.Role][]time.Duration
	ByStep                                map[string][]time.Duration
	MonthReleases                         map[string]int
	MonthStaff                            map[string]time.Duration
	Failures                              int
	Total                                 int
}

// Generate makes n releases over three months in loc with random effort,
// plus noise the report must ignore: break-glass records, effort against
// unknown releases and releases outside the period.
func Generate(seed uint64, n int, loc *time.Location) (report.Data, Truth) {
	rng := rand.New(rand.NewPCG(seed, 1))
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
	span := from.AddDate(0, 3, 0).Sub(from)
	tr := Truth{ByRole: map[effort.Role][]time.Duration{}, ByStep: map[string][]time.Duration{},
		MonthReleases: map[string]int{}, MonthStaff: map[string]time.Duration{}}
	var data report.Data
	steps := []string{"ownership", "plan-review", "apply", "promotion", "convergence"}
	kinds := []workflow.ReleaseKind{workflow.KindRelease, workflow.KindRelease, workflow.KindPromotion, workflow.KindRollback}
	for i := range n {
		id := fmt.Sprintf("rel-%05d", i)
		created := from.Add(time.Duration(rng.Int64N(int64(span))))
		f := report.ReleaseFact{ID: id, App: "web", Env: "prod", Kind: kinds[rng.IntN(len(kinds))], Captain: "cap" + fmt.Sprint(rng.IntN(3)),
			CreatedAt: created, UpdatedAt: created.Add(time.Duration(rng.Int64N(int64(3 * time.Hour))))}
		switch x := rng.IntN(10); {
		case x < 6:
			f.Status, f.EndedAt = workflow.ReleaseConverged, f.UpdatedAt
		case x < 7:
			f.Status = workflow.ReleaseFailed
		case x < 8:
			f.Status, f.EndedAt = workflow.ReleaseRolledBack, f.UpdatedAt
		default:
			f.Status = workflow.ReleaseInProgress // abandoned: now is months later
		}
		if f.Status != workflow.ReleaseConverged {
			tr.Failures++
		}
		data.Releases = append(data.Releases, f)
		var active, off, wait time.Duration
		role := map[effort.Role]time.Duration{}
		step := map[string]time.Duration{}
		for _, s := range steps {
			d := time.Duration(rng.Int64N(int64(20*time.Minute))) + time.Duration(rng.IntN(60))*time.Second
			data.Effort = append(data.Effort, Entry(id, f.Captain, effort.RoleCaptain, s, effort.Active, d, created))
			active += d
			role[effort.RoleCaptain] += d
			step[s] += d
			w := time.Duration(rng.Int64N(int64(10 * time.Minute)))
			data.Effort = append(data.Effort, Entry(id, "", "", s, effort.Wait, w, created))
			wait += w
		}
		if rng.IntN(2) == 0 {
			d := time.Duration(rng.Int64N(int64(30 * time.Minute)))
			data.Effort = append(data.Effort, Entry(id, "appr", effort.RoleApprover, "plan-review", effort.Active, d, created))
			active += d
			role[effort.RoleApprover] += d
			step["plan-review"] += d
		}
		if rng.IntN(3) == 0 {
			d := time.Duration(rng.IntN(90)) * time.Minute
			// Logged weeks later: it still belongs to the release's month.
			data.Effort = append(data.Effort, Entry(id, f.Captain, effort.RoleCaptain, effort.WholeRelease, effort.OffTool, d, created.AddDate(0, 0, 40)))
			off += d
		}
		tr.Total++
		tr.Staff = append(tr.Staff, active+off)
		tr.Active = append(tr.Active, active)
		tr.OffTool = append(tr.OffTool, off)
		tr.Wait = append(tr.Wait, wait)
		end := f.UpdatedAt
		if !f.EndedAt.IsZero() {
			end = f.EndedAt
		}
		tr.Elapsed = append(tr.Elapsed, end.Sub(created))
		for _, r := range []effort.Role{effort.RoleCaptain, effort.RoleApprover} {
			tr.ByRole[r] = append(tr.ByRole[r], role[r])
		}
		for _, s := range steps {
			tr.ByStep[s] = append(tr.ByStep[s], step[s])
		}
		m := created.In(loc).Format("2006-01")
		tr.MonthReleases[m]++
		tr.MonthStaff[m] += active + off
	}
	// Noise.
	bg := ReleaseAt("bg-1", from.Add(time.Hour))
	bg.Kind, bg.Status = workflow.KindBreakGlass, workflow.ReleaseEnded
	data.Releases = append(data.Releases, bg, ReleaseAt("before", from.Add(-time.Minute)))
	data.Effort = append(data.Effort,
		Entry("bg-1", "alice", effort.RoleCaptain, effort.WholeRelease, effort.Active, 5*time.Hour, from),
		Entry("before", "alice", effort.RoleCaptain, effort.WholeRelease, effort.Active, 5*time.Hour, from),
		Entry("unknown", "alice", effort.RoleCaptain, effort.WholeRelease, effort.OffTool, 5*time.Hour, from))
	return data, tr
}

// MeasuresLedger is a small ledger with hand-computed measures.
func MeasuresLedger(t testing.TB) (report.Data, report.Options) {
	t.Helper()
	d1 := DigestOf(t, "1")
	d2 := DigestOf(t, "2")
	h := time.Hour
	failed := ReleaseAt("f1", Jan1.Add(10*h))
	failed.Status, failed.EndedAt = workflow.ReleaseFailed, time.Time{}
	failed.Steps = []report.StepTime{{Kind: workflow.StepApply, Status: workflow.Failed, EndedAt: Jan1.Add(11 * h)}}
	rolled := ReleaseAt("rb1", Jan1.Add(30*h))
	rolled.Status, rolled.UpdatedAt = workflow.ReleaseRolledBack, Jan1.Add(40*h)
	data := report.Data{
		Releases: []report.ReleaseFact{ReleaseAt("ok1", Jan1.Add(h)), failed, rolled, ReleaseAt("ok2", Jan1.Add(50*h))},
		Plans: []report.PlanFact{
			{Fingerprint: "p1", Env: "prod", CreatedAt: Jan1.Add(h), AppliedAt: Jan1.Add(3 * h)},    // 2 h
			{Fingerprint: "p2", Env: "prod", CreatedAt: Jan1.Add(h), AppliedAt: Jan1.Add(7 * h)},    // 6 h
			{Fingerprint: "p3", Env: "staging", CreatedAt: Jan1.Add(h), AppliedAt: Jan1.Add(5 * h)}, // 4 h
			{Fingerprint: "p4", Env: "prod", CreatedAt: Jan1.Add(h)},                                // pending
		},
		Sightings: []workflow.Sighting{{Digest: d1, At: Jan1}, {Digest: d2, At: Jan1.Add(20 * h)}},
		Convergences: []workflow.ConvergenceRecord{
			{ReleaseID: "s", App: "web", Env: "staging", Digest: d1, At: Jan1.Add(2 * h)},
			{ReleaseID: "ok1", App: "web", Env: "prod", Digest: d1, At: Jan1.Add(4 * h)}, // lead 4 h
			{ReleaseID: "x", App: "web", Env: "prod", Digest: d1, At: Jan1.Add(14 * h)},  // recovers f1 (3 h)
			{ReleaseID: "rb", App: "web", Env: "prod", Digest: d2, At: Jan1.Add(45 * h)}, // recovers rb1 (5 h); lead 25 h
		},
		Findings: []report.FindingFact{
			{Scope: "ownership/prod", Code: ownership.CodeConflict, Subject: "a", FirstSeen: Jan1.Add(h), ResolvedAt: Jan1.Add(25 * h)},
			{Scope: "ownership/prod", Code: ownership.CodeConflict, Subject: "b", FirstSeen: Jan1.AddDate(0, 0, 6)}, // week 2, open
			{Scope: "ownership/prod", Code: ownership.CodeDriftLoop, Subject: "c", FirstSeen: Jan1.Add(-48 * h), ResolvedAt: Jan1.Add(72 * h)},
		},
	}
	return data, report.Options{From: Jan1, To: Jan1.AddDate(0, 0, 14), Now: Jan1.AddDate(0, 0, 14), ProdEnv: "prod"}
}

func DigestOf(t testing.TB, s string) image.Digest {
	t.Helper()
	d, err := image.ParseDigest("sha256:" + strings.Repeat(s, 64))
	require.NoError(t, err)
	return d
}

// ManagerForm is the example ledger: 40 releases in January, each
// with 1 h of staff time (40 min active and 10 min off-tool for the
// captain, 10 min for the approver) and 30 min of machine wait, against a
// 3 h baseline: 120 → 40 hours a month, 80 freed.
func ManagerForm() (report.Data, report.Options) {
	var data report.Data
	for i := range 40 {
		id := fmt.Sprintf("r%02d", i)
		at := Jan1.Add(time.Duration(i) * 17 * time.Hour)
		data.Releases = append(data.Releases, ReleaseAt(id, at))
		data.Effort = append(data.Effort,
			Entry(id, "alice", effort.RoleCaptain, "plan-review", effort.Active, 40*time.Minute, at),
			Entry(id, "bob", effort.RoleApprover, "plan-review", effort.Active, 10*time.Minute, at),
			Entry(id, "alice", effort.RoleCaptain, effort.WholeRelease, effort.OffTool, 10*time.Minute, at),
			// Machine wait is never staff effort.
			Entry(id, "", "", "convergence", effort.Wait, 30*time.Minute, at))
	}
	return data, report.Options{From: Jan1, To: Jan1.AddDate(0, 1, 0), Now: Jan1.AddDate(0, 2, 0), BaselineHoursPerRelease: 3}
}
