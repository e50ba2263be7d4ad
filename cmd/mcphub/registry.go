package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcphub/mcphub/registry"
)

// ensureRegistry creates the registry from the built-in default when there is
// none yet, and says where, so the user knows which file to edit.
func (a *app) ensureRegistry() error {
	created, err := registry.EnsureExists(a.configPath)
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
	return registry.Load(a.configPath)
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
