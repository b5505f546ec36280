package screen_test

import (
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
)

func TestScrollKeysMoveTheOffsetAndPageOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	km := keys.Default().List
	press := func(code rune, text string) tea.KeyPressMsg { return tea.KeyPressMsg{Code: code, Text: text} }
	j, k, g := press('j', "j"), press('k', "k"), press('g', "g")
	pgdn := tea.KeyPressMsg{Code: tea.KeyPgDown}
	x := press('x', "x")

	require.Equal(t, 4, screen.ScrollKeys(j, km, 3, 0))
	require.Equal(t, 2, screen.ScrollKeys(k, km, 3, 0))
	require.Equal(t, 0, screen.ScrollKeys(k, km, 0, 0), "never above the top")
	require.Equal(t, 0, screen.ScrollKeys(g, km, 7, 0))
	require.Equal(t, 3, screen.ScrollKeys(pgdn, km, 3, 0), "no paging without a page size")
	require.Equal(t, 13, screen.ScrollKeys(pgdn, km, 3, 10))
	require.Equal(t, 3, screen.ScrollKeys(x, km, 3, 10), "other keys are the screen's")
}
