// Package tfplan holds a Terraform plan as relcap reviews it: the changes
// translated from Terraform (no SDK type, no sensitive value), the review
// that counts and flags them (ReviewPlan, Review), the fingerprint that
// binds a saved plan file to its inputs (Fingerprint) and the check that
// those inputs have not moved since (StaleReasons), and what sharing a
// plan through the team store carries. It is a leaf apart from the release
// core because judging a plan is pure: the Terraform adapter, relcap
// review of a plan document, the shared-plan feature and the screens use
// it without the release machinery, and the core's plan and apply steps
// call it.
package tfplan

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/ownership"
)

// Action is what a plan does to one resource.
type Action string

// Plan actions. Replacement is split by order because delete-before-create
// means downtime and create-before-delete does not.
const (
	ActionNoop               Action = "no-op"
	ActionCreate             Action = "create"
	ActionRead               Action = "read"
	ActionUpdate             Action = "update"
	ActionDelete             Action = "delete"
	ActionReplaceDeleteFirst Action = "replace (delete before create)"
	ActionReplaceCreateFirst Action = "replace (create before delete)"
)

// Destructive reports whether the action deletes something.
func (a Action) Destructive() bool {
	return a == ActionDelete || a == ActionReplaceDeleteFirst || a == ActionReplaceCreateFirst
}

// Risk flags on a planned change.
const (
	FlagDestructive = "destructive"
	FlagIdentity    = "identity"
	FlagDataService = "data-service"
)

// ResourceChange is one planned change, already translated from Terraform's
// JSON: no SDK type, no sensitive value.
type ResourceChange struct {
	Address string `json:"address"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	Module  string `json:"module,omitempty"`
	Action  Action `json:"action"`
	// ReplacePaths are the attributes that force replacement.
	ReplacePaths []string `json:"replace_paths,omitempty"`
	Flags        []string `json:"flags,omitempty"`
	// Attributes is the attribute diff; sensitive values are already masked
	// by the adapter.
	Attributes []AttributeChange `json:"attributes,omitempty"`
	// Object is the Kubernetes object the resource manages, with the
	// field paths Terraform sets on it, where the adapter knows it (a
	// drifted resource, a planned deletion); nil otherwise.
	Object *ownership.ManagedObject `json:"object,omitempty"`
}

// AttributeChange is one attribute's before and after, rendered as text.
type AttributeChange struct {
	Path      string `json:"path"`
	Before    string `json:"before"`
	After     string `json:"after"`
	Sensitive bool   `json:"sensitive,omitempty"`
	Unknown   bool   `json:"unknown,omitempty"` // known only after apply
}

// SensitiveMask replaces every sensitive value wherever relcap shows one.
const SensitiveMask = "(sensitive)"

// OutputChange is a change to a root module output.
type OutputChange struct {
	Name      string `json:"name"`
	Action    Action `json:"action"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// Counts sums the changes by action.
type Counts struct {
	Create             int `json:"create"`
	Update             int `json:"update"`
	Delete             int `json:"delete"`
	ReplaceDeleteFirst int `json:"replace_delete_first"`
	ReplaceCreateFirst int `json:"replace_create_first"`
	Read               int `json:"read"`
	NoOp               int `json:"no_op"`
}

// Inputs are the things a plan was computed from. If any differs at
// apply time the plan is stale.
type Inputs struct {
	Revision      string            `json:"revision"` // Git HEAD of the Terraform root
	Dirty         bool              `json:"dirty"`
	LockFileHash  string            `json:"lock_file_sha256"`
	VarFileHashes map[string]string `json:"var_file_sha256"`
	Workspace     string            `json:"workspace"`
	StateLineage  string            `json:"state_lineage"`
	StateSerial   int64             `json:"state_serial"`
	// ConfigFiles are the SHA-256 of every file of the root module and of
	// the local modules it calls, by path relative to the root: the
	// configuration's content, committed or not.
	ConfigFiles map[string]string `json:"config_files_sha256,omitempty"`
	// EnvVars are keyed hashes (HMAC-SHA256 with a key kept in relcap's
	// private plan store, never in the ledger) of the TF_VAR_* values
	// Terraform read, by name.
	EnvVars map[string]string `json:"env_vars_hmac,omitempty"`
	// ProviderEnv are keyed hashes, by name, of the environment variables
	// that select which cluster, account, project or region the providers
	// act on (KUBECONFIG, AWS_PROFILE, GOOGLE_PROJECT, ARM_SUBSCRIPTION_ID,
	// …; the Terraform adapter's list), each with the content of the files
	// it names. Never omitted when recorded (an empty map says none was
	// set), so nil means a plan saved before relcap bound them.
	ProviderEnv map[string]string `json:"provider_env_hmac"`
}

// Summary is a reviewed, saved plan.
type Summary struct {
	Env         string            `json:"env"`
	Fingerprint string            `json:"fingerprint"`
	PlanFile    string            `json:"plan_file,omitempty"`
	PlanHash    string            `json:"plan_file_sha256,omitempty"`
	Inputs      Inputs            `json:"inputs"`
	Counts      Counts            `json:"counts"`
	Changes     []ResourceChange  `json:"changes"`
	Outputs     []OutputChange    `json:"outputs,omitempty"`
	Findings    []finding.Finding `json:"findings,omitempty"`
	Author      string            `json:"author,omitempty"`
	CreatedAt   time.Time         `json:"created_at,omitzero"`
	// Release is the release the plan was made for; "" for a drill's.
	Release string `json:"release,omitempty"`
	// AuthorSignature is the author's SSH signature of AuthorStatement(),
	// made when the plan was saved; zero without a people file.
	AuthorSignature approval.Signature `json:"author_signature,omitzero"`
	// AuthorPeople names the people file revision the author signature
	// was verified against (PeopleState.Revision).
	AuthorPeople string `json:"author_people,omitempty"`
	// AppliedAt is set by the ledger once the plan was applied.
	AppliedAt        time.Time `json:"applied_at,omitzero"`
	TerraformVersion string    `json:"terraform_version,omitempty"`

	// Drift are the changes made outside Terraform since the last apply
	// (its refresh found them): this apply writes them back.
	Drift []DriftedResource `json:"drift,omitempty"`
	// Incomplete says Terraform could not plan everything (complete: false);
	// Deferred lists the changes it put off, and why.
	Incomplete bool             `json:"incomplete,omitempty"`
	Deferred   []DeferredChange `json:"deferred,omitempty"`
	// Errored says Terraform hit errors while planning: the plan is not
	// the whole of what the configuration asks.
	Errored bool `json:"errored,omitempty"`
	// Checks are the results of the configuration's checks (check blocks,
	// preconditions, postconditions, variable validations).
	Checks []CheckResult `json:"checks,omitempty"`
	// Actions are the actions applying the plan will invoke (Terraform
	// 1.14's action blocks): side effects outside the resources.
	Actions []ActionInvocation `json:"actions,omitempty"`
}

// AuthorStatement is the exact text a plan's author signature covers:
// which plan (fingerprint) of which environment, for which release, by
// whom and when it was made. The first line keeps it from ever reading as
// an approval's statement.
func (p Summary) AuthorStatement() []byte {
	var b strings.Builder
	b.WriteString("relcap plan v1\n")
	fmt.Fprintf(&b, "env: %s\nfingerprint: %s\n", p.Env, p.Fingerprint)
	if p.Release != "" {
		fmt.Fprintf(&b, "release: %s\n", p.Release)
	}
	fmt.Fprintf(&b, "author: %s\nat: %s\n", p.Author, p.CreatedAt.UTC().Format(time.RFC3339Nano))
	return []byte(b.String())
}

// WritesKubernetes reports whether resources of Terraform type t write
// Kubernetes objects: the Kubernetes, kubectl and Helm providers', which
// write the cluster they point at.
func WritesKubernetes(t string) bool {
	for _, p := range []string{"kubernetes_", "kubectl_", "helm_"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// KubernetesChanges are the addresses of the plan's changes that write
// Kubernetes objects (kubernetes_* resources, kubernetes_manifest,
// kubectl_manifest, helm_release).
func (p Summary) KubernetesChanges() []string {
	var out []string
	for _, c := range p.Changes {
		if c.Action == ActionNoop || c.Action == ActionRead {
			continue
		}
		if WritesKubernetes(c.Type) {
			out = append(out, c.Address)
		}
	}
	return out
}

// DriftedResource is a resource that changed outside Terraform.
type DriftedResource struct {
	ResourceChange
	// Fields are the object's fields whose values changed outside
	// Terraform, where the plan shows the manifest on both sides
	// (kubernetes_manifest's object, kubectl_manifest's yaml_body_parsed);
	// values that are secret are masked.
	Fields []ownership.FieldChange `json:"fields,omitempty"`
}

// DeferredChange is a change Terraform put off to a later plan.
type DeferredChange struct {
	Address string `json:"address"`
	Reason  string `json:"reason"`
}

// CheckStatus is a check's result: pass, fail, error or unknown.
type CheckStatus string

// Check results, in Terraform's words.
const (
	CheckPass    CheckStatus = "pass"
	CheckFail    CheckStatus = "fail"
	CheckError   CheckStatus = "error"
	CheckUnknown CheckStatus = "unknown"
)

// CheckResult is one checkable object's result.
type CheckResult struct {
	Address  string      `json:"address"`
	Kind     string      `json:"kind"` // resource, output_value, check, var
	Status   CheckStatus `json:"status"`
	Problems []string    `json:"problems,omitempty"`
}

// ActionInvocation is an action the apply will run.
type ActionInvocation struct {
	Address string `json:"address"`
	Type    string `json:"type"`
	// Trigger is the resource whose change invokes it and Event its
	// lifecycle event (after_create…); both empty for an action invoked
	// by the plan itself (terraform plan -invoke).
	Trigger string `json:"trigger,omitempty"`
	Event   string `json:"event,omitempty"`
}

// HasChanges reports whether applying the plan would change anything:
// resources, outputs, or actions it would invoke.
func (p Summary) HasChanges() bool {
	c := p.Counts
	return c.Create+c.Update+c.Delete+c.ReplaceDeleteFirst+c.ReplaceCreateFirst > 0 || len(p.Outputs) > 0 || len(p.Actions) > 0
}

// Destructive reports whether the plan deletes or replaces anything.
func (p Summary) Destructive() bool {
	return p.Counts.Delete+p.Counts.ReplaceDeleteFirst+p.Counts.ReplaceCreateFirst > 0
}

// ClassifyChange returns the risk flags of a change under the rules.
func ClassifyChange(c ResourceChange, rules Classify) []string {
	var flags []string
	if c.Action.Destructive() {
		flags = append(flags, FlagDestructive)
	}
	if c.Action == ActionNoop || c.Action == ActionRead {
		return flags
	}
	if matchAny(rules.Identity, c.Type) {
		flags = append(flags, FlagIdentity)
	}
	if matchAny(rules.DataService, c.Type) {
		flags = append(flags, FlagDataService)
	}
	return flags
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, s); err == nil && ok {
			return true
		}
	}
	return false
}

// What the PlanVault port and the shared-plan journal records carry, and
// who may apply; sharing itself (PlanSharing) is workflow/sharedplan's.

// SharedPlan is a saved plan file as the team store keeps it: the age
// ciphertext of the file, who it is encrypted to, who shared it and until
// when it may be fetched.
type SharedPlan struct {
	Fingerprint string
	Env         string
	Ciphertext  []byte
	Recipients  []Recipient
	SharedBy    string
	SharedAt    time.Time
	ExpiresAt   time.Time
}

// Recipient is one key a shared plan is encrypted to: the principal of
// the people file and the key's SHA-256 fingerprint (SHA256:…).
type Recipient struct {
	Principal string `json:"principal"`
	Key       string `json:"key"`
}

// SkippedRecipient is a key of someone allowed to apply that a plan could
// not be encrypted to, and why (a key type age does not take).
type SkippedRecipient struct {
	Principal string `json:"principal"`
	Key       string `json:"key,omitempty"`
	Reason    string `json:"reason"`
}

// ShareRequest asks to share a saved plan with the people allowed to apply
// it in its environment.
type ShareRequest struct {
	Plan Summary
	// Appliers are the principals allowed to apply (approvers.apply);
	// empty means every principal of the people file.
	Appliers  []string
	SharedBy  string
	ExpiresAt time.Time
}

// Share is what sharing did: the keys the plan is encrypted to, the
// keys left out and why, and until when it is kept.
type Share struct {
	Recipients []Recipient
	Skipped    []SkippedRecipient
	SharedBy   string
	ExpiresAt  time.Time
}

// Principals are the recipients' principals, sorted, each once.
func (s Share) Principals() []string {
	var out []string
	for _, r := range s.Recipients {
		out = append(out, r.Principal)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// FetchedPlan is a shared plan fetched from the team store and decrypted
// into this machine's private plan store.
type FetchedPlan struct {
	// File is the plan file written (mode 0600), its SHA-256 checked
	// against the reviewed plan's.
	File string
	// Key is the fingerprint of the applier's key that decrypted it.
	Key   string
	Share Share
}

// Classify holds glob patterns on Terraform resource types that flag a change
// as touching identity or a data service.
type Classify struct {
	Identity    []string
	DataService []string
}

// DefaultClassify is used for any category relcap.yaml leaves out.
func DefaultClassify() Classify {
	return Classify{
		Identity:    []string{"*_iam_*", "*_role*", "*service_account*", "*workload_identity*"},
		DataService: []string{"*_db_*", "*_rds_*", "*sql*", "*_bucket*", "*redis*", "*kafka*", "*dynamodb*", "*_queue*", "*elasticache*"},
	}
}
