package store_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/journal"
)

// The load test's knobs: flags after -args, or the environment (what make
// load sets). The defaults are short so that make test runs it too.
var (
	loadDuration = flag.Duration("load.duration", envDuration("RELCAP_LOAD_DURATION", 5*time.Second), "how long each load-test process writes (RELCAP_LOAD_DURATION)")
	loadProcs    = flag.Int("load.procs", envInt("RELCAP_LOAD_PROCS", 20), "how many relcap processes the load test runs at once (RELCAP_LOAD_PROCS)")
)

// What the parent tells a child process, and the line the child answers on.
const (
	envLoadChild = "RELCAP_LOAD_CHILD" // the child's number; set only in children
	envLoadURL   = "RELCAP_LOAD_URL"
	envLoadDir   = "RELCAP_LOAD_DIR"
	envLoadStart = "RELCAP_LOAD_START" // Unix nanoseconds: when children start writing
	envLoadUntil = "RELCAP_LOAD_UNTIL" // and when they stop
	loadResult   = "RELCAP_LOAD_RESULT "
)

// entriesPerSession is how many entries a child journals before it closes
// the session and opens another, as one relcap command after another does.
const entriesPerSession = 50

// loadCounts is what one child process wrote, as it counted it.
type loadCounts struct {
	Child     int     `json:"child"`
	Actor     string  `json:"actor"`
	Sessions  int     `json:"sessions"`
	Entries   int     `json:"entries"`
	Approvals int     `json:"approvals"`
	Effort    int     `json:"effort"`
	AppendsUS []int64 `json:"appends_us"` // each Append's latency, microseconds
}

// TestLoadManyProcessesLoseNothing is issue 17's load test: 20 relcap
// processes (this test binary run again as children) write to one
// PostgreSQL ledger at once, each as relcap does: its own sessions
// directory with a FileJournal per session, journal entries of signed
// approvals, the approvals themselves and effort. Each child counts what
// it wrote; the parent then counts the rows in the database and verifies
// every session's chain, from the ledger's copy and from its file, which
// must agree line for line. Nothing may be lost, nothing added, and every
// chain must hold. It runs -load.procs processes for -load.duration (20
// for 5 s by default; make load runs them for 60 s) and logs the figures.
//
// It does not call t.Parallel: it measures, so it runs before the
// package's parallel tests resume.
func TestLoadManyProcessesLoseNothing(t *testing.T) {
	if n := os.Getenv(envLoadChild); n != "" {
		loadChild(t, n)
		return
	}
	procs, duration := *loadProcs, *loadDuration
	require.Positive(t, procs, "-load.procs")
	require.Positive(t, duration, "-load.duration")
	url := pgtest.Database(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), duration+5*time.Minute)
	defer cancel()

	// Every child starts writing at the same instant, after all of them
	// opened the ledger (and raced to migrate it), and stops at the same.
	start := time.Now().Add(3 * time.Second)
	until := start.Add(duration)
	results := make([]loadCounts, procs)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() { results[i], errs[i] = runLoadChild(ctx, i, url, dir, start, until) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	elapsed := time.Since(start)

	var want loadCounts
	var latencies []int64
	for _, r := range results {
		want.Sessions += r.Sessions
		want.Entries += r.Entries
		want.Approvals += r.Approvals
		want.Effort += r.Effort
		latencies = append(latencies, r.AppendsUS...)
	}
	require.Positive(t, want.Entries)

	// The rows, counted in the database.
	db, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer db.Close()
	count := func(q string) int {
		t.Helper()
		var n int
		require.NoError(t, db.QueryRowContext(ctx, q).Scan(&n), q)
		return n
	}
	require.Equal(t, want.Entries, count(`SELECT count(*) FROM journal_entries`), "journal entries")
	require.Equal(t, want.Entries, count(`SELECT COALESCE(sum(head_seq), 0) FROM sessions`), "the heads account for every entry")
	require.Equal(t, want.Sessions, count(`SELECT count(*) FROM sessions`), "sessions")
	require.Equal(t, want.Sessions, count(`SELECT count(*) FROM sessions WHERE ended_at IS NOT NULL AND journal_copy`), "every session closed, its journal kept")
	require.Equal(t, want.Approvals, count(`SELECT count(*) FROM approvals WHERE signature <> '' AND signing_key <> ''`), "signed approvals")
	require.Equal(t, procs, count(`SELECT count(DISTINCT approver) FROM approvals`), "one approver per process")
	require.Equal(t, want.Effort, count(`SELECT count(*) FROM effort`), "effort rows")

	// Every chain, from the ledger's copy and from the file.
	l, err := store.OpenPostgres(ctx, url)
	require.NoError(t, err)
	defer l.Close()
	sessions, err := l.Sessions(ctx)
	require.NoError(t, err)
	byActor := map[string]int{}
	for _, r := range results {
		byActor[r.Actor] = r.Child
		got, err := l.Effort(ctx, loadRelease(r.Child))
		require.NoError(t, err)
		require.Len(t, got, r.Effort, "%s's effort", r.Actor)
	}
	verified := 0
	for _, s := range sessions {
		child, ok := byActor[s.Actor]
		require.True(t, ok, "session %s by %s, who is no child", s.ID, s.Actor)
		cp, err := l.JournalCopy(ctx, s.ID)
		require.NoError(t, err)
		n, p := journal.Verify(cp.Lines, cp.Head)
		require.Nil(t, p, "session %s, the ledger's copy: %v", s.ID, p)
		lines, err := store.ReadJournal(store.SessionFiles{Dir: loadSessionsDir(dir, child)}.JournalPath(s.ID))
		require.NoError(t, err)
		fn, p := journal.Verify(lines, cp.Head)
		require.Nil(t, p, "session %s, its file: %v", s.ID, p)
		require.Equal(t, n, fn)
		require.Equal(t, lines, cp.Lines, "session %s: the file and the ledger's copy agree line for line", s.ID)
		verified += int(n)
	}
	require.Equal(t, want.Entries, verified, "every entry written was verified")

	// And as relcap journal verify does it: on each child's machine, its
	// own sessions from their files, the ledger's copy compared with
	// them; on a teammate's machine, which has no file, every session
	// from the ledger's copy alone.
	verifyStart := time.Now()
	own := map[string][]string{}
	for _, s := range sessions {
		own[s.Actor] = append(own[s.Actor], s.ID)
	}
	machines := make([]string, 0, len(results)+1)
	for _, r := range results {
		machines = append(machines, loadSessionsDir(dir, r.Child))
	}
	machines = append(machines, filepath.Join(dir, "teammate", "sessions"))
	for m, sessionsDir := range machines {
		q, err := audit.New(audit.Deps{Project: &workflow.Project{}, Ledger: l, Sessions: store.SessionFiles{Dir: sessionsDir}})
		require.NoError(t, err)
		teammate := m == len(results)
		ids, from := []string(nil), audit.JournalFromLedger // nil: every session
		if !teammate {
			ids, from = own[results[m].Actor], audit.JournalFromFile
			if len(ids) == 0 {
				continue
			}
		}
		vs, err := q.VerifySessions(ctx, ids)
		require.NoError(t, err)
		if teammate {
			require.Len(t, vs, len(sessions))
		}
		for _, v := range vs {
			require.True(t, v.Intact, "%s verified on %s: %v", v.Session, sessionsDir, v.Failed)
			require.Equal(t, from, v.Journal, "%s verified on %s", v.Session, sessionsDir)
		}
	}
	verifyTook := time.Since(verifyStart)

	slices.Sort(latencies)
	secs := duration.Seconds()
	t.Logf("load: %d processes writing for %s each (%s from the first write to the last exit) on one PostgreSQL", procs, duration, elapsed.Round(time.Millisecond))
	t.Logf("load: %d journal entries (%.0f/s) in %d sessions, %d signed approvals (%.0f/s), %d effort rows (%.0f/s): all counted in the database",
		want.Entries, float64(want.Entries)/secs, want.Sessions, want.Approvals, float64(want.Approvals)/secs, want.Effort, float64(want.Effort)/secs)
	t.Logf("load: journal append (fsync + ledger transaction) p50 %s, p99 %s, max %s",
		percentile(latencies, 0.50), percentile(latencies, 0.99), percentile(latencies, 1))
	t.Logf("load: %d chains verified from the ledger's copy and from the files, line for line: every one intact", len(sessions))
	t.Logf("load: relcap journal verify of them all, on the writers' machines and on a teammate's: %s (%.0f entries/s)",
		verifyTook.Round(time.Millisecond), float64(2*want.Entries)/verifyTook.Seconds())
}

// runLoadChild runs child i to completion and reads its counts.
func runLoadChild(ctx context.Context, i int, url, dir string, start, until time.Time) (loadCounts, error) {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLoadManyProcessesLoseNothing$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		envLoadChild+"="+strconv.Itoa(i), envLoadURL+"="+url, envLoadDir+"="+dir,
		envLoadUntil+"="+strconv.FormatInt(until.UnixNano(), 10), envLoadStart+"="+strconv.FormatInt(start.UnixNano(), 10))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return loadCounts{}, fmt.Errorf("load child %d: %w\n%s%s", i, err, out.String(), errb.String())
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), loadResult); ok {
			var c loadCounts
			if err := json.Unmarshal([]byte(rest), &c); err != nil {
				return loadCounts{}, fmt.Errorf("load child %d: its counts: %w", i, err)
			}
			return c, nil
		}
	}
	return loadCounts{}, fmt.Errorf("load child %d printed no counts:\n%s%s", i, out.String(), errb.String())
}

// loadChild is one relcap process of the load test: it opens the ledger
// and its sessions as relcap does and writes until the parent's deadline,
// failing on the first error, then prints what it wrote.
func loadChild(t *testing.T, n string) {
	child, err := strconv.Atoi(n)
	require.NoError(t, err)
	url, dir := os.Getenv(envLoadURL), os.Getenv(envLoadDir)
	start, err := strconv.ParseInt(os.Getenv(envLoadStart), 10, 64)
	require.NoError(t, err)
	untilNS, err := strconv.ParseInt(os.Getenv(envLoadUntil), 10, 64)
	require.NoError(t, err)
	until := time.Unix(0, untilNS)
	ctx := context.Background()

	l, err := store.OpenPostgres(ctx, url)
	require.NoError(t, err)
	defer l.Close()
	actor := fmt.Sprintf("load-%02d", child)
	sessions := loadSessionsDir(dir, child)
	c := loadCounts{Child: child, Actor: actor}
	clock := workflow.SystemClock{}
	time.Sleep(time.Until(time.Unix(0, start)))

	var j *store.FileJournal
	for seq := 0; time.Now().Before(until); seq++ {
		if seq%entriesPerSession == 0 {
			if j != nil {
				require.NoError(t, j.Close(ctx))
			}
			j, err = store.OpenSession(ctx, l, sessions, workflow.Session{Actor: actor, Command: "approve --plan", ReleaseID: loadRelease(child)}, clock)
			require.NoError(t, err)
			c.Sessions++
		}
		a := signedLookingApproval(actor, seq, clock.Now())
		began := time.Now()
		_, err := j.Append(ctx, journal.ApprovalRecorded{Approval: a})
		require.NoError(t, err)
		c.AppendsUS = append(c.AppendsUS, time.Since(began).Microseconds())
		c.Entries++
		require.NoError(t, l.RecordApproval(ctx, a))
		c.Approvals++
		require.NoError(t, l.RecordEffort(ctx, []effort.Entry{{
			ReleaseID: loadRelease(child), Person: actor, Role: "approver", Step: "plan",
			Kind: effort.Active, Duration: time.Duration(seq%7+1) * time.Second, At: a.At,
		}}))
		c.Effort++
	}
	if j != nil {
		require.NoError(t, j.Close(ctx))
	}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	fmt.Println(loadResult + string(b))
}

func loadSessionsDir(dir string, child int) string {
	return filepath.Join(dir, fmt.Sprintf("machine-%02d", child), "sessions")
}

func loadRelease(child int) string { return fmt.Sprintf("web-prod-load-%02d", child) }

// signedLookingApproval is an approval shaped like a signed one: an
// armored SSH signature block of a real signature's size and the key's
// fingerprint. Nothing here checks signatures; the load is what counts.
func signedLookingApproval(actor string, seq int, at time.Time) approval.Approval {
	sig := make([]byte, 294) // an ed25519 SSHSIG's size
	_, _ = rand.Read(sig)
	b64 := base64.StdEncoding.EncodeToString(sig)
	var armored strings.Builder
	armored.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(b64) > 70 {
		armored.WriteString(b64[:70] + "\n")
		b64 = b64[70:]
	}
	armored.WriteString(b64 + "\n-----END SSH SIGNATURE-----\n")
	key := sha256.Sum256([]byte(actor))
	fp := sha256.Sum256(fmt.Appendf(nil, "plan %s %d", actor, seq))
	return approval.Approval{
		Kind: approval.Plan, Subject: fmt.Sprintf("%x", fp), Env: "prod", Approver: actor,
		Comment: "load test", At: at,
		Signature: approval.Signature{Armored: armored.String(), Key: "SHA256:" + base64.RawStdEncoding.EncodeToString(key[:])},
	}
}

// percentile is the q-quantile of sorted microsecond latencies.
func percentile(sorted []int64, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)-1) + 0.5)
	return (time.Duration(sorted[i]) * time.Microsecond).Round(10 * time.Microsecond)
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}
