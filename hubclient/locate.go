package hubclient

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/mcphub/mcphub/registry"
)

// Locator finds the hub of one registry (ConfigPath, --config) and one
// data directory (DataDir, --data-dir): the live hub holding the data
// directory, when it serves that registry, else the registry's own listen
// address.
type Locator struct {
	ConfigPath string
	DataDir    string
}

// For is where the hub for reg answers, with token, the registry's token
// (see Token). A live hub holding the data directory and serving this
// registry is asked where it recorded it listens, whatever the registry's
// listen says: serve --listen, or port 0, puts it elsewhere. Without one,
// the registry's listen address. A live hub serving another registry never
// gets this registry's token: the registry's own address is asked, without
// the token when that hub listens there too, and NoteServed says which
// registry that hub serves.
func (l Locator) For(reg *registry.Registry, token string) Target {
	info := LiveRunInfo(l.DataDir)
	switch {
	case info == nil:
		return TargetOf(reg.Hub, token)
	case l.Serves(info):
		return RunTarget(info, token)
	}
	return OwnTarget(reg.Hub, token, info)
}

// Serves reports whether the hub that recorded info serves the locator's
// registry. A record without a registry (written by an older mcphub) is
// taken for this registry's: nothing says otherwise.
func (l Locator) Serves(info *RunInfo) bool {
	return info.Config == "" || l.IsConfig(info.Config)
}

// IsConfig reports whether path names the locator's registry: the same
// absolute path, or the same file reached another way (a symlink, say).
func (l Locator) IsConfig(path string) bool {
	served, err1 := filepath.Abs(path)
	config, err2 := filepath.Abs(l.ConfigPath)
	return err1 == nil && err2 == nil && registry.SamePath(served, config)
}

// NoteServed says on w when the live hub holding the data directory serves
// another registry than the locator's: either the hub t found is that one,
// and what a command shows is that registry's, or the command asked its own
// registry's address instead.
func (l Locator) NoteServed(w io.Writer, t Target) {
	if t.Served == "" || l.IsConfig(t.Served) {
		return
	}
	if t.ServedAt == "" || SameAddress(t.ServedAt, t.Listen) {
		fmt.Fprintf(w, "note: the hub running at %s serves another registry, %s, not %s; stop it, or pass --config %s\n",
			t.Listen, t.Served, l.ConfigPath, t.Served)
		return
	}
	fmt.Fprintf(w, "note: the hub holding %s, at %s, serves another registry, %s, not %s, so this command asked %s, the listen address of %s; to reach that hub, pass --config %s\n",
		l.DataDir, t.ServedAt, t.Served, l.ConfigPath, t.Listen, l.ConfigPath, t.Served)
}
