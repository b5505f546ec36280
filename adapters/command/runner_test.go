package command

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tooloutput"
)

func TestRunCommandWritesToToolOutputAndNamesTheFailure(t *testing.T) {
	var out bytes.Buffer
	ctx := tooloutput.With(t.Context(), &out)
	require.NoError(t, Runner{}.RunCommand(ctx, []string{"sh", "-c", "echo stopped"}))
	require.Contains(t, out.String(), "stopped")

	err := Runner{}.RunCommand(ctx, []string{"sh", "-c", "echo first; echo the reason; exit 3"})
	require.ErrorContains(t, err, "command sh -c echo first; echo the reason; exit 3 failed")
	require.ErrorContains(t, err, ": the reason")

	require.ErrorIs(t, Runner{}.RunCommand(ctx, nil), fault.ErrUsage)
}
