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

// Measure books this command's time to step in role: at a terminal its
// duration up to the idle threshold, without one an unmeasured entry.
func (a *app) Measure(svc *workflow.Service, step string, role effort.Role) {
	a.measured = append(a.measured, measuredCommand{svc: svc, step: step, role: role})
}
