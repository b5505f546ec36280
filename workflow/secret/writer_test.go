package secret_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/secret"
)

// TestWriterMasksASecretSplitAcrossWrites: issue 26, attack 3. Every
// split point of a text into two writes, and into three, gives what one
// Scrub of the whole gives.
func TestWriterMasksASecretSplitAcrossWrites(t *testing.T) {
	t.Parallel()
	s := secret.NewSet("token-abcdef", "4711", pemKey)
	texts := []string{
		"auth token-abcdef ok\npin = 4711\n",
		"x4711 4711x token-abcdeg 4711",
		heredoc(pemKey, "    "),
		// A JSON text split across writes is masked as text: it stays
		// valid JSON only when written whole (TestWriterKeepsJSONLinesValid).
		`{"pin":"4711","t":"token-abcdef"}`,
	}
	for _, text := range texts {
		want := s.Scrub(text)
		for i := 0; i <= len(text); i++ {
			for j := i; j <= len(text); j += max(1, len(text)/17) {
				var buf bytes.Buffer
				w := s.Writer(&buf)
				for _, part := range []string{text[:i], text[i:j], text[j:]} {
					n, err := w.Write([]byte(part))
					require.NoError(t, err)
					require.Equal(t, len(part), n)
				}
				require.NoError(t, secret.Flush(w))
				require.Equal(t, want, buf.String(), "split at %d and %d", i, j)
			}
		}
	}
}

// TestWriterHoldsBackOnlyWhatMayBeginASecret: a prompt is shown at once.
func TestWriterHoldsBackOnlyWhatMayBeginASecret(t *testing.T) {
	t.Parallel()
	s := secret.NewSet("token-abcdef")
	var buf bytes.Buffer
	w := s.Writer(&buf)
	_, err := w.Write([]byte("Approve? [y/N] "))
	require.NoError(t, err)
	require.Equal(t, "Approve? [y/N] ", buf.String())
	_, err = w.Write([]byte("token-ab"))
	require.NoError(t, err)
	require.Equal(t, "Approve? [y/N] ", buf.String(), "the beginning of a secret waits")
	_, err = w.Write([]byte("cdef done"))
	require.NoError(t, err)
	require.Equal(t, "Approve? [y/N] (sensitive) done", buf.String())
	_, err = w.Write([]byte(" tok"))
	require.NoError(t, err)
	c, ok := w.(interface{ Close() error })
	require.True(t, ok)
	require.NoError(t, c.Close())
	require.Equal(t, "Approve? [y/N] (sensitive) done tok", buf.String(), "Close flushes")
}

// TestWriterKeepsJSONLinesValid: NDJSON written line by line stays JSON.
func TestWriterKeepsJSONLinesValid(t *testing.T) {
	t.Parallel()
	s := secret.NewSet("4711")
	var buf bytes.Buffer
	w := s.Writer(&buf)
	_, err := w.Write([]byte(`{"pin":4711}`))
	require.NoError(t, err)
	require.NoError(t, secret.Flush(w))
	require.True(t, json.Valid(buf.Bytes()), buf.String())
	require.False(t, strings.Contains(buf.String(), "4711"))
}
