package breakglass_test

import (
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/workflowtest"
)

var t0 = workflowtest.T0

// testProject is workflowtest.Project: app web in staging and prod.
func testProject(planApprovals int) *workflow.Project { return workflowtest.Project(planApprovals) }

// process is one relcap process: the core Service and the break-glass
// service over its ports, with its session journal.
type process struct {
	core    *workflow.Service
	svc     *breakglass.Service
	journal *workflowtest.Journal
}
