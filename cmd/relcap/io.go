package main

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IO is where commands read and write; tests use bytes.Buffers
// (cli/cli's iostreams pattern), so no command touches os.Stdout directly.
type IO struct {
	In    io.Reader
	Out   io.Writer
	Err   io.Writer
	IsTTY bool
	// StdinTTY: a person types at this command (stdin is a terminal),
	// whatever its output goes to; its time counts as their effort.
	StdinTTY bool
	Env      []string
}

func systemIO() *IO {
	tty := term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd()))
	return &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, IsTTY: tty, StdinTTY: term.IsTerminal(int(os.Stdin.Fd())), Env: os.Environ()}
}

// testIO returns an IO over buffers with the given environment.
func testIO(env ...string) (*IO, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &IO{In: &bytes.Buffer{}, Out: &out, Err: &errb, Env: env}, &out, &errb
}

// getenv reads the injected environment, last value wins.
func (s *IO) getenv(key string) string {
	v := ""
	for _, kv := range s.Env {
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			v = kv[len(key)+1:]
		}
	}
	return v
}
