package signing

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"
)

// People is a parsed people file: which key may sign as which principal,
// for which namespaces and when. It is read-only once parsed, so it is safe
// for concurrent use.
type People struct {
	name    string
	entries []entry
}

// entry is one line of the people file.
type entry struct {
	line       int
	principals string // OpenSSH pattern list, unquoted
	key        ssh.PublicKey
	blob       []byte // key.Marshal(), compared to find a key
	namespaces string // pattern list; empty means every namespace
	after      time.Time
	before     time.Time // zero when the line sets no bound
}

// LoadPeople reads and parses the people file at path. Verifier and Signer
// call it on every use, so an edit to the file takes effect at once.
func LoadPeople(path string) (*People, error) {
	if path == "" {
		return nil, usagef("no people file is configured: name one in relcap.yaml (people: allowed_signers), in git's allowed-signers format")
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usagef("people file %s does not exist: create it in git's allowed-signers format (one line per person: principal, key type, public key) or fix the path", path)
	}
	if err != nil {
		return nil, usagef("cannot read people file %s: %v", path, err)
	}
	return ParseAllowedSigners(path, data)
}

// ParseAllowedSigners parses data, a people file in the allowed-signers
// format of ssh-keygen(1) (the file git's gpg.ssh.allowedSignersFile
// names), read from name. Each line that is not blank or a # comment reads
//
//	principals [options] keytype base64-key [comment]
//
// where principals is a comma-separated list of OpenSSH patterns (* and ?
// wildcards, ! negation), optionally double-quoted, and options are
// namespaces="…", valid-after="…" and valid-before="…", their values in
// double quotes as ssh-keygen requires. Times are YYYYMMDD[HHMM[SS]], in
// UTC with a trailing Z and otherwise in local time, as in OpenSSH.
//
// relcap reads the file strictly: a line ssh-keygen would skip or misread
// is an error here, reported as "name:LINE: what is wrong, and what to do"
// and wrapping fault.ErrUsage. cert-authority lines are refused, since
// relcap does not check certificates yet.
func ParseAllowedSigners(name string, data []byte) (*People, error) {
	return parseAllowedSigners(name, data, time.Local)
}

// parseAllowedSigners is ParseAllowedSigners with local time in loc, so
// tests do not depend on the machine's time zone.
func parseAllowedSigners(name string, data []byte, loc *time.Location) (*People, error) {
	p, problems := parseAll(name, data, loc)
	if len(problems) > 0 {
		return nil, problems[0]
	}
	return p, nil
}

// CheckAllowedSigners parses data, the people file read from name, with
// the parser verification uses, and returns every problem it has, one
// error per line ("name:LINE: what is wrong, and what to do", each
// wrapping fault.ErrUsage), in line order; none when the file is
// valid. relcap validate reports them all at once, so a broken file is
// found before anyone approves with it.
func CheckAllowedSigners(name string, data []byte) []error {
	_, problems := parseAll(name, data, time.Local)
	return problems
}

// parseAll parses every line of data, collecting each line's problem.
func parseAll(name string, data []byte, loc *time.Location) (*People, []error) {
	p := &People{name: name}
	var problems []error
	for i, raw := range bytes.Split(data, []byte("\n")) {
		if err := lineBytesProblem(raw); err != nil {
			problems = append(problems, usagef("%s:%d: %v", name, i+1, err))
			continue
		}
		text := strings.Trim(string(raw), " \t\r")
		if text == "" || text[0] == '#' {
			continue
		}
		e, err := parseLine(text, loc)
		if err != nil {
			problems = append(problems, usagef("%s:%d: %v", name, i+1, err))
			continue
		}
		e.line = i + 1
		p.entries = append(p.entries, e)
	}
	return p, problems
}

// lineBytesProblem refuses bytes no people file line may hold, comments
// included: a NUL (OpenSSH's line reader stops at it, so ssh-keygen and
// relcap would read different files), other control characters (they
// could forge what a terminal shows of a principal), and invalid UTF-8.
func lineBytesProblem(raw []byte) error {
	raw = bytes.TrimSuffix(raw, []byte("\r"))
	for i, b := range raw {
		switch {
		case b == 0:
			return fmt.Errorf("a NUL byte at column %d: the file is binary or damaged; remove it (ssh-keygen stops reading the line there)", i+1)
		case b < 0x20 && b != '\t', b == 0x7f:
			return fmt.Errorf("control character 0x%02x at column %d: remove it (a people file holds principals, options and keys in plain text)", b, i+1)
		}
	}
	if !utf8.Valid(raw) {
		return errors.New("not valid UTF-8: save the file as UTF-8")
	}
	return nil
}

// keyHint is the shape of a line, for error messages.
const keyHint = "write the principals, then optional options, then the key as a .pub file holds it (ssh-ed25519 AAAA…)"

// parseLine parses one non-blank, non-comment line. Its errors are phrases
// the caller prefixes with the file and line.
func parseLine(text string, loc *time.Location) (entry, error) {
	principals, rest, err := splitPrincipals(text)
	if err != nil {
		return entry{}, err
	}
	for sub := range strings.SplitSeq(principals, ",") {
		if strings.TrimPrefix(sub, "!") == "" {
			return entry{}, fmt.Errorf("empty principal in %s: separate principals with single commas", clip(principals))
		}
	}
	// The options syntax is authorized_keys', so x/crypto's parser reads
	// it. It is given one line, so it cannot skip to another.
	key, _, opts, _, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return entry{}, keyError(rest, err)
	}
	if _, ok := key.(*ssh.Certificate); ok {
		return entry{}, errors.New("the key is an SSH certificate: list the person's own public key (the .pub file of their key, not the -cert.pub)")
	}
	e := entry{principals: principals, key: key, blob: key.Marshal()}
	if err := e.setOptions(opts, loc); err != nil {
		return entry{}, err
	}
	return e, nil
}

// splitPrincipals cuts the principals field off the front of a line. A
// quoted field may hold spaces; OpenSSH's strdelim reads it the same way
// (no escapes inside the quotes).
func splitPrincipals(text string) (principals, rest string, err error) {
	if text[0] == '"' {
		end := strings.IndexByte(text[1:], '"')
		if end < 0 {
			return "", "", errors.New("the quoted principals have no closing quote")
		}
		principals, rest = text[1:1+end], text[2+end:]
		if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			return "", "", errors.New("put a space after the closing quote of the principals")
		}
	} else {
		end := strings.IndexAny(text, " \t")
		if end < 0 {
			return "", "", fmt.Errorf("no key after the principals: %s", keyHint)
		}
		principals, rest = text[:end], text[end:]
		if strings.Contains(principals, `"`) {
			return "", "", fmt.Errorf("stray quote in the principals %s: quote the whole field (\"alice,bob\") or none of it", clip(principals))
		}
	}
	rest = strings.TrimLeft(rest, " \t")
	if rest == "" {
		return "", "", fmt.Errorf("no key after the principals: %s", keyHint)
	}
	return principals, rest, nil
}

// keyError explains a line ssh.ParseAuthorizedKey rejected. It does not
// pass on the parser's message, which can quote the line's tokens (the key
// among them). The parser gives up on options with unbalanced quotes
// without saying so, reporting an earlier attempt's error, so those are
// recognised first.
func keyError(rest string, err error) error {
	if (strings.Count(rest, `"`)-strings.Count(rest, `\"`))%2 != 0 {
		return errors.New(`the options' quotes are unbalanced: write each value in double quotes (namespaces="relcap-approval")`)
	}
	var corrupt base64.CorruptInputError
	if errors.As(err, &corrupt) {
		return fmt.Errorf("the key is not valid base64 (at byte %d of it): copy it again from the person's .pub file", int64(corrupt))
	}
	return fmt.Errorf("no valid public key after the principals: %s; check that the key is whole", keyHint)
}

// setOptions interprets the options of a line as ssh-keygen(1)'s ALLOWED
// SIGNERS section defines them. Option names are case-insensitive there,
// and each may be given once.
func (e *entry) setOptions(opts []string, loc *time.Location) error {
	seen := map[string]bool{}
	for _, opt := range opts {
		name, value, hasValue := strings.Cut(opt, "=")
		lower := strings.ToLower(name)
		if seen[lower] && hasValue {
			return fmt.Errorf("option %s is given twice: keep one", lower)
		}
		seen[lower] = hasValue
		switch {
		case lower == "cert-authority" && !hasValue:
			return errors.New("cert-authority lines (a certificate authority's key) are not supported by relcap yet: list each person's own public key instead")
		case lower == "namespaces" && hasValue:
			v, err := dequote(value)
			if err != nil {
				return fmt.Errorf("namespaces=%s: %v", clip(value), err)
			}
			if v == "" {
				return errors.New(`namespaces="" allows no namespace: remove the option, or list namespaces (namespaces="relcap-approval,relcap-journal")`)
			}
			e.namespaces = v
		case (lower == "valid-after" || lower == "valid-before") && hasValue:
			v, err := dequote(value)
			if err != nil {
				return fmt.Errorf("%s=%s: %v", lower, clip(value), err)
			}
			t, err := parseTime(v, loc)
			if err != nil {
				return fmt.Errorf("%s=%s: %v", lower, clip(value), err)
			}
			if lower == "valid-after" {
				e.after = t
			} else {
				e.before = t
			}
		case lower == "namespaces":
			return errors.New(`option namespaces needs a value: namespaces="relcap-approval"`)
		case lower == "valid-after" || lower == "valid-before":
			return fmt.Errorf(`option %s needs a value: %s="20260101"`, lower, lower)
		default:
			return fmt.Errorf("unknown option %s: relcap understands namespaces=, valid-after= and valid-before= (if it is a principal, join the principals with commas or quote them)", clip(name))
		}
	}
	if !e.after.IsZero() && !e.before.IsZero() && !e.before.After(e.after) {
		return errors.New("valid-before is not after valid-after, so the key is never valid: fix one of them")
	}
	return nil
}

// dequote strips the double quotes around an option value. OpenSSH
// requires them (ssh-keygen -Y verify rejects namespaces=git), and so does
// relcap: a people file relcap accepts must work with ssh-keygen too, so
// that anyone can check a signature without relcap.
func dequote(v string) (string, error) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", errors.New(`write the value in double quotes, as ssh-keygen requires (namespaces="relcap-approval")`)
	}
	inner := v[1 : len(v)-1]
	for i := 0; i < len(inner); i++ {
		if inner[i] == '"' && (i == 0 || inner[i-1] != '\\') {
			return "", errors.New("stray quote inside the value")
		}
	}
	return strings.ReplaceAll(inner, `\"`, `"`), nil
}

// timeLayouts are the formats of OpenSSH's parse_absolute_time, by length.
var timeLayouts = map[int]string{
	8:  "20060102",
	12: "200601021504",
	14: "20060102150405",
}

// parseTime reads a valid-after or valid-before time: YYYYMMDD,
// YYYYMMDDHHMM or YYYYMMDDHHMMSS, in UTC when followed by Z (or UTC, as
// OpenSSH also accepts), otherwise in loc.
func parseTime(s string, loc *time.Location) (time.Time, error) {
	switch {
	case len(s) > 1 && (s[len(s)-1] == 'Z' || s[len(s)-1] == 'z'):
		s, loc = s[:len(s)-1], time.UTC
	case len(s) > 3 && strings.EqualFold(s[len(s)-3:], "UTC"):
		s, loc = s[:len(s)-3], time.UTC
	}
	bad := errors.New("not a time: write YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, with a trailing Z for UTC (otherwise it is local time)")
	layout, ok := timeLayouts[len(s)]
	if !ok || strings.Trim(s, "0123456789") != "" {
		return time.Time{}, bad
	}
	t, err := time.ParseInLocation(layout, s, loc)
	if err != nil {
		return time.Time{}, bad
	}
	return t, nil
}

// givesPrincipal reports whether the line names principal.
func (e *entry) givesPrincipal(principal string) bool {
	return matchList(principal, e.principals) == 1
}

// allowsNamespace reports whether the line lets its key sign in namespace.
func (e *entry) allowsNamespace(namespace string) bool {
	return e.namespaces == "" || matchList(namespace, e.namespaces) == 1
}

// validAt reports whether at lies within the line's validity, bounds
// included. OpenSSH compares whole seconds, and so does this.
func (e *entry) validAt(at time.Time) bool {
	if !e.after.IsZero() && at.Unix() < e.after.Unix() {
		return false
	}
	return e.before.IsZero() || at.Unix() <= e.before.Unix()
}

// literals returns the line's principals that name one person: not
// negated and without wildcards.
func (e *entry) literals() []string {
	var out []string
	for sub := range strings.SplitSeq(e.principals, ",") {
		if isLiteral(sub) {
			out = append(out, sub)
		}
	}
	return out
}

// KeysFor returns the keys the file gives principal for namespace at time
// at, each once, in file order: the keys whose line's principals match
// principal, whose namespaces (if the line restricts them) match
// namespace, and whose validity includes at. It returns nil when there
// are none.
func (p *People) KeysFor(principal, namespace string, at time.Time) []ssh.PublicKey {
	if p == nil {
		return nil
	}
	var keys []ssh.PublicKey
	for i := range p.entries {
		e := &p.entries[i]
		if e.givesPrincipal(principal) && e.allowsNamespace(namespace) && e.validAt(at) && findKey(keys, e.key) == nil {
			keys = append(keys, e.key)
		}
	}
	return keys
}

// KeysOf returns the keys the file gives principal at time at, whatever
// the namespaces their lines restrict signing to, each once, in file
// order: the keys principal holds, to encrypt to (a shared plan), where
// KeysFor answers who may sign what.
func (p *People) KeysOf(principal string, at time.Time) []ssh.PublicKey {
	if p == nil {
		return nil
	}
	var keys []ssh.PublicKey
	for i := range p.entries {
		e := &p.entries[i]
		if e.givesPrincipal(principal) && e.validAt(at) && findKey(keys, e.key) == nil {
			keys = append(keys, e.key)
		}
	}
	return keys
}

// PrincipalsOf returns the literal principals (no wildcards, no negation)
// of the lines that list key, sorted and each once: who the file says the
// key belongs to, for error messages.
func (p *People) PrincipalsOf(key ssh.PublicKey) []string {
	if p == nil || key == nil {
		return nil
	}
	blob := key.Marshal()
	var out []string
	for i := range p.entries {
		if bytes.Equal(p.entries[i].blob, blob) {
			out = append(out, p.entries[i].literals()...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Principals returns every literal principal of the file, sorted and each
// once: the people it names.
func (p *People) Principals() []string {
	if p == nil {
		return nil
	}
	var out []string
	for i := range p.entries {
		out = append(out, p.entries[i].literals()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Name is the name the file was parsed under (its path, for LoadPeople).
func (p *People) Name() string { return p.name }

// findKey returns the key of keys equal to key, or nil.
func findKey(keys []ssh.PublicKey, key ssh.PublicKey) ssh.PublicKey {
	blob := key.Marshal()
	for _, k := range keys {
		if bytes.Equal(k.Marshal(), blob) {
			return k
		}
	}
	return nil
}
