// Package input checks what a person types on relcap's command line (identifiers
// and free text) before anything is opened or recorded, and makes text safe
// for a terminal. A refusal wraps workflow.fault.ErrUsage (exit 2).
package input

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/relcap/relcap/workflow/fault"
)

// What a person types on relcap's command line is checked here, once,
// before anything is opened or recorded: an identifier against the
// grammar of the IDs relcap makes (so no ID that no release, plan or
// session can have is stored, and no line can be forged into relcap's
// output with a newline or a terminal escape), free text against control
// characters and a length. A refused value is named only quoted by
// QuoteInput: escaped and cut short.

// IDKind is a kind of identifier a person types.
type IDKind string

// The identifiers relcap's commands take.
const (
	// IDRelease: a release's ID (NewReleaseID: app-env-yyyymmdd-hex,
	// with suffixes such as -bg), or a rehearsal's (rh-…).
	IDRelease IDKind = "release ID"
	// IDRehearsal: a rehearsal's ID (NewRehearsalID).
	IDRehearsal IDKind = "rehearsal ID"
	// IDPlan: a plan's fingerprint, 64 lowercase hex digits.
	IDPlan IDKind = "plan fingerprint"
	// IDSession: a journal session's ID (e.g. 20261130T135527Z-3f9a1c).
	IDSession IDKind = "session ID"
	// IDEnv: an environment's name as relcap.yaml must spell it.
	IDEnv IDKind = "environment name"
	// IDDrill: a rehearsal drill's name.
	IDDrill IDKind = "drill name"
	// IDPrincipal: a person (an actor, an approver, a people file's
	// principal).
	IDPrincipal IDKind = "principal"
	// IDLock: a Terraform state lock's ID.
	IDLock IDKind = "lock ID"
)

// MaxIDLen bounds every identifier: far above any relcap makes.
const MaxIDLen = 128

// MaxFreeTextLen bounds typed free text (a reason, a comment).
const MaxFreeTextLen = 2000

// idRule is an identifier's grammar and what to say when a value breaks it.
type idRule struct {
	re   *regexp.Regexp
	want string
}

// The grammars are compiled on first use, not at every start of relcap
// (docs/PERFORMANCE.md, "Start-up").
var (
	// envNamePattern is an environment's name (relcap.yaml checks its
	// environments against it too).
	envNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`) })
	idGrammar      = sync.OnceValue(func() map[IDKind]idRule {
		return map[IDKind]idRule{
			IDRelease:   {regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`), "only letters, digits, '.', '_' and '-', as relcap prints it (e.g. web-prod-20261130-1a2b3c)"},
			IDRehearsal: {regexp.MustCompile(`^rh-[A-Za-z0-9][A-Za-z0-9._-]*$`), "rh- then only letters, digits, '.', '_' and '-', as relcap rehearse prints it"},
			IDPlan:      {regexp.MustCompile(`^[0-9a-f]{64}$`), "64 lowercase hexadecimal digits, as relcap plan prints it"},
			IDSession:   {regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`), "only letters, digits, '.', '_' and '-', as relcap journal list prints it (e.g. 20261130T135527Z-3f9a1c)"},
			IDEnv:       {envNamePattern(), "only lowercase letters, digits and '-', as relcap.yaml names it"},
			IDDrill:     {regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`), "only lowercase letters, digits and '-'"},
			IDPrincipal: {regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._@+-]*$`), "only letters, digits, '.', '_', '@', '+' and '-'"},
			IDLock:      {regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`), "only letters, digits, '.', '_', ':' and '-', as Terraform prints it"},
		}
	})
)

// MaxAppNameLen bounds a project's app name, so its release IDs stay
// within MaxIDLen.
const MaxAppNameLen = 64

// ValidAppName reports whether app (relcap.yaml's app:, which starts every
// release ID) makes release IDs that IDRelease's grammar accepts.
func ValidAppName(app string) bool {
	return len(app) <= MaxAppNameLen && !strings.Contains(app, "..") && idGrammar()[IDRelease].re.MatchString(app)
}

// ValidEnvName reports whether name is usable as an environment's name.
func ValidEnvName(name string) bool {
	return envNamePattern().MatchString(name) && len(name) <= MaxEnvNameLen
}

// MaxEnvNameLen bounds an environment's name, so its release IDs stay
// within MaxIDLen.
const MaxEnvNameLen = 40

// CheckID checks value, given as what (a flag such as "--release", or an
// argument's name), against the grammar of kind. The error wraps
// fault.ErrUsage, is one line and quotes value only through QuoteInput.
func CheckID(kind IDKind, what, value string) error {
	g, ok := idGrammar()[kind]
	switch {
	case !ok:
		return fmt.Errorf("%w: %s: unknown kind of identifier %q", fault.ErrUsage, what, string(kind))
	case value == "":
		return fmt.Errorf("%w: %s is empty: give a %s", fault.ErrUsage, what, kind)
	case len(value) > MaxIDLen:
		return fmt.Errorf("%w: %s %s is not a %s: one is at most %d bytes", fault.ErrUsage, what, QuoteInput(value), kind, MaxIDLen)
	case strings.Contains(value, ".."):
		return fmt.Errorf("%w: %s %s is not a %s: one never has '..'", fault.ErrUsage, what, QuoteInput(value), kind)
	case !g.re.MatchString(value):
		return fmt.Errorf("%w: %s %s is not a %s: one has %s", fault.ErrUsage, what, QuoteInput(value), kind, g.want)
	}
	return nil
}

// CheckFreeText checks typed free text (a reason, a comment, an image
// reference) given as what: valid UTF-8, no control character (a newline
// or an escape would forge lines or drive the terminal of whoever reads
// the journal), at most MaxFreeTextLen bytes.
func CheckFreeText(what, value string) error {
	switch {
	case len(value) > MaxFreeTextLen:
		return fmt.Errorf("%w: %s %s is too long: at most %d bytes", fault.ErrUsage, what, QuoteInput(value), MaxFreeTextLen)
	case !utf8.ValidString(value):
		return fmt.Errorf("%w: %s %s is not valid UTF-8", fault.ErrUsage, what, QuoteInput(value))
	case strings.IndexFunc(value, unsafeRune) >= 0:
		return fmt.Errorf("%w: %s %s has a control character (a newline, a tab or a terminal escape): write it on one line of plain text", fault.ErrUsage, what, QuoteInput(value))
	}
	return nil
}

// quoteLen is how many bytes of a refused value QuoteInput shows.
const quoteLen = 48

// QuoteInput is value as a message may show it: quoted with Go's escapes
// (control characters, escapes, newlines and invalid UTF-8 made visible,
// everything outside printable ASCII escaped) and cut to its first
// quoteLen bytes, saying how long it was.
func QuoteInput(value string) string {
	if len(value) <= quoteLen {
		return strconv.QuoteToASCII(value)
	}
	cut := quoteLen
	for cut > 0 && !utf8.RuneStart(value[cut]) {
		cut--
	}
	return strconv.QuoteToASCII(value[:cut]) + fmt.Sprintf("… (%d bytes)", len(value))
}

// unsafeRune is a rune a terminal may act on rather than show: C0 and C1
// controls, DEL, and the bidirectional overrides and isolates that make
// text read otherwise than it is.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f:
		return true
	}
	return !unicode.IsPrint(r) && !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r)
}

// TerminalSafe is s with every rune a terminal could act on (see
// unsafeRune: escapes, other controls, bidi overrides, invalid UTF-8)
// replaced by its visible escape (\x1b, \u202e); newlines and tabs are
// kept, so multi-line text stays multi-line. Text that came from a person,
// a file or a tool goes through it before it reaches a terminal.
func TerminalSafe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether TerminalSafe would change s.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != '\n' && r != '\t' && (r == utf8.RuneError && size <= 1 || unsafeRune(r)) {
			return true
		}
		i += size
	}
	return false
}
