// Package evidence holds the facts a release's steps establish and an
// auditor can check later (a plan fingerprint, a digest verified in a
// registry, a Git commit, a converged application), one typed detail per
// kind, and how they are stored: the kinds' names and the JSON, including
// the string-valued form of releases recorded before evidence was typed.
// It is a leaf apart from the release core because the ledger, the journal,
// the features and the screens all read evidence, and reading a stored
// fact should need nothing of the machinery that established it.
package evidence

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/image"
)

// Kind names what a piece of evidence establishes. The names are
// stored in the ledger and the journal, so they never change.
type Kind string

// The evidence a release's steps record, one detail type each.
const (
	KindOwnershipChecked    Kind = "ownership.checked"           // OwnershipChecked
	KindPlanReviewed        Kind = "plan.fingerprint"            // PlanReviewed
	KindPlanApproved        Kind = "plan.approval"               // PlanApproved
	KindPlanApplied         Kind = "plan.applied"                // PlanApplied
	KindDigestResolved      Kind = "digest.resolved"             // DigestResolved
	KindDigestVerified      Kind = "digest.verified"             // DigestVerified
	KindEnvPinned           Kind = "envrepo.pinned"              // EnvPinned
	KindEnvLanded           Kind = "envrepo.commit"              // EnvLanded
	KindPullRequestOpened   Kind = "envrepo.pull-request"        // PullRequestOpened
	KindPullRequestMerged   Kind = "envrepo.pull-request-merged" // PullRequestLanded
	KindAppConverged        Kind = "app.converged"               // AppConverged
	KindAppNotConverged     Kind = "app.not-converged"           // AppNotConverged
	KindOperationTerminated Kind = "app.operation-terminated"    // OperationTerminated
	KindDrillCopySkipped    Kind = "digest.drill-unavailable"    // DrillCopySkipped
)

// Detail is the typed content of one kind of evidence.
type Detail interface {
	// Kind is the kind this detail type records.
	EvidenceKind() Kind
	// Facts are the detail as named facts, for screens and journals that
	// list evidence without knowing each kind.
	Facts() finding.Facts
}

// Evidence is a fact a step established and an auditor can check later: a
// plan fingerprint, a digest verified in a registry, a Git commit, a
// converged application state. Detail is one of the detail types of this
// file, matching Kind; Of finds one by type.
type Evidence struct {
	Kind    Kind
	Subject string // what it is about: a fingerprint, a digest, a commit, an application
	Detail  Detail
}

// New records detail about subject.
func New(subject string, detail Detail) Evidence {
	return Evidence{Kind: detail.EvidenceKind(), Subject: subject, Detail: detail}
}

// Of returns the last evidence in es whose detail is a T (the
// latest attempt's, as evidence accumulates over attempts).
func Of[T Detail](es []Evidence) (T, Evidence, bool) {
	for i := len(es) - 1; i >= 0; i-- {
		if d, ok := es[i].Detail.(T); ok {
			return d, es[i], true
		}
	}
	var zero T
	return zero, Evidence{}, false
}

// OwnershipChecked: how many managed objects the ownership check read and
// how many findings it made.
type OwnershipChecked struct {
	Objects  int `json:"objects"`
	Findings int `json:"findings"`
	// Kubernetes says why Terraform writes Kubernetes objects; "" when
	// it cannot and Argo CD was not needed.
	Kubernetes string `json:"kubernetes,omitempty"`
	// LiveUnchecked is why the live check (Argo CD) could not run while
	// it was needed; a production apply refuses while it is set.
	LiveUnchecked string `json:"live_unchecked,omitempty"`
}

// PlanReviewed: the reviewed plan's revision and counts (Subject is its
// fingerprint).
type PlanReviewed struct {
	Revision string `json:"revision"`
	Create   int    `json:"create"`
	Update   int    `json:"update"`
	Delete   int    `json:"delete"`
	Replace  int    `json:"replace"`
	Outputs  int    `json:"outputs,omitempty"` // output values that change
}

// HasChanges reports whether the reviewed plan changes anything, as
// PlanSummary.HasChanges does.
func (p PlanReviewed) HasChanges() bool {
	return p.Create+p.Update+p.Delete+p.Replace+p.Outputs > 0
}

// PlanApproved: one counted approval of the plan (Subject is its fingerprint).
type PlanApproved struct {
	Approver string    `json:"approver"`
	At       time.Time `json:"at"`
}

// PlanApplied: the plan was applied (Subject is its fingerprint).
type PlanApplied struct {
	StateSerial int64 `json:"state_serial"`
}

// DigestResolved: what the image reference resolved to (Subject is the digest).
type DigestResolved struct {
	Reference  string    `json:"reference"`
	Repository string    `json:"repository"`
	MediaType  string    `json:"media_type"`
	Platforms  Platforms `json:"platforms"`
	Size       int64     `json:"size"`
	Created    time.Time `json:"created"`
	Signed     bool      `json:"signed"`
	Referrers  int       `json:"referrers"`
	FirstSeen  time.Time `json:"first_seen"`
}

// DigestVerified: the digest is in the environment's repository, with its
// provenance (Subject is the digest).
type DigestVerified struct {
	Repository    string `json:"repository"`
	Signed        bool   `json:"signed"`
	Referrers     int    `json:"referrers"`
	BlobsUploaded int    `json:"blobs_uploaded"`
	// Carried are the kinds of the referrers found on the target
	// (signature, attestation, sbom…), one per referrer; evidence written
	// before has none.
	Carried ReferrerKinds `json:"carried,omitempty"`
}

// ReferrerKinds are the kinds of an artifact's referrers, one per referrer.
type ReferrerKinds []string

func (k ReferrerKinds) String() string { return strings.Join(k, ",") }

// EnvPinned: the digest is pinned on a relcap branch (Subject is its commit).
type EnvPinned struct {
	Branch string `json:"branch"`
	Pushed bool   `json:"pushed"`
}

// EnvLanded: the pin landed on the branch Argo CD follows (Subject is the
// commit it now points at: the intended revision).
type EnvLanded struct {
	Branch string `json:"branch"`
	Pushed bool   `json:"pushed"`
}

// PullRequestOpened: the pinned branch is under review in a pull request
// on the forge (Subject is its address).
type PullRequestOpened struct {
	Number int        `json:"number"`
	Forge  forge.Kind `json:"forge"`
	Head   string     `json:"head"`
	Base   string     `json:"base"`
	Commit string     `json:"commit"`
}

// PullRequestLanded: the pull request merged (Subject is the merge commit,
// the revision Argo CD must sync): who merged it, which commit was
// reviewed, and whose reviews counted (login → principal).
type PullRequestLanded struct {
	Number    int      `json:"number"`
	URL       string   `json:"url"`
	Reviewed  string   `json:"reviewed"`
	MergedBy  string   `json:"merged_by"`
	ByRelcap  bool     `json:"by_relcap"`
	Reviewers []string `json:"reviewers"`
}

// AppConverged: the application as it was when it converged (Subject is
// the application).
type AppConverged struct {
	IntendedRevision string                `json:"intended_revision"`
	Digest           image.Digest          `json:"digest"`
	Sync             appstate.SyncStatus   `json:"sync"`
	Revision         string                `json:"revision"`
	Health           appstate.HealthStatus `json:"health"`
}

// AppNotConverged: how the watch of a release ended short of converging,
// as the four answers a captain needs (Subject is the application): the
// intended revision, the actual artifact (the promoted digest and the
// images that run), the controller's status, and the next safe action.
type AppNotConverged struct {
	Verdict          appstate.VerdictKind  `json:"verdict"`
	Reason           string                `json:"reason"`
	IntendedRevision string                `json:"intended_revision"`
	Digest           image.Digest          `json:"digest"`
	Images           []string              `json:"images,omitempty"`
	Sync             appstate.SyncStatus   `json:"sync"`
	Revision         string                `json:"revision"`
	Health           appstate.HealthStatus `json:"health"`
	NextAction       string                `json:"next_action,omitempty"`
}

// OperationTerminated: relcap ended Argo CD's retries of a failed sync so a
// rollback's revision could be synced (Subject is the application).
type OperationTerminated struct {
	App      string `json:"app"`
	Revision string `json:"revision"`
	Retries  int    `json:"retries"`
	Message  string `json:"message"`
}

// Kind implementations.
func (OwnershipChecked) EvidenceKind() Kind    { return KindOwnershipChecked }
func (PlanReviewed) EvidenceKind() Kind        { return KindPlanReviewed }
func (PlanApproved) EvidenceKind() Kind        { return KindPlanApproved }
func (PlanApplied) EvidenceKind() Kind         { return KindPlanApplied }
func (DigestResolved) EvidenceKind() Kind      { return KindDigestResolved }
func (DigestVerified) EvidenceKind() Kind      { return KindDigestVerified }
func (EnvPinned) EvidenceKind() Kind           { return KindEnvPinned }
func (EnvLanded) EvidenceKind() Kind           { return KindEnvLanded }
func (PullRequestOpened) EvidenceKind() Kind   { return KindPullRequestOpened }
func (PullRequestLanded) EvidenceKind() Kind   { return KindPullRequestMerged }
func (AppConverged) EvidenceKind() Kind        { return KindAppConverged }
func (AppNotConverged) EvidenceKind() Kind     { return KindAppNotConverged }
func (OperationTerminated) EvidenceKind() Kind { return KindOperationTerminated }

// DrillCopySkipped: a rehearsal's unavailable-image drill pinned a digest
// that exists in no registry, on purpose, so the copy was skipped (there
// are no bytes to copy); Subject is the digest.
type DrillCopySkipped struct {
	Rehearsal  string `json:"rehearsal"`
	Repository string `json:"repository"`
}

func (DrillCopySkipped) EvidenceKind() Kind { return KindDrillCopySkipped }

// Facts implementations: every field, by its stored name.
func (d OwnershipChecked) Facts() finding.Facts    { return factsOf(d) }
func (d PlanReviewed) Facts() finding.Facts        { return factsOf(d) }
func (d PlanApproved) Facts() finding.Facts        { return factsOf(d) }
func (d PlanApplied) Facts() finding.Facts         { return factsOf(d) }
func (d DigestResolved) Facts() finding.Facts      { return factsOf(d) }
func (d DigestVerified) Facts() finding.Facts      { return factsOf(d) }
func (d EnvPinned) Facts() finding.Facts           { return factsOf(d) }
func (d EnvLanded) Facts() finding.Facts           { return factsOf(d) }
func (d PullRequestOpened) Facts() finding.Facts   { return factsOf(d) }
func (d PullRequestLanded) Facts() finding.Facts   { return factsOf(d) }
func (d AppConverged) Facts() finding.Facts        { return factsOf(d) }
func (d AppNotConverged) Facts() finding.Facts     { return factsOf(d) }
func (d OperationTerminated) Facts() finding.Facts { return factsOf(d) }
func (d DrillCopySkipped) Facts() finding.Facts    { return factsOf(d) }

// newDetail returns a pointer to a zero detail of kind, or nil for a kind
// this version does not know.
func newDetail(k Kind) Detail {
	switch k {
	case KindOwnershipChecked:
		return &OwnershipChecked{}
	case KindPlanReviewed:
		return &PlanReviewed{}
	case KindPlanApproved:
		return &PlanApproved{}
	case KindPlanApplied:
		return &PlanApplied{}
	case KindDigestResolved:
		return &DigestResolved{}
	case KindDigestVerified:
		return &DigestVerified{}
	case KindEnvPinned:
		return &EnvPinned{}
	case KindEnvLanded:
		return &EnvLanded{}
	case KindPullRequestOpened:
		return &PullRequestOpened{}
	case KindPullRequestMerged:
		return &PullRequestLanded{}
	case KindAppConverged:
		return &AppConverged{}
	case KindAppNotConverged:
		return &AppNotConverged{}
	case KindOperationTerminated:
		return &OperationTerminated{}
	case KindDrillCopySkipped:
		return &DrillCopySkipped{}
	}
	return nil
}

// Unknown is evidence of a kind this version of relcap does not
// know (written by a newer one): kept as it was stored, so saving the
// release again loses nothing.
type Unknown struct {
	Kind Kind
	Raw  json.RawMessage
}

// Kind is the stored kind.
func (u Unknown) EvidenceKind() Kind { return u.Kind }

// Facts lists nothing: the detail's shape is unknown.
func (u Unknown) Facts() finding.Facts { return nil }

// evidenceJSON is how evidence is stored.
type evidenceJSON struct {
	Kind    Kind            `json:"kind"`
	Subject string          `json:"subject"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// MarshalJSON stores the detail under "detail".
func (e Evidence) MarshalJSON() ([]byte, error) {
	v := evidenceJSON{Kind: e.Kind, Subject: e.Subject}
	switch d := e.Detail.(type) {
	case nil:
	case Unknown:
		v.Detail = d.Raw
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("evidence %s: %w", e.Kind, err)
		}
		v.Detail = b
	}
	if v.Kind == "" && e.Detail != nil {
		v.Kind = e.Detail.EvidenceKind()
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads evidence as relcap writes it, and as releases
// recorded before evidence was typed kept it: every detail value a string
// ("3", "true", "linux/amd64,linux/arm64"), which legacyDetail converts by
// the field types of the kind's detail.
func (e *Evidence) UnmarshalJSON(b []byte) error {
	var v evidenceJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Evidence{Kind: v.Kind, Subject: v.Subject}
	d := newDetail(v.Kind)
	if d == nil {
		e.Detail = Unknown{Kind: v.Kind, Raw: v.Detail}
		return nil
	}
	if len(v.Detail) > 0 {
		if err := json.Unmarshal(v.Detail, d); err != nil {
			var legacy map[string]string
			if json.Unmarshal(v.Detail, &legacy) != nil {
				return fmt.Errorf("evidence %s: %w", v.Kind, err)
			}
			if err := legacyDetail(legacy, d); err != nil {
				return fmt.Errorf("evidence %s: %w", v.Kind, err)
			}
		}
	}
	e.Detail = reflect.ValueOf(d).Elem().Interface().(Detail)
	return nil
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	legacyParser    = reflect.TypeFor[interface{ fromLegacy(string) error }]()
)

// legacyDetail fills the detail dst points at from string values named as
// its JSON fields. A value that does not parse as its field's type is an
// error naming the field: nothing is silently dropped.
func legacyDetail(values map[string]string, dst any) error {
	v := reflect.ValueOf(dst).Elem()
	t := v.Type()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		s, ok := values[name]
		if !ok {
			continue
		}
		f := v.Field(i)
		var err error
		switch {
		case f.Addr().Type().Implements(legacyParser):
			err = f.Addr().Interface().(interface{ fromLegacy(string) error }).fromLegacy(s)
		case f.Addr().Type().Implements(textUnmarshaler):
			err = f.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
		case f.Kind() == reflect.String:
			f.SetString(s)
		case f.Kind() == reflect.Bool:
			var b bool
			b, err = strconv.ParseBool(s)
			f.SetBool(b)
		case f.CanInt():
			var n int64
			n, err = strconv.ParseInt(s, 10, 64)
			f.SetInt(n)
		default:
			err = fmt.Errorf("no legacy form for a %s", f.Type())
		}
		if err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
	}
	return nil
}

// factsOf lists a detail's fields as facts named by their JSON names, in
// field order; zero times, empty strings and zero values of fields the
// JSON leaves out when empty are left out here too.
func factsOf(d any) finding.Facts {
	v := reflect.ValueOf(d)
	t := v.Type()
	var fs finding.Facts
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if strings.Contains(opts, "omitempty") && v.Field(i).IsZero() {
			continue
		}
		var s string
		switch x := v.Field(i).Interface().(type) {
		case time.Time:
			if x.IsZero() {
				continue
			}
			s = x.UTC().Format(time.RFC3339)
		case fmt.Stringer:
			s = x.String()
		default:
			s = fmt.Sprint(x)
		}
		if s == "" {
			continue
		}
		fs = append(fs, finding.Of(name, s))
	}
	return fs
}

// Platforms are the platforms of an image index ("linux/amd64", …).
type Platforms []string

// String joins them with commas, as they were once stored.
func (p Platforms) String() string { return strings.Join(p, ",") }

// UnmarshalJSON reads a JSON array, or the comma-separated string of
// releases recorded before evidence was typed.
func (p *Platforms) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*p = list
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("platforms: want a list or a comma-separated string")
	}
	return p.fromLegacy(s)
}

func (p *Platforms) fromLegacy(s string) error {
	*p = nil
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*p = append(*p, part)
		}
	}
	return nil
}
