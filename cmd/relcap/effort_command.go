package main

import (
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
)

// measuredCommand is a command whose duration counts as its person's
// effort on the releases it worked on (Service.RecordCommandEffort, when
// the command closes).
type measuredCommand struct {
	svc  *workflow.Service
	step string
	role effort.Role
}

// measure books this command's time to step in role: at a terminal its
// duration up to the idle threshold, without one an unmeasured entry. The
// cockpit measures itself (input and focus) and is not booked here.
func (a *app) measure(svc *workflow.Service, step workflow.StepKind, role effort.Role) {
	a.measured = append(a.measured, measuredCommand{svc: svc, step: step.String(), role: role})
}

// measureRelease books a command that drives a whole release headless
// (release --no-tui, resume, rollback) to the release as a whole.
func (a *app) measureRelease(svc *workflow.Service) {
	if a.useCockpit() {
		return
	}
	a.measured = append(a.measured, measuredCommand{svc: svc, step: effort.WholeRelease, role: effort.RoleCaptain})
}
