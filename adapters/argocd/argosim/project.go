package argosim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient/application"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/project"
	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
)

// Projects: the simulator keeps AppProjects as Argo CD 2.14 does, for
// their sync windows. Argo CD creates the "default" project, which every
// simulated application is in; Get, List and Update of argo-cd's
// ProjectService read and replace them (Update checks the resourceVersion
// and validates windows as argocd-server does). The simulated controller
// judges windows with argo-cd's own SyncWindows.Matches and CanSync: while
// a deny window applies, it starts no automated sync and no self-heal, and
// a manual sync only when the window allows manual syncs; when the window
// closes, self-heal resumes on its own.

// defaultProject is the project Argo CD creates at start-up.
func defaultProject(now time.Time) *v1alpha1.AppProject {
	return &v1alpha1.AppProject{
		TypeMeta: metav1.TypeMeta{Kind: "AppProject", APIVersion: "argoproj.io/v1alpha1"},
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "argocd", Generation: 1, ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(now),
			Annotations:       map[string]string{"argosim.relcap.dev/simulated": "this AppProject is served by the " + Name}},
		Spec: v1alpha1.AppProjectSpec{
			SourceRepos:              []string{"*"},
			Destinations:             []v1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}},
			ClusterResourceWhitelist: []metav1.GroupKind{{Group: "*", Kind: "*"}},
		},
	}
}

// projectService serves argo-cd's project.ProjectService; what the
// simulator does not model answers Unimplemented.
type projectService struct {
	project.UnimplementedProjectServiceServer
	s *Server
}

var _ project.ProjectServiceServer = (*projectService)(nil)

func notFoundProject(name string) error {
	return status.Errorf(codes.NotFound, "appprojects.argoproj.io %q not found (%s)", name, Name)
}

// Get returns the project.
func (ps *projectService) Get(_ context.Context, q *project.ProjectQuery) (*v1alpha1.AppProject, error) {
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	p, ok := ps.s.projects[q.GetName()]
	if !ok {
		return nil, notFoundProject(q.GetName())
	}
	return p.DeepCopy(), nil
}

// List returns every project.
func (ps *projectService) List(context.Context, *project.ProjectQuery) (*v1alpha1.AppProjectList, error) {
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	list := &v1alpha1.AppProjectList{}
	for _, name := range slices.Sorted(maps.Keys(ps.s.projects)) {
		list.Items = append(list.Items, *ps.s.projects[name].DeepCopy())
	}
	return list, nil
}

// Update replaces the project's spec, as argocd-server does: it refuses a
// stale resourceVersion as Kubernetes' Conflict (which argocd-server
// answers as Aborted) and invalid sync windows as InvalidArgument, and
// wakes the reconcilers, whose next pass applies the new windows.
func (ps *projectService) Update(_ context.Context, q *project.ProjectUpdateRequest) (*v1alpha1.AppProject, error) {
	s := ps.s
	if q.Project == nil {
		return nil, status.Error(codes.InvalidArgument, "missing payload 'project' in request")
	}
	next := q.Project.DeepCopy()
	for i, w := range next.Spec.SyncWindows {
		if w == nil {
			return nil, status.Errorf(codes.InvalidArgument, "sync window %d is empty (%s)", i, Name)
		}
		if err := w.Validate(); err != nil { // also defaults the time zone to UTC, as Argo CD
			return nil, status.Errorf(codes.InvalidArgument, "application spec for sync window %d is invalid: %v (%s)", i, err, Name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.projects[next.Name]
	if !ok {
		return nil, notFoundProject(next.Name)
	}
	if next.ResourceVersion != cur.ResourceVersion {
		return nil, status.Errorf(codes.Aborted,
			"Operation cannot be fulfilled on appprojects.argoproj.io %q: the object has been modified; please apply your changes to the latest version and try again (%s)", next.Name, Name)
	}
	stored := cur.DeepCopy()
	stored.Spec = next.Spec
	stored.Generation++
	stored.ResourceVersion = s.nextVersion()
	s.projects[next.Name] = stored
	s.cfg.Logf("argosim: project %s: %d sync window(s)", next.Name, len(stored.Spec.SyncWindows))
	for _, a := range s.apps {
		if a.obj.Spec.Project == next.Name {
			a.wake()
		}
	}
	return stored.DeepCopy(), nil
}

// windowsOf are the sync windows of a's project that apply to it; s.mu is
// held.
func (s *Server) windowsOf(a *app) *v1alpha1.SyncWindows {
	p, ok := s.projects[a.obj.Spec.Project]
	if !ok {
		return nil
	}
	return p.Spec.SyncWindows.Matches(&a.obj)
}

// canSync is Argo CD's verdict on a sync of a now (manual or automated),
// under its project's windows; s.mu is held. As argo-cd's controller, an
// invalid window denies.
func (s *Server) canSync(a *app, manual bool) bool {
	ok, err := s.windowsOf(a).CanSync(manual)
	return err == nil && ok
}

// GetApplicationSyncWindows answers, as argocd-server does, which windows
// of its project apply to the application, which are active now, and
// whether a manual sync may run.
func (as *appService) GetApplicationSyncWindows(_ context.Context, q *application.ApplicationSyncWindowsQuery) (*application.ApplicationSyncWindowsResponse, error) {
	s := as.s
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookup(q.GetName(), q.GetAppNamespace())
	if err != nil {
		return nil, err
	}
	windows := s.windowsOf(a)
	manual, err := windows.CanSync(true)
	if err != nil {
		return nil, status.Errorf(codes.Unknown, "invalid sync windows: %v", err)
	}
	active, err := windows.Active()
	if err != nil {
		return nil, status.Errorf(codes.Unknown, "invalid sync windows: %v", err)
	}
	return &application.ApplicationSyncWindowsResponse{ActiveWindows: appWindows(active), AssignedWindows: appWindows(windows), CanSync: &manual}, nil
}

func appWindows(ws *v1alpha1.SyncWindows) []*application.ApplicationSyncWindow {
	if ws == nil {
		return nil
	}
	out := make([]*application.ApplicationSyncWindow, 0, len(*ws))
	for _, w := range *ws {
		out = append(out, &application.ApplicationSyncWindow{Kind: ptr(w.Kind), Schedule: ptr(w.Schedule), Duration: ptr(w.Duration), ManualSync: ptr(w.ManualSync)})
	}
	return out
}

// SyncWindow is one sync window of a simulated project, for tests.
type SyncWindow struct {
	Kind         string
	Schedule     string
	Duration     string
	Applications []string
	ManualSync   bool
	TimeZone     string
}

// SyncWindows returns the sync windows of the named project.
func (s *Server) SyncWindows(projectName string) ([]SyncWindow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.projects[projectName]
	if !ok {
		return nil, fmt.Errorf("argosim: no project %s", projectName)
	}
	var out []SyncWindow
	for _, w := range p.Spec.SyncWindows {
		out = append(out, SyncWindow{Kind: w.Kind, Schedule: w.Schedule, Duration: w.Duration, Applications: slices.Clone(w.Applications),
			ManualSync: w.ManualSync, TimeZone: w.TimeZone})
	}
	return out, nil
}

// AddSyncWindow adds w to the named project, as a person editing the
// project would (for tests of clients that must leave others' windows
// alone).
func (s *Server) AddSyncWindow(projectName string, w SyncWindow) error {
	sw := &v1alpha1.SyncWindow{Kind: w.Kind, Schedule: w.Schedule, Duration: w.Duration, Applications: slices.Clone(w.Applications),
		ManualSync: w.ManualSync, TimeZone: w.TimeZone}
	if err := sw.Validate(); err != nil {
		return fmt.Errorf("argosim: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.projects[projectName]
	if !ok {
		return fmt.Errorf("argosim: no project %s", projectName)
	}
	p.Spec.SyncWindows = append(p.Spec.SyncWindows, sw)
	p.ResourceVersion = s.nextVersion()
	for _, a := range s.apps {
		if a.obj.Spec.Project == projectName {
			a.wake()
		}
	}
	return nil
}
