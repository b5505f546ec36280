package input

// What a command line names that must already exist, decided here once:
// the commands that act on a named release (which must be in the ledger),
// those whose --env must be one of relcap.yaml's environments, those
// that cannot start without Argo CD's credentials, and those that read
// the environment's Terraform root first. The wiring checks them
// against the ledger, the configuration and the environment before it
// opens a session or starts a release, so a typo records nothing.

// releaseReferences are the command flags (and, as "relcap resume", the
// positional arguments) that name an existing release. effort log's
// --release is one too: time logged against a mistyped ID would be an
// effort row no report can ever attach to a release.
var releaseReferences = map[string]bool{
	"relcap effort log --release": true,
	"relcap release abandon":      true,
	"relcap plan --release":       true,
	"relcap approve --release":    true,
	"relcap review --release":     true,
	"relcap promote --release":    true,
	"relcap converge --release":   true,
	"relcap rollback --to":        true,
	"relcap resume":               true,
}

// argoCDCommands are the commands that talk to the environment's Argo CD
// from their first step: without its server and token they would start a
// release only to fail it.
var argoCDCommands = map[string]bool{
	"relcap release":  true,
	"relcap converge": true,
	"relcap rollback": true,
}

// terraformCommands are the commands that read the environment's
// Terraform root from their first step (the ownership check's state
// custody and managed objects, then the plan): a root whose configuration
// does not parse would start a release only to fail it.
var terraformCommands = map[string]bool{
	"relcap plan":    true,
	"relcap release": true,
}

// Reference is one thing a command line names that must exist: As is how
// it was given (a flag, or the argument's kind) and Value what.
type Reference struct {
	As, Value string
}

// References are what the command at path names that must exist before it
// records anything: releases (in the ledger) and environments (in
// relcap.yaml), and whether it needs Argo CD's credentials for those
// environments. Empty values are the commands' own defaults and are left
// out.
type References struct {
	Releases []Reference
	Envs     []Reference
	ArgoCD   bool
	// Terraform: the command reads the environments' Terraform roots
	// first, so their configuration must parse.
	Terraform bool
	// EnvsMayBeRecorded: the command only reads the ledger, so an
	// environment relcap.yaml no longer names is still one to report on
	// when the ledger holds a release of it.
	EnvsMayBeRecorded bool
}

// ReferencesOf lists what the command line of the command at path names
// that must exist. readOnly commands name environments that must be in
// relcap.yaml or in the ledger (a report of an environment since removed
// from relcap.yaml is still a report; of a mistyped one, an empty report
// that looks like a quiet quarter).
func ReferencesOf(path string, flags []GivenFlag, args []string, readOnly bool) References {
	refs := References{EnvsMayBeRecorded: readOnly}
	if readOnly {
		for _, f := range flags {
			for _, v := range f.Values {
				if f.Name == "env" && v != "" {
					refs.Envs = append(refs.Envs, Reference{As: "--env", Value: v})
				}
			}
		}
		return refs
	}
	for _, f := range flags {
		for _, v := range f.Values {
			switch {
			case v == "":
			case releaseReferences[path+" --"+f.Name]:
				refs.Releases = append(refs.Releases, Reference{As: "--" + f.Name, Value: v})
			case f.Name == "env":
				refs.Envs = append(refs.Envs, Reference{As: "--env", Value: v})
			}
		}
	}
	if releaseReferences[path] {
		for _, v := range args {
			refs.Releases = append(refs.Releases, Reference{As: string(IDRelease), Value: v})
		}
	}
	refs.ArgoCD = argoCDCommands[path] && len(refs.Envs) > 0
	refs.Terraform = terraformCommands[path] && len(refs.Envs) > 0
	return refs
}
