package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/termtext"
)

// handler shows what the server sends on its own while a probe runs, and
// answers what it asks: no roots, a declined elicitation, and nothing
// else (a probe cannot sample).
type handler struct{ out io.Writer }

func (h handler) HandleNotification(m *jsonrpc.Message, _ json.RawMessage) {
	switch m.Method {
	case "notifications/progress":
		var p struct {
			Progress float64  `json:"progress"`
			Total    *float64 `json:"total"`
			Message  string   `json:"message"`
		}
		json.Unmarshal(m.Params, &p)
		line := fmt.Sprintf("progress %g", p.Progress)
		if p.Total != nil {
			line += fmt.Sprintf("/%g", *p.Total)
		}
		if p.Message != "" {
			line += " " + p.Message
		}
		fmt.Fprintln(h.out, line)
	case "notifications/message":
		var p struct {
			Level  string          `json:"level"`
			Logger string          `json:"logger"`
			Data   json.RawMessage `json:"data"`
		}
		json.Unmarshal(m.Params, &p)
		fmt.Fprintf(h.out, "log %s %s %s\n", p.Level, p.Logger, p.Data)
	default:
		fmt.Fprintf(h.out, "notification %s %s\n", m.Method, m.Params)
	}
}

func (h handler) HandleRequest(_ context.Context, m *jsonrpc.Message, _ json.RawMessage) (json.RawMessage, error) {
	switch m.Method {
	case "roots/list":
		return json.RawMessage(`{"roots":[]}`), nil
	case "elicitation/create":
		msg, _ := jsonrpc.StringMember(m.Params, "message")
		fmt.Fprintf(h.out, "the server asked: %s; probe declines\n", termtext.OneLine(msg, 200))
		return json.RawMessage(`{"action":"decline"}`), nil
	}
	fmt.Fprintf(h.out, "the server asked for %s; probe cannot answer it\n", m.Method)
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "mcphub probe does not answer %s", m.Method)
}
