// Package prompt asks relcap init's questions as plain line prompts: the
// proposal in brackets, an empty answer takes it, a number picks one of
// the choices shown. It reads answers line by line, so a script can pipe
// them in; --yes (setup.Defaults) needs no prompt at all.
package prompt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/setup"
)

var _ setup.Asker = (*Lines)(nil)

// maxTries is how many refused answers a question takes before init stops.
const maxTries = 3

// Lines asks on out and reads answers from in, one a line.
type Lines struct {
	in  *bufio.Reader
	out io.Writer
}

// New returns an Asker reading in and writing out.
func New(in io.Reader, out io.Writer) *Lines {
	return &Lines{in: bufio.NewReader(in), out: out}
}

// Ask shows the question, its choices and proposal, and returns the
// answer: the proposal for an empty line, a choice for its number.
func (l *Lines) Ask(ctx context.Context, q setup.Question) (string, error) {
	if len(q.Choices) > 1 {
		for i, c := range q.Choices {
			fmt.Fprintf(l.out, "  %d) %s\n", i+1, c)
		}
	}
	for try := 0; try < maxTries; try++ {
		if q.Default != "" {
			fmt.Fprintf(l.out, "%s [%s]: ", q.Prompt, q.Default)
		} else {
			fmt.Fprintf(l.out, "%s: ", q.Prompt)
		}
		line, err := l.line(ctx)
		if err != nil {
			return "", err
		}
		answer := line
		if answer == "" {
			answer = q.Default
		} else if n, err := strconv.Atoi(answer); err == nil && n >= 1 && n <= len(q.Choices) && len(q.Choices) > 1 {
			answer = q.Choices[n-1]
		}
		switch {
		case answer == "":
			fmt.Fprintf(l.out, "  %s needs an answer\n", q.Key)
			continue
		case q.Check != nil:
			if err := q.Check(answer); err != nil {
				fmt.Fprintf(l.out, "  %v\n", err)
				continue
			}
		}
		return answer, nil
	}
	return "", fmt.Errorf("%w: no usable answer for %s after %d tries", fault.ErrUsage, q.Key, maxTries)
}

// Confirm asks a yes or no question; an empty line takes def.
func (l *Lines) Confirm(ctx context.Context, prompt string, def bool) (bool, error) {
	hint := "y/N"
	if def {
		hint = "Y/n"
	}
	for try := 0; try < maxTries; try++ {
		fmt.Fprintf(l.out, "%s [%s]: ", prompt, hint)
		line, err := l.line(ctx)
		if err != nil {
			return false, err
		}
		switch strings.ToLower(line) {
		case "":
			return def, nil
		case "y", "yes":
			return true, nil
		case "n", "no":
			return false, nil
		}
		fmt.Fprintln(l.out, "  answer y or n")
	}
	return false, fmt.Errorf("%w: no yes or no to %q after %d tries", fault.ErrUsage, prompt, maxTries)
}

// line reads one answer, trimmed. The end of input is an error that says
// how to answer without a terminal.
func (l *Lines) line(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s, err := l.in.ReadString('\n')
	if errors.Is(err, io.EOF) && s == "" {
		fmt.Fprintln(l.out)
		return "", fmt.Errorf("%w: no answer: the input ended; pass --yes to take every proposal", fault.ErrUsage)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimSpace(s), nil
}
