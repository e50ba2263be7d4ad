package hubclient

import (
	"slices"

	"github.com/mcphub/mcphub/registry"
)

// Self is what tells this hub apart from an upstream in a client's file,
// so that neither import nor connect --move takes the hub for one of its
// own servers: the addresses it is known to listen on (listens), the one a
// running hub recorded in the data directory (serve --listen may differ),
// and its registry file, config.
func (l Locator) Self(config string, listens ...string) registry.Self {
	self := registry.Self{Listens: listens, Config: config}
	// A stale record errs on the side of never importing a hub.
	if info, err := ReadRunInfo(l.DataDir); err == nil && info.Listen != "" && !slices.Contains(self.Listens, info.Listen) {
		self.Listens = append(self.Listens, info.Listen)
	}
	return self
}

// ForImport is the hub an import into the registry reg must not take for
// an upstream, and the Target where it answers. With a registry, its
// listen address and the one a running hub recorded; without a registry
// file (reg nil, loaded true), the hub status would ask; when the registry
// does not load (loaded false), only the recorded address, and no Target.
// The built-in default address stands in when no address is known.
func (l Locator) ForImport(reg *registry.Registry, loaded bool) (registry.Self, *Target) {
	if reg != nil {
		tok, _ := Token(reg)
		t := l.For(reg, tok)
		return l.Self(reg.Path, reg.Hub.Listen), &t
	}
	var listens []string
	var at *Target
	if loaded {
		if t, err := l.Default(); err == nil {
			at = &t
			if t.Listen != "" {
				listens = append(listens, t.Listen)
			}
		}
	}
	self := l.Self(l.ConfigPath, listens...)
	if len(self.Listens) == 0 {
		self.Listens = []string{registry.DefaultListen}
	}
	return self, at
}

// Endpoint is where a client's entry points at the view v of the hub of
// reg: the endpoint's URL and, when [hub] auth = "token", the
// Authorization header with the hub's token (hasToken then says the entry
// holds it).
func (l Locator) Endpoint(reg *registry.Registry, v View) (url string, headers map[string]string, hasToken bool, err error) {
	tok, err := Token(reg)
	if err != nil {
		return "", nil, false, err
	}
	if tok != "" {
		headers = map[string]string{"Authorization": "Bearer " + tok}
	}
	return l.For(reg, tok).URL(v.Path()), headers, tok != "", nil
}
