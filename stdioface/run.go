package stdioface

import (
	"context"
	"io"
	"log/slog"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
)

// Config is what `mcphub stdio` knows when it starts the face: the
// registry and data directory it was given, the mcphub executable that can
// serve a hub, the endpoint the client asked for, and the process's
// streams. The command loads the registry and reports its problems; the
// face takes it as it loaded.
type Config struct {
	// ConfigPath is hub.toml's path and DataDir the hub's data directory:
	// a hub started in the background serves these, and a hub found
	// running must serve this registry to get its token.
	ConfigPath, DataDir string
	// Registry is the registry as it loaded, nil when it does not: a
	// running hub keeps its last good registry and may still serve, but
	// none can be started.
	Registry *registry.Registry
	// Executable is the mcphub binary started as `mcphub serve` when no
	// hub answers (usually os.Executable()).
	Executable string
	// View is the endpoint relayed to: every server (/mcp), one server or
	// a profile.
	View hubclient.View
	// In and Out carry the client's MCP messages; Stderr gets the one line
	// saying a hub was started in the background.
	In          io.Reader
	Out, Stderr io.Writer
	// Log receives the face's diagnostics (on standard error).
	Log *slog.Logger
}

// Run finds the hub serving cfg's registry or starts one in the
// background, then relays the client on cfg.In and cfg.Out to cfg.View's
// endpoint until stdin ends or ctx ends, both of which return nil, or
// until the hub is lost for good. A hub this call started is started again
// when it dies. Process-wide signal handling (ending ctx on an interrupt,
// ignoring SIGPIPE so a dead client's stdout fails with EPIPE) is the
// caller's: mcphub stdio sets it up before it loads the registry.
func Run(ctx context.Context, cfg Config) error {
	// The finder reads the registry's token again whenever the face looks
	// for the hub, so a reconnect sends the token in force now.
	finder, err := NewFinder(cfg)
	if err != nil {
		return err
	}
	t, started, err := finder.ensure(ctx)
	if err != nil {
		return err
	}
	o := Options{Find: finder.Find, Hub: t, Path: cfg.View.Path(), In: cfg.In, Out: cfg.Out, Log: cfg.Log}
	if started {
		o.Revive = func(ctx context.Context) error {
			_, _, err := finder.ensure(ctx)
			return err
		}
	}
	return Relay(ctx, o)
}
