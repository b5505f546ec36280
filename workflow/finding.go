package workflow

import (
	"fmt"
	"slices"
)

// Severity orders findings: a Blocker stops the step, a Warning is shown and
// journaled, Info is context.
type Severity int

// Severities, from least to most serious.
const (
	Info Severity = iota
	Warning
	Blocker
)

func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Blocker:
		return "blocker"
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// MarshalText stores severities by name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a severity name.
func (s *Severity) UnmarshalText(b []byte) error {
	for _, c := range []Severity{Info, Warning, Blocker} {
		if c.String() == string(b) {
			*s = c
			return nil
		}
	}
	return fmt.Errorf("unknown severity %q", b)
}

// Finding is one thing a step found, with what to do about it.
type Finding struct {
	Severity Severity `json:"severity"`
	// Code is stable and machine-readable, e.g. "ownership.conflict".
	Code string `json:"code"`
	// Subject names the object the finding is about, e.g. "apps/Deployment web/web".
	Subject string `json:"subject"`
	Message string `json:"message"`
	// NextAction is the next safe action, phrased as an instruction.
	NextAction string `json:"next_action,omitempty"`
	// Evidence holds the facts behind the finding, e.g. the overlapping fields.
	Evidence map[string]string `json:"evidence,omitempty"`
}

func (f Finding) String() string {
	s := fmt.Sprintf("%s %s %s: %s", f.Severity, f.Code, f.Subject, f.Message)
	if f.NextAction != "" {
		s += " — next: " + f.NextAction
	}
	return s
}

// Blocking reports whether any finding is a Blocker.
func Blocking(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == Blocker })
}

// SortFindings orders findings most serious first, then by code and subject,
// so conflicts lead every list.
func SortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if a.Severity != b.Severity {
			return int(b.Severity - a.Severity)
		}
		if a.Code != b.Code {
			if a.Code < b.Code {
				return -1
			}
			return 1
		}
		switch {
		case a.Subject < b.Subject:
			return -1
		case a.Subject > b.Subject:
			return 1
		}
		return 0
	})
}

// Evidence is a fact a step established and an auditor can check later: a
// plan fingerprint, a digest verified in a registry, a Git commit, a
// converged application state.
type Evidence struct {
	Kind    string            `json:"kind"`    // e.g. "plan.fingerprint", "digest.verified"
	Subject string            `json:"subject"` // what it is about
	Detail  map[string]string `json:"detail,omitempty"`
}
