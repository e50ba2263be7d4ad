package clientconf

import (
	"crypto/subtle"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mcphub/mcphub/registry"
)

// ImportedSecret is one variable that now stands for a literal secret of
// the imported file. It never holds the value.
type ImportedSecret struct {
	// Var is the variable the entries now read, as in ${Var}.
	Var string
	// Where is the first place that held the literal, as a registry key
	// such as servers.github.env.GITHUB_TOKEN.
	Where string
	// Servers are the imported servers that read Var, sorted.
	Servers []string
	// Env tells whether ImportOptions.LookupEnv holds Var, and with the
	// file's value or another one.
	Env SecretEnv
}

// SecretEnv is what an environment holds under a replaced secret's name.
type SecretEnv int

const (
	// SecretUnset means the environment lacks the variable, or no
	// environment was given.
	SecretUnset SecretEnv = iota
	// SecretSame means the environment holds the file's value.
	SecretSame
	// SecretDifferent means the environment holds another value.
	SecretDifferent
)

// secretWords are the word parts of an env key that mark its value as a
// secret, in upper case.
var secretWords = map[string]bool{
	"TOKEN": true, "TOKENS": true, "SECRET": true, "SECRETS": true, "KEY": true, "KEYS": true,
	"APIKEY": true, "PASSWORD": true, "PASSWORDS": true, "PASSWD": true, "PASS": true, "PWD": true,
	"PASSPHRASE": true, "CREDENTIAL": true, "CREDENTIALS": true, "CREDS": true, "AUTH": true,
	"PAT": true, "ACCESSTOKEN": true, "AUTHTOKEN": true,
}

// notSecretLast are last word parts that make a key name something about a
// secret rather than the secret: GITHUB_TOKEN_FILE is a path, AUTH_URL an
// address, API_KEY_HEADER a header name.
var notSecretLast = map[string]bool{
	"URL": true, "URI": true, "HOST": true, "HOSTNAME": true, "PORT": true, "FILE": true, "PATH": true,
	"DIR": true, "ENDPOINT": true, "TYPE": true, "MODE": true, "METHOD": true, "ENABLED": true,
	"DISABLED": true, "REQUIRED": true, "NAME": true, "HEADER": true, "SCOPE": true, "SCOPES": true,
	"PROVIDER": true, "SERVER": true, "DOMAIN": true, "ISSUER": true, "AUDIENCE": true, "ID": true,
	"TIMEOUT": true, "TTL": true, "EXPIRY": true, "EXPIRES": true, "REGION": true, "VERSION": true,
	"ENV": true, "VAR": true,
}

// notSecretWords are word parts that, anywhere in a key, make it name a
// setting about secrets rather than one: MAX_TOKENS and TOKEN_LIMIT are
// numbers, KEY_PREFIX a fixed text, AUTH_MODE a choice, TOKEN_ID an
// identifier.
var notSecretWords = map[string]bool{
	"MAX": true, "MIN": true, "LIMIT": true, "COUNT": true, "NUM": true, "SIZE": true, "PREFIX": true,
	"STRATEGY": true, "MODE": true, "TYPE": true, "ID": true,
}

// notSecretBeforeKey are words that, right before KEY, name a data key
// (a column or field), not a credential: PRIMARY_KEY, SORT_KEY.
var notSecretBeforeKey = map[string]bool{
	"PRIMARY": true, "FOREIGN": true, "PARTITION": true, "SORT": true, "SHARD": true, "CACHE": true,
	"RANGE": true, "INDEX": true, "COLUMN": true, "FIELD": true, "ROW": true, "IDEMPOTENCY": true,
}

// passwordSuffixes make a word a secret word when it ends with one of them,
// written without a separator as PGPASSWORD or DBPASS are.
var passwordSuffixes = []string{"PASSWORD", "PASSWORDS", "PASSWD", "PASSPHRASE", "PASS"}

// notPasswordWords end with PASS but are not about passwords.
var notPasswordWords = map[string]bool{
	"BYPASS": true, "COMPASS": true, "SURPASS": true, "OVERPASS": true, "UNDERPASS": true,
	"TRESPASS": true, "ENCOMPASS": true,
}

// shellKeys are variables a shell sets that look like secrets by name:
// PWD is the working directory.
var shellKeys = map[string]bool{"PWD": true, "OLDPWD": true}

// isSecretWord reports whether one word part of a key marks a secret.
func isSecretWord(w string) bool {
	if secretWords[w] {
		return true
	}
	if notPasswordWords[w] {
		return false
	}
	for _, suf := range passwordSuffixes {
		if strings.HasSuffix(w, suf) {
			return true
		}
	}
	return false
}

// secretEnvKey reports whether an env key names a secret: one of its word
// parts (split at _, -, ., digits and camelCase humps) is a secret word,
// or ends with PASSWORD, PASSWD or PASS (PGPASSWORD); its last part does
// not say it is something about the secret (GITHUB_TOKEN_FILE); and no
// part makes it a setting about secrets (MAX_TOKENS, TOKEN_LIMIT, KEY_ID,
// PRIMARY_KEY). PWD and OLDPWD, the shell's directories, are not secrets.
// ID before the secret word is part of its name: ID_TOKEN is a token.
func secretEnvKey(key string) bool {
	if shellKeys[strings.ToUpper(key)] {
		return false
	}
	words := keyWords(key)
	if len(words) == 0 || !slices.ContainsFunc(words, isSecretWord) {
		return false
	}
	for i, w := range words {
		next := ""
		if i+1 < len(words) {
			next = words[i+1]
		}
		switch {
		case w == "ID" && isSecretWord(next):
		case notSecretWords[w]:
			return false
		case notSecretBeforeKey[w] && (next == "KEY" || next == "KEYS"):
			return false
		}
	}
	last := words[len(words)-1]
	return isSecretWord(last) || !notSecretLast[last]
}

// keyWords splits a key into upper-case word parts: "GITHUB_TOKEN",
// "githubToken" and "GitHub-Token" all give GITHUB and TOKEN, and "APIKey"
// gives API and KEY.
func keyWords(key string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToUpper(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(key)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 {
			prev := cur[len(cur)-1]
			hump := unicode.IsLower(prev) && unicode.IsUpper(r)
			acronymEnd := unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if hump || acronymEnd || unicode.IsDigit(prev) != unicode.IsDigit(r) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// secretHeader reports whether a header carries a credential.
func secretHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "x-api-key":
		return true
	}
	return strings.Contains(n, "token") || strings.Contains(n, "key") || strings.Contains(n, "secret")
}

// headerVarBase is the variable a header's secret moves to, before
// collisions: SERVER_TOKEN for Authorization, SERVER_PROXY_TOKEN for
// Proxy-Authorization, SERVER_API_KEY for X-API-Key.
func headerVarBase(server, header string) string {
	var part string
	switch h := strings.ToLower(header); {
	case h == "authorization":
		part = "TOKEN"
	case h == "proxy-authorization":
		part = "PROXY_TOKEN"
	case strings.HasPrefix(h, "x-") && len(h) > 2:
		part = envVarName(header[2:])
	default:
		part = envVarName(header)
	}
	return envVarName(server + "_" + strings.TrimLeft(part, "_"))
}

// authSchemes are the Authorization schemes kept literal in front of the
// credential they introduce.
var authSchemes = []string{"bearer", "basic", "token"}

// splitScheme splits "Bearer sk-..." into "Bearer " and the credential.
// Values without a known scheme are all credential.
func splitScheme(v string) (prefix, cred string) {
	scheme, _, ok := strings.Cut(v, " ")
	if !ok || !slices.Contains(authSchemes, strings.ToLower(scheme)) {
		return "", v
	}
	rest := strings.TrimLeft(v[len(scheme):], " ")
	return v[:len(v)-len(rest)], rest
}

// literalValue is the text a registry value stands for when it refers to no
// variable; ok is false when it does, or when it holds "${" as text, or
// when it is too plain to be a secret (empty, a boolean, or a number such
// as 4096).
func literalValue(v string) (lit string, ok bool) {
	lit, unset, err := registry.Expand(v, func(string) (string, bool) { return "", false })
	if err != nil || len(unset) > 0 || strings.Contains(lit, "${") {
		return "", false
	}
	switch t := strings.ToLower(strings.TrimSpace(lit)); {
	case t == "", t == "true", t == "false", t == "yes", t == "no", isNumber(t):
		return "", false
	}
	return lit, true
}

// isNumber reports whether s is a decimal number: digits, with an optional
// sign and fraction.
func isNumber(s string) bool {
	s = strings.TrimLeft(s, "+-")
	whole, frac, hasFrac := strings.Cut(s, ".")
	digits := func(d string) bool {
		return d != "" && strings.Trim(d, "0123456789") == ""
	}
	return digits(whole) && (!hasFrac || digits(frac))
}

// urlPassword finds the password of a URL written with credentials
// (postgres://user:pw@host/db): the byte range of lit that holds it, as
// written (still percent-encoded). ok is false when lit is not such a
// URL or its password is empty.
func urlPassword(lit string) (start, end int, ok bool) {
	u, err := url.Parse(lit)
	if err != nil || u.User == nil || u.Host == "" {
		return 0, 0, false
	}
	if pw, set := u.User.Password(); !set || pw == "" {
		return 0, 0, false
	}
	sep := strings.Index(lit, "://")
	if sep < 0 {
		return 0, 0, false
	}
	authStart := sep + 3
	authority := lit[authStart:]
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return 0, 0, false
	}
	colon := strings.IndexByte(authority[:at], ':')
	if colon < 0 || colon+1 == at {
		return 0, 0, false
	}
	return authStart + colon + 1, authStart + at, true
}

// urlVarBase is the variable an env value's URL password moves to, before
// collisions: DATABASE_URL's becomes DATABASE_PASSWORD.
func urlVarBase(key string) string {
	base := envVarName(key)
	for _, suf := range []string{"_URL", "_URI", "_DSN"} {
		if b, ok := strings.CutSuffix(base, suf); ok && b != "" {
			base = b
			break
		}
	}
	return base + "_PASSWORD"
}

// secretNamer gives each distinct literal secret its own variable.
type secretNamer struct {
	lookup func(string) (string, bool)
	// taken are the variables the entries, or the registry they go into,
	// refer to already: each stands for a value of the environment.
	taken   map[string]bool
	values  map[string]string // variable → the literal it stands for
	secrets []ImportedSecret
}

// name is the variable for value: base, or base_2, base_3... when another
// literal of the import took base already, or when something else refers
// to base and the environment does not hold value under it.
func (n *secretNamer) name(base, value, server, where string) string {
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = base + "_" + strconv.Itoa(i)
		}
		have, mine := n.values[name]
		if mine && subtle.ConstantTimeCompare([]byte(have), []byte(value)) != 1 {
			continue
		}
		if mine {
			for j := range n.secrets {
				if s := &n.secrets[j]; s.Var == name && !slices.Contains(s.Servers, server) {
					s.Servers = append(s.Servers, server)
				}
			}
			return name
		}
		sec := ImportedSecret{Var: name, Where: where, Servers: []string{server}}
		if n.lookup != nil {
			if env, ok := n.lookup(name); ok {
				sec.Env = SecretDifferent
				if subtle.ConstantTimeCompare([]byte(env), []byte(value)) == 1 {
					sec.Env = SecretSame
				}
			}
		}
		// A name referred to elsewhere means the environment's value there:
		// the literal may share it only when it is that value.
		if n.taken[name] && sec.Env != SecretSame {
			continue
		}
		n.values[name] = value
		n.secrets = append(n.secrets, sec)
		return name
	}
}

// replaceSecrets rewrites, in place, every literal secret of the specs'
// env (keys that name a secret, see secretEnvKey) and headers (see
// secretHeader) as a ${VAR} reference, and returns the variables, sorted.
// An env value moves to a variable named after its key; a header value to
// one named after the server and the header, keeping an Authorization
// scheme ("Bearer ") literal. In an env value that is a URL with a
// password (postgres://user:pw@host/db) only the password moves, to
// KEY_PASSWORD (DATABASE_URL's to DATABASE_PASSWORD). Two different
// literals that would share a name get distinct ones (NAME_2); equal
// literals share one. A name that the specs or taken (the variables of
// the registry the specs go into) refer to already is reused only when
// lookup holds the literal under it. notes say which args and urls hold a
// URL password, which stays as it is written.
func replaceSecrets(specs []registry.ServerSpec, lookup func(string) (string, bool), taken []string) (secrets []ImportedSecret, notes []string) {
	n := &secretNamer{lookup: lookup, taken: map[string]bool{}, values: map[string]string{}}
	for _, v := range taken {
		n.taken[v] = true
	}
	for _, s := range specs {
		for _, v := range s.Vars() {
			n.taken[v] = true
		}
	}
	for i := range specs {
		s := &specs[i]
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			lit, ok := literalValue(s.Env[k])
			if !ok {
				continue
			}
			where := "servers." + registry.QuoteKey(s.Name) + ".env." + registry.QuoteKey(k)
			if secretEnvKey(k) {
				s.Env[k] = "${" + n.name(envVarName(k), lit, s.Name, where) + "}"
			} else if start, end, ok := urlPassword(lit); ok {
				name := n.name(urlVarBase(k), lit[start:end], s.Name, where)
				s.Env[k] = escapeDollars(lit[:start]) + "${" + name + "}" + escapeDollars(lit[end:])
			}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
			lit, ok := literalValue(s.Headers[k])
			if !ok || !secretHeader(k) {
				continue
			}
			prefix, cred := splitScheme(lit)
			if _, ok := literalValue(cred); !ok {
				continue
			}
			where := "servers." + registry.QuoteKey(s.Name) + ".headers." + registry.QuoteKey(k)
			name := n.name(headerVarBase(s.Name, k), cred, s.Name, where)
			s.Headers[k] = escapeDollars(prefix) + "${" + name + "}"
		}
		for j, a := range s.Args {
			if _, _, ok := urlPassword(a); ok {
				notes = append(notes, fmt.Sprintf("server %q: args[%d] is a URL with a password, which stays in hub.toml as written (mcphub does not expand variables in args); move it out by hand if the server can read it from its env", s.Name, j))
			}
		}
		if _, _, ok := urlPassword(s.URL); ok {
			notes = append(notes, fmt.Sprintf("server %q: url holds a password, which stays in hub.toml as written (mcphub does not expand variables in url); use an Authorization header with a ${VAR} if the server accepts one", s.Name))
		}
	}
	slices.SortFunc(n.secrets, func(a, b ImportedSecret) int { return strings.Compare(a.Var, b.Var) })
	for i := range n.secrets {
		slices.Sort(n.secrets[i].Servers)
	}
	return n.secrets, notes
}

// escapeDollars writes literal text as a registry value, where $ is $$.
func escapeDollars(s string) string { return strings.ReplaceAll(s, "$", "$$") }
