package report

import (
	"fmt"
	"strings"
	"time"
)

// ParsePeriod turns a report's --from and --to into [from, to). A date or month
// given to --to is included, so "--from 2026-01-01 --to 2026-01-31" is all
// of January; an RFC 3339 instant is the exclusive end itself.
func ParsePeriod(fromS, toS string, loc *time.Location, now time.Time) (time.Time, time.Time, error) {
	var from, to time.Time
	if fromS == "" {
		n := now.In(loc)
		from = time.Date(n.Year(), n.Month()-2, 1, 0, 0, 0, 0, loc)
	} else {
		t, _, err := parseTime(fromS, loc)
		if err != nil {
			return from, to, fmt.Errorf("--from: %w", err)
		}
		from = t
	}
	if toS == "" {
		// To is exclusive: a release created this very instant belongs in.
		to = now.Add(time.Nanosecond)
	} else {
		t, next, err := parseTime(toS, loc)
		if err != nil {
			return from, to, fmt.Errorf("--to: %w", err)
		}
		to = next(t)
	}
	if !from.Before(to) {
		return from, to, fmt.Errorf("the period is empty: --from %s is not before --to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	return from, to, nil
}

// parseTime reads a date, a month or an instant, and says how to get
// the exclusive end of the span it names.
func parseTime(s string, loc *time.Location) (time.Time, func(time.Time) time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		return t, func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }, nil
	}
	if t, err := time.ParseInLocation("2006-01", s, loc); err == nil {
		return t, func(t time.Time) time.Time { return t.AddDate(0, 1, 0) }, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, func(t time.Time) time.Time { return t }, nil
	}
	return time.Time{}, nil, fmt.Errorf("%q is not YYYY-MM-DD, YYYY-MM or an RFC 3339 time", s)
}
