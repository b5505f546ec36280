package workflow

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Project is a loaded relcap.yaml: the application, its environments in
// promotion order and the policies that apply to all of them.
type Project struct {
	// File is the absolute path of the relcap.yaml it was loaded from; Dir is
	// its directory, against which relative paths were resolved.
	File string
	Dir  string

	App           string
	OwnershipFile string
	Ownership     ownership.Map
	Environments  []Environment
	Classify      tfplan.Classify
	Effort        EffortPolicy
	Plans         PlanPolicy
	// Schema is the data-shape compatibility a release of this project
	// declares unless the release says otherwise.
	Compatibility Compatibility
	// SecretEnv names environment variables whose values are secrets:
	// relcap masks them in everything it prints, journals and records.
	SecretEnv []string
	// People is the allowed-signers file (git's gpg.ssh.allowedSignersFile
	// format) naming each person's principal and SSH public key; empty when
	// no environment signs its approvals.
	People string
	// Ledger is the team's ledger relcap.yaml names (ledger:): a
	// postgres:// or postgresql:// URL, or the absolute path of an SQLite
	// file; empty for the default. --ledger and RELCAP_LEDGER come first.
	Ledger string
	// Sandbox marks a practice project (relcap demo's): its releases too.
	Sandbox bool
}

// Environment is one stage of the promotion order.
type Environment struct {
	Name       string
	Production bool
	Terraform  TerraformTarget
	Registry   RegistryTarget
	EnvRepo    EnvRepoTarget
	ArgoCD     ArgoCDTarget
	Approvals  approval.Policy
	Rehearsal  RehearsalTarget
	// CustodyAccepted are the state custody findings the team knowingly
	// accepts here (custody.accept in relcap.yaml), by code, with the
	// reason: each is shown in every review as a warning, never dropped.
	CustodyAccepted map[string]string
}

// DefaultRehearsalTimeout is how long each phase of a drill (detect,
// recover) may take when rehearsal.timeout is not set.
const DefaultRehearsalTimeout = 4 * time.Minute

// RehearsalTarget is how relcap rehearse drills an environment
// (rehearsal: in relcap.yaml).
type RehearsalTarget struct {
	// UnreadyImage is a digest reference of a build whose pods never
	// become ready, for failed-readiness; empty refuses that drill.
	UnreadyImage string
	// InterruptStop and InterruptStart are argv lists that stop and
	// start reconciliation (interrupted-reconciliation); empty pauses
	// with break-glass instead.
	InterruptStop, InterruptStart []string
	// Timeout bounds each phase (detect, recover); 0 means
	// DefaultRehearsalTimeout.
	Timeout time.Duration
}

// PhaseTimeout is how long each phase of a drill may take.
func (t RehearsalTarget) PhaseTimeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return DefaultRehearsalTimeout
}

// AppRef names the environment's Argo CD application.
func (e Environment) AppRef() appstate.AppRef {
	return appstate.AppRef{Env: e.Name, Server: e.ArgoCD.Server, Name: e.ArgoCD.App}
}

// TerraformTarget is where an environment's infrastructure is planned.
type TerraformTarget struct {
	Dir       string // absolute
	Workspace string
	VarFiles  []string // absolute
	// Binary is the terraform (or tofu) executable; empty means "terraform"
	// from PATH.
	Binary string
}

// RegistryTarget is the OCI repository an environment pulls from.
type RegistryTarget struct {
	Repository       string
	RequireSignature bool
}

// Pin formats understood by EnvRepo adapters.
const (
	FormatKustomize  = "kustomize"
	FormatHelmValues = "helm-values"
	FormatManifest   = "manifest"
)

// EnvRepoTarget is the file in the environment repository that pins the
// image an environment runs.
type EnvRepoTarget struct {
	// Path is a local checkout (absolute) or a clone URL.
	Path   string
	Branch string
	File   string
	Image  string
	Format string
	// ValuesPath is the YAML path of the image reference for helm-values,
	// e.g. "image.digest".
	ValuesPath string
	// Review is how changes are reviewed and landed: pushed by relcap
	// (the default) or through a pull request on the team's forge.
	Review forge.EnvRepoReview
}

// ArgoCDTarget is the Argo CD application that deploys an environment.
type ArgoCDTarget struct {
	// Server is host:port of the Argo CD API; empty means $ARGOCD_SERVER,
	// as the argocd CLI does.
	Server    string
	App       string
	TokenEnv  string
	PlainText bool
	// Insecure skips verification of the server's certificate.
	Insecure bool
	// CAFile is a PEM file of the certificate authorities the server's
	// certificate is checked against (a private CA), instead of the
	// system's; absolute.
	CAFile string
	// ClientCertFile and ClientKeyFile are a client certificate and its
	// key, for servers that ask for one (mutual TLS); absolute.
	ClientCertFile, ClientKeyFile string
	// GRPCWeb tunnels gRPC through HTTP/1.1 for ingresses and proxies
	// that do not pass HTTP/2.
	GRPCWeb bool
	// PathPrefix is the path Argo CD is served under behind an ingress
	// (its --rootpath), e.g. "/argo-cd"; it implies gRPC-Web.
	PathPrefix string
	// ReadinessGrace is how long the application's new Pods may fail
	// readiness before the convergence watch calls the rollout failed;
	// zero means ReadinessGrace. An application that takes minutes to
	// become ready (a JVM warming caches) sets more, so a good release is
	// not rolled back; one that is ready in seconds may set less.
	ReadinessGrace time.Duration
}

// EffortPolicy configures the effort clock and the before/after baseline.
type EffortPolicy struct {
	IdleThreshold           time.Duration
	BaselineHoursPerRelease float64
	// ReleasesPerMonth is the release rate the before/after table states
	// hours per month at; 0 means the reported period's own rate.
	ReleasesPerMonth float64
}

// PlanPolicy configures the private plan store.
type PlanPolicy struct {
	// Expiry is how long a saved, unapplied plan is kept.
	Expiry time.Duration
}

// DefaultPlanExpiry is the plan store's default expiry.
const DefaultPlanExpiry = 24 * time.Hour

// Compatibility records which data shape a release needs and accepts, so a
// rollback to a release that cannot read today's data is refused.
type Compatibility struct {
	// Schema is the data schema version the release writes; 0 means unknown.
	Schema int `json:"schema,omitempty"`
	// MinSchema and MaxSchema bound the schema versions it can run against;
	// 0 means unbounded.
	MinSchema int `json:"min_schema,omitempty"`
	MaxSchema int `json:"max_schema,omitempty"`
}

// Accepts reports whether a release with this record can run against data
// at schema version current. Unknown (0) on either side is accepted, since
// nothing says otherwise.
func (c Compatibility) Accepts(current int) bool {
	if current == 0 {
		return true
	}
	if c.MinSchema != 0 && current < c.MinSchema {
		return false
	}
	if c.MaxSchema != 0 && current > c.MaxSchema {
		return false
	}
	if c.MinSchema == 0 && c.MaxSchema == 0 && c.Schema != 0 {
		return c.Schema == current
	}
	return true
}

// Env returns the named environment.
func (p *Project) Env(name string) (Environment, error) {
	for _, e := range p.Environments {
		if e.Name == name {
			return e, nil
		}
	}
	return Environment{}, fmt.Errorf("%w: no environment %q in %s (have %s)", fault.ErrUsage, name, p.File, p.envNames())
}

// Previous returns the environment before name in promotion order, and false
// for the first one.
func (p *Project) Previous(name string) (Environment, bool) {
	for i, e := range p.Environments {
		if e.Name == name && i > 0 {
			return p.Environments[i-1], true
		}
	}
	return Environment{}, false
}

// IsProduction reports whether env is a production environment: marked
// production: true, or the project's last (ProdEnv).
func (p *Project) IsProduction(env Environment) bool {
	return env.Production || env.Name == p.ProdEnv()
}

// CustodyEnvs are the environments as the state custody check
// (workflow/custody) sees them.
func (p *Project) CustodyEnvs() []custody.Env {
	envs := make([]custody.Env, 0, len(p.Environments))
	for _, e := range p.Environments {
		envs = append(envs, custody.Env{Name: e.Name, Production: p.IsProduction(e), Accepted: e.CustodyAccepted,
			Root: custody.Root{Dir: e.Terraform.Dir, Workspace: e.Terraform.Workspace}})
	}
	return envs
}

// ProdEnv is the last environment of the promotion order, where a
// release's lead time ends; "" when there is none.
func (p *Project) ProdEnv() string {
	if len(p.Environments) == 0 {
		return ""
	}
	return p.Environments[len(p.Environments)-1].Name
}

func (p *Project) envNames() string {
	s := ""
	for i, e := range p.Environments {
		if i > 0 {
			s += ", "
		}
		s += e.Name
	}
	if s == "" {
		return "none"
	}
	return s
}

// DefaultArgoCDTokenEnv is the variable Argo CD's token is read from when
// an environment names none (argocd.token_env): the one the argocd CLI
// reads. relcap.yaml's loader, the Argo CD adapter and the secret policy
// all use this one name.
const DefaultArgoCDTokenEnv = "ARGOCD_AUTH_TOKEN"

// Credentials are where the project keeps credentials, for the wiring to
// make secret before anything is printed (secret.Set.LearnCredentials):
// Argo CD's default token variable and each environment's own, each
// environment's forge token variable, the variables of secret_env, and
// each environment repository's URL (which may carry a password).
func (p *Project) Credentials() secret.Credentials {
	c := secret.Credentials{Env: append([]string{DefaultArgoCDTokenEnv}, p.SecretEnv...)}
	for _, env := range p.Environments {
		if env.ArgoCD.TokenEnv != "" {
			c.Env = append(c.Env, env.ArgoCD.TokenEnv)
		}
		if env.EnvRepo.Review.TokenEnv != "" {
			c.Env = append(c.Env, env.EnvRepo.Review.TokenEnv)
		}
		c.URLs = append(c.URLs, env.EnvRepo.Path)
	}
	return c
}

// PlanDocumentRules are the rules a plan document made outside relcap
// (terraform show -json, as a CI job uploads it) is reviewed with: the
// project's classification and ownership map when there is a project, the
// default classification and no map otherwise.
func (p *Project) PlanDocumentRules() (tfplan.Classify, ownership.Map) {
	if p == nil || len(p.Environments) == 0 {
		return tfplan.DefaultClassify(), ownership.Map{}
	}
	return p.PlanClassify(), p.Ownership
}

// PlanClassify is the classification every plan relcap makes is reviewed
// with: the project's, or DefaultClassify when it names no category at all
// (a Project built in code; relcap.yaml's loader fills in the defaults,
// and an empty list there is kept empty).
func (p *Project) PlanClassify() tfplan.Classify {
	if p.Classify.Identity == nil && p.Classify.DataService == nil {
		return tfplan.DefaultClassify()
	}
	return p.Classify
}

// MayApply refuses actor when the environment lists who may apply
// (approvers.apply) and actor is not among them. Unlisted means anyone: in
// a team store only the people file's principals can decrypt a plan
// anyway.
func (e Environment) MayApply(actor string) error {
	who := e.Approvals.Approvers.Apply
	if len(who) == 0 || slices.Contains(who, actor) {
		return nil
	}
	return fmt.Errorf("%w: %s may not apply plans in %s: approvers.apply lists %s", fault.ErrBlocked, actor, e.Name, strings.Join(who, ", "))
}
