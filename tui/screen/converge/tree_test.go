package converge

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/appstate"
)

func TestTreeOrderNestsPodsUnderTheirReplicaSetAndDeployment(t *testing.T) {
	t.Parallel()
	dep := appstate.AppResource{Kind: "Deployment", Namespace: "web", Name: "web"}
	rs := appstate.AppResource{Kind: "ReplicaSet", Namespace: "web", Name: "web-1", Parent: dep.Key()}
	pod := appstate.AppResource{Kind: "Pod", Namespace: "web", Name: "web-1-a", Parent: rs.Key(), Health: "Degraded", Message: "Back-off pulling image"}
	svc := appstate.AppResource{Kind: "Service", Namespace: "web", Name: "web"}
	orphan := appstate.AppResource{Kind: "Pod", Namespace: "web", Name: "stray", Parent: "ReplicaSet/web/gone"}
	got := treeOrder([]appstate.AppResource{pod, svc, rs, orphan, dep})
	var order []string
	var depth []int
	for _, n := range got {
		order, depth = append(order, n.res.Name), append(depth, n.depth)
	}
	require.Equal(t, []string{"web", "stray", "web", "web-1", "web-1-a"}, order)
	require.Equal(t, []int{0, 0, 0, 1, 2}, depth)
}
