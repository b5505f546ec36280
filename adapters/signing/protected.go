package signing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow"
)

// PeopleSource finds the people file that counts: the content committed at
// the protected branch of the repository that holds the file, as its
// remote (origin) says it is now, never the working copy, which the captain
// can edit alone. Where there is no such branch (the file is in no git
// repository, or in one without an origin: the demo's layout) the working
// copy counts, and State says plainly that it is not protected.
//
// It runs git, as the person would: their credentials, their
// configuration. The protected branch is origin's default branch (what
// `git ls-remote --symref origin HEAD` names), read from origin itself at
// each State (cached for a few seconds), so a rewritten remote-tracking ref
// on this machine changes nothing.
type PeopleSource struct {
	// Path is the people file's path on this machine.
	Path string

	mu     sync.Mutex
	cached *peopleRead
	at     time.Time
	now    func() time.Time
}

// peopleRead is one reading of the people file that counts.
type peopleRead struct {
	state workflow.PeopleState
	data  []byte // the content that counts
}

// peopleCacheFor is how long one reading of origin serves: one command
// verifies many signatures, and should not ask origin for each.
const peopleCacheFor = 10 * time.Second

// NewPeopleSource returns the source of the people file at path.
func NewPeopleSource(path string) *PeopleSource { return &PeopleSource{Path: path} }

// Revision ids: "git:<commit>:<blob>" names the file committed at a commit
// of the protected branch; "file:sha256:<hex>" a working copy nothing
// protects, by its content.
const (
	gitRevisionPrefix  = "git:"
	fileRevisionPrefix = "file:sha256:"
)

// read returns the people file that counts now.
func (s *PeopleSource) read(ctx context.Context) (*peopleRead, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	if s.cached != nil && now().Sub(s.at) < peopleCacheFor {
		return s.cached, nil
	}
	r, err := s.readNow(ctx)
	if err != nil {
		return nil, err
	}
	s.cached, s.at = r, now()
	return r, nil
}

func (s *PeopleSource) readNow(ctx context.Context) (*peopleRead, error) {
	if s.Path == "" {
		return nil, usagef("no people file is configured: name one in relcap.yaml (people: allowed_signers), in git's allowed-signers format")
	}
	working, err := os.ReadFile(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		working = nil
	} else if err != nil {
		return nil, usagef("cannot read people file %s: %v", s.Path, err)
	}
	repo, rel, why := s.repository(ctx)
	if why != "" {
		if working == nil {
			return nil, usagef("people file %s does not exist: create it in git's allowed-signers format (one line per person: principal, key type, public key) or fix the path", s.Path)
		}
		return &peopleRead{data: working, state: workflow.PeopleState{File: s.Path, Revision: fileRevision(working), Where: why}}, nil
	}
	branch, commit, err := remoteHead(ctx, repo)
	if err != nil {
		return nil, err
	}
	if err := fetchCommit(ctx, repo, branch, commit); err != nil {
		return nil, err
	}
	blob, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", commit+":"+rel)
	if err != nil {
		return nil, usagef("people file %s is not committed on origin's %s (commit %s): commit it and push it through review; until then no signed approval counts", rel, branch, short(commit))
	}
	data, err := gitBytes(ctx, repo, "cat-file", "blob", blob)
	if err != nil {
		return nil, fmt.Errorf("read people file %s at origin/%s: %w", rel, branch, err)
	}
	st := workflow.PeopleState{File: s.Path, Revision: gitRevisionPrefix + commit + ":" + blob, Protected: true,
		Where: fmt.Sprintf("%s at origin/%s (commit %s)", rel, branch, short(commit))}
	if working == nil || !bytes.Equal(working, data) {
		st.Differs = differingPrincipals(working, data)
		if len(st.Differs) == 0 {
			st.Differs = []string{"(no principal: the lines differ only in form)"}
		}
	}
	return &peopleRead{data: data, state: st}, nil
}

// repository is the git repository holding the file, its path in it, or
// why the file has no protected source ("" when it has one).
func (s *PeopleSource) repository(ctx context.Context) (repo, rel, why string) {
	dir := filepath.Dir(s.Path)
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", fmt.Sprintf("%s is in no git repository", s.Path)
	}
	if _, err := git(ctx, top, "remote", "get-url", "origin"); err != nil {
		return "", "", fmt.Sprintf("the repository %s that holds %s has no origin", top, filepath.Base(s.Path))
	}
	abs, err := filepath.Abs(s.Path)
	if err != nil {
		return "", "", fmt.Sprintf("cannot resolve %s: %v", s.Path, err)
	}
	if real, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(real, filepath.Base(abs))
	}
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	r, err := filepath.Rel(top, abs)
	if err != nil || strings.HasPrefix(r, "..") {
		return "", "", fmt.Sprintf("%s is outside the repository %s", s.Path, top)
	}
	return top, filepath.ToSlash(r), ""
}

// remoteHead asks origin which branch is its default and where it is.
func remoteHead(ctx context.Context, repo string) (branch, commit string, err error) {
	out, err := git(ctx, repo, "ls-remote", "--symref", "origin", "HEAD")
	if err != nil {
		return "", "", blockedf("cannot read origin's default branch to find the protected people file (%v): check the network and your git credentials, then try again", err)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if ref, ok := strings.CutPrefix(line, "ref: "); ok {
			ref, _, _ = strings.Cut(ref, "\t")
			branch = strings.TrimPrefix(ref, "refs/heads/")
		} else if id, name, ok := strings.Cut(line, "\t"); ok && name == "HEAD" {
			commit = id
		}
	}
	if branch == "" || commit == "" {
		return "", "", blockedf("origin has no default branch (HEAD): the people file that counts is the one committed on it; push the branch that holds it")
	}
	return branch, commit, nil
}

// fetchCommit makes commit, origin's tip of branch, available here.
func fetchCommit(ctx context.Context, repo, branch, commit string) error {
	if _, err := git(ctx, repo, "cat-file", "-e", commit+"^{commit}"); err == nil {
		return nil
	}
	if _, err := git(ctx, repo, "fetch", "--quiet", "--no-tags", "origin", "+refs/heads/"+branch+":refs/remotes/origin/"+branch); err != nil {
		return blockedf("cannot fetch origin's %s to read the protected people file (%v): check the network and your git credentials, then try again", branch, err)
	}
	return nil
}

// content returns the people file of revision id, and whether it is
// known here: a git revision must still be in the history of origin's
// protected branch (a commit rewound away no longer vouches for anything);
// a file revision is known only while the working copy still has it.
func (s *PeopleSource) content(ctx context.Context, id string) ([]byte, error) {
	if hexsum, ok := strings.CutPrefix(id, fileRevisionPrefix); ok {
		working, err := os.ReadFile(s.Path)
		if err != nil || fileRevision(working) != id {
			return nil, blockedf("it was verified against a people file nothing protected (%s, sha256 %s…), which this machine no longer has: it cannot be checked again", s.Path, clipHex(hexsum))
		}
		return working, nil
	}
	rest, ok := strings.CutPrefix(id, gitRevisionPrefix)
	commit, blob, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || !isHex(commit) || !isHex(blob) {
		return nil, unverifiedf("it names the people file revision %s, which is not one relcap writes: the record was altered", clip(id))
	}
	repo, rel, why := s.repository(ctx)
	if why != "" {
		return nil, blockedf("it was verified against the people file committed at %s, and here %s: check it where the repository has its origin", short(commit), why)
	}
	branch, tip, err := remoteHead(ctx, repo)
	if err != nil {
		return nil, err
	}
	if err := fetchCommit(ctx, repo, branch, tip); err != nil {
		return nil, err
	}
	if _, err := git(ctx, repo, "merge-base", "--is-ancestor", commit, tip); err != nil {
		return nil, unverifiedf("it was verified against the people file of commit %s, which is not in the history of origin's %s: that branch was rewritten, or the commit was never on it", short(commit), branch)
	}
	got, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", commit+":"+rel)
	if err != nil || got != blob {
		return nil, unverifiedf("the record says it was verified against blob %s of %s at commit %s, which holds something else: the record was altered", short(blob), rel, short(commit))
	}
	return gitBytes(ctx, repo, "cat-file", "blob", blob)
}

// differingPrincipals lists the literal principals whose keys, options or
// presence differ between two people files, sorted.
func differingPrincipals(a, b []byte) []string {
	lines := func(data []byte) map[string][]string {
		out := map[string][]string{}
		p, _ := parseAll("", data, time.UTC)
		for i := range p.entries {
			e := &p.entries[i]
			desc := fmt.Sprintf("%x|%s|%d|%d", e.blob, e.namespaces, e.after.Unix(), e.before.Unix())
			for _, who := range e.literals() {
				out[who] = append(out[who], desc)
			}
		}
		for who := range out {
			slices.Sort(out[who])
		}
		return out
	}
	la, lb := lines(a), lines(b)
	var out []string
	for who, descs := range la {
		if !slices.Equal(descs, lb[who]) {
			out = append(out, who)
		}
	}
	for who := range lb {
		if _, ok := la[who]; !ok {
			out = append(out, who)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func fileRevision(data []byte) string {
	sum := sha256.Sum256(data)
	return fileRevisionPrefix + hex.EncodeToString(sum[:])
}

func isHex(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	_, err := hex.DecodeString(strings.Repeat("0", len(s)%2) + s)
	return err == nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func clipHex(s string) string { return short(s) }

// userinfo matches credentials in a URL git may print in an error.
var userinfo = regexp.MustCompile(`://[^/@\s]+@`)

// git runs git in dir and returns its trimmed standard output; the error
// carries the first line git wrote on standard error, credentials masked.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := gitBytes(ctx, dir, args...)
	return strings.TrimSpace(string(out)), err
}

func gitBytes(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		if msg == "" {
			msg = err.Error()
		}
		return nil, errors.New("git " + args[0] + ": " + userinfo.ReplaceAllString(msg, "://***@"))
	}
	return out, nil
}

// blockedf is a people file that cannot be established now (origin
// unreachable): nothing counts until it can (exit 3).
func blockedf(format string, args ...any) error {
	return &signingError{msg: fmt.Sprintf(format, args...), errs: []error{workflow.ErrPeopleUnavailable}}
}
