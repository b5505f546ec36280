package report

import (
	"bytes"
	"context"
	"encoding/json"
)

// SameEffort reports whether the effort report over the releases ids is the
// same read from a as from b: a ledger moved into another keeps what its
// releases cost.
func SameEffort(ctx context.Context, a, b Source, ids []string, o Options) (bool, error) {
	var docs [2][]byte
	for i, src := range []Source{a, b} {
		e, err := EffortOfReleases(ctx, src, ids, o)
		if err != nil {
			return false, err
		}
		if docs[i], err = json.Marshal(e); err != nil {
			return false, err
		}
	}
	return bytes.Equal(docs[0], docs[1]), nil
}
