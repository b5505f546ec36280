package signing

import "strings"

// maxSubpattern mirrors OpenSSH's match_pattern_list, which copies each
// pattern of a list into a 1024-byte buffer and treats a longer one as
// matching nothing. Keeping the limit keeps relcap's answer the same as
// `ssh-keygen -Y verify`'s for the same file.
const maxSubpattern = 1023

// matchPattern reports whether s matches pattern, where '*' matches any run
// of bytes (including none) and '?' exactly one byte, as OpenSSH's
// match_pattern does. Unlike OpenSSH's recursive version it backtracks only
// to the last '*', so a hostile people file cannot make matching take
// exponential time.
func matchPattern(s, pattern string) bool {
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(pattern) && (pattern[pi] == '?' || pattern[pi] == s[si]):
			si++
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

// matchList matches s against a comma-separated list of patterns, each
// possibly negated with a leading '!', with OpenSSH's match_pattern_list
// semantics: 1 when a pattern matches and no negated one does, -1 when a
// negated pattern matches (whatever else matches), 0 when none matches.
func matchList(s, list string) int {
	positive := 0
	for sub := range strings.SplitSeq(list, ",") {
		negated := strings.HasPrefix(sub, "!")
		if negated {
			sub = sub[1:]
		}
		if len(sub) > maxSubpattern {
			return 0
		}
		if matchPattern(s, sub) {
			if negated {
				return -1
			}
			positive = 1
		}
	}
	return positive
}

// isLiteral reports whether a pattern of a list names one principal: no
// negation and no wildcard.
func isLiteral(sub string) bool {
	return sub != "" && !strings.HasPrefix(sub, "!") && !strings.ContainsAny(sub, "*?")
}
