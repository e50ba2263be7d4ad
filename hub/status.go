package hub

import (
	"encoding/json"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

// countTools counts the tools a server offers (total) and those its
// clients see (exposed): the ones the allow and deny globs of spec let
// through, by the same test the catalog applies (newPiece). status counts
// each entry with it.
func countTools(spec *registry.Server, tools []json.RawMessage) (exposed, total int) {
	for _, item := range tools {
		if name, ok := jsonrpc.StringMember(item, "name"); ok && spec.AllowsTool(name) {
			exposed++
		}
	}
	return exposed, len(tools)
}
