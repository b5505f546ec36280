package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/relcap/relcap/workflow/input"
)

// typedIDFlags are the flags that take an identifier, by name, whichever
// command has them: each value is checked against its kind's grammar
// (input.CheckID) before the command opens or records anything.
var typedIDFlags = map[string]input.IDKind{
	"release":  input.IDRelease,
	"plan":     input.IDPlan,
	"env":      input.IDEnv,
	"drill":    input.IDDrill,
	"resume":   input.IDRehearsal,
	"cleanup":  input.IDRehearsal,
	"actor":    input.IDPrincipal,
	"person":   input.IDPrincipal,
	"approver": input.IDPrincipal,
	"lock-id":  input.IDLock,
}

// commandIDFlags are identifier flags whose name means something else in
// other commands (report's --to is a date).
var commandIDFlags = map[string]input.IDKind{
	"relcap rollback --to": input.IDRelease,
}

// freeTextFlags take text that is journaled, signed or shown: checked by
// input.CheckFreeText (one line, no control character, bounded).
var freeTextFlags = map[string]bool{
	"reason": true, "what": true, "comment": true, "i-know": true, "force-unverified": true,
	"image": true, "revision": true, "tz": true, "format": true, "from": true, "to": true,
}

// positionalIDs are the commands whose arguments are identifiers.
var positionalIDs = map[string]input.IDKind{
	"relcap resume":         input.IDRelease,
	"relcap journal show":   input.IDSession,
	"relcap journal verify": input.IDSession,
	"relcap journal replay": input.IDSession,
}

// checkTypedInput checks every identifier and free text the command line
// gave cmd, flags and arguments: the first bad one is a usage error (exit
// 2) that quotes it escaped and cut short.
func checkTypedInput(cmd *cobra.Command, args []string) error {
	var bad error
	check := func(f *pflag.Flag) {
		if bad != nil {
			return
		}
		kind, ok := commandIDFlags[cmd.CommandPath()+" --"+f.Name]
		if !ok {
			kind, ok = typedIDFlags[f.Name]
		}
		if ok {
			for _, v := range flagValues(f) {
				if v == "" {
					continue // empty: the command's default, or its own "needs --x"
				}
				if err := input.CheckID(kind, "--"+f.Name, v); err != nil {
					bad = usageError{err}
					return
				}
			}
		}
		if !ok && freeTextFlags[f.Name] {
			for _, v := range flagValues(f) {
				if err := input.CheckFreeText("--"+f.Name, v); err != nil {
					bad = usageError{err}
					return
				}
			}
		}
	}
	cmd.Flags().Visit(check) // the flags given (local and inherited)
	if bad != nil {
		return bad
	}
	if kind, ok := positionalIDs[cmd.CommandPath()]; ok {
		for _, v := range args {
			if err := input.CheckID(kind, string(kind), v); err != nil {
				return usageError{err}
			}
		}
	}
	return nil
}

// flagValues is what f was given: one value, or each of a list's.
func flagValues(f *pflag.Flag) []string {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	v := f.Value.String()
	if f.Name == "actor" || f.Name == "person" || f.Name == "approver" {
		// A principal around spaces is what the people file means; the
		// commands trim it.
		v = strings.TrimSpace(v)
	}
	return []string{v}
}
