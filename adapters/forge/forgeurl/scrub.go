package forgeurl

import "strings"

// Scrub returns err with every occurrence of the secrets in its text
// replaced by "***", keeping what it wraps for errors.Is and errors.As.
// The forge adapters send tokens in headers only, so no SDK error should
// hold one; this is the second line, for a server or proxy that echoes
// a request back into its answer.
func Scrub(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	clean := text
	for _, s := range secrets {
		if len(s) >= 4 {
			clean = strings.ReplaceAll(clean, s, "***")
		}
	}
	if clean == text {
		return err
	}
	return &scrubbed{text: clean, err: err}
}

type scrubbed struct {
	text string
	err  error
}

func (s *scrubbed) Error() string { return s.text }
func (s *scrubbed) Unwrap() error { return s.err }
