package main

import (
	"os"

	"golang.org/x/term"

	"github.com/relcap/relcap/tui/cli"
)

// IO is where commands read and write (tui/cli.IO).
type IO = cli.IO

func systemIO() *IO {
	tty := term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd()))
	return &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, IsTTY: tty, StdinTTY: term.IsTerminal(int(os.Stdin.Fd())), Env: os.Environ()}
}
