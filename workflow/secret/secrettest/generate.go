// Package secrettest is relcap's standing attack on its own promise, "no
// secret anywhere, in any encoding": a generator of sensitive values of
// every awkward shape (multi-line, short, URL-unsafe, unicode, numbers,
// random ones from a printed seed), every encoding each value may travel
// in (Forms), and a Scanner that reads bytes, files, directories and git
// objects and reports each place a form was found: where, at which offset,
// which secret and which encoding.
//
// The scanner is honest about its limits: a value of one or two characters
// (or true/false) cannot be told from ordinary text, so it is listed as
// excluded with why (Scanner.Excluded), never silently dropped, and forms
// of fewer than MinSubstring bytes are matched only as a whole token, not
// inside a longer word or number.
package secrettest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// Kind is the shape of a generated secret.
type Kind string

// The shapes the promise must hold for.
const (
	MultiLine     Kind = "multi-line"      // a PEM-like key, lines ending in \n
	MultiLineCRLF Kind = "multi-line crlf" // the same with \r\n line ends
	Short         Kind = "short"           // four digits: a PIN
	URLUnsafe     Kind = "url-unsafe"      // every character a URL must or may escape
	Unicode       Kind = "unicode"         // non-ASCII, a combining mark, an emoji
	Number        Kind = "number"          // a sensitive number, rendered by Terraform/JSON
	Random        Kind = "random"          // printable ASCII and a little unicode, from the seed
	Token         Kind = "token"           // a bearer token: printable ASCII a header may carry
	Trivial       Kind = "trivial"         // 1–2 characters or a boolean: cannot be scanned for
)

// Secret is one sensitive value and what it is for.
type Secret struct {
	// Name says what the value is (a Terraform variable's name, "argocd
	// token"); it is what a finding names, never the value.
	Name  string
	Kind  Kind
	Value string // as given to relcap: a number in its decimal text
}

// SeedEnv names the environment variable that replays a failed run's seed.
const SeedEnv = "RELCAP_LEAK_SEED"

// Generator makes secrets from one seed; the same seed makes the same
// secrets, so a failure that prints its seed reproduces.
type Generator struct {
	Seed uint64
	rng  *rand.Rand
}

// NewGenerator returns a generator seeded from $RELCAP_LEAK_SEED, or from
// the clock when it is unset.
func NewGenerator() (*Generator, error) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(SeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("$%s=%q is not a seed (an unsigned decimal integer)", SeedEnv, s)
		}
		seed = v
	}
	return Seeded(seed), nil
}

// Seeded returns the generator of seed.
func Seeded(seed uint64) *Generator {
	return &Generator{Seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x5eed5eed5eed5eed))}
}

// Replay is the line a failure prints so the run can be repeated.
func (g *Generator) Replay() string {
	return fmt.Sprintf("secrets generated with seed %d; replay with %s=%d", g.Seed, SeedEnv, g.Seed)
}

const (
	alnum   = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b64     = alnum + "+/"
	printab = alnum + "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ "
)

// unicodeRunes are non-ASCII runes of several widths for random values.
var unicodeRunes = []rune("äöüßéçñøåЖжλΩ日本語한국🔑🦀€£")

func (g *Generator) pick(alphabet string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(alphabet[g.rng.IntN(len(alphabet))])
	}
	return b.String()
}

// Sensitive returns one secret of each shape the promise covers, named
// as Terraform variables (lower case, underscores), in a fixed order.
func (g *Generator) Sensitive() []Secret {
	pem := func(eol string) string {
		var b strings.Builder
		b.WriteString("-----BEGIN RELCAP TEST KEY-----" + eol)
		for range 4 {
			b.WriteString(g.pick(b64, 64) + eol)
		}
		b.WriteString(g.pick(b64, 20) + "==" + eol)
		b.WriteString("-----END RELCAP TEST KEY-----" + eol)
		return b.String()
	}
	return []Secret{
		{Name: "pem_key", Kind: MultiLine, Value: pem("\n")},
		{Name: "pem_key_crlf", Kind: MultiLineCRLF, Value: pem("\r\n")},
		{Name: "short_pin", Kind: Short, Value: g.ShortPIN()},
		{Name: "url_unsafe", Kind: URLUnsafe, Value: g.URLUnsafe()},
		{Name: "unicode_pw", Kind: Unicode, Value: "Pässwörd-" + g.pick(alnum, 5) + "-cafe\u0301-🔑-日本"},
		{Name: "unseal_pin", Kind: Number, Value: strconv.Itoa(1_000_000 + g.rng.IntN(8_999_999))},
		{Name: "random_one", Kind: Random, Value: g.RandomValue(12 + g.rng.IntN(20))},
		{Name: "random_two", Kind: Random, Value: g.RandomValue(8 + g.rng.IntN(20))},
	}
}

// ShortPIN is four digits that ordinary output does not hold: not a year
// (1900–2099 are in every date), not starting with 0 (file modes), not a
// round number, a power of two or a well-known port, digits all distinct.
func (g *Generator) ShortPIN() string {
	common := map[int]bool{1024: true, 2048: true, 4096: true, 8192: true, 3306: true, 5432: true, 6379: true, 6443: true, 8080: true, 8443: true, 9090: true}
	for {
		n := 1000 + g.rng.IntN(9000)
		s := strconv.Itoa(n)
		distinct := strings.Count(s, s[:1]) == 1 && strings.Count(s, s[1:2]) == 1 && s[2] != s[3]
		if (n < 1900 || n > 2099) && n%10 != 0 && !common[n] && distinct {
			return s
		}
	}
}

// URLUnsafe is a value holding every character a URL must escape in a
// password (@ / : ? #) and those it may leave or mangle (% & = + space $ ;).
func (g *Generator) URLUnsafe() string {
	return "u@/:?#%&=+ $;" + g.pick(alnum, 8)
}

// RandomValue is n characters of printable ASCII with a unicode rune or two.
func (g *Generator) RandomValue(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if g.rng.IntN(8) == 0 {
			b.WriteRune(unicodeRunes[g.rng.IntN(len(unicodeRunes))])
			continue
		}
		b.WriteByte(printab[g.rng.IntN(len(printab))])
	}
	return b.String()
}

// Token is a bearer token of n characters a header may carry (no space,
// no control character).
func (g *Generator) Token(name string, n int) Secret {
	return Secret{Name: name, Kind: Token, Value: g.pick(alnum+"-._~+/=", n)}
}

// Password is a credential holding every URL-unsafe character (see
// URLUnsafe) and n random letters and digits.
func (g *Generator) Password(name string, n int) Secret {
	return Secret{Name: name, Kind: URLUnsafe, Value: "p@/:?#%&=+ $;" + g.pick(alnum, n)}
}
