package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// LoadExisting is LoadServing for a command that only looks (list,
// status): it creates no registry, and returns nil, nil when there is no
// file at path, so that a machine without a registry stays as it is.
func LoadExisting(path string) (*Registry, error) {
	reg, err := LoadServing(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return reg, err
}

// LoadServing reads the registry at path for a running hub, as
// ParseServing parses it.
func LoadServing(path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return ParseServing(path, data, os.LookupEnv)
}

// ParseServing parses a registry for a running hub. Unlike Parse, a problem
// confined to one server's entry (an unset ${VAR}, a bad url, a prefix
// another server has) does not refuse the file: that server is kept with
// its Problem set, so the hub shows it failed with the reason and the fix,
// and every other server in the same save is served. So does a problem of
// one profile: that profile is kept, with what could be read of it, and its
// Problem set; the hub serves none of it. Problems outside any server's
// entry or profile (TOML syntax, the [hub] table, [overrides]) still refuse
// the file, and the hub keeps its last good registry.
func ParseServing(path string, data []byte, lookupEnv func(string) (string, bool)) (*Registry, error) {
	reg, errs := parse(path, data, lookupEnv)
	if fatal := errs.filter(func(e *Error) bool { return e.server == "" && !e.inProfile }); len(fatal) > 0 {
		return nil, fatal
	}
	if len(errs) == 0 {
		return reg, nil
	}
	byServer, ids := map[string][]string{}, map[string][]string{}
	byProfile, profileIDs := map[string][]string{}, map[string][]string{}
	for _, e := range errs {
		if e.inProfile {
			byProfile[e.profile] = append(byProfile[e.profile], e.Error())
			profileIDs[e.profile] = append(profileIDs[e.profile], e.Key+": "+e.Msg)
			continue
		}
		byServer[e.server] = append(byServer[e.server], e.Error())
		ids[e.server] = append(ids[e.server], e.Key+": "+e.Msg)
	}
	// parse keeps every profile, even one that is not a table.
	for _, p := range reg.Profiles {
		p.Problem, p.problemID = strings.Join(byProfile[p.Name], "\n"), strings.Join(profileIDs[p.Name], "\n")
	}
	for _, s := range reg.Servers {
		if msgs := byServer[s.Name]; msgs != nil {
			s.Problem, s.problemID = strings.Join(msgs, "\n"), strings.Join(ids[s.Name], "\n")
			delete(byServer, s.Name)
		}
	}
	// An entry that is not even a table has no Server yet: it still shows,
	// failed, under its name.
	for name, msgs := range byServer {
		reg.Servers = append(reg.Servers, &Server{Name: name, Enabled: true, Prefix: name,
			Share: ShareServer, ConnectTimeout: DefaultConnectTimeout, CallTimeout: DefaultCallTimeout,
			Problem: strings.Join(msgs, "\n"), problemID: strings.Join(ids[name], "\n")})
	}
	slices.SortFunc(reg.Servers, func(a, b *Server) int { return strings.Compare(a.Name, b.Name) })
	return reg, nil
}

// inheritance fills in each stdio server's EnvAllow and EnvDeny from its own
// entry and the [hub] table. A secret (see SecretEnvNames) set in mcphub's
// environment is denied to every server that would otherwise inherit it by
// a glob (env_passthrough = ["AWS_*"], or inherit_env): only a server whose
// own env refers to it, or whose passthrough names it exactly, gets it.
// Secrets that are not set are left out of EnvDeny, so adding or removing
// a reference to one does not restart servers whose environment it cannot
// change.
func inheritance(reg *Registry, lookup func(string) (string, bool)) {
	// The hub's own secrets go to no child, whatever its env settings:
	// its token, the key of a team's sealed grants, the store's URL (with
	// its password).
	// The store's password may also come from a reference in [store] url
	// or from the variables libpq's conventions give it.
	storeVars := refs(nil, nil, reg.Store.URL)
	hubSecret := func(n string) bool {
		return n == reg.Hub.TokenEnv || slices.Contains(HubSecretEnvs, n) || slices.Contains(storeVars, n)
	}
	var secrets []string
	for _, s := range reg.Servers {
		if s.Kind() != KindStdio {
			continue
		}
		s.EnvAllow = slices.Compact(slices.Sorted(slices.Values(slices.Concat(reg.Hub.EnvPassthrough, s.EnvPassthrough))))
		if secrets == nil {
			secrets = []string{}
			for _, n := range reg.SecretEnvNames() {
				if _, set := lookup(n); set || hubSecret(n) {
					secrets = append(secrets, n)
				}
			}
			for _, n := range slices.Concat(HubSecretEnvs, storeVars) {
				if !slices.Contains(secrets, n) {
					secrets = append(secrets, n)
				}
			}
		}
		var deny []string
		for _, n := range secrets {
			switch {
			case hubSecret(n):
				deny = append(deny, n)
			case slices.Contains(s.EnvAllow, n):
				// named exactly: the user asked for this one
			// In any case: Windows compares variable names without it
			// (the child's side does too), and a deny list errs on the
			// side of holding back.
			case s.InheritEnv || matchesAnyFold(s.EnvAllow, n):
				deny = append(deny, n)
			}
		}
		s.EnvDeny = deny
	}
}

// matchesAny reports whether one of the globs matches name (the globs were
// checked when they were read).
func matchesAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// matchesAnyFold is matchesAny without regard to case.
func matchesAnyFold(globs []string, name string) bool {
	name = strings.ToUpper(name)
	for _, g := range globs {
		if ok, _ := path.Match(strings.ToUpper(g), name); ok {
			return true
		}
	}
	return false
}

// globs reads a list of path.Match patterns, reporting each bad one.
func (t *table) globs(key string, dst *[]string) {
	if !t.strs(key, dst) {
		return
	}
	for _, pat := range *dst {
		if msg := checkGlob(pat); msg != "" {
			t.errf(key, "%s", msg)
		}
	}
}

// The variables of mcphub's own secrets besides its token: no server gets
// them, whatever its env_passthrough or inherit_env says.
const (
	// SecretKeyEnv holds the keys a team hub's OAuth grants are sealed
	// under; SecretKeyFileEnv names a file holding them.
	SecretKeyEnv     = "MCPHUB_SECRET_KEY"
	SecretKeyFileEnv = "MCPHUB_SECRET_KEY_FILE"
	// StoreEnv is the store's URL, password included.
	StoreEnv = "MCPHUB_STORE"
)

// HubSecretEnvs are those variables, with those PostgreSQL's clients read
// a store's password from.
var HubSecretEnvs = []string{SecretKeyEnv, SecretKeyFileEnv, StoreEnv, "PGPASSWORD", "PGPASSFILE", "PGSSLPASSWORD"}
