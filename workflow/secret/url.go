package secret

import (
	"errors"
	"net/url"
	"strings"
)

// URLMask replaces a credential in a URL shown to people, as Go's
// url.URL.Redacted does.
const URLMask = "xxxxx"

// credentialParams are query parameters that carry a credential (case
// does not matter).
var credentialParams = map[string]bool{
	"password": true, "passwd": true, "pwd": true, "sslpassword": true,
	"token": true, "access_token": true, "private_token": true, "auth_token": true,
	"api_key": true, "apikey": true, "secret": true, "client_secret": true,
	"sig": true, "signature": true, "x-amz-signature": true, "x-amz-security-token": true,
}

// userinfo is where a URL-like text keeps its user information.
type userinfo struct {
	prefix string // "scheme://"
	scheme string
	info   string // as written, between prefix and the '@' ending it
	rest   string // after that '@': host, path, query
	// beyondAuthority is set when the user information runs past the
	// first / ? # after the scheme: a password written unescaped, which
	// url.Parse reads as a host, a path or a query.
	beyondAuthority bool
}

// cutUserinfo finds the user information of s, a URL or what was meant to
// be one. It ends at the last '@' before the first / ? # after "://", as
// url.Parse reads it; but when a user name and a ':' come before any
// / ? #, at the last '@' of s: a password written unescaped may hold
// / ? # @ itself, and which '@' ends it cannot be known, so the one that
// masks the most is taken.
func cutUserinfo(s string) (userinfo, bool) {
	i := strings.Index(s, "://")
	if i <= 0 || !validScheme(s[:i]) {
		return userinfo{}, false
	}
	after := s[i+3:]
	end := len(after)
	if j := strings.IndexAny(after, "/?#"); j >= 0 {
		end = j
	}
	at := strings.LastIndexByte(after[:end], '@')
	beyond := false
	if colon := strings.IndexByte(after, ':'); colon >= 0 && colon < end {
		if last := strings.LastIndexByte(after, '@'); last > colon && last > at {
			at, beyond = last, last >= end
		}
	}
	if at < 0 {
		return userinfo{}, false
	}
	return userinfo{prefix: s[:i+3], scheme: strings.ToLower(s[:i]), info: after[:at], rest: after[at+1:], beyondAuthority: beyond}, true
}

func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// tokenUser reports whether a user name alone is a credential in a URL of
// scheme: over http(s), a token is written where the user name goes.
func tokenUser(scheme string) bool { return scheme == "http" || scheme == "https" }

// RedactURL returns s, a URL or what was meant to be one, for messages:
// its password (and over http(s) a user name alone, where tokens go)
// replaced by URLMask, and so are credential query parameters (password,
// token, sslpassword, ...). A text url.Parse refuses, or whose password
// was written with / ? # unescaped, has all of its user information
// masked; a text without "scheme://" is returned as it is. It is the one
// redactor of URLs in relcap: the ledger's location, an environment
// repository's clone URL, a forge's address.
func RedactURL(s string) string {
	ui, found := cutUserinfo(s)
	u, err := url.Parse(s)
	if err != nil || found && ui.beyondAuthority {
		if !found {
			return redactQuery(s)
		}
		return ui.prefix + URLMask + "@" + redactQuery(ui.rest)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), URLMask)
		} else if tokenUser(strings.ToLower(u.Scheme)) {
			u.User = url.User(URLMask)
		}
	}
	q := u.Query()
	changed := false
	for k := range q {
		if credentialParams[strings.ToLower(k)] {
			q.Set(k, URLMask)
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// redactQuery masks credential parameters in the query of s (anything
// after its first '?'), keeping their order and everything else as
// written.
func redactQuery(s string) string {
	base, query, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	query, frag, hasFrag := strings.Cut(query, "#")
	params := strings.Split(query, "&")
	for i, p := range params {
		k, _, hasValue := strings.Cut(p, "=")
		if key, err := url.QueryUnescape(k); err == nil && hasValue && credentialParams[strings.ToLower(key)] {
			params[i] = k + "=" + URLMask
		}
	}
	out := base + "?" + strings.Join(params, "&")
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// URLCredentials returns the credentials s, a URL or what was meant to be
// one, carries, for a Set to learn before s is used or shown: the
// password as written and unescaped (and, when it was written with
// / ? # @ unescaped, each text that may be it: from the user name's ':'
// to each '@' that follows), an http(s) user name alone, and the values of
// credential query parameters. Empty when s carries none.
func URLCredentials(s string) []string {
	var out []string
	add := func(raw string) {
		out = append(out, raw)
		if v, err := url.PathUnescape(raw); err == nil && v != raw {
			out = append(out, v)
		}
		if v, err := url.QueryUnescape(raw); err == nil && v != raw {
			out = append(out, v)
		}
	}
	if ui, ok := cutUserinfo(s); ok {
		user, _, hasPassword := strings.Cut(ui.info, ":")
		switch {
		case hasPassword:
			after := s[len(ui.prefix)+len(user)+1:]
			for i := 0; i < len(after); i++ {
				if after[i] == '@' {
					add(after[:i])
				}
			}
		case tokenUser(ui.scheme):
			add(ui.info)
		}
	}
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
	}
	if _, query, ok := strings.Cut(s, "?"); ok {
		query, _, _ = strings.Cut(query, "#")
		for p := range strings.SplitSeq(query, "&") {
			k, v, hasValue := strings.Cut(p, "=")
			if key, err := url.QueryUnescape(k); err == nil && hasValue && credentialParams[strings.ToLower(key)] {
				add(v)
			}
		}
	}
	return dedupe(out)
}

// SecretUserinfo returns the user information of URL s that must stay out
// of messages and files, as written: one with a password, or over http(s)
// a user name alone; empty when there is none.
func SecretUserinfo(s string) string {
	ui, ok := cutUserinfo(s)
	if !ok {
		return ""
	}
	if strings.Contains(ui.info, ":") || tokenUser(ui.scheme) {
		return ui.info
	}
	return ""
}

func dedupe(vs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range vs {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// ParseURL is url.Parse for a URL that may carry credentials, with an
// error that never quotes them (url.Parse's quotes the URL, and its
// reason may quote a piece of a password it took for a port or an
// escape). A password written with / ? # unescaped is refused: url.Parse
// would read a host, a path or a query in it and connect elsewhere.
func ParseURL(s string) (*url.URL, error) {
	if ui, ok := cutUserinfo(s); ok && ui.beyondAuthority {
		return nil, errors.New("its password (what follows the user name up to the last '@') holds / ? or # written as they are; percent-escape them (%2F %3F %23), and an '@' after the host as %40")
	}
	u, err := url.Parse(s)
	if err == nil {
		return u, nil
	}
	if _, rerr := url.Parse(RedactURL(s)); rerr != nil {
		var ue *url.Error
		if errors.As(rerr, &ue) {
			rerr = ue.Err // without the URL
		}
		return nil, rerr
	}
	return nil, errors.New("its user information is not validly percent-escaped (write a % as %25)")
}
