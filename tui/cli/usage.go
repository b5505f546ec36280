package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/relcap/relcap/workflow/input"
)

// annotationReadOnly marks a command that only reads the ledger: it never
// creates one, so a ledger path that does not exist is a usage error
// naming it (Factory.SetReadOnly).
const annotationReadOnly = "relcap/read-only"

// readOnlyCommand marks cmd as annotationReadOnly and returns it.
func readOnlyCommand(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationReadOnly] = "true"
	return cmd
}

// isReadOnly reports whether cmd or a command above it is marked
// annotationReadOnly.
func isReadOnly(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations[annotationReadOnly] != "" {
			return true
		}
	}
	return false
}

// unknownCommand is the usage error for a word that names no subcommand
// of cmd, with cobra's closest suggestion.
func unknownCommand(cmd *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %s", input.QuoteInput(word))
	if s := cmd.SuggestionsFor(word); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return UsageError{fmt.Errorf("%s; see %s --help", msg, cmd.CommandPath())}
}

// flagError makes a flag parsing error a one-line usage error (exit 2).
// A misspelt command followed by flags (relcap plna --env dev) reaches
// cobra as the root with an unknown flag: the unknown command is the
// mistake to name. A number or duration that does not parse is named
// with the flag, the value and an example (workflow/input).
func flagError(cmd *cobra.Command, args []string, err error) error {
	if !cmd.HasParent() {
		if word := firstWord(cmd, args); word != "" && !isSubcommand(cmd, word) {
			return unknownCommand(cmd, word)
		}
	}
	var invalid *pflag.InvalidValueError
	if errors.As(err, &invalid) && input.IsNumberFlag(invalid.GetFlag().Name) {
		return UsageError{input.BadNumber(invalid.GetFlag().Name, invalid.GetValue())}
	}
	return UsageError{err}
}

// firstWord is the first argument of args that is neither a flag of cmd
// nor a flag's value: the command a person meant to run.
func firstWord(cmd *cobra.Command, args []string) string {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case strings.HasPrefix(arg, "--"):
			if !strings.Contains(arg, "=") && takesValue(cmd.Flags().Lookup(arg[2:])) {
				i++
			}
		case strings.HasPrefix(arg, "-") && len(arg) > 1:
			if len(arg) == 2 && takesValue(cmd.Flags().ShorthandLookup(arg[1:])) {
				i++
			}
		default:
			return arg
		}
	}
	return ""
}

// takesValue reports whether f is a flag that reads the next argument.
func takesValue(f *pflag.Flag) bool {
	return f != nil && f.NoOptDefVal == ""
}

// isSubcommand reports whether word names one of cmd's commands (or an
// alias, or help).
func isSubcommand(cmd *cobra.Command, word string) bool {
	if word == "help" {
		return true
	}
	for _, c := range cmd.Commands() {
		if c.Name() == word || c.HasAlias(word) {
			return true
		}
	}
	return false
}
