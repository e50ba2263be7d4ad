package redact

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Secret values are masked by length:
//
//   - A value of MinSecretLen bytes or more (8) is masked wherever it
//     appears, also inside a longer word.
//   - A value of MinWordSecretLen to MinSecretLen-1 bytes (4 to 7) is masked
//     only where it stands alone: not preceded or followed by a letter, a
//     digit, an underscore or a non-ASCII character. Masking "prod" or "1234" inside every word
//     and number would make the text unreadable.
//   - A shorter value is never masked: a value of one to three bytes ("1",
//     "on", "yes") is no secret, and masking it would mangle every message.
const (
	MinSecretLen     = 8
	MinWordSecretLen = 4
)

// Redactor masks a fixed set of secret values, and whatever looks like a
// credential, in text that came from outside mcphub: error bodies of remote
// servers, a stdio server's stderr. Build one per server with New; it is
// safe for concurrent use.
type Redactor struct {
	long  *strings.Replacer // values of MinSecretLen bytes or more
	short []string          // values masked only as whole words
	// longValues are the long values, longest first, for Prefix to find
	// one that a cut left unfinished.
	longValues []string
}

// New returns a Redactor for the given secret values (a server's env
// values, header values, URL credentials). Each value is also masked in the
// forms a server is likely to echo it in: JSON-escaped, URL-escaped, and,
// for a value with spaces such as "Bearer <token>", each long part alone.
func New(secrets []string) *Redactor {
	seen := map[string]bool{}
	var long, short []string
	add := func(v string) {
		if seen[v] || strings.Contains(v, Mask) {
			return
		}
		seen[v] = true
		switch {
		case len(v) >= MinSecretLen:
			long = append(long, v)
		case len(v) >= MinWordSecretLen:
			short = append(short, v)
		}
	}
	for _, s := range secrets {
		for _, v := range variants(s) {
			add(v)
		}
	}
	// Longest first: where two values start at the same place the longer
	// one is masked whole.
	byLen := func(a, b string) int { return len(b) - len(a) }
	slices.SortFunc(long, byLen)
	slices.SortFunc(short, byLen)
	pairs := make([]string, 0, 2*len(long))
	for _, v := range long {
		pairs = append(pairs, v, Mask)
	}
	return &Redactor{long: strings.NewReplacer(pairs...), short: short, longValues: long}
}

// variants is s in the forms it may be echoed in.
func variants(s string) []string {
	out := []string{s}
	if b, err := json.Marshal(s); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	out = append(out, url.QueryEscape(s), url.PathEscape(s))
	for _, f := range strings.Fields(s) {
		if len(f) >= MinSecretLen && f != s {
			out = append(out, f)
		}
	}
	return out
}

// Text masks secrets in s with the set of values given.
func Text(s string, secrets []string) string { return New(secrets).Text(s) }

// Text returns s with every configured secret value, every echoed
// credential header (Authorization, Proxy-Authorization, Cookie,
// Set-Cookie) and every token-shaped value masked as Mask. See
// MinSecretLen for which values are masked where.
func (r *Redactor) Text(s string) string {
	if r != nil {
		s = r.long.Replace(s)
		for _, v := range r.short {
			s = maskWord(s, v)
		}
	}
	return Tokens(s)
}

// Prefix is Text for s that is the start of a longer text, cut at an
// arbitrary byte: what the cut left of a secret value at the end, or of a
// token-shaped word, is masked too.
func (r *Redactor) Prefix(s string) string {
	end := len(s)
	if r != nil {
		for _, v := range r.longValues {
			for k := min(len(v)-1, len(s)); k >= MinWordSecretLen; k-- {
				if strings.HasSuffix(s, v[:k]) {
					end = min(end, len(s)-k)
					break
				}
			}
		}
	}
	// The last word may be a credential the cut made too short to
	// recognise.
	word := end
	for word > 0 && isTokenByte(s[word-1]) {
		word--
	}
	if end-word >= MinWordSecretLen {
		end = word
	}
	if end < len(s) {
		return r.Text(s[:end]) + Mask
	}
	return r.Text(s)
}

// Excerpt masks s with Prefix or Text (cut says whether s is the start of a
// longer text) and then shortens it to at most n bytes, on a character
// boundary, marking a cut with "…".
func (r *Redactor) Excerpt(s string, cut bool, n int) string {
	if cut {
		s = r.Prefix(s)
	} else {
		s = r.Text(s)
	}
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// maskWord masks each occurrence of v in s that stands alone.
func maskWord(s, v string) string {
	var b strings.Builder
	last := 0
	for i := 0; i <= len(s)-len(v); {
		j := strings.Index(s[i:], v)
		if j < 0 {
			break
		}
		start, end := i+j, i+j+len(v)
		if (start == 0 || !isWordByte(s[start-1])) && (end == len(s) || !isWordByte(s[end])) {
			b.WriteString(s[last:start])
			b.WriteString(Mask)
			last = end
			i = end
			continue
		}
		i = start + 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf
}

// isTokenByte reports a byte that can be part of a token or key.
func isTokenByte(c byte) bool {
	return isWordByte(c) && c < utf8.RuneSelf || strings.IndexByte("+/=-.~", c) >= 0
}

// Reworded is err with its message replaced by msg (the message with its
// secrets masked); errors.Is and errors.As still see err.
func Reworded(err error, msg string) error { return &reworded{msg: msg, err: err} }

// reworded is an error whose message was masked of secrets.
type reworded struct {
	msg string
	err error
}

func (e *reworded) Error() string { return e.msg }
func (e *reworded) Unwrap() error { return e.err }
