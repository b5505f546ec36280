package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
)

// recordingVerifier accepts every signature and answers VerifyIn from
// revisions.
type recordingVerifier struct {
	revisions map[string]error // revision → VerifyIn's answer
}

func (v *recordingVerifier) Verify(context.Context, string, string, []byte, approval.Signature, time.Time) error {
	return nil
}

type peopleFileVerifier struct{ *recordingVerifier }

func (v peopleFileVerifier) PeopleState(context.Context) (workflow.PeopleState, error) {
	return workflow.PeopleState{File: "allowed_signers", Revision: "git:1:2", Protected: true, Where: "allowed_signers at origin/main"}, nil
}

func (v peopleFileVerifier) VerifyIn(_ context.Context, revision, _, _ string, _ []byte, _ approval.Signature, _ time.Time) error {
	return v.revisions[revision]
}

// TestJournalVerifyChecksAnApprovalAgainstItsRecordedPeopleFile (attack
// 9): an approval that does not hold against the revision it was recorded
// with fails the check; one recorded before relcap kept the revision is
// said to be so and checked as before, never called tampered.
func TestJournalVerifyChecksAnApprovalAgainstItsRecordedPeopleFile(t *testing.T) {
	v := peopleFileVerifier{&recordingVerifier{revisions: map[string]error{
		"git:good:1":    nil,
		"git:rewound:2": fmt.Errorf("%w: not in the history of origin's main", fault.ErrBlocked),
		"git:gone:3":    fmt.Errorf("%w: origin unreachable", workflow.ErrPeopleUnavailable),
	}}}
	a := approval.Approval{Kind: approval.Plan, Subject: "fp", Approver: "bob", At: time.Now(), Signature: approval.Signature{Armored: "sig", Key: "SHA256:k"}}
	check := func(people string) ApprovalVerification {
		a := a
		a.People = people
		var av ApprovalVerification
		require.NoError(t, checkApprovalSignature(t.Context(), v, a, &av))
		return av
	}
	good := check("git:good:1")
	require.Equal(t, VerifyOK, good.Signature.Status)
	require.Empty(t, approvalFailures([]ApprovalVerification{good}))

	rewound := check("git:rewound:2")
	require.Equal(t, VerifyFailed, rewound.Signature.Status)
	failures := approvalFailures([]ApprovalVerification{rewound})
	require.Len(t, failures, 1)
	require.Contains(t, failures[0], "does not hold against the people file it was recorded with")

	gone := check("git:gone:3")
	require.Equal(t, VerifyUnchecked, gone.Signature.Status, "a revision that cannot be read is unchecked, not tampered")
	require.Empty(t, approvalFailures([]ApprovalVerification{gone}))

	legacy := check("")
	require.Equal(t, VerifyOK, legacy.Signature.Status)
	require.Empty(t, approvalFailures([]ApprovalVerification{legacy}))
	require.True(t, strings.Contains(strings.Join(legacy.Notes, ";"), "people file revision not recorded"))
}
