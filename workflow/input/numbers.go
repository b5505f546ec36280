package input

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/relcap/relcap/workflow/fault"
)

// NumberKind is what a numeric flag takes.
type NumberKind int

// The kinds of numbers relcap's flags take.
const (
	// Decimal: a number, fractions allowed (minutes, hours, a speed).
	Decimal NumberKind = iota
	// Whole: a whole number (a schema version).
	Whole
	// Duration: a Go duration with its unit (90s, 10m, 1h30m).
	Duration
)

// numberFlag is what one numeric flag takes: its kind, an example value,
// and whether zero is meaningful when given (a speed of 0 plays without
// delays; a timeout of 0 would time out at once).
type numberFlag struct {
	kind      NumberKind
	example   string
	what      string
	zeroValid bool
}

// numberFlags are the numeric and duration flags of every command, by name
// (a name means the same in every command that has it). A value that does
// not parse, is not finite or is negative is refused before the command
// opens or records anything.
var numberFlags = map[string]numberFlag{
	"minutes":    {Decimal, "30", "minutes spent", false},
	"baseline":   {Decimal, "3", "hours per release", true},
	"speed":      {Decimal, "2", "a playback speed factor (0 plays without delays)", true},
	"schema":     {Whole, "3", "a data-schema version", true},
	"min-schema": {Whole, "2", "a data-schema version", true},
	"max-schema": {Whole, "4", "a data-schema version", true},
	"timeout":    {Duration, "10m", "a duration", false},
	"ttl":        {Duration, "30m", "a duration", false},
}

// NumberFlagNames lists the flags numberFlags checks, for tests that make
// sure every numeric flag of every command is among them.
func NumberFlagNames() []string {
	names := make([]string, 0, len(numberFlags))
	for n := range numberFlags {
		names = append(names, n)
	}
	return names
}

// BadNumber is the one-line usage error for a value the flag named could
// not parse at all (pflag's parse error, made readable): it names the
// flag, quotes the value and gives an example.
func BadNumber(flag, value string) error {
	f, ok := numberFlags[flag]
	if !ok {
		return fmt.Errorf("%w: --%s %s is not a valid value", fault.ErrUsage, flag, QuoteInput(value))
	}
	return fmt.Errorf("%w: --%s %s is not %s: %s", fault.ErrUsage, flag, QuoteInput(value), kindName(f.kind), f.hint(flag))
}

// checkNumber checks a numeric flag's value as the flag holds it (pflag's
// String of a parsed value): finite and not negative, and not zero where
// zero means nothing.
func checkNumber(flag, value string) error {
	f, ok := numberFlags[flag]
	if !ok {
		return nil
	}
	var v float64
	switch f.kind {
	case Duration:
		d, err := time.ParseDuration(value)
		if err != nil {
			return BadNumber(flag, value)
		}
		v = float64(d)
	default:
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return BadNumber(flag, value)
		}
		v = n
	}
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%w: --%s %s is not a finite number: %s", fault.ErrUsage, flag, QuoteInput(value), f.hint(flag))
	case v < 0:
		return fmt.Errorf("%w: --%s %s is negative: %s", fault.ErrUsage, flag, QuoteInput(value), f.hint(flag))
	case v == 0 && !f.zeroValid:
		return fmt.Errorf("%w: --%s %s is zero: %s", fault.ErrUsage, flag, QuoteInput(value), f.hint(flag))
	}
	return nil
}

// IsNumberFlag reports whether flag is one numberFlags checks.
func IsNumberFlag(flag string) bool {
	_, ok := numberFlags[flag]
	return ok
}

func (f numberFlag) hint(flag string) string {
	h := fmt.Sprintf("give %s, e.g. --%s %s", f.what, flag, f.example)
	if f.kind == Duration {
		h += " (units: s, m, h; as 90s, 10m, 1h30m)"
	}
	return h
}

func kindName(k NumberKind) string {
	switch k {
	case Whole:
		return "a whole number"
	case Duration:
		return "a duration"
	}
	return "a number"
}
