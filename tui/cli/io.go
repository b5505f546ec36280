package cli

import "io"

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

// Getenv reads the injected environment, last value wins.
func (s *IO) Getenv(key string) string {
	v := ""
	for _, kv := range s.Env {
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			v = kv[len(key)+1:]
		}
	}
	return v
}
