package secret

import (
	"cmp"
	"slices"
	"strings"
)

// matcher finds many patterns in text in one pass, leftmost and, at one
// position, longest first. A plan of ten thousand resources teaches the Set
// tens of thousands of secrets, each in a dozen forms; the review checks
// every attribute against all of them, so this is the hot path of masking.
//
// Every pattern is at least five bytes long (see forms). Each is filed under
// its first four bytes, and a bitmap of those prefixes' hashes lets the scan
// skip, with one load and a bit test, the positions where no pattern can
// start: almost all of them. (strings.Replacer, which does the same job with
// a trie walk at every position, was eight times slower here; an
// Aho-Corasick automaton took over a second to build for 200,000 patterns.)
type matcher struct {
	bits  []uint64
	shift uint32               // 32 minus the bitmap's size in bits, as a power of two
	cands map[uint32][]pattern // longest first
}

// maxMatcherBits bounds the prefix bitmap: 4 Mi bits (512 KiB) keep false
// positives under 5 % even with 200,000 distinct prefixes. Smaller sets get
// 16 bits a pattern, at least 4 Ki bits.
const maxMatcherBits = 22

func newMatcher(patterns map[string]string) *matcher {
	logBits := uint32(12)
	for logBits < maxMatcherBits && 1<<logBits < 16*len(patterns) {
		logBits++
	}
	m := &matcher{bits: make([]uint64, (1<<logBits)/64), shift: 32 - logBits, cands: map[uint32][]pattern{}}
	for old, repl := range patterns {
		if len(old) < 4 {
			continue // forms never makes one; a shorter one could not be filed
		}
		k := prefixKey(old)
		h := m.slot(k)
		m.bits[h/64] |= 1 << (h % 64)
		m.cands[k] = append(m.cands[k], pattern{old, repl})
	}
	for k, ps := range m.cands {
		slices.SortFunc(ps, func(a, b pattern) int {
			return cmp.Or(cmp.Compare(len(b.old), len(a.old)), strings.Compare(a.old, b.old))
		})
		m.cands[k] = ps
	}
	return m
}

func prefixKey(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// slot hashes a prefix into the bitmap (Fibonacci hashing).
func (m *matcher) slot(k uint32) uint32 { return (k * 2654435761) >> m.shift }

// at returns the longest pattern starting at text[i:], if any.
func (m *matcher) at(text string, i int) (pattern, bool) {
	k := prefixKey(text[i:])
	h := m.slot(k)
	if m.bits[h/64]&(1<<(h%64)) == 0 {
		return pattern{}, false
	}
	for _, p := range m.cands[k] {
		if strings.HasPrefix(text[i:], p.old) {
			return p, true
		}
	}
	return pattern{}, false
}

func (m *matcher) contains(text string) bool {
	for i := 0; i+4 <= len(text); i++ {
		if _, ok := m.at(text, i); ok {
			return true
		}
	}
	return false
}

// replace returns text with every match replaced, scanning on after each.
func (m *matcher) replace(text string) string {
	var b strings.Builder
	last := 0
	for i := 0; i+4 <= len(text); {
		p, ok := m.at(text, i)
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
