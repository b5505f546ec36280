package audit_test

import (
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/workflowtest"
)

var t0 = workflowtest.T0

// testProject is workflowtest.Project: app web in staging and prod.
func testProject(planApprovals int) *workflow.Project { return workflowtest.Project(planApprovals) }
