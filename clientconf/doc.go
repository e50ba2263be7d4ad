// Package clientconf owns AI clients' MCP config files: Claude Code,
// Claude Desktop, Cursor, VS Code, Windsurf, Gemini CLI, Zed and Codex.
// It is the one place that knows where each client keeps its servers, the
// shape of an entry there, and how to read and edit those files without
// harming anything else in them.
//
// # Locating
//
// Lookup names a client as mcphub connect spells it; Client.Path is the
// file that client reads on this OS for this user (Zed's and Codex's
// environment variables included), Client.Key the member or table that
// holds its servers and Client.Format how the file is written.
//
// # Reading
//
// Import turns a client's file (JSON with comments and trailing commas,
// Claude Code's per-project lists, Zed's older command object, Codex's
// config.toml) into registry.ServerSpecs for hub.toml: names made valid,
// variables in mcphub's ${VAR} form, literal secrets replaced by variables
// (ImportResult.Secrets), entries that point at the hub itself skipped
// (registry.PointsAtHub) and everything that cannot be mapped described in
// notes. ImportResult.DisableUnset disables the servers that need a
// variable the hub's environment lacks.
//
// # Writing
//
// Hub.Entry builds the entry that points a client at the hub (its HTTP
// endpoint, or a stdio entry that runs mcphub by its absolute path). Write
// adds it to the client's file or brings it up to date, changing only the
// members mcphub writes: JSON and JSONC are edited through hujson's syntax
// tree, so comments, trailing commas, indentation and member order stay;
// Codex's TOML is edited as text, table by table, and decoded again after
// every edit. The result is parsed once more and checked before the old
// file is kept beside it as FILE.mcphub-backup-<UTC time> and the new one
// renamed over it; a symlink stays a link and a byte order mark stays.
//
// # Moving
//
// With a Move, Write also removes the entries the hub now serves (the same
// command, args, env and working directory, or the same URL and headers)
// and older entries for the same view of the hub, and says why it kept each
// other entry. No note or error holds an env or header value.
//
// # Saying what was done
//
// AddImported writes imported servers into hub.toml and reports what it
// did (ImportReport, import's --json answer); UnsetVars.Note and Warning
// word why a server was disabled. Result.WriteText and WriteJSON print
// what Write did, Client.WriteEntry the entry a person pastes. The CLI
// calls these and prints nothing of its own about a client's file.
//
// # What it may import
//
// registry (the hub.toml model), hujson, BurntSushi/toml and internal/...
// packages. It never imports hub/, client/, bridge/ or cmd/: it edits
// files and never talks to a running hub; the CLI asks the hub what it
// needs to know (its listen address, its environment) and passes it in.
package clientconf
