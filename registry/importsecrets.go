package registry

import (
	"crypto/subtle"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
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

// secretEnvKey reports whether an env key names a secret: one of its word
// parts (split at _, -, ., digits and camelCase humps) is a secret word,
// and its last part does not say it is something about the secret.
func secretEnvKey(key string) bool {
	words := keyWords(key)
	if len(words) == 0 || !slices.ContainsFunc(words, func(w string) bool { return secretWords[w] }) {
		return false
	}
	last := words[len(words)-1]
	return secretWords[last] || !notSecretLast[last]
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
// when it is too plain to be a secret (empty, a boolean or 0/1).
func literalValue(v string) (lit string, ok bool) {
	lit, unset, err := expand(v, func(string) (string, bool) { return "", false })
	if err != nil || len(unset) > 0 || strings.Contains(lit, "${") {
		return "", false
	}
	switch strings.ToLower(strings.TrimSpace(lit)) {
	case "", "true", "false", "yes", "no", "0", "1":
		return "", false
	}
	return lit, true
}

// secretNamer gives each distinct literal secret its own variable.
type secretNamer struct {
	lookup  func(string) (string, bool)
	values  map[string]string // variable → the literal it stands for
	secrets []ImportedSecret
}

// name is the variable for value: base, or base_2, base_3... when another
// literal of the import took base already.
func (n *secretNamer) name(base, value, server, where string) string {
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = base + "_" + strconv.Itoa(i)
		}
		have, taken := n.values[name]
		if taken && subtle.ConstantTimeCompare([]byte(have), []byte(value)) != 1 {
			continue
		}
		if taken {
			for j := range n.secrets {
				if s := &n.secrets[j]; s.Var == name && !slices.Contains(s.Servers, server) {
					s.Servers = append(s.Servers, server)
				}
			}
			return name
		}
		n.values[name] = value
		sec := ImportedSecret{Var: name, Where: where, Servers: []string{server}}
		if n.lookup != nil {
			if env, ok := n.lookup(name); ok {
				sec.Env = SecretDifferent
				if subtle.ConstantTimeCompare([]byte(env), []byte(value)) == 1 {
					sec.Env = SecretSame
				}
			}
		}
		n.secrets = append(n.secrets, sec)
		return name
	}
}

// replaceSecrets rewrites, in place, every literal secret of the specs'
// env (keys that name a secret, see secretEnvKey) and headers (see
// secretHeader) as a ${VAR} reference, and returns the variables, sorted.
// An env value moves to a variable named after its key; a header value to
// one named after the server and the header, keeping an Authorization
// scheme ("Bearer ") literal. Two different literals that would share a
// name get distinct ones (NAME_2); equal literals share one.
func replaceSecrets(specs []ServerSpec, lookup func(string) (string, bool)) []ImportedSecret {
	n := &secretNamer{lookup: lookup, values: map[string]string{}}
	for i := range specs {
		s := &specs[i]
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			lit, ok := literalValue(s.Env[k])
			if !ok || !secretEnvKey(k) {
				continue
			}
			where := "servers." + quoteKey(s.Name) + ".env." + quoteKey(k)
			s.Env[k] = "${" + n.name(envVarName(k), lit, s.Name, where) + "}"
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
			where := "servers." + quoteKey(s.Name) + ".headers." + quoteKey(k)
			name := n.name(headerVarBase(s.Name, k), cred, s.Name, where)
			s.Headers[k] = strings.ReplaceAll(prefix, "$", "$$") + "${" + name + "}"
		}
	}
	slices.SortFunc(n.secrets, func(a, b ImportedSecret) int { return strings.Compare(a.Var, b.Var) })
	for i := range n.secrets {
		slices.Sort(n.secrets[i].Servers)
	}
	return n.secrets
}
