package config

import (
	"fmt"
	"strings"
)

// unknownKey explains an unknown key, suggesting the known key it most
// likely misspells, or listing the known keys when none is close.
func unknownKey(key string, known []string) string {
	if s := suggest(key, known); s != "" {
		return fmt.Sprintf("unknown key %s (did you mean %q?)", quote(key), s)
	}
	return fmt.Sprintf("unknown key %s (known keys: %s)", quote(key), strings.Join(known, ", "))
}

// suggest returns the known key closest to key: the nearest within an edit
// distance of 2, else the one sharing the longest prefix of at least 3
// characters with it ("env" → "environments", "classification" →
// "classify"), else "".
func suggest(key string, known []string) string {
	k := strings.ToLower(key)
	best, bestDist := "", 3
	for _, c := range known {
		if d := editDistance(k, c, bestDist); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best != "" {
		return best
	}
	bestPrefix := 2
	for _, c := range known {
		if n := commonPrefix(k, c); n > bestPrefix {
			best, bestPrefix = c, n
		}
	}
	return best
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// editDistance is the Levenshtein distance between a and b in runes, or
// limit when it is at least limit; the early exit keeps a huge unknown key
// from costing more than its length.
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if abs(len(ra)-len(rb)) >= limit {
		return limit
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], limit)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
