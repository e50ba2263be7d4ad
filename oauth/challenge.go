package oauth

import (
	"strings"
)

// Challenge is one authentication challenge of a WWW-Authenticate header:
// its scheme and its parameters. A refusal that asks for sign-in names
// its Bearer challenge's resource metadata, scope and error here.
type Challenge struct {
	// Scheme is as the server spelled it ("Bearer" in any case).
	Scheme string
	// Params are the challenge's parameters, names in lower case.
	Params map[string]string
}

// ParseChallenges reads a WWW-Authenticate value (RFC 9110 §11.6.1): one or
// more comma-separated challenges, each a scheme and then either a token68
// (skipped) or name=value parameters, a value being a token or a quoted
// string. Servers bend the grammar, so it reads leniently: an unquoted value
// may hold token68's '/' and '=' ("uri=/path", "key=abc=="), and what it
// cannot read at all is skipped up to the next comma outside quotes, so a
// challenge it does not understand never hides the one after it. The
// Authorizer reads refusals with it, and client/ the refusals it reports.
//
// The go-sdk's oauthex.ParseWWWAuthenticate (v1.8.0) reads the same grammar
// but fails the whole header on one challenge it cannot read: of the 14
// header shapes in TestParseChallenges it loses the Bearer challenge of 2
// (`Foo @@"x, y"@@, Bearer` and an unterminated quote), which would turn a
// server asking for sign-in into a retry loop. When the OAuth client needs
// the challenge's parameters in full, oauthex's discovery takes over from
// there; detecting the challenge stays here.
func ParseChallenges(h string) []Challenge {
	s := &hdrScanner{s: h}
	var out []Challenge
	for {
		from := s.i
		s.skip(" \t,")
		if s.i == len(s.s) {
			return out
		}
		// A new challenge starts the value or follows a comma; a
		// parameter may follow either, or its scheme directly.
		canStart := len(out) == 0 || strings.IndexByte(s.s[from:s.i], ',') >= 0
		name := s.token()
		if name == "" {
			s.skipItem()
			continue
		}
		s.skip(" \t")
		if s.next('=') {
			if len(out) == 0 {
				// A parameter before any scheme belongs to nothing.
				s.skipItem()
				continue
			}
			s.skip(" \t")
			val, ok := s.value()
			if ok {
				out[len(out)-1].Params[strings.ToLower(name)] = val
			}
			if !ok || !s.itemEnd() {
				s.skipItem()
			}
			continue
		}
		if !canStart {
			// Two words in a row where a parameter was due.
			s.skipItem()
			continue
		}
		out = append(out, Challenge{Scheme: name, Params: map[string]string{}})
		if !s.itemEnd() {
			s.token68()
		}
	}
}

// hdrScanner walks a header value.
type hdrScanner struct {
	s string
	i int
}

// skip passes over any of the bytes in set.
func (s *hdrScanner) skip(set string) {
	for s.i < len(s.s) && strings.IndexByte(set, s.s[s.i]) >= 0 {
		s.i++
	}
}

// next consumes b if it comes next.
func (s *hdrScanner) next(b byte) bool {
	if s.i < len(s.s) && s.s[s.i] == b {
		s.i++
		return true
	}
	return false
}

// itemEnd passes over blanks and reports whether a comma or the end comes
// next.
func (s *hdrScanner) itemEnd() bool {
	s.skip(" \t")
	return s.i == len(s.s) || s.s[s.i] == ','
}

// skipItem passes over what cannot be read, up to the next comma outside a
// quoted string or the end.
func (s *hdrScanner) skipItem() {
	for s.i < len(s.s) && s.s[s.i] != ',' {
		if s.s[s.i] == '"' {
			s.quoted()
			continue
		}
		s.i++
	}
}

// token reads an RFC 9110 token, "" when none starts here.
func (s *hdrScanner) token() string {
	start := s.i
	for s.i < len(s.s) && isTokenChar(s.s[s.i]) {
		s.i++
	}
	return s.s[start:s.i]
}

// token68 passes over a token68 ("YII+/abc==") that ends its challenge and
// reports whether there was one; otherwise it consumes nothing.
func (s *hdrScanner) token68() bool {
	mark := s.i
	for s.i < len(s.s) && isToken68Char(s.s[s.i]) {
		s.i++
	}
	if s.i > mark {
		s.skip("=")
		if s.itemEnd() {
			return true
		}
	}
	s.i = mark
	return false
}

// value reads a parameter's value: a quoted string (backslash escapes
// undone) or an unquoted run of token and token68 characters. ok is false
// when neither starts here.
func (s *hdrScanner) value() (string, bool) {
	if s.i < len(s.s) && s.s[s.i] == '"' {
		return s.quoted(), true
	}
	start := s.i
	for s.i < len(s.s) && (isTokenChar(s.s[s.i]) || isToken68Char(s.s[s.i]) || s.s[s.i] == '=') {
		s.i++
	}
	return s.s[start:s.i], s.i > start
}

// quoted reads the quoted string that starts here, backslash escapes
// undone; an unterminated one runs to the end.
func (s *hdrScanner) quoted() string {
	s.i++ // the opening quote
	var b strings.Builder
	for s.i < len(s.s) {
		c := s.s[s.i]
		s.i++
		switch {
		case c == '"':
			return b.String()
		case c == '\\' && s.i < len(s.s):
			b.WriteByte(s.s[s.i])
			s.i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isToken68Char reports whether c may appear in a token68 before its
// trailing '=' (RFC 9110 §11.2).
func isToken68Char(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}
