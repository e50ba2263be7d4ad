package api

import "encoding/json"

// Catalog is the hub's answer to GET /control/catalog[?profile=NAME]: one
// endpoint's tools as its clients are given them (Listed, its tools/list:
// the three search tools in search mode) and every tool the endpoint
// serves, with the server it is of. `mcphub tokens` counts it, and `mcphub
// tools call --profile` finds a search-mode profile's tools in it.
type Catalog struct {
	// Endpoint is the endpoint's path: "/mcp" or "/profiles/NAME/mcp".
	Endpoint string `json:"endpoint"`
	// Mode is the endpoint's mode: "full", or "search" for a profile
	// that lists its search tools instead of its catalog.
	Mode   string            `json:"mode"`
	Listed []json.RawMessage `json:"listed"`
	Tools  []CatalogTool     `json:"tools"`
}

// CatalogTool is one tool an endpoint serves: its server, its name there,
// and its entry as the endpoint gives it (its exposed name, overrides
// applied).
type CatalogTool struct {
	Server string          `json:"server"`
	Tool   string          `json:"tool"`
	Item   json.RawMessage `json:"item"`
}

// EnvReport is the hub's answer to GET /control/env?name=VAR&name=...: which
// of the named variables the hub's own environment lacks, so that a command
// can warn about a ${VAR} of the registry this hub cannot resolve. Values
// are never sent, only whether each is set.
type EnvReport struct {
	// PID is the hub's process, for the warning to name it.
	PID int `json:"pid"`
	// Unset are the named variables the hub's environment lacks; never
	// nil, so that it encodes as [].
	Unset []string `json:"unset"`
}

// Restarted is the hub's answer to POST /control/restart?server=NAME
// (HTTP 202): the server whose fresh connection is starting.
type Restarted struct {
	Server string `json:"server"`
	// Status is "restarting".
	Status string `json:"status"`
}
