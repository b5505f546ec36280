package main

import (
	"context"
	"path/filepath"
	"time"

	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/signing"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
)

// sealTimeout bounds signing and anchoring a session's head when the
// command ends: an agent waiting for a confirmation, or an environment
// repository that does not answer, must not hold the captain's terminal.
const sealTimeout = time.Minute

// journalAnchor is where the project's sealed session heads are anchored:
// refs/relcap/journal of the first environment's envrepo. A project's
// environments share one environment repository in practice; when they do
// not, the first one in promotion order holds the anchors of every
// session, so there is one place to check. nil, and why, when there is
// none.
func (a *app) journalAnchor(p *workflow.Project) (audit.JournalAnchor, string) {
	if p == nil || len(p.Environments) == 0 || p.Environments[0].EnvRepo.Path == "" {
		return nil, "relcap.yaml names no environment repository to anchor journal heads in"
	}
	cache, err := a.cacheHome()
	if err != nil {
		return nil, err.Error()
	}
	repo, err := gitrepo.New(gitrepo.Options{WorkDir: filepath.Join(cache, "envrepos"), Clock: a.clock, Credentials: a.gitPushCredentials()})
	if err != nil {
		return nil, err.Error()
	}
	anchor, err := repo.JournalAnchor(p.Environments[0].EnvRepo.Path)
	if err != nil {
		return nil, err.Error()
	}
	return anchor, ""
}

// Auditor wires journal verification over the ledger: the session files,
// the people file and the anchor. It opens no session.
func (a *app) Auditor(ctx context.Context) (*audit.Auditor, error) {
	project, err := a.ProjectIfAny()
	if err != nil {
		return nil, err
	}
	l, err := a.openLedger(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := a.sessionsDir()
	if err != nil {
		return nil, err
	}
	return a.auditorOf(project, l, dir)
}

// auditorOf wires journal verification over ledger l, whose journals are
// in dir: the people file's verifier and the journal anchor check them.
func (a *app) auditorOf(project *workflow.Project, l *store.Ledger, dir string) (*audit.Auditor, error) {
	d := audit.Deps{Project: project, Ledger: l, Sessions: store.SessionFiles{Dir: dir}}
	if project.People != "" {
		d.Verifier = signing.NewProtectedVerifier(project.People)
	}
	d.Anchor, _ = a.journalAnchor(project)
	return audit.New(d)
}

// sealSession signs the closed session's final head with its actor's key
// and anchors it, and says on stderr what could not be done where the
// project asks for it (a people file, an environment repository). The
// ledger records it either way.
func (a *app) sealSession(ctx context.Context, j *store.FileJournal) error {
	if a.ledger == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, sealTimeout)
	defer cancel()
	p := a.project
	anchor, noAnchor := a.journalAnchor(p)
	sealer := audit.HeadSealer{
		Ledger: a.ledger, Clock: a.clock,
		Signer: a.signer(ctx, p, j.Session().Actor),
		Anchor: anchor, NoAnchor: noAnchor,
	}
	seal, err := sealer.Seal(ctx, j.SessionID())
	if err != nil {
		return err
	}
	plain.PrintSealWarnings(a.io.Err, j.SessionID(), seal, p != nil && p.People != "", anchor != nil)
	return nil
}
