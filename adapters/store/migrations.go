package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migration is one step of the schema. Versions start at 1 and increase
// in slice order; a released migration is never edited, only followed by a
// new one, because ledgers in the field have already applied it. A ledger
// gets every migration it has not applied, in slice order, even one with a
// lower version than its newest (two branches developed side by side), so
// a migration must not depend on one with a higher version.
type migration struct {
	version int
	sql     string
}

// migrations is the schema history. Times are INTEGER Unix nanoseconds in
// UTC (NULL for none); bodies are the JSON of the domain value, and the
// other columns are copies of its fields for queries and indexes.
var migrations = []migration{
	{1, `
CREATE TABLE releases (
	id         TEXT PRIMARY KEY,
	app        TEXT NOT NULL,
	env        TEXT NOT NULL,
	status     TEXT NOT NULL,
	kind       TEXT NOT NULL,
	captain    TEXT NOT NULL DEFAULT '',
	created_at INTEGER,
	updated_at INTEGER,
	ended_at   INTEGER,
	body       TEXT NOT NULL CHECK (json_valid(body))
) STRICT;
-- Reports select by app and environment over a period, or by period alone.
CREATE INDEX releases_app_env_created ON releases (app, env, created_at);
CREATE INDEX releases_env_created ON releases (env, created_at);
CREATE INDEX releases_created ON releases (created_at);

CREATE TABLE plans (
	fingerprint TEXT PRIMARY KEY,
	env         TEXT NOT NULL,
	author      TEXT NOT NULL DEFAULT '',
	created_at  INTEGER,
	applied_at  INTEGER,
	body        TEXT NOT NULL CHECK (json_valid(body))
) STRICT;
CREATE INDEX plans_env_created ON plans (env, created_at);

-- Every approval is kept, duplicates included: it is an audit record, and
-- workflow.CountApprovals decides what counts.
CREATE TABLE approvals (
	id       INTEGER PRIMARY KEY,
	kind     TEXT NOT NULL,
	subject  TEXT NOT NULL,
	env      TEXT NOT NULL DEFAULT '',
	approver TEXT NOT NULL,
	comment  TEXT NOT NULL DEFAULT '',
	at       INTEGER
) STRICT;
CREATE INDEX approvals_kind_subject ON approvals (kind, subject, at);

CREATE TABLE effort (
	id          INTEGER PRIMARY KEY,
	release_id  TEXT NOT NULL,
	person      TEXT NOT NULL DEFAULT '',
	role        TEXT NOT NULL DEFAULT '',
	step        TEXT NOT NULL,
	kind        TEXT NOT NULL,
	duration_ns INTEGER NOT NULL CHECK (duration_ns >= 0),
	at          INTEGER,
	note        TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX effort_release ON effort (release_id, at);
-- Hours per month, per person.
CREATE INDEX effort_at ON effort (at);
CREATE INDEX effort_person_at ON effort (person, at);

CREATE TABLE convergences (
	id         INTEGER PRIMARY KEY,
	release_id TEXT NOT NULL,
	app        TEXT NOT NULL,
	env        TEXT NOT NULL,
	digest     TEXT NOT NULL,
	revision   TEXT NOT NULL DEFAULT '',
	at         INTEGER
) STRICT;
CREATE INDEX convergences_app_env_digest ON convergences (app, env, digest);
CREATE INDEX convergences_release ON convergences (release_id);

-- One row per digest a reference was seen at: at is when that pair was
-- first seen, so the earliest row of a reference is its first sighting and
-- later rows show the tag moved.
CREATE TABLE sightings (
	id        INTEGER PRIMARY KEY,
	reference TEXT NOT NULL,
	digest    TEXT NOT NULL,
	at        INTEGER NOT NULL,
	last_seen INTEGER NOT NULL,
	UNIQUE (reference, digest)
) STRICT;
CREATE INDEX sightings_reference_at ON sightings (reference, at);

-- A finding is open while resolved_at is NULL; at most one open row per
-- (scope, code, subject). A finding that comes back after being resolved
-- opens a new row, so its age restarts.
CREATE TABLE findings (
	id          INTEGER PRIMARY KEY,
	scope       TEXT NOT NULL,
	code        TEXT NOT NULL,
	subject     TEXT NOT NULL,
	severity    TEXT NOT NULL,
	message     TEXT NOT NULL,
	body        TEXT NOT NULL CHECK (json_valid(body)),
	first_seen  INTEGER NOT NULL,
	last_seen   INTEGER NOT NULL,
	resolved_at INTEGER
) STRICT;
CREATE UNIQUE INDEX findings_open ON findings (scope, code, subject) WHERE resolved_at IS NULL;
-- Drift age and ownership conflicts over time, by code.
CREATE INDEX findings_code_first ON findings (code, first_seen);

CREATE TABLE sessions (
	id         TEXT PRIMARY KEY,
	actor      TEXT NOT NULL,
	command    TEXT NOT NULL,
	release_id TEXT NOT NULL DEFAULT '',
	started_at INTEGER,
	ended_at   INTEGER,
	head_seq   INTEGER NOT NULL DEFAULT 0,
	head_hash  TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX sessions_started ON sessions (started_at);
CREATE INDEX sessions_release ON sessions (release_id, started_at);
`},
	// Effort summaries for reports (issue 9): a report of 100,000 releases
	// read some 800,000 effort rows, one driver round trip each, and took
	// seconds. Reports only sum effort by release, person, role, step and
	// kind, so the ledger keeps those sums as it goes: effort_keys numbers
	// each (person, role, step, kind) once, and effort_totals holds one row
	// per release whose sums are a JSON object from key number to the total
	// duration in nanoseconds, e.g. {"1":900000000000,"4":60000000000}.
	// A trigger keeps both up to date on every effort insert; effort rows
	// are never updated or deleted (other triggers refuse it), so the sums
	// cannot go stale. Existing effort is summed here once.
	{2, `
CREATE TABLE effort_keys (
	id     INTEGER PRIMARY KEY,
	person TEXT NOT NULL,
	role   TEXT NOT NULL,
	step   TEXT NOT NULL,
	kind   TEXT NOT NULL,
	UNIQUE (person, role, step, kind)
) STRICT;

CREATE TABLE effort_totals (
	release_id TEXT PRIMARY KEY,
	sums       TEXT NOT NULL CHECK (json_valid(sums))
) STRICT, WITHOUT ROWID;

INSERT INTO effort_keys (person, role, step, kind)
SELECT DISTINCT person, role, step, kind FROM effort ORDER BY kind, person, role, step;

INSERT INTO effort_totals (release_id, sums)
SELECT release_id, json_group_object(CAST(key AS TEXT), ns) FROM (
	SELECT e.release_id, k.id AS key, sum(e.duration_ns) AS ns
	FROM effort e JOIN effort_keys k
		ON k.person = e.person AND k.role = e.role AND k.step = e.step AND k.kind = e.kind
	GROUP BY e.release_id, k.id)
GROUP BY release_id;

CREATE TRIGGER effort_sum AFTER INSERT ON effort BEGIN
	INSERT INTO effort_keys (person, role, step, kind) VALUES (new.person, new.role, new.step, new.kind)
		ON CONFLICT DO NOTHING;
	INSERT INTO effort_totals (release_id, sums) VALUES (new.release_id, '{}')
		ON CONFLICT DO NOTHING;
	UPDATE effort_totals SET sums = (
		SELECT json_set(sums, p, coalesce(json_extract(sums, p), 0) + new.duration_ns)
		FROM (SELECT '$."' || id || '"' AS p FROM effort_keys
			WHERE person = new.person AND role = new.role AND step = new.step AND kind = new.kind))
	WHERE release_id = new.release_id;
END;

CREATE TRIGGER effort_no_update BEFORE UPDATE ON effort BEGIN
	SELECT RAISE(ABORT, 'effort is append-only: entries are never changed');
END;
CREATE TRIGGER effort_no_delete BEFORE DELETE ON effort BEGIN
	SELECT RAISE(ABORT, 'effort is append-only: entries are never deleted');
END;
`},
	// Approvals bound to what was reviewed and signed by the approver: a
	// promotion's pinned commit and digest, the armored SSH signature of
	// the approval's statement and the fingerprint of the key that made it.
	// Approvals recorded before carry none, and count only where the
	// environment takes unsigned approvals.
	{3, `
ALTER TABLE approvals ADD COLUMN commit_sha  TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN digest      TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN signature   TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN signing_key TEXT NOT NULL DEFAULT '';
`},
	// The time box a break-glass approval signs: how long the approver
	// lets reconciliation stay paused, in nanoseconds. Other approvals,
	// and those recorded before, have none (0).
	{4, `
ALTER TABLE approvals ADD COLUMN time_box_ns INTEGER NOT NULL DEFAULT 0 CHECK (time_box_ns >= 0);
`},
	// Sealed journal heads (issue 16): when a session closes, its final
	// head is signed by its actor and anchored outside the ledger. sealed_at
	// is the time in the signed statement (NULL: never sealed); the
	// signature and its key's fingerprint, or why the head is unsigned;
	// where it was anchored, or why not. A sealed head never changes: the
	// trigger refuses it (it guards relcap's own code; someone with
	// sqlite3 can drop it, and then the signature and the anchor disagree).
	// Sessions are never deleted either.
	{5, `
ALTER TABLE sessions ADD COLUMN sealed_at        INTEGER;
ALTER TABLE sessions ADD COLUMN head_signature   TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN head_signing_key TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN head_unsigned    TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN head_anchor      TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN head_unanchored  TEXT NOT NULL DEFAULT '';

CREATE TRIGGER sessions_sealed_head BEFORE UPDATE OF
	actor, command, release_id, head_seq, head_hash, sealed_at, head_signature, head_signing_key, head_unsigned
ON sessions WHEN old.sealed_at IS NOT NULL BEGIN
	SELECT RAISE(ABORT, 'a sealed session head is never changed');
END;
CREATE TRIGGER sessions_no_delete BEFORE DELETE ON sessions BEGIN
	SELECT RAISE(ABORT, 'sessions are never deleted from the ledger');
END;
`},
}

// schemaVersion is the newest schema this binary knows.
func schemaVersion() int { return migrations[len(migrations)-1].version }

// migrate brings the schema up to date, one transaction per migration.
// Each transaction re-reads the version under the write lock, so two
// processes opening a new ledger at once apply each migration once.
func (s *SQLite) migrate(ctx context.Context) error {
	var (
		current int
		done    map[int]bool
	)
	err := s.runTx(ctx, func(tx ledgerTx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at INTEGER NOT NULL
) STRICT`); err != nil {
			return err
		}
		// A write statement that changes nothing, so a ledger SQLite could
		// only open read-only fails here with a clear message instead of
		// at the first save. BEGIN does not: in WAL mode it succeeds on a
		// read-only file.
		if _, err := tx.ExecContext(ctx, `UPDATE schema_migrations SET version = version WHERE 0`); err != nil {
			return err
		}
		var err error
		if current, err = readVersion(ctx, tx.Tx); err != nil {
			return err
		}
		done, err = appliedVersions(ctx, tx.Tx)
		return err
	})
	if err != nil {
		return s.openError(err)
	}
	if current > schemaVersion() {
		return fmt.Errorf("ledger %s has schema version %d, this relcap knows up to %d: upgrade relcap", s.path, current, schemaVersion())
	}
	for _, m := range migrations {
		if done[m.version] {
			continue
		}
		err := s.inTx(ctx, fmt.Sprintf("migrate schema to version %d", m.version), func(tx ledgerTx) error {
			done, err := applied(ctx, tx.Tx, m.version)
			if err != nil || done {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, m.version, time.Now().UnixNano())
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// applied reports whether migration version is recorded in the ledger.
func applied(ctx context.Context, tx *sql.Tx, version int) (bool, error) {
	var done bool
	err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?)`, version).Scan(&done)
	return done, err
}

// appliedVersions are the migrations recorded in the ledger.
func appliedVersions(ctx context.Context, tx *sql.Tx) (map[int]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	done := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		done[v] = true
	}
	return done, rows.Err()
}

func readVersion(ctx context.Context, tx *sql.Tx) (int, error) {
	var v int
	err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}
