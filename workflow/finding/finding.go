// Package finding is the vocabulary every check of relcap reports in: a
// Finding (what was found, how serious, what to do next) and the Facts
// behind it. It is its own small package so that the subsystems that
// produce findings (workflow/ownership, the steps of workflow) share one
// type without importing each other.
package finding

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ShortLen is how many characters of a commit, plan fingerprint or digest
// relcap shows wherever it abbreviates one.
const ShortLen = 12

// ShortHash abbreviates a commit SHA, a plan fingerprint or another hex
// identifier to ShortLen characters: the one abbreviation relcap's
// messages and screens use (workflow.ShortHash is this function).
func ShortHash(h string) string {
	if len(h) > ShortLen {
		return h[:ShortLen]
	}
	return h
}

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

// Fact is one named fact behind a finding or a piece of evidence, e.g.
// fields = "spec.replicas".
type Fact struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Of is the fact called name, with value.
func Of(name, value string) Fact { return Fact{Name: name, Value: value} }

// Facts are the facts behind a finding, in the order they read best.
type Facts []Fact

// Get returns the value of the fact called name.
func (fs Facts) Get(name string) (string, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// With returns fs with name set to value: an existing fact keeps its place.
func (fs Facts) With(name, value string) Facts {
	for i, f := range fs {
		if f.Name == name {
			out := slices.Clone(fs)
			out[i].Value = value
			return out
		}
	}
	return append(slices.Clone(fs), Fact{Name: name, Value: value})
}

// String is "name: value; name: value".
func (fs Facts) String() string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Name + ": " + f.Value
	}
	return strings.Join(parts, "; ")
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
	// Facts are the facts behind the finding, e.g. the overlapping fields.
	Facts Facts `json:"facts,omitempty"`
}

// UnmarshalJSON reads findings as relcap writes them, and as releases
// recorded before findings had ordered facts kept them: an "evidence"
// object of name → value, read here in name order.
func (f *Finding) UnmarshalJSON(b []byte) error {
	type plain Finding
	var v struct {
		plain
		Legacy map[string]string `json:"evidence"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Finding(v.plain)
	if len(f.Facts) == 0 && len(v.Legacy) > 0 {
		for _, k := range slices.Sorted(maps.Keys(v.Legacy)) {
			f.Facts = append(f.Facts, Fact{Name: k, Value: v.Legacy[k]})
		}
	}
	return nil
}

// Fact is the value of the finding's fact called name, "" when it has none.
func (f Finding) Fact(name string) string {
	v, _ := f.Facts.Get(name)
	return v
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

// Blockers counts the Blocker findings.
func Blockers(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if f.Severity == Blocker {
			n++
		}
	}
	return n
}

// Sort orders findings most serious first, then by code and subject, so
// conflicts lead every list.
func Sort(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if a.Severity != b.Severity {
			return int(b.Severity - a.Severity)
		}
		if c := strings.Compare(a.Code, b.Code); c != 0 {
			return c
		}
		return strings.Compare(a.Subject, b.Subject)
	})
}

// ShortDuration writes d as a person would type it for --ttl: "30m", "1h",
// "1h30m", "90s", without the zero units time.Duration's String adds.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
