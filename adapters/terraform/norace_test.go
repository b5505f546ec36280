//go:build !race

package terraform

const raceEnabled = false
