package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mcphub/mcphub/hub"
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

// fetchStatus asks the hub at the registry's listen address for its state.
func fetchStatus(ctx context.Context, reg *registry.Registry) (*hub.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	url := "http://" + reg.Hub.Listen + "/readyz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if tok, err := hubToken(reg); err == nil && tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w at %s", errNoHub, reg.Hub.Listen)
		}
		return nil, err
	}
	defer resp.Body.Close()
	var st hub.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("%s answered, but not with mcphub's status (HTTP %d): %w", reg.Hub.Listen, resp.StatusCode, err)
	}
	return &st, nil
}
