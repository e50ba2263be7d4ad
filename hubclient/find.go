package hubclient

import (
	"fmt"
	"os"

	"github.com/mcphub/mcphub/registry"
)

// Default is where the hub of the built-in default registry answers, for
// a command that asks a hub without creating the registry at
// l.ConfigPath when there is none: the live hub recorded in the data
// directory (one serving another registry), else the default address.
func (l Locator) Default() (Target, error) {
	reg, err := registry.Parse(l.ConfigPath, registry.DefaultRegistry(), os.LookupEnv)
	if err != nil {
		return Target{}, fmt.Errorf("the built-in default registry: %w", err)
	}
	tok, _ := Token(reg)
	return l.For(reg, tok), nil
}

// Recorded is the hub recorded in the data directory, sent no token: the
// live one holding it, else the last one that did. A command whose
// registry does not load asks it, as the hub keeps its last good
// registry. err says no hub was ever recorded there.
func (l Locator) Recorded() (Target, error) {
	info := LiveRunInfo(l.DataDir)
	if info == nil {
		var err error
		if info, err = ReadRunInfo(l.DataDir); err != nil {
			return Target{}, err
		}
	}
	return RunTarget(info, ""), nil
}
