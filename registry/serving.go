package registry

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

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
// and every other server in the same save is served. Problems outside any
// server's entry (TOML syntax, the [hub] table) still refuse the file, and
// the hub keeps its last good registry.
func ParseServing(path string, data []byte, lookupEnv func(string) (string, bool)) (*Registry, error) {
	reg, errs := parse(path, data, lookupEnv)
	if fatal := errs.filter(func(e *Error) bool { return e.server == "" }); len(fatal) > 0 {
		return nil, fatal
	}
	if len(errs) == 0 {
		return reg, nil
	}
	byServer := map[string][]string{}
	for _, e := range errs {
		byServer[e.server] = append(byServer[e.server], e.Error())
	}
	for _, s := range reg.Servers {
		if msgs := byServer[s.Name]; msgs != nil {
			s.Problem = strings.Join(msgs, "\n")
			delete(byServer, s.Name)
		}
	}
	// An entry that is not even a table has no Server yet: it still shows,
	// failed, under its name.
	for name, msgs := range byServer {
		reg.Servers = append(reg.Servers, &Server{Name: name, Enabled: true, Prefix: name,
			Share: ShareServer, ConnectTimeout: DefaultConnectTimeout, CallTimeout: DefaultCallTimeout,
			Problem: strings.Join(msgs, "\n")})
	}
	slices.SortFunc(reg.Servers, func(a, b *Server) int { return strings.Compare(a.Name, b.Name) })
	return reg, nil
}

// inheritance fills in each stdio server's EnvAllow and EnvDeny from its own
// entry and the [hub] table.
func inheritance(reg *Registry) {
	var secrets []string
	for _, s := range reg.Servers {
		if s.Kind() != KindStdio {
			continue
		}
		s.EnvAllow = slices.Compact(slices.Sorted(slices.Values(slices.Concat(reg.Hub.EnvPassthrough, s.EnvPassthrough))))
		switch {
		case s.InheritEnv:
			if secrets == nil {
				secrets = reg.SecretEnvNames()
			}
			s.EnvDeny = secrets
		case reg.Hub.TokenEnv != "":
			s.EnvDeny = []string{reg.Hub.TokenEnv}
		}
	}
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
