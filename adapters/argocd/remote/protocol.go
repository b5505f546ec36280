package remote

import (
	"context"
	"errors"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/adapters/argocd/argoconf"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/setup"
)

// The protocol between relcap and relcap-argocd: net/rpc with the JSON
// codec (net/rpc/jsonrpc) over the helper's stdin and stdout. The helper
// registers one receiver, Service, whose methods take the Args types
// below and fill the Reply types. Every reply carries the call's failure
// as a Fault, not as net/rpc's error (a bare string), so the error's kind
// survives the pipe.
const Service = "Argo"

// Build is a binary's version as relcap version prints it; both sides of
// the pipe must come from the same build.
type Build struct {
	Version, Commit string
}

// ResolveBuild keeps what the linker set (version and commit, "dev" and
// "none" when unset) and fills what it left at its default from the
// build information Go embedded: the module version (go install
// module@version) and the VCS revision.
func ResolveBuild(version, commit string) Build {
	b := Build{Version: version, Commit: commit}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	if b.Commit == "none" {
		rev, modified := "", false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if modified {
				rev += "-dirty"
			}
			b.Commit = rev
		}
	}
	return b
}

// matches says whether two builds are the same release: the same version
// and, when both know theirs, the same commit (a build without VCS
// information, such as a test binary, knows none).
func (b Build) matches(o Build) bool {
	if b.Version != o.Version {
		return false
	}
	return b.Commit == "none" || o.Commit == "none" || b.Commit == "" || o.Commit == "" || b.Commit == o.Commit
}

func (b Build) String() string {
	if b.Commit == "" || b.Commit == "none" || strings.Contains(b.Version, b.Commit) {
		return b.Version // git describe's version already names the commit
	}
	return b.Version + " (" + b.Commit + ")"
}

// Call is in every request: its number, for Cancel, and the caller's
// deadline (zero: none), which the helper puts on the call's context.
type Call struct {
	ID       uint64
	Deadline time.Time
}

// Fault is a failed call: the kinds errors.Is finds in the helper's error,
// by code, and its message as it was.
type Fault struct {
	Kinds   []string
	Message string
}

// EnvTarget is one environment's Argo CD target.
type EnvTarget struct {
	Env    string
	Target workflow.ArgoCDTarget
}

// HelloArgs opens the conversation: relcap's build, and the environments
// whose Argo CD the helper talks to (their tokens come from the helper's
// environment).
type HelloArgs struct {
	Build Build
	Envs  []EnvTarget
}

// HelloReply is the helper's build.
type HelloReply struct{ Build Build }

// AppArgs name one application.
type AppArgs struct {
	Call
	App appstate.AppRef
}

// Empty is a reply with nothing but its fault.
type Empty struct{ Fault *Fault }

// GetReply answers Get.
type GetReply struct {
	State appstate.AppState
	Fault *Fault
}

// WatchArgs start a watch.
type WatchArgs struct {
	Call
	App   appstate.AppRef
	Since string
}

// WatchReply names the stream Next reads.
type WatchReply struct {
	Stream uint64
	Fault  *Fault
}

// NextArgs ask for a stream's next updates, waiting at most Wait.
type NextArgs struct {
	Stream uint64
	Wait   time.Duration
}

// Update is one workflow.AppUpdate.
type Update struct {
	State appstate.AppState
	Fault *Fault
}

// NextReply holds the updates that came (none when Wait passed first);
// Done says the stream ended after them.
type NextReply struct {
	Updates []Update
	Done    bool
}

// StreamArgs name a stream (Stop).
type StreamArgs struct{ Stream uint64 }

// CancelArgs name a call in flight (Cancel).
type CancelArgs struct{ ID uint64 }

// TreeReply answers ResourceTree.
type TreeReply struct {
	Resources []appstate.AppResource
	Fault     *Fault
}

// RefreshArgs ask for a refresh.
type RefreshArgs struct {
	Call
	App    appstate.AppRef
	Within time.Duration
}

// PolicyArgs set a sync policy.
type PolicyArgs struct {
	Call
	App    appstate.AppRef
	Policy workflow.SyncPolicy
}

// PolicyReply answers SyncPolicy.
type PolicyReply struct {
	Policy workflow.SyncPolicy
	Fault  *Fault
}

// DriftReply answers Drift.
type DriftReply struct {
	Drift []breakglass.Drift
	Fault *Fault
}

// WindowArgs name a sync window.
type WindowArgs struct {
	Call
	App    appstate.AppRef
	Window workflow.SyncWindow
}

// WindowReply answers DenySync.
type WindowReply struct {
	Window workflow.SyncWindow
	Fault  *Fault
}

// RemovedReply answers RemoveWindow.
type RemovedReply struct {
	Removed bool
	Fault   *Fault
}

// WindowsReply answers ListWindows.
type WindowsReply struct {
	Windows []workflow.SyncWindow
	Fault   *Fault
}

// EnvArgs name an environment (ManagedObjects).
type EnvArgs struct {
	Call
	Env EnvTarget
}

// ObjectsReply answers ManagedObjects.
type ObjectsReply struct {
	Objects []ownership.ManagedObject
	Fault   *Fault
}

// HelmArgs are a Helm chart to render offline (render.HelmRenderer):
// the files of the chart and its values file, by path.
type HelmArgs struct {
	Call
	Files      map[string][]byte
	ValuesFile string
	Release    string
}

// HelmReply answers RenderHelm.
type HelmReply struct {
	Objects    []map[string]any
	ChartDir   string
	Unrendered string
	Fault      *Fault
}

// ListArgs name the server relcap init lists applications of; the token
// is in the helper's environment, in the variable TokenEnv.
type ListArgs struct {
	Call
	Options argoconf.Options
}

// ListReply answers Applications.
type ListReply struct {
	Apps  []setup.ArgoApp
	Fault *Fault
}

// kinds are the errors whose identity crosses the pipe, by code.
var kinds = []struct {
	code string
	err  error
}{
	{"not_found", fault.ErrNotFound},
	{"not_reconciled", fault.ErrNotReconciled},
	{"usage", fault.ErrUsage},
	{"deadline", context.DeadlineExceeded},
	{"canceled", context.Canceled},
	{"token_rejected", argoconf.ErrTokenRejected},
	{"unreachable", argoconf.ErrUnreachable},
}

// FaultOf is the Fault of err; nil for nil.
func FaultOf(err error) *Fault {
	if err == nil {
		return nil
	}
	f := &Fault{Message: err.Error()}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			f.Kinds = append(f.Kinds, k.code)
		}
	}
	return f
}

// Err is the error a Fault stands for: its message as it was, and
// errors.Is true for each of its kinds; nil for nil.
func (f *Fault) Err() error {
	if f == nil {
		return nil
	}
	e := &Error{msg: f.Message}
	for _, k := range kinds {
		if slices.Contains(f.Kinds, k.code) {
			e.kinds = append(e.kinds, k.err)
		}
	}
	return e
}

// Error is an error the helper returned.
type Error struct {
	msg   string
	kinds []error
}

func (e *Error) Error() string { return e.msg }

// Is reports whether target is one of the error's kinds.
func (e *Error) Is(target error) bool { return slices.Contains(e.kinds, target) }
