package argocd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient/application"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/project"
	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
)

var _ workflow.SyncWindows = (*Adapter)(nil)

// The project service's methods, as argo-cd's generated client names them
// (the same in v2.14 and v3.x).
const (
	methodProjectGet    = "/project.ProjectService/Get"
	methodProjectUpdate = "/project.ProjectService/Update"
)

// Field numbers of what relcap edits as wire bytes, from argo-cd's
// generated.proto and project.proto (the same in v2.14.21 and v3.6.1).
const (
	fieldUpdateProject  protowire.Number = 1  // ProjectUpdateRequest.project
	fieldProjectSpec    protowire.Number = 2  // AppProject.spec
	fieldSpecWindows    protowire.Number = 8  // AppProjectSpec.syncWindows
	fieldWindowDescribe protowire.Number = 10 // SyncWindow.description, Argo CD 3.1 and later
)

// relcapWindowFields are the SyncWindow fields relcap writes (kind,
// schedule, duration, applications, manualSync, timeZone, description). A
// window with any other set (namespaces, clusters, andOperator,
// syncOverrun, or one relcap does not know) applies differently, so it is
// never taken for relcap's own, whatever else it shares.
var relcapWindowFields = []protowire.Number{1, 2, 3, 4, 7, 8, fieldWindowDescribe}

// activeWindowPolls and activeWindowEvery bound how long DenySync waits
// for Argo CD to report a new window active: it opens at the start of the
// current minute by relcap's clock, so only a server clock that lags by
// about as long as that minute has run keeps it closed for a moment.
const (
	activeWindowPolls = 10
	activeWindowEvery = 500 * time.Millisecond
)

// errUnchanged tells editProject that the edit changes nothing.
var errUnchanged = errors.New("project unchanged")

// DenySync adds w, a deny window, to the application's project unless an
// identical window is there, and returns it as the server stored it:
// with Description empty when the server has no such field (Argo CD before
// 3.1). The project is read, edited and written as wire bytes (see
// rawInvoker), so nothing else of it changes, and written with its
// resourceVersion, so a concurrent change is re-read rather than
// overwritten. It returns once Argo CD's own GetApplicationSyncWindows
// reports the window active for the application, judged by the server's
// clock; an error otherwise (the window may then be on the project).
func (a *Adapter) DenySync(ctx context.Context, ref appstate.AppRef, w workflow.SyncWindow) (workflow.SyncWindow, error) {
	if w.Kind != workflow.SyncWindowDeny || len(w.Applications) == 0 || w.Schedule == "" || w.Duration <= 0 {
		return workflow.SyncWindow{}, fmt.Errorf("%w: deny window for %s: want kind deny, applications, a schedule and a duration, got %+v", fault.ErrUsage, ref.Name, w)
	}
	app, err := a.getApp(ctx, ref)
	if err != nil {
		return workflow.SyncWindow{}, err
	}
	proj := w.Project
	if proj == "" {
		proj = projectOf(app)
	}
	entry, err := encodeWindow(w)
	if err != nil {
		return workflow.SyncWindow{}, err
	}
	stored, err := a.editProject(ctx, proj, func(windows []wireWindow) ([]wireWindow, error) {
		for _, ww := range windows {
			if ww.is(w) {
				return nil, errUnchanged
			}
		}
		return append(windows, wireWindow{raw: entry}), nil
	})
	if err != nil {
		return workflow.SyncWindow{}, err
	}
	i := slices.IndexFunc(stored, func(ww wireWindow) bool { return ww.is(w) })
	if i < 0 {
		return workflow.SyncWindow{}, fmt.Errorf("argo cd at %s did not keep the %s on project %s", a.server, w, proj)
	}
	kept := stored[i].window
	kept.Project = proj
	return kept, a.waitActive(ctx, ref, proj, stored[i])
}

// waitActive polls GetApplicationSyncWindows until the server reports ww
// active for the application.
func (a *Adapter) waitActive(ctx context.Context, ref appstate.AppRef, proj string, ww wireWindow) error {
	for i := 0; ; i++ {
		active, err := a.activeWindows(ctx, ref, proj)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(active, ww.sameAs) {
			return nil
		}
		if i == activeWindowPolls-1 {
			return fmt.Errorf("argo cd at %s has the %s on project %s, but does not report it active: the server's clock and this machine's differ by more than %s, or the window does not apply to %s",
				a.server, ww.window, proj, time.Duration(activeWindowPolls)*activeWindowEvery, ref.Name)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for argo cd to open the sync window of %s: %w", ref.Name, ctx.Err())
		case <-a.clock.After(activeWindowEvery):
		}
	}
}

// activeWindows are the windows the server reports active for the
// application (kind, schedule, duration, manual sync: what its answer
// carries).
func (a *Adapter) activeWindows(ctx context.Context, ref appstate.AppRef, proj string) ([]*application.ApplicationSyncWindow, error) {
	resp, err := call(ctx, a, ref, "read sync windows of", func(ctx context.Context, apps application.ApplicationServiceClient, name string, ns *string) (*application.ApplicationSyncWindowsResponse, error) {
		return apps.GetApplicationSyncWindows(ctx, &application.ApplicationSyncWindowsQuery{Name: &name, AppNamespace: ns, Project: &proj})
	})
	if err != nil {
		return nil, err
	}
	return resp.ActiveWindows, nil
}

// RemoveWindow removes every window of the project identical to w, and no
// other, as DenySync edits the project. w.Project names the project; when
// empty, the application's current project. removed is false when none
// was there.
func (a *Adapter) RemoveWindow(ctx context.Context, ref appstate.AppRef, w workflow.SyncWindow) (bool, error) {
	proj := w.Project
	if proj == "" {
		app, err := a.getApp(ctx, ref)
		if err != nil {
			return false, err
		}
		proj = projectOf(app)
	}
	removed := false
	stored, err := a.editProject(ctx, proj, func(windows []wireWindow) ([]wireWindow, error) {
		kept := slices.DeleteFunc(slices.Clone(windows), func(ww wireWindow) bool { return ww.is(w) })
		if len(kept) == len(windows) {
			return nil, errUnchanged
		}
		removed = true
		return kept, nil
	})
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(stored, func(ww wireWindow) bool { return ww.is(w) }) {
		return removed, fmt.Errorf("argo cd at %s still has the %s on project %s after removing it", a.server, w, proj)
	}
	return removed, nil
}

// ListWindows returns the windows of the application's project that apply
// to it (by application, namespace or cluster, as argo-cd v2's Matches
// decides), each with Active as the server reports it now.
func (a *Adapter) ListWindows(ctx context.Context, ref appstate.AppRef) ([]workflow.SyncWindow, error) {
	app, err := a.getApp(ctx, ref)
	if err != nil {
		return nil, err
	}
	proj := projectOf(app)
	raw, err := a.projectCall(ctx, methodProjectGet, "read", proj, projectQuery(proj))
	if err != nil {
		return nil, err
	}
	windows, err := projectWindows(raw)
	if err != nil {
		return nil, fmt.Errorf("argo cd at %s: project %s: %w", a.server, proj, err)
	}
	active, err := a.activeWindows(ctx, ref, proj)
	if err != nil {
		return nil, err
	}
	var out []workflow.SyncWindow
	for _, ww := range windows {
		typed := v1alpha1.SyncWindows{&ww.typed}
		if typed.Matches(app) == nil {
			continue
		}
		w := ww.window
		w.Project, w.Active = proj, slices.ContainsFunc(active, ww.sameAs)
		out = append(out, w)
	}
	return out, nil
}

func projectOf(app *v1alpha1.Application) string {
	if app.Spec.Project == "" {
		return "default"
	}
	return app.Spec.Project
}

// editProject reads the project, lets edit change its sync windows and
// writes it back, all as wire bytes, and returns the windows the server
// stored. A write refused because the project changed since it was read
// is retried from a fresh read. edit returning errUnchanged skips the
// write.
func (a *Adapter) editProject(ctx context.Context, proj string, edit func([]wireWindow) ([]wireWindow, error)) ([]wireWindow, error) {
	for attempt := 1; ; attempt++ {
		raw, err := a.projectCall(ctx, methodProjectGet, "read", proj, projectQuery(proj))
		if err != nil {
			return nil, err
		}
		windows, err := projectWindows(raw)
		if err != nil {
			return nil, fmt.Errorf("argo cd at %s: project %s: %w", a.server, proj, err)
		}
		next, err := edit(windows)
		if errors.Is(err, errUnchanged) {
			return windows, nil
		}
		if err != nil {
			return nil, err
		}
		body, err := withWindows(raw, next)
		if err != nil {
			return nil, fmt.Errorf("argo cd at %s: project %s: %w", a.server, proj, err)
		}
		req := protowire.AppendBytes(protowire.AppendTag(nil, fieldUpdateProject, protowire.BytesType), body)
		out, err := a.projectCall(ctx, methodProjectUpdate, "update", proj, req)
		if err != nil {
			if attempt < 4 && conflict(err) {
				continue
			}
			return nil, err
		}
		stored, err := projectWindows(out)
		if err != nil {
			return nil, fmt.Errorf("argo cd at %s: project %s as updated: %w", a.server, proj, err)
		}
		return stored, nil
	}
}

// conflict reports a write refused because the project changed since it
// was read: Kubernetes' Conflict, which argocd-server answers as Aborted
// (util/grpc kubeErrToGRPC).
func conflict(err error) bool {
	var pe *projectError
	if !errors.As(err, &pe) {
		return false
	}
	st, _ := status.FromError(pe.err)
	return st.Code() == codes.Aborted || strings.Contains(st.Message(), "the object has been modified")
}

// projectError is a failed project call; Error says what to do.
type projectError struct {
	msg string
	err error
}

func (e *projectError) Error() string { return e.msg }
func (e *projectError) Unwrap() error { return e.err }

// projectCall makes one unary project call as wire bytes and translates
// its error.
func (a *Adapter) projectCall(ctx context.Context, method, verb, proj string, req []byte) ([]byte, error) {
	raw, err := a.rawClient(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := a.callContext(ctx)
	defer cancel()
	out, err := raw.invoke(cctx, method, req)
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("argo cd %s project %s: %w", verb, proj, ctx.Err())
	}
	st, _ := status.FromError(err)
	var msg string
	switch st.Code() {
	case codes.PermissionDenied:
		msg = fmt.Sprintf("%s from $%s: the token's account may not %s project %s (break-glass needs `p, <role>, projects, get, %s, allow` and `… projects, update, %s, allow` in argocd-rbac-cm): %s",
			ErrTokenRejected, a.opts.TokenEnv, verb, proj, proj, proj, st.Message())
		return nil, &projectError{msg: msg, err: errors.Join(ErrTokenRejected, err)}
	case codes.Unauthenticated:
		return nil, fmt.Errorf("%w from $%s: %s", ErrTokenRejected, a.opts.TokenEnv, st.Message())
	case codes.NotFound:
		return nil, fmt.Errorf("argo cd project %s on %s: %w: %s", proj, a.server, fault.ErrNotFound, st.Message())
	case codes.Unavailable:
		return nil, fmt.Errorf("%w at %s: %s", ErrUnreachable, a.server, st.Message())
	case codes.DeadlineExceeded:
		return nil, fmt.Errorf("%w at %s: no answer to %s project %s within %s", ErrUnreachable, a.server, verb, proj, a.opts.Timeout)
	}
	msg = fmt.Sprintf("argo cd %s project %s at %s: %s: %s", verb, proj, a.server, st.Code(), st.Message())
	return nil, &projectError{msg: msg, err: err}
}

func projectQuery(name string) []byte {
	b, _ := (&project.ProjectQuery{Name: name}).Marshal() // a string field cannot fail to encode
	return b
}

// wireWindow is one sync window of a project: its bytes as the server
// sent them, and what relcap reads of them.
type wireWindow struct {
	raw      []byte
	typed    v1alpha1.SyncWindow // as argo-cd v2 decodes it (fields it knows)
	window   workflow.SyncWindow
	duration string // as written, for comparing with the server's answers
	// foreign: fields relcap never writes are set, so it is not relcap's.
	foreign bool
}

// is reports whether the window is exactly w, as relcap makes windows.
func (ww wireWindow) is(w workflow.SyncWindow) bool { return !ww.foreign && ww.window.Same(w) }

// sameAs reports whether the server's account of a window (kind,
// schedule, duration, manual sync) is this one.
func (ww wireWindow) sameAs(s *application.ApplicationSyncWindow) bool {
	return s != nil && s.GetKind() == ww.typed.Kind && s.GetSchedule() == ww.typed.Schedule &&
		s.GetDuration() == ww.duration && s.GetManualSync() == ww.typed.ManualSync
}

func decodeWindow(b []byte) (wireWindow, error) {
	ww := wireWindow{raw: b}
	if err := ww.typed.Unmarshal(b); err != nil {
		return ww, fmt.Errorf("decode sync window: %w", err)
	}
	fs, err := splitFields(b)
	if err != nil {
		return ww, fmt.Errorf("decode sync window: %w", err)
	}
	t := ww.typed
	d, _ := time.ParseDuration(t.Duration) // an invalid one stays 0, never relcap's
	ww.duration = t.Duration
	ww.window = workflow.SyncWindow{Kind: t.Kind, Applications: slices.Clone(t.Applications), Schedule: t.Schedule, Duration: d,
		TimeZone: t.TimeZone, ManualSync: t.ManualSync}
	ww.foreign = len(t.Namespaces) > 0 || len(t.Clusters) > 0 || d <= 0
	for _, f := range fs {
		switch {
		case f.num == fieldWindowDescribe && f.typ == protowire.BytesType:
			ww.window.Description = string(f.value)
		case !slices.Contains(relcapWindowFields, f.num) && !zeroValue(f):
			ww.foreign = true
		}
	}
	return ww, nil
}

// zeroValue reports a field that holds its type's zero value. argo-cd's
// generated code writes every optional scalar, set or not, so a 3.x server
// sends andOperator: false and syncOverrun: false with every window; only
// a value that is set changes how the window applies.
func zeroValue(f field) bool {
	b := f.raw[protowire.SizeTag(f.num):]
	switch f.typ {
	case protowire.VarintType:
		v, _ := protowire.ConsumeVarint(b)
		return v == 0
	case protowire.Fixed32Type:
		v, _ := protowire.ConsumeFixed32(b)
		return v == 0
	case protowire.Fixed64Type:
		v, _ := protowire.ConsumeFixed64(b)
		return v == 0
	case protowire.BytesType:
		return len(f.value) == 0
	}
	return false
}

// encodeWindow is w as SyncWindow wire bytes, with its description as
// field 10, which servers before Argo CD 3.1 skip (as unknown fields).
func encodeWindow(w workflow.SyncWindow) ([]byte, error) {
	sw := v1alpha1.SyncWindow{Kind: w.Kind, Schedule: w.Schedule, Duration: formatDuration(w.Duration),
		Applications: w.Applications, ManualSync: w.ManualSync, TimeZone: w.TimeZone}
	b, err := sw.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encode sync window: %w", err)
	}
	if w.Description != "" {
		b = protowire.AppendString(protowire.AppendTag(b, fieldWindowDescribe, protowire.BytesType), w.Description)
	}
	return b, nil
}

// formatDuration writes whole minutes as "30m", anything else as Go does.
func formatDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// field is one field of a message as wire bytes: raw is the whole field
// (tag included), value the payload of a length-delimited one.
type field struct {
	num   protowire.Number
	typ   protowire.Type
	raw   []byte
	value []byte
}

func splitFields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		f := field{num: num, typ: typ, raw: b[:n+m]}
		if typ == protowire.BytesType {
			f.value, _ = protowire.ConsumeBytes(b[n:])
		}
		out = append(out, f)
		b = b[n+m:]
	}
	return out, nil
}

// specOf is the project's spec as one message: a message field that
// appears more than once is merged, which for wire bytes is their
// concatenation.
func specOf(fs []field) []byte {
	var spec []byte
	for _, f := range fs {
		if f.num == fieldProjectSpec && f.typ == protowire.BytesType {
			spec = append(spec, f.value...)
		}
	}
	return spec
}

// projectWindows are the sync windows of an AppProject's wire bytes.
func projectWindows(proj []byte) ([]wireWindow, error) {
	fs, err := splitFields(proj)
	if err != nil {
		return nil, err
	}
	spec, err := splitFields(specOf(fs))
	if err != nil {
		return nil, err
	}
	var out []wireWindow
	for _, f := range spec {
		if f.num != fieldSpecWindows || f.typ != protowire.BytesType {
			continue
		}
		ww, err := decodeWindow(f.value)
		if err != nil {
			return nil, err
		}
		out = append(out, ww)
	}
	return out, nil
}

// withWindows is the AppProject proj with its sync windows replaced by
// windows, every other byte as it was: fields keep their order, the
// windows take the place of the first one (or go last), and the spec
// the place of the first spec.
func withWindows(proj []byte, windows []wireWindow) ([]byte, error) {
	fs, err := splitFields(proj)
	if err != nil {
		return nil, err
	}
	specFields, err := splitFields(specOf(fs))
	if err != nil {
		return nil, err
	}
	appendWindows := func(b []byte) []byte {
		for _, ww := range windows {
			b = protowire.AppendBytes(protowire.AppendTag(b, fieldSpecWindows, protowire.BytesType), ww.raw)
		}
		return b
	}
	var spec []byte
	placed := false
	for _, f := range specFields {
		if f.num == fieldSpecWindows {
			if !placed {
				spec, placed = appendWindows(spec), true
			}
			continue
		}
		spec = append(spec, f.raw...)
	}
	if !placed {
		spec = appendWindows(spec)
	}
	appendSpec := func(b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, fieldProjectSpec, protowire.BytesType), spec)
	}
	var out []byte
	placed = false
	for _, f := range fs {
		if f.num == fieldProjectSpec && f.typ == protowire.BytesType {
			if !placed {
				out, placed = appendSpec(out), true
			}
			continue
		}
		out = append(out, f.raw...)
	}
	if !placed {
		out = appendSpec(out)
	}
	return out, nil
}
