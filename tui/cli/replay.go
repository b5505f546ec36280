package cli

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/asciicast"
	"github.com/relcap/relcap/workflow/audit"
)

// journalReplayOptions are relcap journal replay's argument and flags.
type journalReplayOptions struct {
	f       Factory
	Session string
	Speed   float64
}

func newCmdJournalReplay(f Factory, runF func(context.Context, *journalReplayOptions) error) *cobra.Command {
	opts := &journalReplayOptions{f: f}
	cmd := &cobra.Command{
		Use:   "replay SESSION [--speed N]",
		Short: "Play back what the captain saw in a cockpit session (screen.cast)",
		Long: `replay plays a cockpit session's screen recording (asciicast v2) back in the
terminal with its original timing, divided by --speed (0 = as fast as
possible). Run relcap journal verify first to know the recording is the one
the journal vouches for.`,
		Args: exactArgs(1, "one session ID (see relcap journal list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Speed < 0 {
				return UsageError{errors.New("--speed must be 0 (no delays) or more")}
			}
			opts.Session = args[0]
			return runOr(runF, runJournalReplay)(cmd.Context(), opts)
		},
	}
	cmd.Flags().Float64Var(&opts.Speed, "speed", 1, "playback speed factor; 0 plays without delays")
	return cmd
}

// runJournalReplay plays the session's screen recordings back.
func runJournalReplay(ctx context.Context, opts *journalReplayOptions) error {
	a := opts.f
	files, err := a.SessionFiles()
	if err != nil {
		return err
	}
	casts, err := files.Recordings(opts.Session)
	if err != nil {
		return err
	}
	if len(casts) == 0 {
		return noRecording(a, ctx, opts.Session)
	}
	for _, path := range casts {
		if err := replay(ctx, a.Screen(), path, opts.Speed); err != nil {
			return err
		}
	}
	return nil
}

func replay(ctx context.Context, screen io.Writer, path string, speed float64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return asciicast.Play(ctx, path, f, screen, speed)
}

// noRecording says why session id has no recording here: it has none
// (only cockpit sessions do), or its journal, read from the ledger, names
// recordings that stay on the machine that recorded them.
func noRecording(a Factory, ctx context.Context, id string) error {
	q, err := a.Auditor(ctx)
	if err != nil {
		return err
	}
	entries, from, err := q.JournalEntries(ctx, id)
	if err != nil {
		entries = nil
	}
	return audit.NoRecording(id, entries, from)
}
