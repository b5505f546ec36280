package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParsePeriodIncludesTheLastDayOrMonthNamed(t *testing.T) {
	now := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	from, to, err := ParsePeriod("2026-01-01", "2026-01-31", time.UTC, now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), from)
	require.Equal(t, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), to)

	from, to, err = ParsePeriod("2026-01", "2026-02", time.UTC, now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), to)
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), from)

	from, to, err = ParsePeriod("", "", time.UTC, now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), from, "two months back by default")
	require.Equal(t, now.Add(time.Nanosecond), to, "up to now, a release created this instant included")

	_, _, err = ParsePeriod("2026-02-01", "2026-01-01", time.UTC, now)
	require.ErrorContains(t, err, "the period is empty")
	_, _, err = ParsePeriod("yesterday", "", time.UTC, now)
	require.ErrorContains(t, err, "--from")
}
