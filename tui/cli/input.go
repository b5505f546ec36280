package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/relcap/relcap/workflow/input"
)

// checkTypedInput checks every identifier and free text the command line
// gave cmd, flags and arguments (input.CheckCommandLine): the first bad
// one is a usage error (exit 2) that quotes it escaped and cut short.
func checkTypedInput(cmd *cobra.Command, args []string) error {
	var given []input.GivenFlag
	cmd.Flags().Visit(func(f *pflag.Flag) { // the flags given (local and inherited)
		given = append(given, input.GivenFlag{Name: f.Name, Values: flagValues(f)})
	})
	if err := input.CheckCommandLine(cmd.CommandPath(), given, args); err != nil {
		return UsageError{err}
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
