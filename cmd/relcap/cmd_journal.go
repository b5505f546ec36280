package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow"
)

func (a *app) journalCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "The tamper-evident session journals, for audits",
		Long: `Every state-changing command opens a session and appends hash-chained
entries to its journal; the last entry's hash is also kept in the ledger.
journal verify detects any edit, deletion, reordering or truncation.`,
	}
	cmd.AddCommand(a.journalListCommand(), a.journalShowCommand(), a.journalVerifyCommand(), a.journalReplayCommand())
	return cmd
}

func (a *app) journalPath(id string) (string, error) {
	dir, err := a.sessionsDir()
	if err != nil {
		return "", err
	}
	return store.SessionFiles{Dir: dir}.JournalPath(id), nil
}

func (a *app) journalListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List sessions, oldest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := a.records(cmd.Context())
			if err != nil {
				return err
			}
			sessions, err := q.Sessions(cmd.Context())
			if err != nil {
				return err
			}
			if a.flags.json {
				if sessions == nil {
					sessions = []workflow.Session{}
				}
				return a.printJSON(sessions)
			}
			if len(sessions) == 0 {
				fmt.Fprintln(a.io.Err, "no sessions yet: state-changing commands (effort log, plan, approve, release…) open one")
				return nil
			}
			tw := tabwriter.NewWriter(a.io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tSTARTED (UTC)\tACTOR\tCOMMAND\tRELEASE\tENTRIES")
			for _, s := range sessions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", s.ID, s.StartedAt.UTC().Format("2006-01-02 15:04:05"), s.Actor, s.Command, dash(s.ReleaseID), s.Entries)
			}
			return tw.Flush()
		},
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) journalShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show SESSION",
		Short: "Print a session's journal entries",
		Args:  exactArgs(1, "one session ID (see relcap journal list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := a.journalPath(args[0])
			if err != nil {
				return err
			}
			entries, err := store.ReadEntries(path)
			if errors.Is(err, workflow.ErrNotFound) {
				return fmt.Errorf("%w: no journal for session %s at %s (see relcap journal list)", workflow.ErrNotFound, args[0], path)
			}
			if err != nil {
				return err
			}
			if a.flags.json {
				enc := json.NewEncoder(a.io.Out)
				for _, e := range entries {
					if err := enc.Encode(e); err != nil {
						return err
					}
				}
				return nil
			}
			for _, e := range entries {
				fmt.Fprintf(a.io.Out, "%4d  %s  %-10s %-20s %s\n", e.Seq, e.Time.UTC().Format(time.RFC3339), e.Actor, e.Kind, e.Data)
			}
			return nil
		},
	}
}

// verifyResult is one session's verification, as --json prints it.
type verifyResult struct {
	workflow.SessionVerification
	Path string `json:"path"`
}

func (a *app) journalVerifyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "verify [SESSION]",
		Short: "Check journals against their hash chain and the ledger's head (all sessions by default)",
		Long: `verify re-computes every entry's hash and link and compares the last one with
the head the ledger holds, and checks that the screen recordings a journal
vouches for are unchanged. It exits 0 when every journal is intact and 3
naming the first bad entry when one was edited, removed, reordered or
truncated.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			q, err := a.records(ctx)
			if err != nil {
				return err
			}
			checked, err := q.VerifySessions(ctx, args)
			if err != nil {
				return err
			}
			dir, err := a.sessionsDir()
			if err != nil {
				return err
			}
			results := make([]verifyResult, 0, len(checked))
			bad := 0
			for _, v := range checked {
				if !v.Intact {
					bad++
				}
				results = append(results, verifyResult{SessionVerification: v, Path: store.SessionFiles{Dir: dir}.JournalPath(v.Session)})
			}
			if a.flags.json {
				if err := a.printJSON(results); err != nil {
					return err
				}
			} else {
				for _, r := range results {
					if r.Intact {
						fmt.Fprintf(a.io.Out, "ok       %s  %d entries\n", r.Session, r.Entries)
					} else {
						fmt.Fprintf(a.io.Out, "TAMPERED %s  %s: %s\n", r.Session, r.Path, r.Problem)
					}
				}
				if len(results) == 0 {
					fmt.Fprintln(a.io.Err, "no sessions to verify")
				}
			}
			if bad > 0 {
				if !a.flags.json {
					fmt.Fprintf(a.io.Err, "%d of %d journal(s) failed verification\n", bad, len(results))
				}
				return errSilent{exitBlocked}
			}
			return nil
		},
	}
}
