package workflow

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/oplock"
)

// Cross-captain safety: one apply per Terraform state, one promotion per
// environment, whoever runs it and wherever (OperationLocks).

// StateBoundary is the key of the apply lock of env's Terraform state: the
// project's app, the Terraform root relative to the release repository
// (the directory of relcap.yaml), and the workspace, e.g.
// "web:infra/staging@default". It must name the same state on every
// captain's machine, so it is built from what the release repository says
// rather than from the absolute path of one machine's checkout; the app
// keeps two release repositories with equally named roots apart. Two
// environments sharing a root and workspace share the lock, as they share
// the state. (Within one machine the Terraform adapter also serializes
// operations per working directory, and Terraform's state lock stays on.)
func StateBoundary(p *Project, env Environment) string {
	ws := env.Terraform.Workspace
	if ws == "" {
		ws = "default"
	}
	return p.App + ":" + projectRelative(p, env.Terraform.Dir) + "@" + ws
}

// PromotionBoundary is the key of the promotion lock of env: the app and
// the environment's name, e.g. "web/staging".
func PromotionBoundary(p *Project, env Environment) string {
	return p.App + "/" + env.Name
}

// projectRelative is dir relative to the project's directory, with
// forward slashes; dir itself (cleaned) when it cannot be made relative.
func projectRelative(p *Project, dir string) string {
	base := p.Dir
	if base == "" && p.File != "" {
		base = filepath.Dir(p.File)
	}
	if base != "" && dir != "" {
		if rel, err := filepath.Rel(base, dir); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(filepath.Clean(dir))
}

// lockOperation takes the lock of scope for this Service's actor doing
// what, when the ledger keeps operation locks (a team's PostgreSQL, and
// one machine's SQLite); on a ledger without them it takes nothing. A refusal
// is journaled (lock.refused, with releaseID when there is one) and
// returned as the *LockedError; a lock that cannot be taken for another
// reason (the database unreachable) is an error, never a lock skipped.
func (s *Service) lockOperation(ctx context.Context, scope oplock.Scope, releaseID, what string) (func(), error) {
	locks, ok := s.d.Ledger.(OperationLocks)
	if !ok {
		return func() {}, nil
	}
	s.mu.Lock()
	again := s.held[scope]
	s.mu.Unlock()
	if again {
		// relcap apply holds the lock before it runs the release's apply
		// step, which asks again: the outer holder releases it. (A
		// Service runs one release operation at a time; two goroutines
		// of one Service asking at once both go to the ledger, and the
		// second is refused there.)
		return func() {}, nil
	}
	unlock, err := locks.TryLock(ctx, scope, oplock.Holder{Actor: s.d.Actor, What: what, Since: s.d.Clock.Now()})
	var le *oplock.LockedError
	switch {
	case errors.As(err, &le):
		h := le.Holder
		rec := journal.LockRefused{Kind: scope.Kind, Key: scope.Key, Release: releaseID, Holder: h.Actor, HolderWhat: h.What,
			HolderHost: h.Host, HolderPID: h.PID, Reason: le.Error()}
		if !h.Since.IsZero() {
			since := h.Since.UTC()
			rec.HolderSince = &since
		}
		if jerr := s.journal(context.WithoutCancel(ctx), rec); jerr != nil {
			return nil, errors.Join(le, journalFailed(jerr))
		}
		return nil, le
	case err != nil:
		return nil, fmt.Errorf("take %s: %w", scope, err)
	}
	s.mu.Lock()
	if s.held == nil {
		s.held = map[oplock.Scope]bool{}
	}
	s.held[scope] = true
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.held, scope)
			s.mu.Unlock()
			unlock()
		})
	}, nil
}

// lockBlocked turns a lock refusal into the step's Blocked result (its
// message, the refusal's, is what the cockpit shows). Other errors, and a
// refusal that could not be journaled, are not: the step fails with them.
func lockBlocked(err error) (StepResult, bool) {
	var le *oplock.LockedError
	if !errors.As(err, &le) || err != error(le) {
		return StepResult{}, false
	}
	return StepResult{Status: Blocked, Message: le.Error(), Err: le}, true
}
