package store

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// TestSharedPlansRoundTripExpireAndDelete: a shared plan comes back byte
// for byte with its recipients and times, is replaced by sharing it
// again, is deleted once, and expired ones are purged while others stay.
// The ciphertext is never scrubbed: a secret's bytes inside it would
// otherwise be masked and the plan lost.
func TestSharedPlansRoundTripExpireAndDelete(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		secrets := secret.NewSet()
		secrets.Add("hunter2-secret")
		l := b.openNew(t, WithSecrets(secrets))

		_, err := l.SharedPlan(ctx, "fp1")
		require.ErrorIs(t, err, fault.ErrNotFound)

		blob := append([]byte{0, 1, 2, 0xff}, []byte("…hunter2-secret…")...)
		p := tfplan.SharedPlan{
			Fingerprint: "fp1", Env: "prod", Ciphertext: blob,
			Recipients: []tfplan.Recipient{{Principal: "alice", Key: "SHA256:a"}, {Principal: "bob", Key: "SHA256:b"}},
			SharedBy:   "alice", SharedAt: t0, ExpiresAt: t0.Add(time.Hour),
		}
		require.NoError(t, l.PutSharedPlan(ctx, p))
		got, err := l.SharedPlan(ctx, "fp1")
		require.NoError(t, err)
		require.True(t, bytes.Equal(blob, got.Ciphertext), "byte for byte, never scrubbed")
		requireTimeEqual(t, p.SharedAt, got.SharedAt)
		requireTimeEqual(t, p.ExpiresAt, got.ExpiresAt)
		got.SharedAt, got.ExpiresAt = p.SharedAt, p.ExpiresAt
		require.Equal(t, p, got)

		p.Recipients = p.Recipients[1:]
		p.ExpiresAt = t0.Add(2 * time.Hour)
		require.NoError(t, l.PutSharedPlan(ctx, p), "sharing again replaces it")
		got, err = l.SharedPlan(ctx, "fp1")
		require.NoError(t, err)
		require.Equal(t, p.Recipients, got.Recipients)
		requireTimeEqual(t, p.ExpiresAt, got.ExpiresAt)

		other := p
		other.Fingerprint, other.ExpiresAt = "fp2", t0.Add(10*time.Minute)
		require.NoError(t, l.PutSharedPlan(ctx, other))
		gone, err := l.DeleteExpiredSharedPlans(ctx, t0.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, []string{"fp2"}, gone)
		_, err = l.SharedPlan(ctx, "fp1")
		require.NoError(t, err, "not expired yet")

		require.NoError(t, l.DeleteSharedPlan(ctx, "fp1"))
		require.NoError(t, l.DeleteSharedPlan(ctx, "fp1"), "deleting what is gone is no error")
		_, err = l.SharedPlan(ctx, "fp1")
		require.ErrorIs(t, err, fault.ErrNotFound)

		require.ErrorIs(t, l.PutSharedPlan(ctx, tfplan.SharedPlan{Fingerprint: "fp3"}), fault.ErrUsage)
	})
}
