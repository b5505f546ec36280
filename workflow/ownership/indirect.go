package ownership

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/finding"
)

// Conflicts no object key reveals: a Helm release Terraform installs whose
// objects an Argo CD app also manages, and an app's sync history showing
// self-heal putting Git's state back over another writer (drift loops,
// self-healed changes).

// isBootstrapKind reports Argo CD's own objects (Applications, projects),
// which Terraform typically creates to bootstrap GitOps.
func isBootstrapKind(o *ManagedObject) bool {
	return o.Group == "argoproj.io" && (o.Kind == "Application" || o.Kind == "AppProject" || o.Kind == "ApplicationSet")
}

// helmBootstraps reports a Helm release installed by Terraform whose
// objects an Argo CD app also manages (Argo CD installed by Terraform, then
// managing itself), when no hand-off is declared: the release and the app
// both own the same objects, which no object key reveals since Terraform
// sees only the release.
func (c *compiledMap) helmBootstraps(objects []ManagedObject, verdicts []verdict, helm []int, argoByNS map[string][]int, fs *findingSet) {
	for _, i := range helm {
		h := &objects[i]
		if verdicts[i].pending || h.Name == "" || c.handoffFor(h) >= 0 {
			continue
		}
		var names []string
		apps := map[string]bool{}
		for _, j := range argoByNS[h.Namespace] {
			a := &objects[j]
			if a.Name == h.Name || strings.HasPrefix(a.Name, h.Name+"-") || a.App == h.Name {
				names = append(names, a.Kind+" "+a.Name)
				apps[a.App] = true
			}
		}
		if len(names) == 0 {
			continue
		}
		appList := slices.Sorted(maps.Keys(apps))
		fs.add(finding.Finding{
			Severity: finding.Warning,
			Code:     CodeHandoffUndeclared,
			Subject:  h.Subject(),
			Message: fmt.Sprintf("%s installs Helm release %s/%s, and argo cd app %s also manages %d of its objects (%s); no hand-off is declared in %s",
				h.Via(), h.Namespace, h.Name, strings.Join(appList, ", "), len(names), listed(names), c.m.File),
			NextAction: fmt.Sprintf("declare a hand-off in %s (match: {terraform_address: %s}, from: terraform, to: argocd), then remove it from Terraform state once Argo CD manages it",
				c.m.File, h.TerraformAddress),
			Facts: finding.Facts{finding.Of("apps", strings.Join(appList, ", ")), finding.Of("writer", h.Via())},
		})
	}
}

// driftLoops reports apps whose history shows the same revision synced
// again and again by automation: self-heal undoing another writer.
func (c *compiledMap) driftLoops(objects []ManagedObject, byKube map[string][]int, fs *findingSet) {
	type app struct {
		o      *ManagedObject
		others map[string]bool
	}
	apps := map[string]*app{}
	var order []string
	healed := map[string]bool{}
	for i := range objects {
		o := &objects[i]
		if o.Manager != OwnerArgoCD || o.App == "" || o.SelfHealSyncs == 0 {
			continue
		}
		if o.SelfHealSyncs < DriftLoopThreshold {
			if !healed[o.App] {
				healed[o.App] = true
				fs.add(selfHealed(o))
			}
			continue
		}
		a := apps[o.App]
		if a == nil {
			a = &app{o: o, others: map[string]bool{}}
			apps[o.App] = a
			order = append(order, o.App)
		}
		for _, j := range byKube[o.KubeKey()] {
			if w := &objects[j]; w.App != o.App {
				a.others[w.Via()] = true
			}
		}
	}
	for _, name := range order {
		a := apps[name]
		ev := finding.Facts{finding.Of("revision", a.o.Revision), finding.Of("self_heal", fmt.Sprint(a.o.SelfHeal)), finding.Of("syncs", fmt.Sprint(a.o.SelfHealSyncs))}
		next := "find the other writer (kubectl get -o yaml --show-managed-fields names the live field managers), give the fields one owner in " +
			c.m.File + ", and list third-owner fields in the app's ignoreDifferences"
		if len(a.others) > 0 {
			others := slices.Sorted(maps.Keys(a.others))
			ev = ev.With("other_writers", strings.Join(others, ", "))
			next = "resolve the conflicts with " + strings.Join(others, ", ") + " listed above; " + next
		}
		fs.add(finding.Finding{
			Severity: finding.Warning,
			Code:     CodeDriftLoop,
			Subject:  "argocd app " + name,
			Message: fmt.Sprintf("%d automated syncs re-applied revision %s within its recent history: something else keeps changing what it deploys",
				a.o.SelfHealSyncs, finding.ShortHash(a.o.Revision)),
			NextAction: next,
			Facts:      ev,
		})
	}
}

// selfHealed is the Info finding of an app whose history shows Git's
// state put back over a live change, fewer times than a drift loop.
func selfHealed(o *ManagedObject) finding.Finding {
	when := ""
	if !o.LastSelfHeal.IsZero() {
		when = ", the latest at " + o.LastSelfHeal.UTC().Format("2006-01-02 15:04:05 MST")
	}
	return finding.Finding{
		Severity: finding.Info,
		Code:     CodeSelfHealed,
		Subject:  "argocd app " + o.App,
		Message: fmt.Sprintf("self-heal put Git's state back over a live change %d time(s) at revision %s%s: someone or something changed objects Argo CD owns",
			o.SelfHealSyncs, finding.ShortHash(o.Revision), when),
		NextAction: "if it was a person's fix, put it in Git (or pause with relcap breakglass next time); if it keeps happening, find the other writer: " +
			"kubectl get -o yaml --show-managed-fields names the live field managers",
		Facts: finding.Facts{finding.Of("last_self_heal", o.LastSelfHeal.UTC().Format(time.RFC3339)), finding.Of("revision", o.Revision), finding.Of("syncs", fmt.Sprint(o.SelfHealSyncs))},
	}
}
