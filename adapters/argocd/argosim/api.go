package argosim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient/application"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/settings"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/version"
	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/relcap/relcap/workflow"
)

// appService serves argo-cd's application.ApplicationService. Methods the
// simulator does not model answer Unimplemented through the embedded type.
type appService struct {
	application.UnimplementedApplicationServiceServer
	s *Server
}

var _ application.ApplicationServiceServer = (*appService)(nil)

// lookup returns the named app; s.mu is held. An unknown app is
// PermissionDenied, not NotFound: Argo CD's server answers so when the
// request names no project, so as not to leak which applications exist.
func (s *Server) lookup(name, ns string) (*app, error) {
	a, ok := s.apps[name]
	if !ok || (ns != "" && ns != "argocd") {
		return nil, unknownApp(name)
	}
	return a, nil
}

func unknownApp(name string) error {
	return status.Errorf(codes.PermissionDenied, "permission denied (the %s has no application %q)", Name, name)
}

// Get returns the Application. A refresh request wakes the reconciler;
// while the controller is stopped it is answered, as by Argo CD, only when
// the controller is back or with "application refresh deadline exceeded"
// when the caller's deadline passes.
func (as *appService) Get(ctx context.Context, q *application.ApplicationQuery) (*v1alpha1.Application, error) {
	as.s.mu.Lock()
	a, err := as.s.lookup(q.GetName(), q.GetAppNamespace())
	down := as.s.controllerDown
	as.s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	refresh := q.GetRefresh() != ""
	if refresh && down != nil {
		select {
		case <-down:
		case <-ctx.Done():
			return nil, errors.New("application refresh deadline exceeded")
		}
	}
	as.s.mu.Lock()
	defer as.s.mu.Unlock()
	if refresh {
		a.wake()
	}
	return a.obj.DeepCopy(), nil
}

// List returns every Application, or the one named.
func (as *appService) List(_ context.Context, q *application.ApplicationQuery) (*v1alpha1.ApplicationList, error) {
	as.s.mu.Lock()
	defer as.s.mu.Unlock()
	list := &v1alpha1.ApplicationList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(as.s.version, 10)}}
	for _, name := range sortedAppNames(as.s.apps) {
		if q.GetName() != "" && q.GetName() != name {
			continue
		}
		list.Items = append(list.Items, *as.s.apps[name].obj.DeepCopy())
	}
	return list, nil
}

func sortedAppNames(m map[string]*app) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Watch streams Application events the way Argo CD's server does: for a
// named application (or when no resourceVersion is given) it first sends
// the current object as ADDED, then every change as MODIFIED, skipping
// objects older than the requested resourceVersion.
func (as *appService) Watch(q *application.ApplicationQuery, ws application.ApplicationService_WatchServer) error {
	s := as.s
	minVersion, _ := strconv.ParseUint(q.GetResourceVersion(), 10, 64)
	// Subscribe before reading the current state, so nothing falls in
	// between; a duplicate is harmless, a gap is not.
	sub := s.subscribe(q.GetName())
	defer s.unsubscribe(sub)
	if q.GetResourceVersion() == "" || q.GetName() != "" {
		s.mu.Lock()
		var initial []*v1alpha1.Application
		for _, name := range sortedAppNames(s.apps) {
			if q.GetName() == "" || q.GetName() == name {
				initial = append(initial, s.apps[name].obj.DeepCopy())
			}
		}
		s.mu.Unlock()
		if q.GetName() != "" && len(initial) == 0 {
			return unknownApp(q.GetName())
		}
		for _, obj := range initial {
			if !newEnough(obj, minVersion) {
				continue
			}
			if err := ws.Send(&v1alpha1.ApplicationWatchEvent{Type: "ADDED", Application: *obj}); err != nil {
				return err
			}
		}
	}
	for {
		select {
		case <-ws.Context().Done():
			return nil
		case <-sub.done:
			return status.Error(codes.Unavailable, "watch stream closed by the "+Name)
		case ev := <-sub.events:
			if !newEnough(&ev.Application, minVersion) {
				continue
			}
			if err := ws.Send(ev); err != nil {
				return err
			}
		}
	}
}

func newEnough(obj *v1alpha1.Application, minVersion uint64) bool {
	v, err := strconv.ParseUint(obj.ResourceVersion, 10, 64)
	return err != nil || v >= minVersion
}

// Sync records a sync request on the Application, as Argo CD's server does;
// the simulated controller picks it up.
func (as *appService) Sync(_ context.Context, req *application.ApplicationSyncRequest) (*v1alpha1.Application, error) {
	s := as.s
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookup(req.GetName(), req.GetAppNamespace())
	if err != nil {
		return nil, err
	}
	if !s.canSync(a, true) {
		return nil, status.Errorf(codes.PermissionDenied, "cannot sync: blocked by sync window (%s)", Name)
	}
	if a.op != nil || a.obj.Operation != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "another operation is already in progress (%s)", Name)
	}
	if req.GetDryRun() {
		return a.obj.DeepCopy(), nil
	}
	a.obj.Operation = &v1alpha1.Operation{
		Sync:        &v1alpha1.SyncOperation{Revision: req.GetRevision(), Prune: req.GetPrune()},
		InitiatedBy: v1alpha1.OperationInitiator{Username: "admin"},
	}
	s.bump(a, time.Now())
	a.wake()
	return a.obj.DeepCopy(), nil
}

// TerminateOperation ends the running operation, as Argo CD's controller
// does on request: it fails with "Operation terminated", and an automated
// sync of that revision is not started again.
func (as *appService) TerminateOperation(_ context.Context, req *application.OperationTerminateRequest) (*application.OperationTerminateResponse, error) {
	s := as.s
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookup(req.GetName(), req.GetAppNamespace())
	if err != nil {
		return nil, err
	}
	if a.op == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "Unable to terminate operation. No operation is in progress (%s)", Name)
	}
	now := time.Now()
	op := a.op
	a.op = nil
	a.opState.Phase = "Failed"
	a.opState.Message = "Operation terminated [simulated]"
	a.opState.FinishedAt = ptr(metav1.NewTime(now))
	if op.initiator.Automated {
		a.failedAuto = op.target.revision
	}
	s.cfg.Logf("argosim: app %s: operation on %s terminated", a.cfg.Name, workflow.ShortHash(op.target.revision))
	s.publish(a, now, false)
	a.wake()
	return &application.OperationTerminateResponse{}, nil
}

// Update replaces the Application's spec. Only spec.syncPolicy may change:
// the simulator follows the source it was configured with.
func (as *appService) Update(_ context.Context, req *application.ApplicationUpdateRequest) (*v1alpha1.Application, error) {
	s := as.s
	if req.Application == nil {
		return nil, status.Error(codes.InvalidArgument, "application is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookup(req.Application.Name, req.Application.Namespace)
	if err != nil {
		return nil, err
	}
	if rv := req.Application.ResourceVersion; rv != "" && rv != a.obj.ResourceVersion {
		return nil, status.Errorf(codes.FailedPrecondition,
			"Operation cannot be fulfilled on applications.argoproj.io %q: the object has been modified; please apply your changes to the latest version and try again (%s)", a.cfg.Name, Name)
	}
	return s.setSpec(a, req.Application.Spec)
}

// Patch applies a JSON merge patch to the Application (patchType "merge").
// Only spec.syncPolicy may change.
func (as *appService) Patch(_ context.Context, req *application.ApplicationPatchRequest) (*v1alpha1.Application, error) {
	s := as.s
	if req.GetPatchType() != "merge" {
		return nil, status.Errorf(codes.Unimplemented, "patch type %q: the %s supports merge patches only", req.GetPatchType(), Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookup(req.GetName(), req.GetAppNamespace())
	if err != nil {
		return nil, err
	}
	cur, err := json.Marshal(&a.obj)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode application: %v", err)
	}
	patched, err := mergePatch(cur, []byte(req.GetPatch()))
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "apply merge patch: %v", err)
	}
	var next v1alpha1.Application
	if err := json.Unmarshal(patched, &next); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decode patched application: %v", err)
	}
	return s.setSpec(a, next.Spec)
}

// setSpec applies a new spec that may differ only in syncPolicy; s.mu is held.
func (s *Server) setSpec(a *app, spec v1alpha1.ApplicationSpec) (*v1alpha1.Application, error) {
	want, got := a.obj.Spec.DeepCopy(), spec.DeepCopy()
	want.SyncPolicy, got.SyncPolicy = nil, nil
	if !reflect.DeepEqual(normSpec(want), normSpec(got)) {
		return nil, status.Errorf(codes.Unimplemented, "the %s only lets spec.syncPolicy change", Name)
	}
	a.obj.Spec.SyncPolicy = spec.SyncPolicy
	if a.obj.Spec.SyncPolicy == nil {
		a.obj.Spec.SyncPolicy = &v1alpha1.SyncPolicy{}
	}
	a.obj.Generation++
	s.bump(a, time.Now())
	a.wake()
	s.cfg.Logf("argosim: app %s: sync policy now automated=%t selfHeal=%t", a.cfg.Name, a.automated(), a.selfHeal())
	return a.obj.DeepCopy(), nil
}

// normSpec makes a JSON round trip's empty values compare equal to the
// stored ones (nil and empty slices).
func normSpec(s *v1alpha1.ApplicationSpec) map[string]any {
	b, _ := json.Marshal(s)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// ManagedResources returns the Deployment's target state (rendered from
// Git) and live state (what was synced, with any drift).
func (as *appService) ManagedResources(_ context.Context, q *application.ResourcesQuery) (*application.ManagedResourcesResponse, error) {
	s := as.s
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookup(q.GetApplicationName(), q.GetAppNamespace())
	if err != nil {
		return nil, err
	}
	ref := a.target
	if ref == nil {
		ref = a.live()
	}
	if ref == nil {
		return &application.ManagedResourcesResponse{}, nil
	}
	d := &v1alpha1.ResourceDiff{Group: "apps", Kind: "Deployment", Namespace: a.cfg.Namespace, Name: ref.meta("name", a.cfg.Workload), ResourceVersion: a.obj.ResourceVersion}
	if a.target != nil {
		d.TargetState, d.PredictedLiveState = a.target.json, a.target.json
	}
	if live := a.live(); live != nil {
		d.LiveState, d.NormalizedLiveState = live.json, live.json
	} else {
		d.LiveState, d.NormalizedLiveState = "null", "null"
	}
	d.Modified = d.TargetState != d.LiveState
	return &application.ManagedResourcesResponse{Items: []*v1alpha1.ResourceDiff{d}}, nil
}

// ResourceTree returns Deployment → ReplicaSet → Pod nodes with health.
func (as *appService) ResourceTree(_ context.Context, q *application.ResourcesQuery) (*v1alpha1.ApplicationTree, error) {
	s := as.s
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookup(q.GetApplicationName(), q.GetAppNamespace())
	if err != nil {
		return nil, err
	}
	return a.tree(time.Now()), nil
}

// RevisionMetadata returns a commit's author, date and message.
func (as *appService) RevisionMetadata(_ context.Context, q *application.RevisionMetadataQuery) (*v1alpha1.RevisionMetadata, error) {
	s := as.s
	s.mu.Lock()
	a, err := s.lookup(q.GetName(), q.GetAppNamespace())
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	c, err := a.commit(q.GetRevision())
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "revision %q: %v (%s)", q.GetRevision(), err, Name)
	}
	return &v1alpha1.RevisionMetadata{
		Author:  fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email),
		Date:    metav1.NewTime(c.Author.When),
		Message: c.Message,
	}, nil
}

// versionService answers apiclient's connect-time probe.
type versionService struct {
	version.UnimplementedVersionServiceServer
}

// Version names the simulator and the Argo CD API version it speaks.
func (versionService) Version(context.Context, *emptypb.Empty) (*version.VersionMessage, error) {
	return &version.VersionMessage{
		Version:        "v2.14.21+argosim",
		Platform:       "simulated",
		ExtraBuildInfo: Name + "; not a real Argo CD",
	}, nil
}

// settingsService answers the settings a CLI asks for.
type settingsService struct {
	settings.UnimplementedSettingsServiceServer
	s *Server
}

// Get returns minimal settings that name the simulator.
func (ss *settingsService) Get(context.Context, *settings.SettingsQuery) (*settings.Settings, error) {
	return &settings.Settings{
		URL:                 "http://" + ss.s.Addr(),
		AppLabelKey:         "app.kubernetes.io/instance",
		TrackingMethod:      "label",
		ControllerNamespace: "argocd",
		UiBannerContent:     "This is the " + Name + ", not a real Argo CD.",
		UiBannerPermanent:   true,
	}, nil
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(doc, patch []byte) ([]byte, error) {
	var d, p any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	return json.Marshal(mergeValue(d, p))
}

func mergeValue(doc, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(dm, k)
			continue
		}
		dm[k] = mergeValue(dm[k], v)
	}
	return dm
}
