// Package custody checks where each environment's Terraform state lives
// before a plan of it is trusted: the backend's custody (remote, locked,
// encrypted), the separation of environments (no two sharing one state, one
// backend's workspaces or one credential source unnoticed), and roots that
// read another environment's whole state instead of narrow outputs. It is
// pure: the Terraform adapter reads what Terraform recorded (Reader), and
// Check judges it against the project's environments and the findings
// each one has knowingly accepted in relcap.yaml.
package custody

import "context"

// Backend is where one environment's state lives, as Terraform recorded it
// when it last initialised the root (or, where it has not, as the root's
// backend block declares it: backend blocks take literal values only, so
// nothing is evaluated).
type Backend struct {
	// Type is the backend's type, e.g. "s3"; "local" for a root without a
	// backend block.
	Type string
	// Settings are the backend's settings by name, scalar values as text
	// (nested blocks flattened with dots, e.g. "workspaces.name"; lists
	// joined with commas). A credential's value never reaches here: it is
	// replaced by Redacted, so a check can still see that one is written
	// in the configuration. A setting Terraform takes from the environment
	// when the configuration leaves it out is filled from there, with the
	// variable's name in FromEnv.
	Settings map[string]string
	// FromEnv names, by setting, the environment variable its value came
	// from.
	FromEnv map[string]string
	// Workspace is the Terraform workspace the environment uses.
	Workspace string
	// Dir is the root module's directory (absolute): a local backend's
	// path is relative to it.
	Dir string
	// Source says where the Backend was read from.
	Source Source
}

// Redacted stands for a credential's value in Settings.
const Redacted = "(credential)"

// Source is where a Backend was read from.
type Source string

// Sources of a Backend, best first.
const (
	// FromInit is Terraform's own record of the initialised backend
	// (.terraform/terraform.tfstate), with any -backend-config merged in.
	FromInit Source = "init"
	// FromConfiguration is the root's backend block: init has not recorded
	// a backend in this working directory.
	FromConfiguration Source = "configuration"
	// FromDefault is a root without a backend block: Terraform's default
	// local backend.
	FromDefault Source = "default"
)

// Setting is the backend's setting called name, "" when it has none.
func (b Backend) Setting(name string) string { return b.Settings[name] }

// RemoteState is one data "terraform_remote_state" block of a root module
// (or of a local module it calls): a read of another state, whole.
type RemoteState struct {
	// Name is the data source's name, e.g. "network".
	Name string
	// File and Line are where the block is, File relative to the root.
	File string
	Line int
	// Backend is the type it reads from, e.g. "s3".
	Backend string
	// Settings are its config's literal settings (as Backend.Settings:
	// credentials redacted); a setting given by an expression is Unknown.
	Settings map[string]string
	// Workspace is its workspace argument, "" for the default.
	Workspace string
	// Outputs are the outputs the module uses from it, sorted; AllOutputs
	// when it uses the outputs object whole.
	Outputs []string
}

// Unknown stands for a setting given by an expression rather than a
// literal: it is known only when Terraform evaluates it.
const Unknown = "(expression)"

// AllOutputs in RemoteState.Outputs: the outputs object is used whole.
const AllOutputs = "*"

// Root is a Terraform root module as an environment uses it.
type Root struct {
	Dir       string // absolute
	Workspace string
}

// Reader reads a root's state custody without running Terraform and
// without reaching the backend: the Terraform adapter implements it.
type Reader interface {
	// Backend reads the backend root uses.
	Backend(ctx context.Context, root Root) (Backend, error)
	// RemoteStates reads the root's terraform_remote_state data sources.
	RemoteStates(ctx context.Context, root Root) ([]RemoteState, error)
}
