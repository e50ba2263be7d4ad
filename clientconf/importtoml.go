package clientconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mcphub/mcphub/registry"
)

// errNoCodexServers means a TOML file has no [mcp_servers] table.
var errNoCodexServers = errors.New(`registry: import: no [mcp_servers] table; expected a Codex config.toml`)

// codexExtraField carries, inside a translated Codex entry, the settings
// that have no field in the JSON clients' shape. Its name cannot be a JSON
// client's field.
const codexExtraField = "\x00codex"

// codexKeys are the keys of a Codex [mcp_servers.NAME] table that the
// importer maps.
var codexKeys = []string{"command", "args", "env", "cwd", "url", "http_headers", "env_http_headers",
	"bearer_token_env_var", "bearer_token", "enabled", "env_vars", "enabled_tools", "disabled_tools",
	"startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec"}

// codexExtra is what codexExtraField holds.
type codexExtra struct {
	EnvVars        json.RawMessage `json:"env_vars,omitempty"`
	StartupSec     json.RawMessage `json:"startup_timeout_sec,omitempty"`
	StartupMS      json.RawMessage `json:"startup_timeout_ms,omitempty"`
	ToolTimeoutSec json.RawMessage `json:"tool_timeout_sec,omitempty"`
	Unknown        []string        `json:"unknown,omitempty"`
	BadHeaders     []string        `json:"bad_headers,omitempty"`
	BearerConflict bool            `json:"bearer_conflict,omitempty"`
}

// codexEntries reads the [mcp_servers.NAME] tables of a Codex config.toml
// and translates each into the JSON entry shape the other clients use:
// http_headers, env_http_headers (header = "VAR") and bearer_token_env_var
// become headers with ${VAR} references, enabled_tools and disabled_tools
// become includeTools and excludeTools, and the rest travels in
// codexExtraField.
func codexEntries(data []byte) (map[string]json.RawMessage, error) {
	var top map[string]any
	if err := toml.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("registry: import: %w", err)
	}
	list, ok := top["mcp_servers"]
	if !ok {
		return nil, errNoCodexServers
	}
	tables, ok := list.(map[string]any)
	if !ok {
		return nil, errors.New("registry: import: mcp_servers is not a table")
	}
	out := make(map[string]json.RawMessage, len(tables))
	for name, v := range tables {
		e, ok := v.(map[string]any)
		if !ok {
			out[name] = json.RawMessage(`null`)
			continue
		}
		raw, err := json.Marshal(codexEntry(e))
		if err != nil {
			// A value JSON cannot hold (a NaN float): the entry is
			// reported as not an object.
			raw = json.RawMessage(`null`)
		}
		out[name] = raw
	}
	return out, nil
}

// codexEntry translates one [mcp_servers.NAME] table.
func codexEntry(e map[string]any) map[string]any {
	f := map[string]any{}
	var x codexExtra
	for _, k := range slices.Sorted(maps.Keys(e)) {
		if !slices.Contains(codexKeys, k) {
			x.Unknown = append(x.Unknown, k)
		}
	}
	for _, k := range []string{"command", "args", "env", "cwd", "url"} {
		if v, ok := e[k]; ok {
			f[k] = v
		}
	}
	if v, ok := e["enabled"]; ok {
		f["enabled"] = v
	}
	if v, ok := e["enabled_tools"]; ok {
		f["includeTools"] = v
	}
	if v, ok := e["disabled_tools"]; ok {
		f["excludeTools"] = v
	}
	if h := codexHeaders(e, &x); h != nil {
		f["headers"] = h
	}
	x.EnvVars = rawOf(e["env_vars"])
	x.StartupSec, x.StartupMS = rawOf(e["startup_timeout_sec"]), rawOf(e["startup_timeout_ms"])
	x.ToolTimeoutSec = rawOf(e["tool_timeout_sec"])
	f[codexExtraField] = x
	return f
}

// codexHeaders merges http_headers, env_http_headers and the bearer token
// settings into one header map, or returns http_headers as it is when that
// is not a table (the importer then says so).
func codexHeaders(e map[string]any, x *codexExtra) any {
	static, isTable := e["http_headers"].(map[string]any)
	if e["http_headers"] != nil && !isTable {
		return e["http_headers"]
	}
	h := map[string]any{}
	maps.Copy(h, static)
	if fromEnv, ok := e["env_http_headers"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(fromEnv)) {
			if v, ok := fromEnv[k].(string); ok && registry.ValidEnvName(v) {
				h[k] = "${" + v + "}"
			} else {
				x.BadHeaders = append(x.BadHeaders, k)
			}
		}
	}
	bearer := ""
	if v, ok := e["bearer_token_env_var"].(string); ok && registry.ValidEnvName(v) {
		bearer = "Bearer ${" + v + "}"
	} else if v, ok := e["bearer_token"].(string); ok && v != "" {
		bearer = "Bearer " + v
	}
	if bearer != "" {
		if _, ok := h["Authorization"]; ok {
			x.BearerConflict = true
		} else {
			h["Authorization"] = bearer
		}
	}
	if len(h) == 0 {
		return nil
	}
	return h
}

func rawOf(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// codexExtras applies what codexExtraField carries.
func (im *importer) codexExtras(raw json.RawMessage, s *registry.ServerSpec) {
	var x codexExtra
	if err := json.Unmarshal(raw, &x); err != nil {
		return
	}
	for _, k := range x.Unknown {
		im.note("field %q has no mcphub equivalent; ignored", k)
	}
	for _, k := range x.BadHeaders {
		im.note("env_http_headers.%s does not name a variable; ignored", k)
	}
	if x.BearerConflict {
		im.note("has both bearer_token_env_var and an Authorization header; kept the header")
	}
	if x.EnvVars != nil {
		im.envVars(x.EnvVars, s)
	}
	if d, ok := im.seconds("startup_timeout_sec", x.StartupSec, time.Second); ok {
		s.ConnectTimeout = d
	} else if d, ok := im.seconds("startup_timeout_ms", x.StartupMS, time.Millisecond); ok {
		s.ConnectTimeout = d
	}
	if d, ok := im.seconds("tool_timeout_sec", x.ToolTimeoutSec, time.Second); ok {
		s.CallTimeout = d
	}
}

// envVars maps env_vars, the names of variables Codex forwards from its own
// environment, to env_passthrough.
func (im *importer) envVars(raw json.RawMessage, s *registry.ServerSpec) {
	var items []any
	if err := json.Unmarshal(raw, &items); err != nil {
		im.note("env_vars is not a list; ignored")
		return
	}
	for _, it := range items {
		name := ""
		switch v := it.(type) {
		case string:
			name = v
		case map[string]any:
			name, _ = v["name"].(string)
			if src, _ := v["source"].(string); src != "" && src != "local" {
				im.note("env_vars %q comes from the %s environment in Codex; mcphub passes its own", name, src)
			}
		}
		if !registry.ValidEnvName(name) {
			im.note("env_vars holds an entry that is not a variable name; ignored")
			continue
		}
		if s.Command == "" {
			im.note("env_vars on a remote server has no meaning; ignored")
			return
		}
		if !slices.Contains(s.EnvPassthrough, name) {
			s.EnvPassthrough = append(s.EnvPassthrough, name)
		}
	}
}

// seconds reads a positive timeout counted in unit, capped at a day.
func (im *importer) seconds(key string, raw json.RawMessage, unit time.Duration) (time.Duration, bool) {
	if raw == nil {
		return 0, false
	}
	var n float64
	if err := json.Unmarshal(raw, &n); err != nil || n <= 0 || math.IsInf(n, 0) {
		im.note("%s is not a positive number; ignored", key)
		return 0, false
	}
	d := min(n*float64(unit), float64(24*time.Hour))
	return time.Duration(math.Ceil(d/float64(time.Millisecond))) * time.Millisecond, true
}
