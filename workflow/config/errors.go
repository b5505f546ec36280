package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/relcap/relcap/workflow/fault"
)

// maxProblems bounds how many problems one load reports. A file that is
// wrong everywhere (or a fuzzer's output) would otherwise produce thousands
// of lines nobody reads; the first hundred say what to fix.
const maxProblems = 100

// Problem is one thing wrong with a configuration file, located by line and
// column (1-based; 0 when unknown) and by field path, such as
// "environments[0].terraform.var_files[1]".
type Problem struct {
	File    string
	Line    int
	Col     int
	Field   string
	Message string
}

// String formats the problem as "file:line:col: field: message", leaving out
// the parts that are unknown.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		b.WriteString(":" + strconv.Itoa(p.Line))
		if p.Col > 0 {
			b.WriteString(":" + strconv.Itoa(p.Col))
		}
	}
	b.WriteString(": ")
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Errors is every problem found while loading configuration. It satisfies
// errors.Is(err, fault.ErrUsage), so tui/cli maps it to the usage exit
// code.
type Errors struct {
	Problems []Problem
}

// Error prints one problem per line.
func (e *Errors) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is reports whether target is fault.ErrUsage: bad configuration is a
// usage error.
func (e *Errors) Is(target error) bool { return target == fault.ErrUsage }

// collector accumulates problems across the files of one load.
type collector struct {
	problems []Problem
	dropped  int
	stopped  []Problem
}

func (c *collector) add(p Problem) {
	if c.full() {
		c.dropped++
		return
	}
	c.problems = append(c.problems, p)
}

// full reports whether further problems are only counted, so callers can
// skip formatting them.
func (c *collector) full() bool { return len(c.problems) >= maxProblems }

// stop records why checking stopped early. It is kept even when the
// collector is full, since it explains why the report is incomplete.
func (c *collector) stop(p Problem) { c.stopped = append(c.stopped, p) }

// err returns nil when nothing was found, else an *Errors whose problems are
// grouped by file (in the order files were read) and sorted by position, so
// the output reads top to bottom like the files do.
func (c *collector) err() error {
	if len(c.problems) == 0 && len(c.stopped) == 0 {
		return nil
	}
	var files []string
	for _, p := range c.problems {
		if !slices.Contains(files, p.File) {
			files = append(files, p.File)
		}
	}
	ps := slices.Clone(c.problems)
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(
			cmp.Compare(slices.Index(files, a.File), slices.Index(files, b.File)),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
		)
	})
	// Merge keys can bring the same node into view twice; say it once.
	ps = slices.Compact(ps)
	ps = append(ps, c.stopped...)
	if c.dropped > 0 {
		ps = append(ps, Problem{
			File:    ps[len(ps)-1].File,
			Message: fmt.Sprintf("%d more problems not shown; fix the ones above first", c.dropped),
		})
	}
	return &Errors{Problems: ps}
}
