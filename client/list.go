package client

import (
	"context"
	"encoding/json"
	"fmt"
)

// listKeys maps each paginated list method to the result member holding its
// items.
var listKeys = map[string]string{
	"tools/list":               "tools",
	"prompts/list":             "prompts",
	"resources/list":           "resources",
	"resources/templates/list": "resourceTemplates",
}

// maxListPages bounds how many pages ListAll follows, so a server whose
// cursors never end cannot keep mcphub busy forever.
const maxListPages = 1000

// ListAll calls a paginated list method (tools/list, prompts/list,
// resources/list, resources/templates/list) until the server gives no
// nextCursor, and returns every item raw, in the server's order.
func (c *Conn) ListAll(ctx context.Context, method string) ([]json.RawMessage, error) {
	key, ok := listKeys[method]
	if !ok {
		return nil, fmt.Errorf("%s is not a paginated list method", method)
	}
	var items []json.RawMessage
	cursor := ""
	for page := 0; page < maxListPages; page++ {
		var params json.RawMessage
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		raw, err := c.Call(ctx, method, params)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		var res map[string]json.RawMessage
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("%s: malformed result: %w", method, err)
		}
		var pageItems []json.RawMessage
		if v := res[key]; len(v) > 0 && string(v) != "null" {
			if err := json.Unmarshal(v, &pageItems); err != nil {
				return nil, fmt.Errorf("%s: %s is not an array: %w", method, key, err)
			}
		}
		items = append(items, pageItems...)
		cursor = ""
		if v := res["nextCursor"]; len(v) > 0 {
			json.Unmarshal(v, &cursor)
		}
		if cursor == "" {
			return items, nil
		}
	}
	return nil, fmt.Errorf("%s: still paginating after %d pages", method, maxListPages)
}
