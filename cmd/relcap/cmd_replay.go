package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/workflow"
)

func (a *app) journalReplayCommand() *cobra.Command {
	var speed float64
	cmd := &cobra.Command{
		Use:   "replay SESSION [--speed N]",
		Short: "Play back what the captain saw in a cockpit session (screen.cast)",
		Long: `replay plays a cockpit session's screen recording (asciicast v2) back in the
terminal with its original timing, divided by --speed (0 = as fast as
possible). Run relcap journal verify first to know the recording is the one
the journal vouches for.`,
		Args: exactArgs(1, "one session ID (see relcap journal list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if speed < 0 {
				return usageError{errors.New("--speed must be 0 (no delays) or more")}
			}
			dir, err := a.sessionsDir()
			if err != nil {
				return err
			}
			casts, err := filepath.Glob(filepath.Join(dir, filepath.Base(args[0]), "screen*.cast"))
			if err != nil {
				return err
			}
			if len(casts) == 0 {
				return fmt.Errorf("%w: session %s has no screen recording (only cockpit sessions do)", workflow.ErrUsage, args[0])
			}
			// screen.cast, then screen-2.cast, … screen-10.cast: the order
			// they were made, which is numeric, not alphabetical.
			slices.SortFunc(casts, func(x, y string) int { return cmp.Compare(castNumber(x), castNumber(y)) })
			for _, path := range casts {
				if err := replayFile(cmd, path, a.io.Out, speed); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().Float64Var(&speed, "speed", 1, "playback speed factor; 0 plays without delays")
	return cmd
}

// castNumber is N of screen-N.cast; screen.cast is the first, 1.
func castNumber(path string) int {
	var n int
	if _, err := fmt.Sscanf(filepath.Base(path), "screen-%d.cast", &n); err != nil {
		return 1
	}
	return n
}

func replayFile(cmd *cobra.Command, path string, out interface{ Write([]byte) (int, error) }, speed float64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return replayCast(cmd, path, bufio.NewScanner(f), out, speed)
}

// replayCast writes the output events of an asciicast v2 stream, waiting
// between them as recorded (scaled by speed).
func replayCast(cmd *cobra.Command, name string, sc *bufio.Scanner, out interface{ Write([]byte) (int, error) }, speed float64) error {
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	if !sc.Scan() {
		return fmt.Errorf("%w: %s is empty", workflow.ErrUsage, name)
	}
	var header struct{ Version int }
	if err := json.Unmarshal(sc.Bytes(), &header); err != nil || header.Version != 2 {
		return fmt.Errorf("%w: %s line 1: not an asciicast v2 header", workflow.ErrUsage, name)
	}
	last, line := 0.0, 1
	for sc.Scan() {
		line++
		var ev []json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || len(ev) != 3 {
			return fmt.Errorf("%w: %s line %d: not an asciicast event", workflow.ErrUsage, name, line)
		}
		var at float64
		var kind, data string
		if json.Unmarshal(ev[0], &at) != nil || json.Unmarshal(ev[1], &kind) != nil || json.Unmarshal(ev[2], &data) != nil {
			return fmt.Errorf("%w: %s line %d: not an asciicast event", workflow.ErrUsage, name, line)
		}
		if kind != "o" {
			continue
		}
		if speed > 0 && at > last {
			select {
			case <-time.After(time.Duration((at - last) / speed * float64(time.Second))):
			case <-cmd.Context().Done():
				return cmd.Context().Err()
			}
		}
		last = at
		if _, err := out.Write([]byte(data)); err != nil {
			return err
		}
	}
	return sc.Err()
}
