// Package plain prints a release's events as lines of text or NDJSON, for
// headless runs, pipes and CI logs. It drives nothing: the workflow.Service
// runs the release and hands events to Printer.Event.
package plain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow"
)

// Printer writes one line (or one JSON object) per event. It is safe for
// concurrent use, since the convergence watch reports from its own goroutine.
type Printer struct {
	mu   sync.Mutex
	out  io.Writer
	json bool
	// tools receives the lines tools print (Terraform's progress); nil
	// drops them. In JSON mode they are events like the others.
	tools io.Writer
	// lastApp suppresses repeated identical application states.
	lastApp string
}

// New returns a printer writing text, or NDJSON when asJSON is set.
// Text goes through SafeWriter: events carry messages, resource addresses
// and tool lines that came from files and tools.
func New(out io.Writer, asJSON bool) *Printer {
	if !asJSON {
		out = SafeWriter(out)
	}
	return &Printer{out: out, json: asJSON}
}

// WithToolOutput has the printer write what tools print to w (stderr, so
// stdout stays the events), one line as it came.
func (p *Printer) WithToolOutput(w io.Writer) *Printer {
	p.tools = SafeWriter(w)
	return p
}

// Event prints e; it is a workflow.EventSink.
func (p *Printer) Event(e workflow.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		_ = json.NewEncoder(p.out).Encode(e)
		return
	}
	if e.Kind == workflow.EventStepOutput {
		if p.tools != nil {
			fmt.Fprintln(p.tools, e.Output)
		}
		return
	}
	if line := p.line(e); line != "" {
		fmt.Fprintln(p.out, line)
	}
}

func (p *Printer) line(e workflow.Event) string {
	ts := e.Time.UTC().Format(time.TimeOnly)
	switch e.Kind {
	case workflow.EventStepStarted:
		return fmt.Sprintf("%s  %-9s %-18s started", ts, e.Step.Stage(), e.Step.Title())
	case workflow.EventStepProgress:
		return fmt.Sprintf("%s  %-9s %-18s %s", ts, e.Step.Stage(), e.Step.Title(), e.Message)
	case workflow.EventStepFinished:
		var b strings.Builder
		fmt.Fprintf(&b, "%s  %-9s %-18s %s", ts, e.Step.Stage(), e.Step.Title(), strings.ToUpper(e.Status.String()))
		if e.Message != "" {
			b.WriteString(": " + e.Message)
		}
		for _, f := range e.Findings {
			fmt.Fprintf(&b, "\n          - %s", f)
		}
		return b.String()
	case workflow.EventAppState:
		if e.App == nil {
			return ""
		}
		s := fmt.Sprintf("sync %s at %s, health %s", e.App.SyncStatus, orNone(workflow.ShortHash(e.App.SyncRevision)), e.App.Health)
		if e.App.Operation != "" {
			s += ", operation " + string(e.App.Operation)
		}
		if s == p.lastApp {
			return ""
		}
		p.lastApp = s
		return fmt.Sprintf("%s  %-9s %-18s %s", ts, e.Step.Stage(), e.Step.Title(), s)
	case workflow.EventReleaseFinished:
		return fmt.Sprintf("%s  release %s %s", ts, e.ReleaseID, e.Message)
	}
	return ""
}

// orNone says "(none)" for an unknown revision.
func orNone(rev string) string {
	if rev == "" {
		return "(none)"
	}
	return rev
}
