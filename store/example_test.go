package store_test

import (
	"fmt"
	"os"
	"time"

	"github.com/mcphub/mcphub/store"
)

// A hub records a session, its SSE stream and every event it writes there;
// after a restart, a client that reconnects with Last-Event-ID gets the
// events after that id from the store.
func Example() {
	dir, err := os.MkdirTemp("", "store-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	st, err := store.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2025, 11, 25, 12, 0, 0, 0, time.UTC)
	// One batch, one transaction: the session, its standalone GET stream
	// and three events on it.
	batch := []store.Op{
		{Session: &store.Session{ID: "s1", Endpoint: "/mcp", Version: "2025-11-25", Created: now, LastSeen: now}},
		{Stream: &store.Stream{ID: "s1-get", Session: "s1"}},
	}
	for seq, msg := range []string{"tools", "prompts", "resources"} {
		data := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/%s/list_changed"}`, msg)
		batch = append(batch, store.Op{Event: &store.Event{Session: "s1", Stream: "s1-get", Seq: seq, Data: []byte(data)}})
	}
	if err := st.Write(batch); err != nil {
		fmt.Println(err)
		return
	}
	if err := st.Close(); err != nil {
		fmt.Println(err)
		return
	}

	// The hub restarts.
	st, err = store.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	sessions, err := st.Sessions()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, se := range sessions {
		fmt.Println(se.ID, se.Endpoint, se.Version, se.Created.UTC().Format(time.RFC3339))
	}
	// The client saw event 0 before the restart.
	events, err := st.EventsAfter("s1-get", 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ev := range events {
		fmt.Println(ev.Seq, string(ev.Data))
	}
	// Output:
	// s1 /mcp 2025-11-25 2025-11-25T12:00:00Z
	// 1 {"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}
	// 2 {"jsonrpc":"2.0","method":"notifications/resources/list_changed"}
}
