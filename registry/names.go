package registry

// The rules below are hub.toml's: what a server or variable name may be and
// how a key is written. They are exported for the client-config room
// (clientconf), which turns another client's entries into ServerSpecs that
// must follow the same rules, so that there is one copy of each rule.

// ValidEnvName reports whether name may appear in ${NAME} in hub.toml.
func ValidEnvName(name string) bool { return validEnvName(name) }

// NormalizeName maps any string to a valid server name: lowercase, runs of
// other characters become one '-', trimmed, at most 32 characters. It
// returns "" when nothing usable is left.
func NormalizeName(s string) string { return normalizeName(s) }

// QuoteKey writes a TOML key bare when TOML allows it and quoted
// otherwise, as hub.toml's edits write it.
func QuoteKey(k string) string { return quoteKey(k) }

// IsBareKeyByte reports whether c may appear in a bare TOML key: an ASCII
// letter, digit, '_' or '-'.
func IsBareKeyByte(c byte) bool { return isBare(c) }

// MCPRemoteURL is the URL an mcp-remote bridge connects to: the first
// http(s) URL among the arguments after "mcp-remote" or
// "mcp-remote@VERSION"; "" when args runs no mcp-remote.
func MCPRemoteURL(args []string) string { return mcpRemoteURL(args) }

// CheckServerName returns why name is not a valid server name, with a
// suggestion, or "" when it is valid: what AddServer would refuse.
func CheckServerName(name string) string { return checkName(name) }

// EncodeServer writes a spec as the [servers.NAME] block AddServer would
// add, so that a caller can check that a spec it built encodes before it
// writes anything.
func EncodeServer(s ServerSpec) (string, error) { return encodeServer(s) }
