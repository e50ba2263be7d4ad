package registry

import (
	"maps"
	"slices"
)

// Vars lists, sorted and once each, the names of the environment variables
// a server entry refers to with ${NAME} in its env, headers, cwd and oauth
// client_secret: what the hub's environment must hold for the entry to be
// served. Malformed references are left to validation.
func (s ServerSpec) Vars() []string {
	return refs(s.Env, s.Headers, s.Cwd, s.OAuth.rawSecret())
}

// Vars lists, sorted and once each, the names of the environment variables
// the server's entry refers to with ${NAME}, as written in the file.
func (s *Server) Vars() []string {
	return refs(s.RawEnv, s.RawHeaders, s.RawCwd, s.OAuth.rawSecret())
}

// rawSecret is the client secret as written, "" without one.
func (o *OAuth) rawSecret() string {
	if o == nil {
		return ""
	}
	return o.RawClientSecret
}

// SecretEnvNames lists the variables of mcphub's own environment that a
// server inheriting the whole environment must not get: the hub's token
// variable and every variable some server's env, headers, cwd or oauth
// client_secret refers to,
// since those hold what the registry gives one server and not another.
func (r *Registry) SecretEnvNames() []string {
	seen := map[string]bool{r.Hub.TokenEnv: true}
	for _, s := range r.Servers {
		for _, n := range s.Vars() {
			seen[n] = true
		}
	}
	delete(seen, "")
	return slices.Sorted(maps.Keys(seen))
}

func refs(env, headers map[string]string, more ...string) []string {
	seen := map[string]bool{}
	note := func(v string) {
		_, unset, _ := expand(v, func(string) (string, bool) { return "", false })
		for _, n := range unset {
			seen[n] = true
		}
	}
	for _, v := range env {
		note(v)
	}
	for _, v := range headers {
		note(v)
	}
	for _, v := range more {
		note(v)
	}
	return slices.Sorted(maps.Keys(seen))
}
