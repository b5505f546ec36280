package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/secret"
)

// IsPostgresURL reports whether v names a PostgreSQL ledger: a postgres://
// or postgresql:// URL.
func IsPostgresURL(v string) bool {
	scheme, _, ok := strings.Cut(v, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// defaultConnectTimeout bounds a connection attempt when the URL does not
// (connect_timeout): a server that does not answer is reported, rather than
// waited for until TCP gives up minutes later.
const defaultConnectTimeout = "10"

// changeChannel is the channel of the ledger's NOTIFYs.
const changeChannel = "relcap_ledger"

// OpenPostgres opens the PostgreSQL ledger at rawURL (postgres://… or
// postgresql://…, as libpq reads it: host, port, user, database, and
// parameters such as sslmode; a password from the URL, PGPASSWORD or
// ~/.pgpass), applying pending schema migrations. The database must exist;
// the user needs to create tables in it the first time, and to read and
// write them after.
//
// A URL that cannot be read is an error wrapping fault.ErrUsage; a
// server that cannot be reached, credentials it refuses and a database it
// does not have are errors that say what to do. No message shows the
// password: the URL is shown with it masked, and the password is added to
// the WithSecrets set.
func OpenPostgres(ctx context.Context, rawURL string, opts ...Option) (*Ledger, error) {
	o := applyOptions(opts)
	loc := secret.RedactURL(rawURL)
	// Learnt before anything is parsed or said: however the password was
	// written (escaped or not, with / ? # @ in it), no message shows it.
	creds := secret.URLCredentials(rawURL)
	pw := secret.NewSet(creds...)
	o.secrets.Add(creds...)
	if !IsPostgresURL(rawURL) {
		return nil, fmt.Errorf("%w: ledger %s is not a postgres:// or postgresql:// URL", fault.ErrUsage, loc)
	}
	u, err := secret.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: ledger %s is not a URL: %s; write it as postgres://USER@HOST:PORT/DATABASE", fault.ErrUsage, loc, pw.Scrub(err.Error()))
	}
	if q := u.Query(); !q.Has("connect_timeout") {
		q.Set("connect_timeout", defaultConnectTimeout)
		u.RawQuery = q.Encode()
	}
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w: ledger %s: %s; write it as postgres://USER@HOST:PORT/DATABASE?PARAMETERS as libpq reads it", fault.ErrUsage, loc, pw.Scrub(parseProblem(err)))
	}
	// The password may also have come from PGPASSWORD or ~/.pgpass.
	o.secrets.Add(cfg.Password)
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "relcap"
	}
	d := &postgresDialect{cfg: cfg}
	db := stdlib.OpenDB(*cfg)
	// A relcap process is one person's command: a few connections are
	// plenty (a report reads on two at once), and a team's server has
	// many such processes to serve.
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(2)
	db.SetConnMaxIdleTime(time.Minute)
	l := &Ledger{db: sqlDB{DB: db, d: d}, d: d, loc: loc, secrets: o.secrets}
	return open(ctx, l, db.PingContext, o)
}

// parseProblem is pgx's reason for refusing a connection string, without
// the string (which pgx shows with a best-effort masking of its own).
func parseProblem(err error) string {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		msg := pe.Error()
		// "cannot parse `…`: reason (cause)"
		if _, after, ok := strings.Cut(msg, "`: "); ok {
			return after
		}
	}
	return err.Error()
}

// postgresDialect is PostgreSQL's side of dialect.
type postgresDialect struct {
	dollarRebinder
	cfg *pgx.ConnConfig // for the change feed's own connection
}

var _ dialect = (*postgresDialect)(nil)

func (*postgresDialect) migrationSQL(m migration) string { return m.postgres }
func (*postgresDialect) greatest() string                { return "GREATEST" }

func (*postgresDialect) clockNanos() string {
	return "(extract(epoch from clock_timestamp()) * 1000000000)::bigint"
}
func (*postgresDialect) least() string { return "LEAST" }

func (*postgresDialect) schemaTable() string {
	return `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at BIGINT NOT NULL
)`
}

// probeWrite fails on a standby, in a read-only transaction, and for a
// user who may not write the table; it changes nothing.
func (*postgresDialect) probeWrite() string {
	return `UPDATE schema_migrations SET version = version WHERE false`
}

// lockClass is the first key of every advisory lock the ledger takes, so
// they cannot collide with other users of advisory locks on the database;
// the letters "rlcp".
const lockClass = 0x726c6370

// serialize takes a transaction-level advisory lock on key, released at
// commit or rollback.
func (*postgresDialect) serialize(ctx context.Context, tx *sql.Tx, key string) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockClass, key)
	return err
}

// notify queues a NOTIFY that PostgreSQL delivers when tx commits, and
// drops if it rolls back.
func (*postgresDialect) notify(ctx context.Context, tx *sql.Tx, topic string) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, changeChannel, topic)
	return err
}

// retryable: a deadlock victim (40P01) or a serialization failure (40001)
// left nothing behind and can be run again.
func (*postgresDialect) retryable(err error) bool {
	code := pgCode(err)
	return code == "40P01" || code == "40001"
}

// snapshots begins n repeatable-read transactions; the first exports its
// snapshot and the others adopt it, so all see the same committed state
// while writers go on.
func (*postgresDialect) snapshots(ctx context.Context, db *sql.DB, n int) (txs []*sql.Tx, err error) {
	defer func() {
		if err != nil {
			for _, tx := range txs {
				_ = tx.Rollback()
			}
			txs = nil
		}
	}()
	opts := &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	var snapshot string
	for i := range n {
		tx, err := db.BeginTx(ctx, opts)
		if err != nil {
			return txs, err
		}
		txs = append(txs, tx)
		switch {
		case n == 1:
		case i == 0:
			if err := tx.QueryRowContext(ctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
				return txs, err
			}
		default:
			// The identifier is the server's own (e.g. 00000003-0000001B-1);
			// SET TRANSACTION takes no parameters.
			if _, err := tx.ExecContext(ctx, `SET TRANSACTION SNAPSHOT '`+strings.ReplaceAll(snapshot, "'", "''")+`'`); err != nil {
				return txs, err
			}
		}
	}
	return txs, nil
}

// changes LISTENs on a connection of its own, opened before Changes
// returns, so a change committed after Changes returns is signalled. A
// lost connection is opened again (with a signal, since changes may have
// been missed meanwhile); no query is repeated while nothing changes.
func (p *postgresDialect) changes(ctx context.Context, _ *Ledger) <-chan struct{} {
	ch := make(chan struct{}, 1)
	conn, err := p.listen(ctx)
	go func() {
		defer close(ch)
		wait := 100 * time.Millisecond
		for {
			if err == nil {
				for {
					if _, err = conn.WaitForNotification(ctx); err != nil {
						break
					}
					wait = 100 * time.Millisecond
					signal(ch)
				}
				_ = conn.Close(context.WithoutCancel(ctx))
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 5*time.Second)
			if conn, err = p.listen(ctx); err == nil {
				signal(ch)
			}
		}
	}()
	return ch
}

func (p *postgresDialect) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, p.cfg.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+changeChannel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return conn, nil
}

// pgCode is the SQLSTATE of err, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// openError explains a failure to reach the server or first use the
// database, saying what to do.
func (p *postgresDialect) openError(loc string, err error) error {
	user, db := p.cfg.User, p.cfg.Database
	server := net.JoinHostPort(p.cfg.Host, fmt.Sprint(p.cfg.Port))
	if strings.HasPrefix(p.cfg.Host, "/") {
		server = "the socket in " + p.cfg.Host
	}
	switch code := pgCode(err); {
	case code == "28P01" || code == "28000":
		return fmt.Errorf("ledger %s: %s refused user %s (%s); check the user and password (in the URL, PGPASSWORD or ~/.pgpass) and the server's pg_hba.conf", loc, server, user, pgMessage(err))
	case code == "3D000":
		return fmt.Errorf("ledger %s: database %s does not exist on %s; create it (createdb -h %s -U %s %s) or name another in the URL", loc, db, server, p.cfg.Host, user, db)
	case code == "42501":
		return fmt.Errorf("ledger %s: user %s may not create or write relcap's tables in database %s (%s); grant it (the first run creates the tables) or use the owner's account", loc, user, db, pgMessage(err))
	case code == "25006":
		return fmt.Errorf("ledger %s: %s is read-only (a standby?) (%s); point the URL at the primary", loc, server, pgMessage(err))
	case code != "":
		return fmt.Errorf("open ledger %s: %w", loc, err)
	case isUnreachable(err):
		return fmt.Errorf("ledger %s: cannot reach the PostgreSQL server at %s: %s; check the host and port, that the server is running and accepts connections from this machine", loc, server, connectProblem(err))
	}
	return fmt.Errorf("open ledger %s: %w", loc, err)
}

// fail wraps the failure of operation op, saying what to do when the cause
// is one the user can fix.
func (*postgresDialect) fail(loc, op string, err error) error {
	switch code := pgCode(err); code {
	case "42501", "25006":
		return fmt.Errorf("ledger %s is not writable: %s: %w; grant the user write access, or point the URL at the primary", loc, op, err)
	case "53100":
		return fmt.Errorf("ledger %s: %s: %w; the database server's disk is full: free space there and retry", loc, op, err)
	case "22021", "22P05":
		return fmt.Errorf("ledger %s: %s: %w; PostgreSQL stores only valid UTF-8 text without NUL characters", loc, op, err)
	case "":
		if isUnreachable(err) || errors.Is(err, driver.ErrBadConn) {
			return fmt.Errorf("ledger %s: %s: lost the connection to the server: %w; retry when it answers again (nothing of this operation was committed)", loc, op, err)
		}
	}
	return fmt.Errorf("ledger %s: %s: %w", loc, op, err)
}

// isUnreachable reports whether err is a failure to connect rather than an
// answer of the server.
func isUnreachable(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne)
}

// connectProblem is why a connection failed, without pgx's repetition of
// the user and database ("failed to connect to `user=… database=…`:")
// and of the same failure once per attempt (with and without TLS, for
// sslmode=prefer).
func connectProblem(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "failed to connect to `") {
		if i := strings.Index(msg, "`:"); i >= 0 {
			msg = msg[i+2:]
		}
	}
	var parts []string
	for _, p := range strings.Split(msg, "\n") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "; ")
}

// pgMessage is the server's message of err.
func pgMessage(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}
