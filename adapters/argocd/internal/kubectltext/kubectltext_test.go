package kubectltext_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/kubectl/pkg/util/i18n"

	"github.com/relcap/relcap/adapters/argocd/internal/kubectltext"

	// The graph relcap links through adapters/argocd: argo-cd's client and
	// types reach kubectl's command packages (apiresources first among
	// them), which call i18n.T in package-level variables; their inits
	// must find the no-op loader in place. The test is external so that
	// kubectltext itself imports none of them, as in relcap.
	_ "github.com/argoproj/argo-cd/v2/pkg/apiclient"
	_ "github.com/argoproj/argo-cd/v2/pkg/apiclient/application"
	_ "k8s.io/kubectl/pkg/cmd/apiresources"
)

func TestTranslationsAreNotLoaded(t *testing.T) {
	require.True(t, kubectltext.Skipped(), "kubectl's package-level texts were translated through the no-op loader")
	require.Error(t, i18n.SetLoadTranslationsFunc(func() error { return nil }), "nothing loads the catalogue later")
	require.Equal(t, "List the API resources", i18n.T("List the API resources"), "texts stay in English")
}
