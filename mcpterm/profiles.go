package mcpterm

import (
	"strings"

	"github.com/mcphub/mcphub/registry"
)

// Choice is one value a shell may complete, with what it is.
type Choice struct {
	Name, Desc string
}

// ProfileChoices are the values a --profile flag completes from prefix:
// the profiles of the registry at configPath, each described by its mode.
// It reads the registry without creating it, and has none, silently, when
// the registry does not load: a completion never prints an error.
func ProfileChoices(configPath, prefix string) []Choice {
	reg, err := registry.LoadServing(configPath)
	if err != nil {
		return nil
	}
	var out []Choice
	for _, p := range reg.Profiles {
		if strings.HasPrefix(p.Name, prefix) {
			out = append(out, Choice{Name: p.Name, Desc: p.Mode + " mode"})
		}
	}
	return out
}
