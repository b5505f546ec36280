package argosim

import (
	"fmt"
	"time"
)

// withApp runs f on the named app under the lock and publishes the change.
func (s *Server) withApp(name string, f func(a *app, now time.Time) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.apps[name]
	if !ok {
		return fmt.Errorf("argosim: no app %s", name)
	}
	now := time.Now()
	if err := f(a, now); err != nil {
		return err
	}
	s.publish(a, now, false)
	a.wake()
	return nil
}

// FailImagePull makes the running pods fail to pull their image: each Pod
// in the resource tree turns Degraded with "Back-off pulling image …" and
// the application turns Degraded. It lasts until Recover or until a sync
// rolls out different images (new pods).
func (s *Server) FailImagePull(name string) error {
	return s.withApp(name, func(a *app, now time.Time) error {
		if a.live() == nil {
			return fmt.Errorf("argosim: app %s has never been synced; nothing runs to fail", name)
		}
		a.podFailure, a.podFailureAt = podFailImagePull, now
		s.cfg.Logf("argosim: app %s: injected image pull failure", name)
		return nil
	})
}

// FailReadiness makes the running pods fail their readiness probe: Pods
// and the application stay Progressing with "Readiness probe failed" for
// the app's ProgressDeadline, then turn Degraded. It lasts until Recover
// or until a sync rolls out different images.
func (s *Server) FailReadiness(name string) error {
	return s.withApp(name, func(a *app, now time.Time) error {
		if a.live() == nil {
			return fmt.Errorf("argosim: app %s has never been synced; nothing runs to fail", name)
		}
		a.podFailure, a.podFailureAt = podFailReadiness, now
		s.cfg.Logf("argosim: app %s: injected readiness failure", name)
		return nil
	})
}

// FailSync makes sync operations fail with message: a running operation
// fails when it would have finished, and so does every later one until
// Recover. As in Argo CD, an automated sync that failed for a revision is
// not retried for that revision.
func (s *Server) FailSync(name, message string) error {
	if message == "" {
		message = "one or more objects failed to apply (simulated)"
	}
	return s.withApp(name, func(a *app, _ time.Time) error {
		a.failSync, a.failSyncMarker = message, "" // every sync, whatever an earlier FailSyncOf narrowed
		s.cfg.Logf("argosim: app %s: sync operations will fail: %s", name, message)
		return nil
	})
}

// FailSyncOf makes the syncs of every revision whose file contains marker
// fail with message, as the API server refuses a bad manifest: revisions
// without it (a fix, a rollback) sync normally. It lasts until Recover.
func (s *Server) FailSyncOf(name, marker, message string) error {
	if marker == "" || message == "" {
		return fmt.Errorf("argosim: FailSyncOf needs a marker and a message")
	}
	return s.withApp(name, func(a *app, _ time.Time) error {
		a.failSync, a.failSyncMarker = message, marker
		s.cfg.Logf("argosim: app %s: syncs of files containing %q will fail: %s", name, marker, message)
		return nil
	})
}

// Drift changes field of the live Deployment as kubectl edit would
// ("spec.replicas", "image" for the first container's image, or any dotted
// path with [i] indexes). The application turns OutOfSync; with self-heal
// on, an automated sync of the same revision puts Git's value back after
// the app's SelfHealDelay and is recorded in the history.
func (s *Server) Drift(name, field string) error {
	return s.withApp(name, func(a *app, now time.Time) error {
		if a.deployed == nil {
			return fmt.Errorf("argosim: app %s has never been synced; there is no live object to drift", name)
		}
		live, err := a.live().withDrift(field)
		if err != nil {
			return fmt.Errorf("argosim: app %s: %w", name, err)
		}
		a.drift, a.driftAt, a.driftedLive = field, now, live
		s.cfg.Logf("argosim: app %s: live %s drifted from Git", name, field)
		return nil
	})
}

// Recover clears injected failures: pods become healthy again (after the
// app's TimeToHealthy, as a fresh rollout), syncs stop failing, and an
// automated sync that failed is retried. Drift stays until a sync.
func (s *Server) Recover(name string) error {
	return s.withApp(name, func(a *app, now time.Time) error {
		if a.podFailure != podFailNone {
			a.rollout = now
		}
		a.podFailure, a.failSync, a.failSyncMarker, a.failedAuto = podFailNone, "", "", ""
		s.cfg.Logf("argosim: app %s: injected failures cleared", name)
		return nil
	})
}

// StopController stops the simulated application controller, as when
// argocd-application-controller crashes or is scaled to zero: the API
// keeps answering, but no application is reconciled, no operation
// advances, and what the applications report freezes. A refresh request
// (Get with refresh) is not answered until the controller runs again,
// as Argo CD's server waits for the controller.
func (s *Server) StopController() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.controllerDown == nil {
		s.controllerDown = make(chan struct{})
		s.cfg.Logf("argosim: application controller stopped")
	}
}

// StartController brings the simulated application controller back; it
// reconciles every application at once.
func (s *Server) StartController() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.controllerDown == nil {
		return
	}
	close(s.controllerDown)
	s.controllerDown = nil
	for _, a := range s.apps {
		a.wake()
	}
	s.cfg.Logf("argosim: application controller started")
}
