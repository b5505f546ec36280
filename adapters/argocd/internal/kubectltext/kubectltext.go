// Package kubectltext keeps kubectl's help-text translations from loading
// in relcap. argo-cd's types import gitops-engine, which links kubectl's
// command packages, and those translate their help texts in package-level
// variables: the first one to initialise unpacks and parses kubectl's whole
// gettext catalogue (about 17 ms of every relcap command's start-up, the
// largest single init in the binary). relcap never shows kubectl's help,
// so the catalogue is not loaded and the texts stay in English.
//
// It works through kubectl's own hook, i18n.SetLoadTranslationsFunc, which
// must run before any package calls i18n.T. Go initialises the first
// package, in import-path order, whose imports are initialised; this one
// imports only i18n, and its path (github.com/relcap/...) sorts before
// every k8s.io/kubectl package that calls i18n.T, so it always goes first.
// TestTranslationsAreNotLoaded holds that true.
package kubectltext

import "k8s.io/kubectl/pkg/util/i18n"

// skipped records that kubectl asked for its catalogue and got nothing.
var skipped bool

func init() {
	// SetLoadTranslationsFunc fails only once translations were loaded,
	// which the import order above rules out; the test would catch it.
	_ = i18n.SetLoadTranslationsFunc(func() error {
		skipped = true
		return nil
	})
}
