// Package registry owns hub.toml, the user's one list of MCP servers: the TOML
// model, parsing with file:line:column errors, validation and defaults, the diff
// of two registries, watching the file for changes (debounced, keeping the last
// good registry when a save does not parse) and atomic edits for the add and
// remove commands. It opens no sockets and starts no processes.
//
// # Reading
//
// Load and Parse return a *Registry with every default filled in and every
// ${VAR} in env, headers and cwd expanded, or an Errors value that lists
// every problem with its position (file:line:col: key: message), so that a
// validate command can show them all at once. Positions come from a small
// locator over the raw text, because the TOML library keeps key positions
// private. The file is decoded into plain maps and checked key by key, which
// keeps keys case-sensitive and reports every type mismatch, not just the
// first. LoadExisting reads without creating the file. Validate sums up
// what mcphub validate found (a Validation, its --json answer), and
// Errors.WriteText prints every problem and says the fix in one sentence.
//
// # Changes
//
// Diff compares two registries by name: Server.Hash covers what needs a new
// connection, and the other settings (enabled, prefix, allow, deny,
// call_timeout) show up as Toggled. Watch reports each settled change of the
// file to a callback; the caller keeps its last good registry when a report
// carries an error.
//
// # Editing
//
// AddServer, RemoveServer and SetEnabled edit the file as text, so comments
// and layout survive, and write it atomically only when the result is valid.
// Target reads the flags of a command line that names one server (--url,
// --header, --env, ... and the command after --) into a ServerSpec, for add
// and for probe.
// Reading other AI clients' config files into ServerSpecs lives in the
// clientconf package; PointsAtHub, which tells an entry that is the hub
// itself apart from an upstream, stays here because the hub uses it too.
//
// # Secrets
//
// Env and header values are secrets. Server's String, GoString and LogValue
// print their keys with ***, and no error message contains a value.
package registry
