package workflow

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// What the PlanVault port and the shared-plan journal records carry, and
// who may apply; sharing itself (PlanSharing) is workflow/sharedplan's.

// SharedPlan is a saved plan file as the team store keeps it: the age
// ciphertext of the file, who it is encrypted to, who shared it and until
// when it may be fetched.
type SharedPlan struct {
	Fingerprint string
	Env         string
	Ciphertext  []byte
	Recipients  []PlanRecipient
	SharedBy    string
	SharedAt    time.Time
	ExpiresAt   time.Time
}

// PlanRecipient is one key a shared plan is encrypted to: the principal of
// the people file and the key's SHA-256 fingerprint (SHA256:…).
type PlanRecipient struct {
	Principal string `json:"principal"`
	Key       string `json:"key"`
}

// SkippedRecipient is a key of someone allowed to apply that a plan could
// not be encrypted to, and why (a key type age does not take).
type SkippedRecipient struct {
	Principal string `json:"principal"`
	Key       string `json:"key,omitempty"`
	Reason    string `json:"reason"`
}

// ShareRequest asks to share a saved plan with the people allowed to apply
// it in its environment.
type ShareRequest struct {
	Plan PlanSummary
	// Appliers are the principals allowed to apply (approvers.apply);
	// empty means every principal of the people file.
	Appliers  []string
	SharedBy  string
	ExpiresAt time.Time
}

// PlanShare is what sharing did: the keys the plan is encrypted to, the
// keys left out and why, and until when it is kept.
type PlanShare struct {
	Recipients []PlanRecipient
	Skipped    []SkippedRecipient
	SharedBy   string
	ExpiresAt  time.Time
}

// Principals are the recipients' principals, sorted, each once.
func (s PlanShare) Principals() []string {
	var out []string
	for _, r := range s.Recipients {
		out = append(out, r.Principal)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// FetchedPlan is a shared plan fetched from the team store and decrypted
// into this machine's private plan store.
type FetchedPlan struct {
	// File is the plan file written (mode 0600), its SHA-256 checked
	// against the reviewed plan's.
	File string
	// Key is the fingerprint of the applier's key that decrypted it.
	Key   string
	Share PlanShare
}

// MayApply refuses actor when the environment lists who may apply
// (approvers.apply) and actor is not among them. Unlisted means anyone: in
// a team store only the people file's principals can decrypt a plan
// anyway.
func (e Environment) MayApply(actor string) error {
	who := e.Approvals.Approvers.Apply
	if len(who) == 0 || slices.Contains(who, actor) {
		return nil
	}
	return fmt.Errorf("%w: %s may not apply plans in %s: approvers.apply lists %s", ErrBlocked, actor, e.Name, strings.Join(who, ", "))
}
