package main

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/mcphub/mcphub/registry"
)

// ensureRegistry creates the registry from the built-in default when there is
// none yet, and says where, so the user knows which file to edit. It holds
// the registry's edit lock while it does, so that concurrent first commands
// (several `mcphub add` at once on a new machine) neither read a half-written
// file nor lose their edits to the default text. Commands that only look at
// the registry (list, status) do not call it; see loadExistingRegistry.
func (a *app) ensureRegistry() error {
	created, err := registry.EnsureExistsLocked(a.configPath)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(a.stderr, "mcphub: created a new registry at %s\n", a.configPath)
	}
	return nil
}

// loadRegistry reads and validates the registry, creating it first if needed.
func (a *app) loadRegistry() (*registry.Registry, error) {
	if err := a.ensureRegistry(); err != nil {
		return nil, err
	}
	return registry.LoadServing(a.configPath)
}

// loadExistingRegistry reads and validates the registry without creating
// it: commands that only look (list, status) leave a machine without a
// registry as it is. It returns nil, nil when there is no registry file.
func (a *app) loadExistingRegistry() (*registry.Registry, error) {
	reg, err := registry.LoadServing(a.configPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return reg, err
}

// noRegistryHint says that the registry does not exist yet and which
// commands create it.
func (a *app) noRegistryHint() string {
	return fmt.Sprintf("there is no registry at %s yet; `mcphub add NAME -- COMMAND [ARGS...]` or `mcphub serve` creates it", a.configPath)
}

// printRegistryErrors prints every problem of a registry, one per line, and
// returns the error that makes the command exit 1.
func (a *app) printRegistryErrors(err error) error {
	var errs registry.Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			fmt.Fprintln(a.stderr, e)
		}
		return exitError{code: 1}
	}
	return err
}

// statusTimeout bounds asking a hub that may not be running.
const statusTimeout = 2 * time.Second

// errNoHub means no hub answers at the registry's listen address.
var errNoHub = errors.New("no mcphub is running")
