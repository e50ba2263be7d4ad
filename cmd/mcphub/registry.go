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

// hubTarget is where a running hub answers and the token it wants.
type hubTarget struct {
	listen string
	token  string
}

// target finds the running hub: at the registry's listen address, or, when
// the registry does not load (the hub keeps its last good one), at the
// address the hub recorded in the data directory. Registry problems are
// printed, not fatal: status must work precisely when the file is broken.
func (a *app) target() (hubTarget, *registry.Registry, error) {
	reg, err := a.loadRegistry()
	if err == nil {
		tok, _ := hubToken(reg)
		return hubTarget{listen: reg.Hub.Listen, token: tok}, reg, nil
	}
	fmt.Fprintf(a.stderr, "the registry does not load:\n")
	a.printRegistryErrors(err)
	info, ierr := readRunInfo(a.dataDir)
	if ierr != nil {
		return hubTarget{}, nil, exitError{code: 1}
	}
	return hubTarget{listen: info.Listen}, nil, nil
}

// fetchStatus asks the hub at t for its state.
func fetchStatus(ctx context.Context, t hubTarget) (*hub.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	url := "http://" + t.listen + "/readyz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w at %s", errNoHub, t.listen)
		}
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusServiceUnavailable:
	case http.StatusUnauthorized:
		return nil, fmt.Errorf("the hub at %s requires a bearer token: set $MCPHUB_TOKEN or [hub] token_file to the hub's token", t.listen)
	default:
		return nil, fmt.Errorf("the hub at %s answered HTTP %d", t.listen, resp.StatusCode)
	}
	var st hub.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("%s answered, but not with mcphub's status (HTTP %d): %w", t.listen, resp.StatusCode, err)
	}
	return &st, nil
}
