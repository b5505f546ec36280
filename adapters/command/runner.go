// Package command runs the argv lists relcap.yaml names (rehearsal.interrupt)
// as child processes: the workflow.CommandRunner port.
package command

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/tooloutput"
)

// Runner runs an argv list directly, never through a shell, its output
// into the context's tool output.
type Runner struct{}

var _ rehearsal.CommandRunner = Runner{}

// RunCommand runs argv; a non-zero exit is an error naming the command and
// the last line it printed.
func (Runner) RunCommand(ctx context.Context, argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("%w: an empty command", fault.ErrUsage)
	}
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var tail tailBuffer
	out := io.Writer(&tail)
	if w, ok := tooloutput.From(ctx); ok {
		out = io.MultiWriter(w, &tail)
	}
	c.Stdout, c.Stderr = out, out
	if err := c.Run(); err != nil {
		return fmt.Errorf("command %s failed: %w%s", strings.Join(argv, " "), err, tail.last())
	}
	return nil
}

// tailBuffer keeps the last line a command printed, for its error.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) last() string {
	s := strings.TrimSpace(string(t.b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return ""
	}
	return ": " + s
}
