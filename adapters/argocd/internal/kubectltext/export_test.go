package kubectltext

// Skipped reports, to the external test, whether kubectl asked for its
// catalogue and got the no-op loader.
func Skipped() bool { return skipped }
