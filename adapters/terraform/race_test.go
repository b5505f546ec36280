//go:build race

package terraform

// raceEnabled: the race detector multiplies time and memory, so budgets are
// measured and logged but not enforced.
const raceEnabled = true
