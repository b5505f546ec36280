package workflow

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
)

// recordingVerifier is a fake SignatureVerifier: it accepts every
// signature and records the time each was checked at.
type recordingVerifier struct {
	at []time.Time
}

func (v *recordingVerifier) Verify(_ context.Context, _, _ string, _ []byte, _ approval.Signature, at time.Time) error {
	v.at = append(v.at, at)
	return nil
}

// TestASignatureIsCheckedWhenTheLedgerReceivedIt (attack 8): the time a
// signature is checked at is the ledger's receipt, never before the plan;
// a statement dated far from its receipt or before its plan does not count.
func TestASignatureIsCheckedWhenTheLedgerReceivedIt(t *testing.T) {
	planned := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rule := approval.Rule{Kind: approval.Plan, Required: 1, Signed: true}
	target := approval.Target{Subject: "fp", NotBefore: planned}
	signed := approval.Signature{Armored: "sig", Key: "SHA256:k"}
	cases := map[string]struct {
		at, received time.Time
		counts       bool
		checkedAt    time.Time
		why          string
	}{
		"on time":                              {planned.Add(time.Hour), planned.Add(time.Hour + time.Second), true, planned.Add(time.Hour + time.Second), ""},
		"back-dated statement":                 {planned.Add(-48 * time.Hour), planned.Add(time.Hour), false, time.Time{}, "from its receipt"},
		"back-dated receipt too":               {planned.Add(-48 * time.Hour), planned.Add(-48 * time.Hour), false, time.Time{}, "before what it approves was made"},
		"future-dated statement":               {planned.Add(2 * time.Hour), planned.Add(time.Hour), false, time.Time{}, "from its receipt"},
		"older relcap, no receipt":             {planned.Add(time.Hour), time.Time{}, true, planned.Add(time.Hour), ""},
		"receipt before the plan, within skew": {planned.Add(-time.Minute), planned.Add(-time.Minute), true, planned, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			v := &recordingVerifier{}
			a := approval.Approval{Kind: approval.Plan, Subject: "fp", Approver: "bob", At: c.at, ReceivedAt: c.received, Signature: signed}
			check := rule.Count(target, "alice", []approval.Approval{a}, verifyWith(t.Context(), v))
			require.Equal(t, c.counts, check.Satisfied(), check.Ignored)
			if c.counts {
				require.Equal(t, []time.Time{c.checkedAt}, v.at)
				return
			}
			require.Contains(t, check.Ignored["bob"], c.why)
			require.Empty(t, v.at, "not even checked")
		})
	}
}

// TestAnEditedPeopleFileIsRefusedWhereWhoIsWhoMatters (attack 9): a
// working copy that differs from the protected people file refuses
// approvals where the author must differ or production plans need one, and
// warns elsewhere; a file nothing protects is always said to be so.
func TestAnEditedPeopleFileIsRefusedWhereWhoIsWhoMatters(t *testing.T) {
	differs := PeopleState{File: "allowed_signers", Revision: "git:1:2", Protected: true, Where: "allowed_signers at origin/main (commit 1)", Differs: []string{"bob"}}
	for name, c := range map[string]struct {
		env    Environment
		refuse bool
	}{
		"distinct from author":        {Environment{Name: "staging", Approvals: approval.Policy{Plan: 1, DistinctFromAuthor: true}}, true},
		"production plan approvals":   {Environment{Name: "prod", Production: true, Approvals: approval.Policy{Plan: 1}}, true},
		"production without approval": {Environment{Name: "prod", Production: true}, false},
		"staging":                     {Environment{Name: "staging", Approvals: approval.Policy{Plan: 1}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			warnings, err := PeopleFileVerdict(c.env, differs)
			if c.refuse {
				require.ErrorIs(t, err, ErrPeopleFileDiffers)
				require.ErrorIs(t, err, fault.ErrBlocked)
				require.Contains(t, err.Error(), "allowed_signers on this machine differs from allowed_signers at origin/main (commit 1) for bob")
				require.Contains(t, err.Error(), "push it through review")
				return
			}
			require.NoError(t, err)
			require.Len(t, warnings, 1)
			require.Contains(t, warnings[0], "for bob")
		})
	}
	warnings, err := PeopleFileVerdict(Environment{Name: "prod", Production: true, Approvals: approval.Policy{Plan: 2, DistinctFromAuthor: true}},
		PeopleState{File: "allowed_signers", Revision: "file:sha256:00", Where: "the repository /r that holds allowed_signers has no origin"})
	require.NoError(t, err, "nothing to compare with: said, not refused")
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], "is not protected (the repository /r that holds allowed_signers has no origin)")
}
