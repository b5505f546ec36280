package asciicast_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/asciicast"
)

// TestWhatIsRecordedPlaysBack: the writer's recording, split UTF-8 and a
// resize included, plays back the bytes the terminal got.
func TestWhatIsRecordedPlaysBack(t *testing.T) {
	t.Parallel()
	var cast, screen bytes.Buffer
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(10 * time.Millisecond); return now }
	w := asciicast.NewWriter(&cast, 80, 24, clock)
	term := asciicast.Tee(&screen, w)
	check := "✓ converged"
	_, err := term.Write([]byte("\x1b[2J" + check[:1]))
	require.NoError(t, err)
	_, err = term.Write([]byte(check[1:] + "\n"))
	require.NoError(t, err)
	w.Resize(100, 30)
	require.NoError(t, w.Close())

	lines := strings.Split(strings.TrimSpace(cast.String()), "\n")
	var header struct {
		Version, Width, Height int
		Title                  string
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &header))
	require.Equal(t, 2, header.Version)
	require.Equal(t, 80, header.Width)
	require.Equal(t, asciicast.Title, header.Title)
	require.Contains(t, lines[len(lines)-1], `"r","100x30"`)

	var played bytes.Buffer
	require.NoError(t, asciicast.Play(t.Context(), "screen.cast", &cast, &played, 0))
	require.Equal(t, screen.String(), played.String())
}

func TestPlayNamesTheLineThatIsNotARecording(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := asciicast.Play(t.Context(), "screen.cast", strings.NewReader(`{"version":2}`+"\n"+`[0.1,"o"]`+"\n"), &out, 0)
	require.ErrorIs(t, err, asciicast.ErrNotACast)
	require.ErrorContains(t, err, "screen.cast line 2")
	err = asciicast.Play(t.Context(), "x.cast", strings.NewReader(""), &out, 0)
	require.ErrorContains(t, err, "x.cast is empty")
}
