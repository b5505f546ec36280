package secret

import "strings"

// What a relcap process treats as secret before it prints anything: the
// credentials its command line and environment carry, and those its
// project names. The wiring calls these; nothing else decides it.

// LearnCommandLine makes secret the credentials a command line may carry:
// a URL among args (a --flag=URL included) or in ledgerSetting (the value
// of the ledger's environment variable) may hold a password, written
// escaped or not. It is a secret before anything parses the arguments,
// prints or journals the command line.
func (s *Set) LearnCommandLine(ledgerSetting string, args []string) {
	for _, v := range append([]string{ledgerSetting}, args...) {
		if _, value, ok := strings.Cut(v, "="); ok && strings.HasPrefix(v, "-") {
			v = value // --ledger=URL
		}
		s.Add(URLCredentials(v)...)
	}
}

// Credentials are where a project keeps credentials: the environment
// variables that hold tokens or other secret values, and the URLs that may
// carry a password.
type Credentials struct {
	Env  []string
	URLs []string
}

// LearnCredentials makes secret the value of each of c's variables (as
// getenv reads it, and without surrounding blanks, as a token is used) and
// the credentials in each of c's URLs.
func (s *Set) LearnCredentials(c Credentials, getenv func(string) string) {
	for _, u := range c.URLs {
		s.Add(URLCredentials(u)...)
	}
	for _, n := range c.Env {
		v := getenv(n)
		s.Add(v, strings.TrimSpace(v))
	}
}

// ScrubError returns err with every form of the Set's secrets in its text
// replaced by Mask, keeping what it wraps for errors.Is and errors.As; err
// itself when its text holds none. Adapters that send a token in headers
// only use it as the second line, for a server or proxy that echoes a
// request back into its answer.
func (s *Set) ScrubError(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	clean := s.Scrub(text)
	if clean == text {
		return err
	}
	return &scrubbedError{text: clean, err: err}
}

type scrubbedError struct {
	text string
	err  error
}

func (e *scrubbedError) Error() string { return e.text }
func (e *scrubbedError) Unwrap() error { return e.err }
