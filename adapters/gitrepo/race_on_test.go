//go:build race

package gitrepo

// raceEnabled: the race detector slows go-git's decoding tenfold, so
// timings are not asserted under it.
const raceEnabled = true
