package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/sse"
)

// maxListenResources bounds the resources one listen stream subscribes to.
const maxListenResources = 256

// listenQueue bounds the notifications a listener holds for a client that
// reads slowly; past it the newest are dropped (list_changed only says
// "look again", and a later one says it as well).
const listenQueue = 64

// listener is one subscriptions/listen stream of a 2026-07-28 client: the
// notifications it opted in to, tagged with its subscription id (the
// listen request's id).
type listener struct {
	endpoint string
	id       json.RawMessage
	created  time.Time
	methods  map[string]bool // list_changed notifications it takes
	uris     map[string]bool // resources whose updates it takes
	ch       chan []byte
	done     chan struct{} // closed when its endpoint goes
	doneOnce sync.Once
}

// offer queues a notification for the listener, tagged with its
// subscription id, unless the queue is full.
func (l *listener) offer(msg *jsonrpc.Message) {
	params, err := jsonrpc.SetMeta(msg.Params, jsonrpc.MetaSubscriptionID, l.id)
	if err != nil {
		return
	}
	select {
	case l.ch <- jsonrpc.NewNotification(msg.Method, params).Encode():
	default:
	}
}

func (l *listener) end() { l.doneOnce.Do(func() { close(l.done) }) }

// listenFilter is subscriptions/listen's params.notifications.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged"`
	PromptsListChanged    bool     `json:"promptsListChanged"`
	ResourcesListChanged  bool     `json:"resourcesListChanged"`
	ResourceSubscriptions []string `json:"resourceSubscriptions"`
}

// listen serves a subscriptions/listen request: the acknowledgement with
// what the hub agreed to first, then the notifications the client opted in
// to, with keep-alive comments between them, until the client closes the
// stream (its cancellation), the endpoint goes, or the hub stops (then the
// listen result ends the stream).
func (set *sessionSet) listen(w http.ResponseWriter, r *http.Request, endpoint string, mc *modernCall) {
	var p struct {
		Notifications listenFilter `json:"notifications"`
	}
	if err := json.Unmarshal(mc.m.Params, &p); err != nil {
		writeRPCError(w, http.StatusBadRequest, mc.m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: notifications must be an object of booleans and resourceSubscriptions (strings)"))
		return
	}
	f := p.Notifications
	l := &listener{endpoint: endpoint, id: mc.m.ID, created: time.Now(), methods: map[string]bool{}, uris: map[string]bool{},
		ch: make(chan []byte, listenQueue), done: make(chan struct{})}
	agreed := []byte(`{`)
	add := func(key string, v json.RawMessage) {
		if len(agreed) > 1 {
			agreed = append(agreed, ',')
		}
		agreed = jsonrpc.AppendString(agreed, key)
		agreed = append(agreed, ':')
		agreed = append(agreed, v...)
	}
	for _, o := range []struct {
		on     bool
		key    string
		method string
	}{
		{f.ToolsListChanged, "toolsListChanged", "notifications/tools/list_changed"},
		{f.PromptsListChanged, "promptsListChanged", "notifications/prompts/list_changed"},
		{f.ResourcesListChanged, "resourcesListChanged", "notifications/resources/list_changed"},
	} {
		if o.on {
			l.methods[o.method] = true
			add(o.key, json.RawMessage(`true`))
		}
	}
	if len(f.ResourceSubscriptions) > maxListenResources {
		writeRPCError(w, http.StatusBadRequest, mc.m.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidParams,
			"Invalid params: %d resourceSubscriptions; one stream takes at most %d", len(f.ResourceSubscriptions), maxListenResources))
		return
	}
	// Resource subscriptions the hub can honour: a URI some server of the
	// endpoint offers, subscribed upstream as resources/subscribe would be.
	s := newCallSession(r.Context(), endpoint, mc.version, mc.info, mc.caps)
	defer s.close()
	owners := map[string]string{} // uri → the server subscribed to
	defer set.unsubscribeListener(s, owners)
	subscribed := set.subscribeListener(r.Context(), s, l, owners, f.ResourceSubscriptions)
	if len(f.ResourceSubscriptions) > 0 {
		list, _ := json.Marshal(subscribed)
		if subscribed == nil {
			list = []byte(`[]`)
		}
		add("resourceSubscriptions", list)
	}
	agreed = append(agreed, '}')

	set.addListener(l)
	defer set.removeListener(l)

	ack := fmt.Appendf(nil, `{"_meta":{%s:%s},"notifications":%s}`, jsonrpc.Quote(jsonrpc.MetaSubscriptionID), mc.m.ID, agreed)
	sseHeaders(w)
	rc := http.NewResponseController(w)
	sw := sse.NewWriter(flushWriter{w, rc})
	write := func(data []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(set.heartbeat + writeTimeout))
		return sw.WriteEvent(sse.Event{Data: string(data), HasData: true}) == nil
	}
	if !write(jsonrpc.NewNotification("notifications/subscriptions/acknowledged", ack).Encode()) {
		return
	}
	ticker := time.NewTicker(set.heartbeat)
	defer ticker.Stop()
	for {
		select {
		case data := <-l.ch:
			if !write(data) {
				return
			}
		case <-ticker.C:
			rc.SetWriteDeadline(time.Now().Add(set.heartbeat + writeTimeout))
			if sw.WriteComment("") != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-l.done:
			write(jsonrpc.NewResponse(mc.m.ID, json.RawMessage(`{"resultType":"complete"}`)).Encode())
			return
		case <-set.ctx.Done():
			write(jsonrpc.NewResponse(mc.m.ID, json.RawMessage(`{"resultType":"complete"}`)).Encode())
			return
		}
	}
}

// subscribeListener subscribes listener l, over session s, to the URIs
// some server of its endpoint offers, as resources/subscribe would; a URI
// no server offers, or whose server refuses, is left out. It records in
// owners (uri → the server subscribed to) what unsubscribeListener
// releases, and returns the URIs subscribed, in the order asked.
func (set *sessionSet) subscribeListener(ctx context.Context, s *session, l *listener, owners map[string]string, uris []string) []string {
	var subscribed []string
	for _, uri := range uris {
		if l.uris[uri] {
			continue
		}
		server, err := set.router.resourceOwner(s, uri)
		if err != nil {
			continue
		}
		if set.router.countSubscription(server, "", uri, true) {
			params := fmt.Appendf(nil, `{"uri":%s}`, jsonrpc.Quote(uri))
			if _, err := set.router.forward(ctx, s, server, "resources/subscribe", params, nil); err != nil {
				set.router.countSubscription(server, "", uri, false)
				set.log.Debug("could not subscribe for a listener", "server", server, "uri", uri, "err", err)
				continue
			}
		}
		l.uris[uri], owners[uri] = true, server
		subscribed = append(subscribed, uri)
	}
	return subscribed
}

// unsubscribeListener releases a listener's resource subscriptions (uri →
// the server subscribed to), unsubscribing upstream where it held the last
// one.
func (set *sessionSet) unsubscribeListener(s *session, owners map[string]string) {
	if len(owners) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(set.ctx, 5*time.Second)
	defer cancel()
	for uri, server := range owners {
		if !set.router.countSubscription(server, "", uri, false) {
			continue
		}
		params := fmt.Appendf(nil, `{"uri":%s}`, jsonrpc.Quote(uri))
		if _, err := set.router.forward(ctx, s, server, "resources/unsubscribe", params, nil); err != nil {
			set.log.Debug("could not unsubscribe for a listener", "server", server, "uri", uri, "err", err)
		}
	}
}

func (set *sessionSet) addListener(l *listener) {
	set.lmu.Lock()
	defer set.lmu.Unlock()
	if set.listeners == nil {
		set.listeners = map[*listener]struct{}{}
	}
	set.listeners[l] = struct{}{}
}

func (set *sessionSet) removeListener(l *listener) {
	set.lmu.Lock()
	defer set.lmu.Unlock()
	delete(set.listeners, l)
}

// holdLevel counts a stateless request that asks for log messages at
// level while it runs, so the upstreams are asked for them (applyLevels);
// the returned function ends the hold.
func (set *sessionSet) holdLevel(level string) func() {
	change := func(d int) {
		set.lmu.Lock()
		if set.levels == nil {
			set.levels = map[string]int{}
		}
		if set.levels[level] += d; set.levels[level] <= 0 {
			delete(set.levels, level)
		}
		set.lmu.Unlock()
		set.fanout.applyLevels()
	}
	change(1)
	return func() { change(-1) }
}

// statelessLevel is the lowest log level a stateless request in flight
// asks for, "" for none.
func (set *sessionSet) statelessLevel() string {
	set.lmu.Lock()
	defer set.lmu.Unlock()
	want := ""
	for l := range set.levels {
		if want == "" || levelRank(l) < levelRank(want) {
			want = l
		}
	}
	return want
}

// listenersOf returns the listeners whose endpoint sees server ("" for
// every listener).
func (set *sessionSet) listenersOf(server string) []*listener {
	set.lmu.Lock()
	defer set.lmu.Unlock()
	if len(set.listeners) == 0 {
		return nil
	}
	sees := func(string) bool { return true }
	if server != "" {
		sees = set.servers.seers(server)
	}
	out := make([]*listener, 0, len(set.listeners))
	for l := range set.listeners {
		if sees(l.endpoint) {
			out = append(out, l)
		}
	}
	return out
}
