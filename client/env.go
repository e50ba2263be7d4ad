package client

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
)

// The environment of a stdio server.
//
// A stdio server gets, from mcphub's own environment, only what it needs to
// run and to reach the network:
//
//   - the safe set, on every OS: PATH, HOME, USER, LOGNAME, SHELL, LANG,
//     LC_*, TZ, TMPDIR, TEMP, TMP, XDG_*, NODE_EXTRA_CA_CERTS,
//     SSL_CERT_FILE, SSL_CERT_DIR, REQUESTS_CA_BUNDLE, and the proxy
//     variables HTTP_PROXY, HTTPS_PROXY, NO_PROXY and ALL_PROXY spelled in
//     any case (http_proxy, https_proxy, ...); on Windows also PATHEXT,
//     SystemRoot, SystemDrive, windir, ComSpec, USERNAME, USERPROFILE,
//     HOMEDRIVE, HOMEPATH, APPDATA, LOCALAPPDATA, ProgramData and
//     ProgramFiles (safeEnv in stdio_unix.go and stdio_windows.go);
//   - the variables Config.EnvPassthrough names (path.Match globs such as
//     "AWS_*");
//   - with Config.InheritEnv, every variable;
//
// except those Config.EnvDeny names beyond the safe set, which are never
// inherited (the safe set always is). Then it gets
// Config.Env, which always wins: a variable of the same name inherited from
// mcphub is dropped for it.
//
// On Windows names compare without regard to case, as Windows compares them
// ("Path" is PATH); elsewhere they compare exactly, except the proxy
// variables, which tools read in either case, and EnvDeny, which holds back
// a variable in whatever case it is spelled: a deny list errs on the side of
// holding back.
//
// Whatever a server inherits beyond the safe set (through EnvPassthrough or
// InheritEnv) may be a credential, so its value is masked like the values of
// Config.Env in what the server says (stderr, errors); so is a password in a
// proxy URL.

// proxyEnv are the proxy variables of the safe set, on every OS. They match
// in any case: curl reads http_proxy only in lower case, npm and Python read
// either.
var proxyEnv = []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"}

// hubEnviron reads mcphub's own environment. Tests replace it to give a
// server an exact environment without changing the process's.
var hubEnviron = os.Environ

// envPolicy decides which of mcphub's variables a stdio server inherits.
type envPolicy struct {
	safe        []string // globs of the safe set besides proxyEnv
	foldCase    bool     // names compare without regard to case (Windows)
	passthrough []string // Config.EnvPassthrough
	inheritAll  bool     // Config.InheritEnv
	deny        []string // Config.EnvDeny
}

// policyFor is the policy of cfg on this OS. A malformed glob in
// EnvPassthrough or EnvDeny is an error: a deny pattern that matches
// nothing by mistake would leak what it was meant to hold back.
func policyFor(cfg *Config) (envPolicy, error) {
	for _, list := range []struct {
		field    string
		patterns []string
	}{{"EnvPassthrough", cfg.EnvPassthrough}, {"EnvDeny", cfg.EnvDeny}} {
		for _, p := range list.patterns {
			if _, err := path.Match(p, ""); err != nil {
				return envPolicy{}, fmt.Errorf("%s pattern %q: %w", list.field, p, err)
			}
		}
	}
	return envPolicy{
		safe:        safeEnv,
		foldCase:    envFoldCase,
		passthrough: cfg.EnvPassthrough,
		inheritAll:  cfg.InheritEnv,
		deny:        cfg.EnvDeny,
	}, nil
}

// inSafeSet reports whether name is one of the safe set.
func (p envPolicy) inSafeSet(name string) bool {
	return matchAny(p.safe, name, p.foldCase) || matchAny(proxyEnv, name, true)
}

// inherits reports whether a variable of mcphub's named name reaches the
// server, and whether it does so only because the configuration asked for
// it (EnvPassthrough or InheritEnv), which makes its value a possible
// secret.
func (p envPolicy) inherits(name string) (ok, secret bool) {
	if name == "" {
		return false, false
	}
	// The safe set is what any program needs to run; a server entry that
	// refers to ${PATH} or ${HOME} puts them among the registry's secrets,
	// and denying them would leave every inherit_env server without a PATH.
	if p.inSafeSet(name) {
		return true, false
	}
	if matchAny(p.deny, name, true) {
		return false, false
	}
	if p.inheritAll || matchAny(p.passthrough, name, p.foldCase) {
		return true, true
	}
	return false, false
}

// build returns the server's environment from mcphub's (hub, as
// os.Environ gives it) and the registry's (extra): the inherited variables
// in hub's order, then extra sorted by name. secrets are the values to mask
// in what the server says besides extra's.
func (p envPolicy) build(hub []string, extra map[string]string) (env, secrets []string) {
	given := make(map[string]bool, len(extra))
	for k := range extra {
		given[p.key(k)] = true
	}
	env = make([]string, 0, len(extra)+16)
	for _, kv := range hub {
		name, value, ok := splitEnv(kv)
		if !ok || given[p.key(name)] {
			continue
		}
		in, secret := p.inherits(name)
		if !in {
			continue
		}
		env = append(env, kv)
		if secret {
			secrets = append(secrets, value)
		}
		if c := URLCredential(value); c != "" {
			secrets = append(secrets, c)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		env = append(env, k+"="+extra[k])
	}
	return env, secrets
}

// key is name as the OS compares it; a proxy variable compares in any case
// everywhere, so that the registry's HTTPS_PROXY replaces an inherited
// https_proxy rather than sitting beside it (curl reads the lower case).
func (p envPolicy) key(name string) string {
	if p.foldCase || matchAny(proxyEnv, name, true) {
		return strings.ToUpper(name)
	}
	return name
}

// childEnv is the environment a stdio server of cfg gets, given mcphub's
// own (hub), and the inherited values to treat as secrets; see the comment
// at the top of this file.
func childEnv(cfg *Config, hub []string) (env, secrets []string, err error) {
	p, err := policyFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	env, secrets = p.build(hub, cfg.Env)
	return env, secrets, nil
}

// splitEnv splits one "NAME=value" entry. The name is looked for from the
// second byte on: Windows keeps per-drive directories under names that
// start with "=" ("=C:=C:\work").
func splitEnv(kv string) (name, value string, ok bool) {
	if len(kv) < 2 {
		return "", "", false
	}
	i := strings.IndexByte(kv[1:], '=')
	if i < 0 {
		return "", "", false
	}
	return kv[:i+1], kv[i+2:], true
}

// matchAny reports whether name matches one of the globs, in any case when
// fold is set. The globs were checked by policyFor (or are the fixed lists),
// so a match error is no match.
func matchAny(globs []string, name string, fold bool) bool {
	if fold {
		name = strings.ToUpper(name)
	}
	for _, g := range globs {
		if fold {
			g = strings.ToUpper(g)
		}
		if ok, err := path.Match(g, name); err == nil && ok {
			return true
		}
	}
	return false
}

// URLCredential is the credential a URL value holds, to keep out of what
// others see: its password ("http://user:pass@proxy:3128", or without a
// scheme, "user:pass@proxy:3128", which curl accepts too), else its user
// name, which some proxies take a token as ("http://token@proxy:8080");
// the whole value when it has an "@" but does not parse; "" for none.
func URLCredential(value string) string {
	if !strings.Contains(value, "@") {
		return ""
	}
	raw := value
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return value
	case u.User == nil:
		return ""
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		return pw
	}
	return u.User.Username()
}
