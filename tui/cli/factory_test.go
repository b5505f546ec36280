package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/custody"
)

// fakeFactory is a named fake of the Factory: the project, the streams
// and the flags, and every Service request recorded. A method it does not
// override panics through the nil embedded Factory, so a command that
// reaches further than the test expects fails it.
type fakeFactory struct {
	Factory
	io       IO
	flags    GlobalFlags
	project  *workflow.Project
	requests []ServiceRequest
}

var errFakeService = errors.New("fake: no service")

// fakeLocalState is a fake custody.Reader: every root is on Terraform's
// default local backend and reads no remote state.
type fakeLocalState struct{}

func (fakeLocalState) Backend(_ context.Context, root custody.Root) (custody.Backend, error) {
	return custody.Backend{Type: "local", Source: custody.FromDefault, Dir: root.Dir, Workspace: root.Workspace}, nil
}

func (fakeLocalState) RemoteStates(context.Context, custody.Root) ([]custody.RemoteState, error) {
	return nil, nil
}

func (f *fakeFactory) IO() *IO                                          { return &f.io }
func (f *fakeFactory) Flags() *GlobalFlags                              { return &f.flags }
func (f *fakeFactory) Build() Build                                     { return Build{Version: "v9.9.9", Commit: "abc", Date: "today"} }
func (f *fakeFactory) SetReadOnly(bool)                                 {}
func (f *fakeFactory) LoadProject() (*workflow.Project, error)          { return f.project, nil }
func (f *fakeFactory) ProjectIfAny() (*workflow.Project, error)         { return f.project, nil }
func (f *fakeFactory) CheckArgoCD(workflow.Environment) error           { return nil }
func (f *fakeFactory) LedgerAbsent() (bool, error)                      { return false, nil }
func (f *fakeFactory) StateCustody() custody.Reader                     { return fakeLocalState{} }
func (f *fakeFactory) PurgeExpiredPlans(*workflow.Project) (int, error) { return 0, nil }

func (f *fakeFactory) Service(_ context.Context, req ServiceRequest) (*workflow.Service, Session, error) {
	f.requests = append(f.requests, req)
	return nil, nil, errFakeService
}

func newFake() (*fakeFactory, *bytes.Buffer) {
	var out bytes.Buffer
	return &fakeFactory{io: IO{In: &bytes.Buffer{}, Out: &out, Err: &bytes.Buffer{}},
		project: &workflow.Project{App: "web", Environments: []workflow.Environment{{Name: "staging"}, {Name: "prod"}}}}, &out
}

func execute(f Factory, args ...string) error {
	root := NewCmdRoot(f, args)
	root.SetArgs(args)
	return root.ExecuteContext(context.Background())
}

// Each command asks the Factory for exactly the ports it drives; which
// adapters serve them is cmd/relcap's choice.
func TestCommandsAskForTheirPorts(t *testing.T) {
	for _, c := range []struct {
		args []string
		want ServiceRequest
	}{
		{[]string{"release", "--env", "staging", "--image", "r/web:1", "--timeout", "3m"}, ServiceRequest{Command: "release", Needs: NeedFlow, ConvergeTimeout: 3 * time.Minute}},
		{[]string{"converge", "--env", "prod", "--revision", "abc123"}, ServiceRequest{Command: "converge", Needs: NeedEnvRepo | NeedConvergence, ConvergeTimeout: 10 * time.Minute}},
		{[]string{"unlock", "--env", "prod", "--lock-id", "l1", "--confirm-holder-gone", "--reason", "ci died"}, ServiceRequest{Command: "unlock", Needs: NeedPlans}},
		{[]string{"ownership", "check", "--env", "staging"}, ServiceRequest{Command: "ownership check", Needs: NeedOwnership}},
		{[]string{"ownership", "infer", "--env", "staging,prod", "--manager", "bot=terraform"}, ServiceRequest{Command: "ownership infer", Needs: NeedOwnership}},
		{[]string{"breakglass", "status", "--env", "prod"}, ServiceRequest{Command: "breakglass status", Needs: NeedConvergence | NeedEnvRepo | NeedForges}},
		{[]string{"approve", "--plan", strings.Repeat("f00d", 16)}, ServiceRequest{Command: "approve"}},
		{[]string{"plan", "--env", "staging"}, ServiceRequest{Command: "plan", Needs: NeedFlow}},
	} {
		f, _ := newFake()
		err := execute(f, c.args...)
		require.ErrorIs(t, err, errFakeService, "%v", c.args)
		require.Equal(t, []ServiceRequest{c.want}, f.requests, "%v", c.args)
	}
}

// A usage mistake is refused before the Factory is asked for anything.
func TestUsageMistakesOpenNothing(t *testing.T) {
	for _, args := range [][]string{
		{"release", "--env", "staging"},
		{"converge"},
		{"plna", "--env", "dev"},
		{"rehearse", "--all"},
		{"ownership", "infer", "--manager", "deploy-bot"},
		{"ownership", "infer", "--manager", "=terraform"},
		{"ownership", "infer", "--manager", "bot=Not An Owner"},
		{"ownership", "infer", "--manager", "bot=terraform", "--manager", "bot=argocd"},
		{"ownership", "infer", "--manager", "bot\x1b[2J=terraform"},
		{"ownership", "infer", "--env", "nope"},
		{"ownership", "infer", "extra"},
	} {
		f, _ := newFake()
		err := execute(f, args...)
		require.Equal(t, ExitUsage, ExitCode(err), "%v", args)
		require.Empty(t, f.requests, "%v", args)
	}
}

func TestVersionJSONIsTheFactorysBuild(t *testing.T) {
	f, out := newFake()
	require.NoError(t, execute(f, "version", "--json"))
	var got map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, "v9.9.9", got["version"])
	require.Equal(t, "abc", got["commit"])
}
