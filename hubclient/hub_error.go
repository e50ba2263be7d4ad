package hubclient

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcphub/mcphub/internal/termtext"
)

// HubError is the hub's refusal of a request, as a sentence with the fix:
// its Error is meant to be shown as it is.
type HubError struct {
	// Status is the HTTP status the hub answered.
	Status int
	// Reason is the hub's own reason, "" when it gave none this package
	// reads; callers match on it with care (a proxy may answer too).
	Reason string
	msg    string
}

// Error is the sentence, with the fix when there is one.
func (e *HubError) Error() string { return e.msg }

// AnswerError turns an answer of the hub at t with an unexpected status
// into a sentence. The hub's errors are JSON-RPC error objects, whose
// message is meant for the user; any other body is kept out but for the
// first line of plain text, which a proxy in front of the hub may have
// written.
func (t Target) AnswerError(status int, body []byte) error {
	if status == http.StatusUnauthorized {
		return t.TokenRefused()
	}
	if reason := Reason(body); reason != "" {
		return &HubError{Status: status, Reason: reason, msg: "the hub refused: " + reason}
	}
	msg := fmt.Sprintf("the hub at %s answered HTTP %d", t.Listen, status)
	if line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n"); line != "" && !strings.ContainsAny(line, "{}[]") {
		msg += ": " + termtext.OneLine(line, 120)
	}
	return &HubError{Status: status, msg: msg}
}

// TokenRefused is the sentence for a hub that answered 401 to t: every
// caller that asks the hub says it this way. The hub takes a new token, or
// auth turned on or off in hub.toml, without a restart, and reads its token
// file again when it is replaced.
func (t Target) TokenRefused() *HubError {
	if t.Token == "" {
		return &HubError{Status: http.StatusUnauthorized, msg: fmt.Sprintf("the hub at %s wants a token, and the registry gives none: set auth = \"token\" under [hub], with the hub's token in token_file or $MCPHUB_TOKEN (see mcphub token)", t.Listen)}
	}
	return &HubError{Status: http.StatusUnauthorized, msg: fmt.Sprintf("the hub at %s wants a token, and refused the registry's: the hub holds another one (see mcphub token, which shows where the registry's token is; if the token file was just replaced, the hub reads it again within a moment: run the command again)", t.Listen)}
}

// OlderHubErr says that the hub at t is older than this mcphub, as it
// lacks something this mcphub asks for (lacks: "lists no profiles"), and
// to restart it with this one.
func (t Target) OlderHubErr(lacks string) error {
	return fmt.Errorf("the hub at %s %s, so it is older than this mcphub; restart it with this one (see mcphub status)", t.Listen, lacks)
}

// Reason is the message of a JSON error body, on one line: a JSON-RPC
// error object ({"error": {"code", "message"}}), or {"error": "..."}; ""
// for anything else.
func Reason(body []byte) string {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil || len(v.Error) == 0 {
		return ""
	}
	var obj struct {
		Message string `json:"message"`
	}
	var str string
	switch {
	case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
		str = obj.Message
	case json.Unmarshal(v.Error, &str) == nil:
	}
	return termtext.OneLine(str, 300)
}
