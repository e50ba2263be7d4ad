package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/internal/termtext"
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
	return registry.LoadExisting(a.configPath)
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
		return exitError{code: 1, why: errs.WriteText(a.stderr)}
	}
	return err
}

// captureWarnings runs f, which prints its warnings and notes on stderr, and
// returns them as well, one sentence each, for a --json answer; stderr
// still gets them as they were.
func (a *app) captureWarnings(f func()) []string {
	var buf bytes.Buffer
	saved := a.stderr
	a.stderr = io.MultiWriter(saved, &buf)
	defer func() { a.stderr = saved }()
	f()
	return termtext.Sentences(buf.String())
}

// completeServers completes a command's server NAME argument, for shell
// completion: the registry's servers that keep accepts (every one when keep
// is nil), each described by its kind and state. It reads the registry
// without creating it and completes nothing, silently, when the registry
// does not load. Only the first argument is a server name.
func (a *app) completeServers(keep func(*registry.Server) bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return a.serverCompletions(keep, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeServerFlag completes the value of a --server flag, as
// completeServers completes an argument; commands register it with
// cmd.RegisterFlagCompletionFunc("server", a.completeServerFlag(nil)).
func (a *app) completeServerFlag(keep func(*registry.Server) bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return a.serverCompletions(keep, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// serverCompletions are the names of the registry's servers that start with
// prefix and that keep accepts.
func (a *app) serverCompletions(keep func(*registry.Server) bool, prefix string) []cobra.Completion {
	reg, err := registry.LoadServing(a.configPath)
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, s := range reg.Servers {
		if !strings.HasPrefix(s.Name, prefix) || keep != nil && !keep(s) {
			continue
		}
		desc := string(s.Kind())
		if !s.Enabled {
			desc += ", disabled"
		}
		out = append(out, cobra.CompletionWithDesc(s.Name, desc))
	}
	return out
}

// enabledServer and disabledServer select servers for completion.
func enabledServer(s *registry.Server) bool  { return s.Enabled }
func disabledServer(s *registry.Server) bool { return !s.Enabled }
