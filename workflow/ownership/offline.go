package ownership

import (
	"fmt"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow/finding"
)

// The ownership check without a live Argo CD. What Argo CD will write is
// rendered from the environment repository, as Argo CD renders it
// (kustomize, plain manifests); what only the cluster knows (objects of
// other applications, a third manager such as an HPA, a chart's templates)
// needs the live check. Which sources a check read, and what it could not
// verify, is part of its verdict: never assumed clean.

// Offline finding codes.
const (
	// CodeUnverifiedOffline: an application whose objects could not be
	// known from the environment repository (a Helm chart's templates)
	// while the live check could not run (Warning).
	CodeUnverifiedOffline = "ownership.unverified-offline"
	// CodeLiveUnchecked: Terraform writes Kubernetes objects and the live
	// check (Argo CD) could not run (Warning; a production apply refuses).
	CodeLiveUnchecked = "ownership.live-unchecked"
)

// Desired is what an environment's Argo CD application wants, rendered
// from the environment repository without Argo CD.
type Desired struct {
	// App is the Argo CD application; Source what was rendered, e.g.
	// "kustomize overlays/prod at 1a2b3c4".
	App    string
	Source string
	// Objects are the rendered objects (Manager argocd, App set), with the
	// field paths their manifests set. A namespaced object the manifests
	// leave without a namespace has Namespace "": Argo CD puts it in the
	// application's destination namespace, which only Argo CD knows.
	Objects []ManagedObject
	// Unverified says why the application's objects could not be known
	// offline ("" when they were rendered), e.g. a Helm chart's templates.
	Unverified string
}

// Sources is what one ownership check read.
type Sources struct {
	// Terraform are the objects of every source but the cluster's.
	Terraform []ManagedObject
	// Kubernetes says why Terraform writes, or may write, Kubernetes
	// objects; "" when it cannot, and then neither Argo CD nor the
	// environment repository is read.
	Kubernetes string
	// Desired are the applications rendered offline; nil when none was.
	Desired []Desired
	// Live are Argo CD's objects, read from the cluster when LiveRan.
	Live    []ManagedObject
	LiveRan bool
	// LiveError is why the live check could not run ("" when it ran or
	// was not needed).
	LiveError string
}

// Objects are the objects to check: Terraform's, Argo CD's live ones, and
// the desired ones the live check did not see (a new object in Git, or
// every desired object when the live check could not run). A desired
// object left without a namespace takes the namespace of Terraform's
// object of the same kind and name, if there is one: the destination
// namespace is unknown offline, and a possible conflict is not assumed
// away.
func (s Sources) Objects() []ManagedObject {
	out := slices.Clone(s.Terraform)
	out = append(out, s.Live...)
	live := map[string]bool{}
	for _, o := range s.Live {
		live[o.App+"\x00"+o.KubeKey()] = true
	}
	for _, d := range s.Desired {
		for _, o := range d.Objects {
			if o.Namespace == "" {
				o.Namespace = terraformNamespace(s.Terraform, o)
			}
			if !live[o.App+"\x00"+o.KubeKey()] {
				out = append(out, o)
			}
		}
	}
	return out
}

// terraformNamespace is the namespace of the Terraform object with o's
// group, kind and name, or "".
func terraformNamespace(tf []ManagedObject, o ManagedObject) string {
	for _, t := range tf {
		if t.Kind == o.Kind && t.Group == o.Group && t.Name == o.Name && t.Namespace != "" {
			return t.Namespace
		}
	}
	return ""
}

// complete reports whether the check saw every object Argo CD writes, so
// that a rule matching nothing is stale rather than unseen.
func (s Sources) complete() bool {
	if s.LiveRan {
		return true
	}
	if s.Kubernetes == "" || len(s.Desired) == 0 {
		return false
	}
	for _, d := range s.Desired {
		if d.Unverified != "" {
			return false
		}
	}
	return true
}

// CheckSources is Check over what the sources read, plus what they could
// not verify: a stale rule is reported only when every Argo CD object was
// seen; an application whose objects are unknown offline, and a live check
// that could not run while Terraform writes Kubernetes objects, are
// findings of their own.
func CheckSources(m Map, s Sources) []finding.Finding {
	fs := Check(m, s.Objects())
	if !s.complete() {
		fs = slices.DeleteFunc(fs, func(f finding.Finding) bool { return f.Code == CodeStaleRule })
	}
	if s.LiveRan || (s.Kubernetes == "" && s.LiveError == "") {
		return fs
	}
	for _, d := range s.Desired {
		if d.Unverified == "" {
			continue
		}
		fs = append(fs, finding.Finding{
			Severity:   finding.Warning,
			Code:       CodeUnverifiedOffline,
			Subject:    "argocd app " + d.App,
			Message:    fmt.Sprintf("unverified offline: %s; the objects app %s writes are not known without Argo CD, so they were not compared with Terraform's", d.Unverified, d.App),
			NextAction: "run the check with Argo CD reachable, which renders the chart",
			Facts:      finding.Facts{finding.Of("app", d.App), finding.Of("source", d.Source)},
		})
	}
	if s.LiveError != "" {
		why := fmt.Sprintf("Terraform writes Kubernetes objects (%s), and only the cluster knows other applications' objects and third managers such as an HPA", s.Kubernetes)
		facts := finding.Facts{finding.Of("kubernetes", s.Kubernetes), finding.Of("reason", s.LiveError)}
		if s.Kubernetes == "" {
			why = "Terraform writes no Kubernetes object, so no field was found with two owners; only the cluster knows Argo CD's unowned objects, third managers such as an HPA and self-heal loops"
			facts = facts[1:]
		}
		fs = append(fs, finding.Finding{
			Severity:   finding.Warning,
			Code:       CodeLiveUnchecked,
			Subject:    "argocd",
			Message:    fmt.Sprintf("live check could not run: %s; %s", s.LiveError, why),
			NextAction: "make Argo CD reachable (its token, its server) and check again; a production apply refuses until it has run",
			Facts:      facts,
		})
	}
	finding.Sort(fs)
	return fs
}

// KubernetesObjects names the Kubernetes objects among objs (their
// subjects, through whom), for saying why the live check is needed.
func KubernetesObjects(objs []ManagedObject) []string {
	var out []string
	for _, o := range objs {
		if o.Kind != "" {
			out = append(out, o.Via()+" ("+o.KubeKey()+")")
		}
	}
	return out
}

// Summary says in one line what the check compared: the sources read and
// what was left to the cluster.
func (s Sources) Summary() string {
	if s.Kubernetes == "" && s.LiveError == "" && len(s.Desired) == 0 {
		return "no Kubernetes objects in the plan; ownership check not needed (Argo CD not asked)"
	}
	var parts []string
	for _, d := range s.Desired {
		switch {
		case d.Unverified != "":
			parts = append(parts, fmt.Sprintf("app %s unverified offline (%s)", d.App, d.Unverified))
		default:
			parts = append(parts, fmt.Sprintf("app %s rendered offline from %s (%d objects)", d.App, d.Source, len(d.Objects)))
		}
	}
	switch {
	case s.LiveRan:
		parts = append(parts, "live check ran")
	case s.LiveError != "":
		parts = append(parts, "live check could not run: "+s.LiveError)
	}
	return strings.Join(parts, "; ")
}
