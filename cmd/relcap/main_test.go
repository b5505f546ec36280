package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// invoke runs relcap in-process with a private data directory.
func invoke(t *testing.T, dataHome string, args ...string) (int, string, string) {
	t.Helper()
	io, out, errb := testIO("XDG_DATA_HOME="+dataHome, "XDG_STATE_HOME="+filepath.Join(dataHome, "state"), "USER=captain")
	code := run(context.Background(), io, args)
	return code, out.String(), errb.String()
}

func TestVersionPrintsBuildInfo(t *testing.T) {
	t.Parallel()
	code, out, _ := invoke(t, t.TempDir(), "version")
	require.Equal(t, 0, code)
	require.Contains(t, out, "relcap dev (commit none")
}

func TestUnknownFlagIsAUsageError(t *testing.T) {
	t.Parallel()
	code, _, errOut := invoke(t, t.TempDir(), "journal", "list", "--bogus")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "unknown flag: --bogus")
}

func TestEffortLogTwiceThenJournalVerifies(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	ledger := filepath.Join(data, "relcap", "ledger.db")
	seedRelease(t, ledger, "web-prod-2", "prod")
	rows := ledgerRows(t, ledger)
	code, _, errOut := invoke(t, data, "effort", "log", "--release", "web-prod-1", "--minutes", "30", "--what", "go/no-go call")
	require.Equal(t, exitUsage, code, "time against a release the ledger does not hold: %s", errOut)
	require.Contains(t, errOut, `--release "web-prod-1": no such release in the ledger`)
	require.Equal(t, rows, ledgerRows(t, ledger), "no effort row, no session")

	seedRelease(t, ledger, "web-prod-1", "prod")
	code, out, errOut := invoke(t, data, "effort", "log", "--release", "web-prod-1", "--minutes", "30", "--what", "go/no-go call")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "logged 30m0s")
	code, _, errOut = invoke(t, data, "effort", "log", "--release", "web-prod-1", "--minutes", "12.5", "--what", "chat thread", "--actor", "bob")
	require.Equal(t, 0, code, errOut)

	code, out, errOut = invoke(t, data, "journal", "verify")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 2, strings.Count(out, "ok "), out)

	code, out, _ = invoke(t, data, "--json", "journal", "list")
	require.Equal(t, 0, code)
	var sessions []struct{ ID, Actor, Command string }
	require.NoError(t, json.Unmarshal([]byte(out), &sessions))
	require.Len(t, sessions, 2)
	require.Equal(t, "bob", sessions[1].Actor)
	require.Equal(t, "effort log", sessions[0].Command)
}

func TestJournalVerifyNamesTheTamperedEntry(t *testing.T) {
	t.Parallel()
	tamper := map[string]func(b []byte) []byte{
		"one byte edited": func(b []byte) []byte {
			i := bytes.Index(b, []byte("go/no-go"))
			b[i+3] = 'N'
			return b
		},
		"line deleted": func(b []byte) []byte {
			lines := bytes.SplitAfter(b, []byte("\n"))
			return bytes.Join(append(lines[:1:1], lines[2:]...), nil)
		},
		"truncated": func(b []byte) []byte { return b[:len(b)-20] },
		"last line removed": func(b []byte) []byte {
			lines := bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
			return bytes.Join(lines[:len(lines)-1], nil)
		},
	}
	for name, f := range tamper {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := t.TempDir()
			seedRelease(t, filepath.Join(data, "relcap", "ledger.db"), "r1", "prod")
			code, _, errOut := invoke(t, data, "effort", "log", "--release", "r1", "--minutes", "30", "--what", "go/no-go call")
			require.Equal(t, 0, code, errOut)
			files, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*", "journal.jsonl"))
			require.NoError(t, err)
			require.Len(t, files, 1)
			b, err := os.ReadFile(files[0])
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(files[0], f(b), 0o600))

			code, out, _ := invoke(t, data, "journal", "verify")
			require.Equal(t, exitBlocked, code, out)
			require.Contains(t, out, "TAMPERED")
			require.Regexp(t, `entry \d`, out)
		})
	}
}

func TestEffortLogOnAReadOnlyLedgerFailsClearlyAndLosesNothing(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	ledger := filepath.Join(data, "team", "ledger.db")
	seedRelease(t, ledger, "r1", "prod")
	code, _, errOut := invoke(t, data, "--ledger", ledger, "effort", "log", "--release", "r1", "--minutes", "30", "--what", "standup")
	require.Equal(t, 0, code, errOut)

	// Make the ledger unwritable in a way that holds even for root: the
	// path's directory is replaced by a file.
	blocked := filepath.Join(data, "blocked")
	require.NoError(t, os.WriteFile(blocked, nil, 0o600))
	code, _, errOut = invoke(t, data, "--ledger", filepath.Join(blocked, "ledger.db"), "effort", "log", "--release", "r1", "--minutes", "5", "--what", "chat")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "blocked/ledger.db")
	require.Contains(t, errOut, "--ledger PATH")
	require.NotContains(t, errOut, "goroutine", "no stack trace")

	code, out, errOut := invoke(t, data, "--ledger", ledger, "journal", "verify")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "ok ")
}

func TestEffortLogRejectsBadInputWithUsageExit(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"effort", "log", "--release", "r1", "--minutes", "-5", "--what", "x"},
		{"effort", "log", "--release", "r1", "--minutes", "ten", "--what", "x"},
		{"effort", "log", "--release", "r1", "--minutes", "5"},
		{"effort", "log", "--release", "r1", "--minutes", "5", "--what", "   "},
	} {
		code, _, errOut := invoke(t, t.TempDir(), args...)
		require.Equal(t, exitUsage, code, "%v: %s", args, errOut)
		require.NotEmpty(t, errOut)
	}
}

func TestPlainRelcapWithoutATerminalPrintsHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := invoke(t, t.TempDir())
	require.Equal(t, 0, code)
	require.Contains(t, out, "Available Commands")
	code, _, errOut := invoke(t, t.TempDir(), "relase")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `did you mean "release"`)
}
