package main

import "github.com/relcap/relcap/tui/cli"

// The exit codes the tests expect, by tui/cli's names (exit.go there).
const (
	exitOK           = cli.ExitOK
	exitError        = cli.ExitError
	exitUsage        = cli.ExitUsage
	exitBlocked      = cli.ExitBlocked
	exitNotConverged = cli.ExitNotConverged
)

var exitCode = cli.ExitCode
