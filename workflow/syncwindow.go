package workflow

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SyncWindow is a sync window of an Argo CD project: while a deny window
// that applies to an application is active, Argo CD runs no automated sync
// and no self-heal of it (and a manual sync only when ManualSync allows
// it); when the window closes, Argo CD resumes them by itself.
type SyncWindow struct {
	Kind string `json:"kind"` // SyncWindowDeny or SyncWindowAllow
	// Project is the Argo CD project that holds the window; empty before
	// the adapter has placed it.
	Project string `json:"project,omitempty"`
	// Applications are the application names (globs) the window applies
	// to; relcap's windows name exactly one.
	Applications []string `json:"applications"`
	// Schedule is when the window opens, a five-field cron expression
	// (minute hour day-of-month month day-of-week) in TimeZone.
	Schedule string        `json:"schedule"`
	Duration time.Duration `json:"duration"`
	TimeZone string        `json:"time_zone,omitempty"`
	// ManualSync lets a person sync by hand while a deny window is active.
	ManualSync bool `json:"manual_sync"`
	// Description says whose window it is, where the server keeps one
	// (Argo CD 3.1 and later); empty otherwise.
	Description string `json:"description,omitempty"`
	// Active is Argo CD's verdict when the window was read (ListWindows).
	Active bool `json:"active,omitempty"`
}

// Sync window kinds.
const (
	SyncWindowDeny  = "deny"
	SyncWindowAllow = "allow"
)

// Same reports whether w and o are the same window as Argo CD applies it:
// kind, applications, schedule, duration, time zone (none means UTC) and
// manual sync. Project, Description and Active are not compared: a server
// that drops descriptions still holds the same window.
func (w SyncWindow) Same(o SyncWindow) bool {
	tz := func(s string) string {
		if s == "" {
			return "UTC"
		}
		return s
	}
	a, b := slices.Clone(w.Applications), slices.Clone(o.Applications)
	slices.Sort(a)
	slices.Sort(b)
	return w.Kind == o.Kind && slices.Equal(a, b) && w.Schedule == o.Schedule && w.Duration == o.Duration &&
		tz(w.TimeZone) == tz(o.TimeZone) && w.ManualSync == o.ManualSync
}

func (w SyncWindow) String() string {
	s := fmt.Sprintf("%s window %q for %s, %s in %s", w.Kind, w.Schedule, strings.Join(w.Applications, ","), ShortDuration(w.Duration), w.TimeZone)
	if w.Project != "" {
		s += " on project " + w.Project
	}
	return s
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

// SyncPolicy is an Argo CD application's automated sync policy, as a
// break-glass record from before sync windows saved it to restore.
type SyncPolicy struct {
	Automated bool `json:"automated"`
	SelfHeal  bool `json:"self_heal"`
	Prune     bool `json:"prune"`
}

// UnmarshalJSON reads a policy object, or the JSON string holding one that
// break-glass records kept before checkpoints were typed.
func (p *SyncPolicy) UnmarshalJSON(b []byte) error {
	type plain SyncPolicy
	var s string
	if json.Unmarshal(b, &s) == nil {
		b = []byte(s)
	}
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("sync policy: %w", err)
	}
	*p = SyncPolicy(v)
	return nil
}

func (p SyncPolicy) String() string {
	if !p.Automated {
		return "manual"
	}
	return fmt.Sprintf("automated (self-heal %t, prune %t)", p.SelfHeal, p.Prune)
}
