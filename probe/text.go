package probe

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/mcphub/mcphub/internal/termtext"
)

// WriteText prints the report as mcphub probe shows it: the server, its
// protocol and transport, capabilities and instructions, then a table of
// each kind of item. The calls are not in it: Run prints each as it
// returns (Call.WriteText).
func (r *Report) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "server\t%s %s\n", r.Server.Name, r.Server.Version)
	fmt.Fprintf(tw, "protocol\t%s over %s\n", r.ProtocolVersion, r.Transport)
	fmt.Fprintf(tw, "capabilities\t%s\n", describeCapabilities(r.Capabilities))
	if r.Instructions != "" {
		fmt.Fprintf(tw, "instructions\t%s\n", termtext.OneLine(r.Instructions, 200))
	}
	tw.Flush()
	writeItems(w, "tools", r.Tools, "name", "description")
	writeItems(w, "prompts", r.Prompts, "name", "description")
	writeItems(w, "resources", r.Resources, "uri", "name")
	writeItems(w, "resource templates", r.ResourceTemplates, "uriTemplate", "name")
}

// WriteJSON prints the report as mcphub probe --json does: one indented
// JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// describeCapabilities renders {"tools":{"listChanged":true},...} as
// "tools (listChanged), ...".
func describeCapabilities(raw json.RawMessage) string {
	var caps map[string]map[string]any
	json.Unmarshal(raw, &caps)
	names := make([]string, 0, len(caps))
	for name, sub := range caps {
		var flags []string
		for k, v := range sub {
			if b, ok := v.(bool); ok && b {
				flags = append(flags, k)
			}
		}
		sort.Strings(flags)
		if len(flags) > 0 {
			name += " (" + strings.Join(flags, ", ") + ")"
		}
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// writeItems prints one kind of item under its title and count: each
// item's keyField, then its descField on one line.
func writeItems(w io.Writer, title string, items []json.RawMessage, keyField, descField string) {
	fmt.Fprintf(w, "\n%s (%d)\n", title, len(items))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, it := range items {
		var m map[string]any
		json.Unmarshal(it, &m)
		key, _ := m[keyField].(string)
		desc, _ := m[descField].(string)
		fmt.Fprintf(tw, "  %s\t%s\n", key, termtext.OneLine(desc, 100))
	}
	tw.Flush()
}

// WriteText prints a tool's result: its text content as it is, other
// content by type and media type, and the raw result when it holds no
// content at all.
func (c Call) WriteText(w io.Writer) {
	var r struct {
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			MimeType string `json:"mimeType"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	json.Unmarshal(c.Result, &r)
	status := "result"
	if r.IsError {
		status = "error result"
	}
	fmt.Fprintf(w, "\n%s of %s:\n", status, c.Tool)
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			fmt.Fprintln(w, c.Text)
		default:
			fmt.Fprintf(w, "[%s %s]\n", c.Type, c.MimeType)
		}
	}
	if len(r.Content) == 0 {
		fmt.Fprintln(w, string(c.Result))
	}
}
