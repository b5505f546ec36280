package workflowtest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

// SharedPlans is the fake team store of shared plans, shared by every
// machine's PlanVault: what was shared with whom, and what was deleted.
type SharedPlans struct {
	mu      sync.Mutex
	shares  map[string]tfplan.ShareRequest
	Fetches int
	Deleted []string
	// Gate, when set, runs before each call; a non-nil error prevents it,
	// as a dead process makes no calls.
	Gate func() error
}

func (s *SharedPlans) gate() error {
	if s.Gate == nil {
		return nil
	}
	return s.Gate()
}

// Live counts the plans shared and not deleted.
func (s *SharedPlans) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.shares)
}

// NewSharedPlans returns an empty team store.
func NewSharedPlans() *SharedPlans {
	return &SharedPlans{shares: map[string]tfplan.ShareRequest{}}
}

// Share returns what was shared for fingerprint, if it still is.
func (s *SharedPlans) Share(fingerprint string) (tfplan.ShareRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.shares[fingerprint]
	return r, ok
}

// PlanVault is one machine's fake vault over a team store: its plan
// store holds Local's fingerprints. Recipients are the appliers named in
// the request (a fake has no people file: empty means the author alone).
type PlanVault struct {
	S *SharedPlans
	// Machine names the machine's plan store in file paths.
	Machine string

	mu    sync.Mutex
	local map[string]bool
}

var _ workflow.PlanVault = (*PlanVault)(nil)

// Share keeps req; the plan file is now local to this machine too.
func (v *PlanVault) Share(_ context.Context, req tfplan.ShareRequest) (tfplan.Share, error) {
	if err := v.S.gate(); err != nil {
		return tfplan.Share{}, err
	}
	if len(req.Appliers) == 0 {
		req.Appliers = []string{req.SharedBy} // "everyone": the fake knows only the author
	}
	v.S.mu.Lock()
	v.S.shares[req.Plan.Fingerprint] = req
	v.S.mu.Unlock()
	v.setLocal(req.Plan.Fingerprint)
	share := tfplan.Share{SharedBy: req.SharedBy, ExpiresAt: req.ExpiresAt}
	for _, a := range req.Appliers {
		share.Recipients = append(share.Recipients, tfplan.Recipient{Principal: a, Key: "SHA256:" + a})
	}
	return share, nil
}

func (v *PlanVault) setLocal(fp string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.local == nil {
		v.local = map[string]bool{}
	}
	v.local[fp] = true
}

// LocalPlanFile is /<machine>/plans/<fingerprint>.tfplan.
func (v *PlanVault) LocalPlanFile(fp string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return "/" + v.Machine + "/plans/" + fp + ".tfplan", v.local[fp]
}

// Fetch "decrypts" the plan for a principal it was shared with.
func (v *PlanVault) Fetch(_ context.Context, p tfplan.Summary, principal string) (tfplan.FetchedPlan, error) {
	if err := v.S.gate(); err != nil {
		return tfplan.FetchedPlan{}, err
	}
	v.S.mu.Lock()
	req, ok := v.S.shares[p.Fingerprint]
	v.S.Fetches++
	v.S.mu.Unlock()
	if !ok {
		return tfplan.FetchedPlan{}, fmt.Errorf("shared plan %s: %w", p.Fingerprint, fault.ErrNotFound)
	}
	if !slices.Contains(req.Appliers, principal) {
		return tfplan.FetchedPlan{}, fmt.Errorf("%w: %s cannot decrypt plan %s", fault.ErrBlocked, principal, p.Fingerprint)
	}
	v.setLocal(p.Fingerprint)
	file, _ := v.LocalPlanFile(p.Fingerprint)
	return tfplan.FetchedPlan{File: file, Key: "SHA256:" + principal, Share: tfplan.Share{SharedBy: req.SharedBy, ExpiresAt: req.ExpiresAt}}, nil
}

// Delete forgets the shared plan.
func (v *PlanVault) Delete(_ context.Context, fp string) error {
	if err := v.S.gate(); err != nil {
		return err
	}
	v.S.mu.Lock()
	defer v.S.mu.Unlock()
	delete(v.S.shares, fp)
	v.S.Deleted = append(v.S.Deleted, fp)
	return nil
}

// Purge deletes nothing: the fake does not expire plans.
func (v *PlanVault) Purge(context.Context) ([]string, error) { return nil, nil }

// Where names the fake store.
func (v *PlanVault) Where() string { return "the fake team store" }
