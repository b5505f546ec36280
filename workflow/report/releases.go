package report

import (
	"context"
	"time"
)

// EffortOfReleases builds the effort report of exactly the releases ids as
// src holds them, whatever else it holds (a team's ledger holds other
// captains' releases too), over the period from the first of them to the
// last: what relcap ledger migrate compares between the ledger it copied
// from and the one it copied to. o's period is ignored; its Now, baseline
// and production environment are used. nil for no releases.
func EffortOfReleases(ctx context.Context, src Source, ids []string, o Options) (*Effort, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	all, err := src.ReportData(ctx, Query{EffortOnly: true})
	if err != nil {
		return nil, err
	}
	var data Data
	o.From, o.To = time.Time{}, time.Time{}
	for _, r := range all.Releases {
		if !want[r.ID] {
			continue
		}
		data.Releases = append(data.Releases, r)
		if o.From.IsZero() || r.CreatedAt.Before(o.From) {
			o.From = r.CreatedAt
		}
		if o.To.IsZero() || !r.CreatedAt.Before(o.To) {
			o.To = r.CreatedAt.Add(time.Nanosecond)
		}
	}
	for _, e := range all.Effort {
		if want[e.ReleaseID] {
			data.Effort = append(data.Effort, e)
		}
	}
	if len(data.Releases) == 0 {
		return nil, nil
	}
	return BuildEffort(data, o)
}
