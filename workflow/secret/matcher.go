package secret

import (
	"slices"
	"strings"
)

// pattern is one form of a secret and what replaces it. A token pattern
// (a short secret's form) matches only as a whole token: where its first
// or last byte is a word byte, the byte beyond it must not be one.
type pattern struct {
	old, new string
	token    bool
}

// matcher finds many patterns in text in one pass, leftmost and, at one
// position, longest first. A plan of ten thousand resources teaches the Set
// tens of thousands of secrets, each in a dozen forms; the review checks
// every attribute against all of them, so this is the hot path of masking.
//
// Patterns of four bytes or more are filed under their first four bytes,
// and a bitmap of those prefixes' hashes lets the scan skip, with one load
// and a bit test, the positions where no pattern can start: almost all of
// them. The few three-byte patterns (short secrets, matched as tokens) have
// an index and a bitmap of their own, consulted only when there are any.
// (strings.Replacer, which does the same job with a trie walk at every
// position, was eight times slower here; an Aho-Corasick automaton took
// over a second to build for 200,000 patterns.)
type matcher struct {
	bits  []uint64
	shift uint32               // 32 minus the bitmap's size in bits, as a power of two
	cands map[uint32][]pattern // sorted

	three map[uint32][]pattern // three-byte patterns by their bytes
	bits3 []uint64             // 4 Ki bits over three's keys

	// heads is a bitmap of the first one, two and three bytes of every
	// pattern (hashed; a false positive only holds a writer's last bytes
	// back a little longer), so a streaming writer can tell whether the
	// end of what it holds could begin a pattern.
	heads  []uint64
	maxLen int
}

const headsLog = 16

func headSlot(k uint32) uint32 { return (k * 2654435761) >> (32 - headsLog) }

// maxMatcherBits bounds the prefix bitmap: 4 Mi bits (512 KiB) keep false
// positives under 5 % even with 200,000 distinct prefixes. Smaller sets get
// 16 bits a pattern, at least 4 Ki bits.
const maxMatcherBits = 22

const bits3Log = 12

func newMatcher(patterns []pattern) *matcher {
	logBits := uint32(12)
	for logBits < maxMatcherBits && 1<<logBits < 16*len(patterns) {
		logBits++
	}
	m := &matcher{bits: make([]uint64, (1<<logBits)/64), shift: 32 - logBits, cands: map[uint32][]pattern{}, heads: make([]uint64, (1<<headsLog)/64)}
	for _, p := range patterns {
		switch {
		case len(p.old) < 3:
			continue // forms never makes one: it could not be told from text
		case len(p.old) == 3:
			if m.three == nil {
				m.three, m.bits3 = map[uint32][]pattern{}, make([]uint64, (1<<bits3Log)/64)
			}
			k := prefixKey3(p.old)
			h := slot3(k)
			m.bits3[h/64] |= 1 << (h % 64)
			m.three[k] = append(m.three[k], p)
		default:
			k := prefixKey(p.old)
			h := m.slot(k)
			m.bits[h/64] |= 1 << (h % 64)
			m.cands[k] = append(m.cands[k], p)
		}
		for n := 1; n <= 3; n++ {
			h := headSlot(headKey(p.old[:n]))
			m.heads[h/64] |= 1 << (h % 64)
		}
		m.maxLen = max(m.maxLen, len(p.old))
	}
	for k, ps := range m.cands {
		// Sorted, one pattern per text: masked anywhere beats masked as
		// a token (two secrets may share a form).
		slices.SortFunc(ps, func(a, b pattern) int {
			if c := strings.Compare(a.old, b.old); c != 0 {
				return c
			}
			if a.token == b.token {
				return 0
			}
			if !a.token {
				return -1
			}
			return 1
		})
		m.cands[k] = slices.CompactFunc(ps, func(a, b pattern) bool { return a.old == b.old })
	}
	return m
}

func prefixKey(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

func prefixKey3(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16
}

// headKey keys one to three bytes, their count in the top byte.
func headKey(s string) uint32 {
	k := uint32(len(s)) << 24
	for i := range len(s) {
		k |= uint32(s[i]) << (8 * i)
	}
	return k
}

// slot hashes a prefix into the bitmap (Fibonacci hashing).
func (m *matcher) slot(k uint32) uint32 { return (k * 2654435761) >> m.shift }

func slot3(k uint32) uint32 { return (k * 2654435761) >> (32 - bits3Log) }

// isWord reports whether c is part of a word: a letter, a digit, an
// underscore, or a byte of a non-ASCII character.
func isWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c >= 0x80
}

// noByte stands for the edge of the text: nothing before or after it.
const noByte = -1

// bounded reports whether a token pattern p stands whole at text[i:]:
// before is the byte before text (noByte at the start of a stream), after
// the byte after it (noByte at its end).
func bounded(p pattern, text string, i, before, after int) bool {
	if !p.token {
		return true
	}
	if isWord(p.old[0]) {
		prev := before
		if i > 0 {
			prev = int(text[i-1])
		}
		if prev != noByte && isWord(byte(prev)) {
			return false
		}
	}
	if isWord(p.old[len(p.old)-1]) {
		next := after
		if j := i + len(p.old); j < len(text) {
			next = int(text[j])
		}
		if next != noByte && isWord(byte(next)) {
			return false
		}
	}
	return true
}

// at returns the longest pattern starting at text[i:], if any.
func (m *matcher) at(text string, i, before, after int) (pattern, bool) {
	if i+4 <= len(text) {
		k := prefixKey(text[i:])
		h := m.slot(k)
		if m.bits[h/64]&(1<<(h%64)) != 0 {
			if p, ok := longestPrefix(m.cands[k], text, i, before, after); ok {
				return p, true
			}
		}
	}
	if m.three != nil && i+3 <= len(text) {
		k := prefixKey3(text[i:])
		h := slot3(k)
		if m.bits3[h/64]&(1<<(h%64)) != 0 {
			for _, p := range m.three[k] {
				if bounded(p, text, i, before, after) {
					return p, true
				}
			}
		}
	}
	return pattern{}, false
}

// longestPrefix returns the longest pattern of ps (sorted, sharing their
// first four bytes) that text[i:] begins with and that stands whole there.
// The greatest pattern not after the text is the longest that begins it,
// if any does; if it does not, only a pattern beginning their common
// prefix can, and the search narrows to that: a few binary searches
// however many secrets share a prefix ("arn:aws:", a generated
// password's fixed part).
func longestPrefix(ps []pattern, text string, i, before, after int) (pattern, bool) {
	t := text[i:]
	for len(ps) > 0 && len(t) >= 4 {
		j, _ := slices.BinarySearchFunc(ps, t, func(p pattern, t string) int {
			if p.old <= t {
				return -1
			}
			return 1
		})
		if j == 0 {
			return pattern{}, false
		}
		p := ps[j-1]
		ps = ps[:j-1]
		if strings.HasPrefix(t, p.old) {
			if bounded(p, text, i, before, after) {
				return p, true
			}
			t = p.old[:len(p.old)-1] // a shorter one, if any, begins p too
			continue
		}
		t = t[:commonPrefix(p.old, t)]
	}
	return pattern{}, false
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// minPattern is the shortest pattern the matcher holds.
func (m *matcher) minPattern() int {
	if m.three != nil {
		return 3
	}
	return 4
}

func (m *matcher) contains(text string) bool {
	for i := 0; i+m.minPattern() <= len(text); i++ {
		if _, ok := m.at(text, i, noByte, noByte); ok {
			return true
		}
	}
	return false
}

// replace returns text with every match replaced, scanning on after each;
// before and after are the bytes around text in a stream (noByte if none).
func (m *matcher) replace(text string, before, after int) string {
	var b strings.Builder
	last := 0
	for i, minLen := 0, m.minPattern(); i+minLen <= len(text); {
		p, ok := m.at(text, i, before, after)
		if !ok {
			i++
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(text))
		}
		b.WriteString(text[last:i])
		b.WriteString(p.new)
		i += len(p.old)
		last = i
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// undecided returns where the end of text stops being decidable: the start
// of its longest suffix that is a proper prefix of a pattern, or a whole
// token pattern whose end is not known to be a token's end. What precedes
// it can be scrubbed and let go; the rest must wait for more text.
// A match that the scan finds across that point is final (nothing longer
// may begin where it begins): it is let go whole. before is the byte
// before text in its stream.
func (m *matcher) undecided(text string, before int) int {
	cut := len(text)
	for s := max(0, len(text)-m.maxLen); s < len(text); s++ {
		if m.mayBegin(text[s:]) {
			cut = s
			break
		}
	}
	for i, minLen := 0, m.minPattern(); i < cut && i+minLen <= len(text); {
		p, ok := m.at(text, i, before, noByte)
		if !ok {
			i++
			continue
		}
		i += len(p.old)
		cut = max(cut, i)
	}
	return cut
}

// mayBegin reports whether rest, the end of a text, may be the beginning
// of a match that more text would complete or extend. Of three bytes or
// fewer it is so when some pattern begins with them (a pattern of three
// bytes is a token, whose end is undecided).
func (m *matcher) mayBegin(rest string) bool {
	if len(rest) <= 3 {
		h := headSlot(headKey(rest))
		return m.heads[h/64]&(1<<(h%64)) != 0
	}
	k := prefixKey(rest)
	h := m.slot(k)
	if m.bits[h/64]&(1<<(h%64)) == 0 {
		return false
	}
	// The patterns beginning with rest are together in the sorted bucket,
	// from the first not before it.
	ps := m.cands[k]
	j, _ := slices.BinarySearchFunc(ps, rest, func(p pattern, t string) int { return strings.Compare(p.old, t) })
	for ; j < len(ps) && strings.HasPrefix(ps[j].old, rest); j++ {
		if len(ps[j].old) > len(rest) || ps[j].token {
			return true
		}
	}
	return false
}
