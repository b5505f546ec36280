package workflow

import (
	"context"
	"errors"
	"io"

	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/tooloutput"
)

// The Service's side of tool output (workflow/tooloutput): where it goes
// outside a release run, and its journal record.

// withToolOutput is ctx for one operation of the Service outside a release
// run (relcap plan, apply, unlock, ownership check): tool output goes to
// Deps.ToolOutput as it comes, and done journals it, joined to the
// operation's error.
func (s *Service) withToolOutput(ctx context.Context, release string, step StepKind) (context.Context, func(error) error) {
	out := tooloutput.NewLines(func(line string) {
		if w := s.toolOutput(); w != nil {
			_, _ = io.WriteString(w, line+"\n") // a terminal's write error cannot be reported anywhere better
		}
	}, s.d.Secrets)
	return tooloutput.With(ctx, out), func(err error) error {
		return joinJournalError(err, s.journalOutput(ctx, out, release, step))
	}
}

// journalOutput records what a tool printed during step, if anything.
func (s *Service) journalOutput(ctx context.Context, out *tooloutput.Lines, release string, step StepKind) error {
	out.Flush()
	lines, dropped := out.Lines()
	if len(lines) == 0 && dropped == 0 {
		return nil
	}
	return s.journal(context.WithoutCancel(ctx), journal.StepOutput{Release: release, Step: step.String(), Lines: lines, Dropped: dropped})
}

// joinJournalError adds a failed journal write to an operation's result.
func joinJournalError(err, jerr error) error {
	if jerr == nil {
		return err
	}
	if err == nil {
		return jerr
	}
	return errors.Join(err, journalFailed(jerr))
}

// SetToolOutput changes where tool output of operations outside a release
// run goes (Deps.ToolOutput); nil discards it. The cockpit sets nil: no
// child process may write to its terminal.
func (s *Service) SetToolOutput(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.ToolOutput = w
}

func (s *Service) toolOutput() io.Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d.ToolOutput
}
