package kubectltext_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/kubectl/pkg/util/i18n"

	"github.com/relcap/relcap/adapters/argocd/internal/kubectltext"

	// apiresources calls i18n.T in its package-level variables, as it does
	// in relcap (through argo-cd's types): its init must find the no-op
	// loader in place. The test is external so that kubectltext itself
	// does not import it, as in relcap.
	_ "k8s.io/kubectl/pkg/cmd/apiresources"
)

func TestTranslationsAreNotLoaded(t *testing.T) {
	require.True(t, kubectltext.Skipped(), "kubectl's package-level texts were translated through the no-op loader")
	require.Error(t, i18n.SetLoadTranslationsFunc(func() error { return nil }), "nothing loads the catalogue later")
	require.Equal(t, "List the API resources", i18n.T("List the API resources"), "texts stay in English")
}
