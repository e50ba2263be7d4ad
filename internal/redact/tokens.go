package redact

import (
	"regexp"
	"slices"
	"strings"
)

// Tokens masks what looks like a credential in s, whoever configured it:
// echoed Authorization, Proxy-Authorization, Cookie and Set-Cookie headers,
// secret-named parameters ("access_token": "…", api_key=…, password=…),
// Bearer and Basic credentials, keys with a known prefix (ghp_…, sk-…,
// xoxb-…, AKIA…), JSON Web Tokens, and long runs of hex or base64 that mix
// letters and digits the way generated keys do.
//
// Each shape is found from a cheap anchor (a ':' or '=' after a name, the
// start of a word, a run of key characters) in one linear scan each, and
// checked where it stands.
func Tokens(s string) string {
	lower := asciiLower(s)
	var spans []span
	spans = memberSpans(s, lower, spans)
	spans = wordSpans(s, lower, spans)
	spans = runSpans(s, spans)
	return maskSpans(s, spans)
}

// span is a part of the text to mask, [start, end).
type span struct{ start, end int }

// maskSpans replaces each span, merged with those it overlaps, by Mask.
func maskSpans(s string, spans []span) string {
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start <= end; i++ {
			end = max(end, spans[i].end)
		}
		b.WriteString(s[last:start])
		b.WriteString(Mask)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// asciiLower lowers ASCII letters only, so offsets stay those of s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func isASCIIWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// lines finds where the lines of a text end, for a scan that moves
// forward: each end is searched for once, so a long line with many anchors
// is not searched again for each.
type lines struct {
	s   string
	end int // the end of the line last asked for; -1 before the first
}

// rest is s from i to the end of its line, and at most maxValue bytes:
// no check reads further.
func (l *lines) rest(i int) string {
	if i > l.end {
		l.end = len(l.s)
		if j := strings.IndexAny(l.s[i:], "\r\n"); j >= 0 {
			l.end = i + j
		}
	}
	return l.s[i:min(l.end, i+maxValue)]
}

// maxValue bounds how far past its anchor a value is looked for: a
// credential is not longer, and the bound keeps adversarial text (one
// anchor after another on one long line) linear.
const maxValue = 4 << 10

// The checks made where an anchor was found, each anchored at its start.
var (
	// The value of a credential header: quoted, bracketed (Go's rendering
	// of a header map), or the rest of the line.
	headerValueRE = regexp.MustCompile(`^["']?[ \t]*[:=][ \t]*("(?:[^"\\]|\\.)*"|'[^']*'|\[[^\]]*\]|.+)`)
	// The value of a secret-named member: quoted, or one word.
	keyValueRE = regexp.MustCompile(`^["']?[ \t]*[:=][ \t]*("(?:[^"\\]|\\.)*"|'[^']*'|[^\s"'&,;}<>]+)`)
	// The credentials after an authorization scheme.
	schemeValueRE = regexp.MustCompile(`^[ \t]+([A-Za-z0-9._~+/=-]{8,})`)
)

// valueSpan returns the span of re's group 1 in rest (which starts at
// offset off), without its quotes or brackets; ok is false without a match.
func valueSpan(re *regexp.Regexp, rest string, off int) (span, bool) {
	m := re.FindStringSubmatchIndex(rest)
	if m == nil {
		return span{}, false
	}
	start, end := m[2], m[3]
	if q := rest[start]; end-start >= 2 && (q == '"' || q == '\'' || q == '[') {
		start, end = start+1, end-1
	}
	if start == end {
		return span{}, false
	}
	return span{off + start, off + end}, true
}

// keyNames are the names ending in "key" that say the value is secret.
var keyNames = []string{"apikey", "api_key", "api-key", "secretkey", "secret_key", "secret-key", "privatekey", "private_key", "private-key", "accesskey", "access_key", "access-key"}

// memberSpans finds the values of names that say they hold a credential,
// anchored at each ':' or '=': echoed credential headers ("Authorization:
// …", `"set-cookie":"…"`, Go's "map[Cookie:[…]]") and members or parameters
// named …token, …secret, …password, …passwd, or an API, secret, private or
// access key.
func memberSpans(s, lower string, spans []span) []span {
	ls := lines{s: s, end: -1}
	for from := 0; ; {
		j := strings.IndexAny(s[from:], ":=")
		if j < 0 {
			return spans
		}
		sep := from + j
		from = sep + 1
		end := sep
		for end > 0 && (s[end-1] == ' ' || s[end-1] == '\t') {
			end--
		}
		if end > 0 && (s[end-1] == '"' || s[end-1] == '\'') {
			end--
		}
		start := end
		for start > 0 && isNameByte(lower[start-1]) {
			start--
		}
		name := lower[start:end]
		re := keyValueRE
		switch {
		case name == "":
			continue
		case endsWord(name, "authorization"), endsWord(name, "cookie"):
			re = headerValueRE
		case strings.HasSuffix(name, "token"), strings.HasSuffix(name, "secret"),
			strings.HasSuffix(name, "password"), strings.HasSuffix(name, "passwd"):
		case slices.ContainsFunc(keyNames, func(n string) bool { return strings.HasSuffix(name, n) }):
		default:
			continue
		}
		if v, ok := valueSpan(re, ls.rest(end), end); ok {
			spans = append(spans, v)
			from = max(from, v.end) // what the value holds is masked already
		}
	}
}

// endsWord reports whether name ends with word, and word is the whole name
// or follows a separator ("proxy-authorization", "set-cookie").
func endsWord(name, word string) bool {
	if !strings.HasSuffix(name, word) {
		return false
	}
	i := len(name) - len(word)
	return i == 0 || !isASCIIWord(name[i-1]) || name[i-1] == '_'
}

func isNameByte(c byte) bool { return isASCIIWord(c) || c == '.' || c == '-' }

// wordSpans finds, at the start of each word, the credentials after a
// Bearer or Basic scheme, keys with a known prefix, and JSON Web Tokens.
func wordSpans(s, lower string, spans []span) []span {
	ls := lines{s: s, end: -1}
	for i := 0; i < len(s); i++ {
		if !isASCIIWord(s[i]) || i > 0 && isASCIIWord(s[i-1]) {
			continue
		}
		first := len(spans)
		if lower[i] == 'b' {
			for _, scheme := range []string{"bearer", "basic"} {
				if strings.HasPrefix(lower[i:], scheme) {
					end := i + len(scheme)
					if v, ok := valueSpan(schemeValueRE, ls.rest(end), end); ok {
						spans = append(spans, v)
					}
				}
			}
		}
		for _, k := range keysByFirst[s[i]] {
			if strings.HasPrefix(s[i:], k.prefix) {
				if end := k.match(s, i); end > 0 {
					spans = append(spans, span{i, end})
				}
			}
		}
		if s[i] == 'e' && strings.HasPrefix(s[i:], "eyJ") {
			if end := jwtEnd(s, i); end > 0 {
				spans = append(spans, span{i, end})
			}
		}
		// The words inside what was found are masked with it.
		for _, sp := range spans[first:] {
			i = max(i, sp.end-1)
		}
	}
	return spans
}

// prefixedKey is a kind of key whose prefix names the service that issued
// it: the prefix, then at least min bytes of its alphabet (exactly min if
// exact).
type prefixedKey struct {
	prefix string
	chars  string // besides ASCII letters and digits
	min    int
	exact  bool
	upper  bool // letters must be upper case
}

var prefixedKeys = []prefixedKey{
	{prefix: "ghp_", chars: "_", min: 16}, {prefix: "gho_", chars: "_", min: 16},
	{prefix: "ghu_", chars: "_", min: 16}, {prefix: "ghs_", chars: "_", min: 16},
	{prefix: "ghr_", chars: "_", min: 16}, {prefix: "github_pat_", chars: "_", min: 20},
	{prefix: "glpat-", chars: "_-", min: 16},
	{prefix: "xoxa-", chars: "-", min: 10}, {prefix: "xoxb-", chars: "-", min: 10},
	{prefix: "xoxo-", chars: "-", min: 10}, {prefix: "xoxp-", chars: "-", min: 10},
	{prefix: "xoxr-", chars: "-", min: 10}, {prefix: "xoxs-", chars: "-", min: 10},
	{prefix: "xapp-", chars: "-", min: 10},
	{prefix: "sk-", chars: "_-", min: 16},
	{prefix: "sk_live_", min: 10}, {prefix: "sk_test_", min: 10},
	{prefix: "rk_live_", min: 10}, {prefix: "rk_test_", min: 10},
	{prefix: "pk_live_", min: 10}, {prefix: "pk_test_", min: 10},
	{prefix: "npm_", min: 20}, {prefix: "hf_", min: 20},
	{prefix: "AKIA", min: 16, exact: true, upper: true},
	{prefix: "AIza", chars: "_-", min: 30},
}

// keysByFirst is prefixedKeys by the first byte of their prefix.
var keysByFirst = func() (by [256][]prefixedKey) {
	for _, k := range prefixedKeys {
		by[k.prefix[0]] = append(by[k.prefix[0]], k)
	}
	return by
}()

// match returns the end of the key that starts at s[i] with k's prefix,
// or 0 if none does.
func (k prefixedKey) match(s string, i int) int {
	j := i + len(k.prefix)
	for j < len(s) && k.accepts(s[j]) && !(k.exact && j-i-len(k.prefix) == k.min) {
		j++
	}
	if j-i-len(k.prefix) < k.min {
		return 0
	}
	return j
}

func (k prefixedKey) accepts(c byte) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'A' && c <= 'Z':
		return true
	case c >= 'a' && c <= 'z':
		return !k.upper
	}
	return strings.IndexByte(k.chars, c) >= 0
}

// jwtEnd returns the end of the JSON Web Token that starts at s[i] (three
// base64url parts, the first a JSON object, so "eyJ…"), or 0 if none does.
func jwtEnd(s string, i int) int {
	part := func(i int) int {
		for i < len(s) && (isASCIIWord(s[i]) || s[i] == '-') {
			i++
		}
		return i
	}
	a := part(i)
	if a-i < 11 || a >= len(s) || s[a] != '.' {
		return 0
	}
	b := part(a + 1)
	if b-a-1 < 8 || b >= len(s) || s[b] != '.' {
		return 0
	}
	return part(b + 1)
}

// runSpans finds long runs of key characters that look generated.
func runSpans(s string, spans []span) []span {
	for i := 0; i < len(s); {
		if !isRunByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isRunByte(s[j]) {
			j++
		}
		end := j
		for k := 0; k < 2 && end < len(s) && s[end] == '='; k++ {
			end++
		}
		if j-i >= 32 && keyLike(s[i:end]) {
			spans = append(spans, span{i, end})
		}
		i = j
	}
	return spans
}

func isRunByte(c byte) bool { return isASCIIWord(c) || c == '+' || c == '/' || c == '-' }

// keyLike reports whether a run of key characters looks generated: it has
// letters and digits, and is all hex, or mixes cases and digits often (a
// random base64 string changes between upper case, lower case and digit at
// about 60% of its characters; a CamelCase identifier or a path at well
// under a third).
func keyLike(run string) bool {
	var upper, lower, digit, hexLetters, changes, n int
	prev := 0
	for i := 0; i < len(run); i++ {
		c := run[i]
		class := 0
		switch {
		case c >= '0' && c <= '9':
			digit++
			class = 1
		case c >= 'a' && c <= 'z':
			lower++
			class = 2
			if c <= 'f' {
				hexLetters++
			}
		case c >= 'A' && c <= 'Z':
			upper++
			class = 3
			if c <= 'F' {
				hexLetters++
			}
		default:
			continue
		}
		n++
		if prev != 0 && class != prev {
			changes++
		}
		prev = class
	}
	if digit == 0 || upper+lower == 0 || n < 32 {
		return false
	}
	// All hex, in one case and without separators: a digest or a key.
	// (A UUID's dashes keep it readable: it identifies, it does not
	// authorise.)
	if n == len(run) && hexLetters == upper+lower && (upper == 0 || lower == 0) {
		return true
	}
	return upper > 0 && lower > 0 && changes*3 >= n
}
