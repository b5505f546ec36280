package plan_test

import (
	"testing"
	"time"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen/plan"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow/approval"
)

// BenchmarkPlanView10k renders the plan screen over 10,000 changes while
// scrolling; the budget is 10 ms per frame (issue 7), which the
// virtualised list meets by rendering only the visible rows.
func BenchmarkPlanView10k(b *testing.B) {
	p := fixture.LargePlan(10_000)
	m := plan.New(nil, theme.New(true), keys.Default())
	m.SetSize(120, 40)
	m.SetPlan(p, approval.Check{Required: 1})
	down := fixture.Key("down")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m, _ = m.Update(down)
		_ = m.View()
	}
	if perFrame := b.Elapsed() / time.Duration(b.N); perFrame > 10*time.Millisecond {
		b.Fatalf("plan view takes %s per frame; the budget is 10 ms", perFrame)
	}
}
