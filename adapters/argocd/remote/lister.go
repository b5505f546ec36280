package remote

import (
	"context"
	"fmt"

	"github.com/relcap/relcap/adapters/argocd/argoconf"
	"github.com/relcap/relcap/workflow/setup"
)

var _ setup.AppLister = (*Lister)(nil)

// Lister lists the applications of one Argo CD server through a helper of
// its own: what relcap init offers for argocd.app.
type Lister struct {
	h      *helper
	opts   argoconf.Options
	server string
}

// NewLister checks opts as adapters/argocd's New does for the server
// (invalid options wrap fault.ErrUsage) and returns a Lister; the helper
// starts on the first call and reads the token from $opts.TokenEnv in its
// environment (cfg.Env).
func NewLister(opts argoconf.Options, cfg Config) (*Lister, error) {
	server, plain, err := argoconf.NormaliseServer(opts.Server)
	if err != nil {
		return nil, err
	}
	opts.PlainText = opts.PlainText || plain
	opts.AuthToken = ""
	return &Lister{h: &helper{cfg: cfg, hello: HelloArgs{Build: cfg.Build}}, opts: opts, server: server}, nil
}

// Server returns the host:port listed.
func (l *Lister) Server() string { return l.server }

// Applications lists the applications the token may read, by name.
func (l *Lister) Applications(ctx context.Context) ([]setup.ArgoApp, error) {
	c := l.h.newCall(ctx)
	var r ListReply
	if err := l.h.call(ctx, "Applications", fmt.Sprintf("list applications of %s", l.server), c.ID, ListArgs{Call: c, Options: l.opts}, &r); err != nil {
		return nil, err
	}
	return r.Apps, r.Fault.Err()
}

// Close stops the helper, if one was started.
func (l *Lister) Close() error { return l.h.close() }
