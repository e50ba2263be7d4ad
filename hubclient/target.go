package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/registry"
)

// hubTarget is where a running hub answers and the token it wants.
type hubTarget struct {
	listen  string
	token   string
	tlsCert string // the certificate file of a hub that serves HTTPS
	// served is the registry the live hub holding the data directory
	// serves, as its run file records it, and servedAt where that hub
	// listens; both "" when no run file was read. When served is another
	// registry than the command's, the target is the command's own
	// registry's listen address, and that hub never gets its token.
	served, servedAt string
}

// targetOf is the hub a [hub] table describes.
func targetOf(h registry.Hub, token string) hubTarget {
	return hubTarget{listen: h.Listen, token: token, tlsCert: h.TLSCert}
}

// url is the address of path on the hub, for a client on this machine: a
// hub listening on every interface (0.0.0.0, :: or no host) is reached on
// loopback.
func (t hubTarget) url(path string) string {
	listen := t.listen
	if host, port, err := net.SplitHostPort(listen); err == nil {
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			loopback := "127.0.0.1"
			if ip != nil && ip.To4() == nil {
				loopback = "::1"
			}
			listen = net.JoinHostPort(loopback, port)
		}
	}
	return registry.Hub{Listen: listen, TLSCert: t.tlsCert}.URL(path)
}

// do sends a request to the hub, with its token. A hub that cannot be
// reached at all is errNoHub; any other failure (a TLS mismatch, say) is
// reported as it is. Over HTTPS the hub must present exactly its configured
// certificate: the CLI reaches it by its listen address, which the
// certificate need not name, and trusting that one certificate is narrower
// than trusting any CA.
func (t hubTarget) do(req *http.Request) (*http.Response, error) {
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	hc := http.DefaultClient
	if t.tlsCert != "" {
		var err error
		if hc, err = t.pinnedClient(); err != nil {
			return nil, err
		}
	}
	resp, err := hc.Do(req)
	var op *net.OpError
	switch {
	case err == nil:
		return resp, nil
	case errors.As(err, &op) && op.Op == "dial":
		// Nothing accepts connections there; a TLS alert or a reset
		// from something that does is reported as it is.
		return nil, fmt.Errorf("%w at %s (start one with: mcphub serve)", errNoHub, t.listen)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("the hub at %s did not answer within %s", t.listen, statusTimeout)
	}
	return nil, err
}

// pinnedClient is an HTTPS client that trusts exactly the hub's tls_cert.
func (t hubTarget) pinnedClient() (*http.Client, error) {
	want, err := leafCertificate(t.tlsCert)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // replaced by the exact check below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, want) {
				return fmt.Errorf("the server at %s did not present the hub's tls_cert (%s)", t.listen, t.tlsCert)
			}
			return nil
		},
	}}
	return &http.Client{Transport: tr}, nil
}

// leafCertificate reads the first certificate of a PEM file, in DER.
func leafCertificate(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the hub's tls_cert: %w", err)
	}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		switch {
		case block == nil:
			return nil, fmt.Errorf("the hub's tls_cert %s holds no PEM certificate", path)
		case block.Type == "CERTIFICATE":
			return block.Bytes, nil
		}
	}
}

// target finds the running hub: where the live hub holding the data
// directory recorded it listens when it serves this registry (see hubFor),
// else at the registry's listen address; when the registry does not load
// (the hub keeps its last good one), at the address the hub recorded in the
// data directory, sent no token. Registry
// problems are printed, not fatal: status must work precisely when the file
// is broken.
func (a *app) target() (hubTarget, *registry.Registry, error) {
	reg, err := a.loadRegistry()
	if err == nil {
		tok, _ := hubToken(reg)
		return a.hubFor(reg, tok), reg, nil
	}
	fmt.Fprintf(a.stderr, "the registry does not load:\n")
	a.printRegistryErrors(err)
	info := liveRunInfo(a.dataDir)
	if info == nil {
		if info, err = readRunInfo(a.dataDir); err != nil {
			return hubTarget{}, nil, exitError{code: 1, why: fmt.Sprintf("the registry %s does not load, and no hub is recorded in %s: fix the problems printed on stderr, then start one with: mcphub serve", a.configPath, a.dataDir)}
		}
	}
	return runTarget(info, ""), nil, nil
}

// hubFor is where the hub for reg answers, with tok, the registry's token.
// A live hub holding the data directory and serving this registry is asked
// where it recorded it listens, whatever the registry's listen says: serve
// --listen, or port 0, puts it elsewhere. Without one, the registry's listen
// address. A live hub serving another registry never gets this registry's
// token: the registry's own address is asked, without the token when that
// hub listens there too, and noteServed says which registry that hub
// serves.
func (a *app) hubFor(reg *registry.Registry, tok string) hubTarget {
	info := liveRunInfo(a.dataDir)
	switch {
	case info == nil:
		return targetOf(reg.Hub, tok)
	case a.servesConfig(info):
		return runTarget(info, tok)
	}
	return ownTarget(reg.Hub, tok, info)
}

// ownTarget is the hub h describes, with tok, when the live hub other holds
// the data directory for another registry: it gets no token of this
// registry, even when it listens at h's address.
func ownTarget(h registry.Hub, tok string, other *runInfo) hubTarget {
	t := targetOf(h, tok)
	if other == nil || other.Config == "" {
		return t
	}
	t.served, t.servedAt = other.Config, other.Listen
	if sameAddress(t.listen, other.Listen) {
		t.token = ""
	}
	return t
}

// servesConfig reports whether the hub that recorded info serves --config.
// A record without a registry (written by an older mcphub) is taken for
// this registry's: nothing says otherwise.
func (a *app) servesConfig(info *runInfo) bool {
	return info.Config == "" || a.isConfig(info.Config)
}

// isConfig reports whether path names --config: the same absolute path,
// or the same file reached another way (a symlink, say).
func (a *app) isConfig(path string) bool {
	served, err1 := filepath.Abs(path)
	config, err2 := filepath.Abs(a.configPath)
	return err1 == nil && err2 == nil && sameFile(served, config)
}

// sameAddress reports whether two listen addresses reach the same
// listener on this machine: the same port, and the same host, or a host
// that listens on every interface, or two loopback hosts.
func sameAddress(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil {
		return a == b
	}
	if pa != pb {
		return false
	}
	wildcard := func(h string) bool {
		ip := net.ParseIP(h)
		return h == "" || ip != nil && ip.IsUnspecified()
	}
	loopback := func(h string) bool {
		ip := net.ParseIP(h)
		return strings.EqualFold(h, "localhost") || ip != nil && ip.IsLoopback()
	}
	return strings.EqualFold(ha, hb) || wildcard(ha) || wildcard(hb) || loopback(ha) && loopback(hb)
}

// runTarget is the hub a run file records, with tok.
func runTarget(info *runInfo, tok string) hubTarget {
	return hubTarget{listen: info.Listen, token: tok, tlsCert: info.TLSCert, served: info.Config, servedAt: info.Listen}
}

// noteServed says on stderr when the live hub holding the data directory
// serves another registry than --config: either the hub t found is that
// one, and what the command shows is that registry's, or the command asked
// its own registry's address instead.
func (a *app) noteServed(t hubTarget) {
	if t.served == "" || a.isConfig(t.served) {
		return
	}
	if t.servedAt == "" || sameAddress(t.servedAt, t.listen) {
		fmt.Fprintf(a.stderr, "note: the hub running at %s serves another registry, %s, not %s; stop it, or pass --config %s\n",
			t.listen, t.served, a.configPath, t.served)
		return
	}
	fmt.Fprintf(a.stderr, "note: the hub holding %s, at %s, serves another registry, %s, not %s, so this command asked %s, the listen address of %s; to reach that hub, pass --config %s\n",
		a.dataDir, t.servedAt, t.served, a.configPath, t.listen, a.configPath, t.served)
}

// fetchStatus asks the hub at t for its state.
func fetchStatus(ctx context.Context, t hubTarget) (*api.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url("/readyz"), nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		var st api.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return nil, fmt.Errorf("%s answered, but not with mcphub's status (HTTP %d): %w", t.listen, resp.StatusCode, err)
		}
		return &st, nil
	case http.StatusServiceUnavailable:
		// A hub not ready yet answers its status with 503; a hub that
		// cannot check tokens (auth on, no token) answers 503 with an
		// error, which is no status.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, statusBodyMax))
		var st api.Status
		if json.Unmarshal(body, &st) == nil && st.Version != "" {
			return &st, nil
		}
		return nil, hubAnswerError(t, resp.StatusCode, body)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return nil, hubAnswerError(t, resp.StatusCode, body)
}

// statusBodyMax bounds a status answer read whole: a hub's status with
// hundreds of servers and their last errors stays far below it.
const statusBodyMax = 16 << 20

// control calls a control endpoint of the running hub and decodes its
// answer into out (when set). An answer with another status than want is
// a *hubError: a sentence, never the body as it came.
func (a *app) control(ctx context.Context, method, path string, want int, out any) error {
	t, _, err := a.statusTarget()
	if err != nil {
		return err
	}
	return controlAt(ctx, t, method, path, want, out)
}

// controlAt is control, at the hub t.
func controlAt(ctx context.Context, t hubTarget, method, path string, want int, out any) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, t.url(path), nil)
	if err != nil {
		return err
	}
	resp, err := t.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return hubAnswerError(t, resp.StatusCode, body)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("the hub at %s answered %s with something other than mcphub's JSON: %w", t.listen, path, err)
		}
	}
	return nil
}

// hubError is the hub's refusal of a request, as a sentence with the fix.
type hubError struct {
	status int    // the HTTP status the hub answered
	reason string // the hub's own reason, "" when it gave none mcphub reads
	msg    string
}

func (e *hubError) Error() string { return e.msg }

// hubAnswerError turns an answer of the hub with an unexpected status into
// a sentence. The hub's errors are JSON-RPC error objects (httpError in
// hub/edge.go), whose message is meant for the user; any other body is
// kept out but for the first line of plain text, which a proxy in front
// of the hub may have written.
func hubAnswerError(t hubTarget, status int, body []byte) error {
	if status == http.StatusUnauthorized {
		return tokenRefused(t)
	}
	if reason := hubReason(body); reason != "" {
		return &hubError{status: status, reason: reason, msg: "the hub refused: " + reason}
	}
	msg := fmt.Sprintf("the hub at %s answered HTTP %d", t.listen, status)
	if line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n"); line != "" && !strings.ContainsAny(line, "{}[]") {
		msg += ": " + oneLine(line, 120)
	}
	return &hubError{status: status, msg: msg}
}

// tokenRefused is the sentence for a hub that answered 401 to t: every
// command that asks the hub says it this way. The hub takes a new token,
// or auth turned on or off in hub.toml, without a restart, and reads its
// token file again when it is replaced.
func tokenRefused(t hubTarget) *hubError {
	if t.token == "" {
		return &hubError{status: http.StatusUnauthorized, msg: fmt.Sprintf("the hub at %s wants a token, and the registry gives none: set auth = \"token\" under [hub], with the hub's token in token_file or $MCPHUB_TOKEN (see mcphub token)", t.listen)}
	}
	return &hubError{status: http.StatusUnauthorized, msg: fmt.Sprintf("the hub at %s wants a token, and refused the registry's: the hub holds another one (see mcphub token, which shows where the registry's token is; if the token file was just replaced, the hub reads it again within a moment: run the command again)", t.listen)}
}

// hubReason is the message of a JSON error body: a JSON-RPC error object
// ({"error": {"code", "message"}}), or {"error": "..."}; "" for anything
// else.
func hubReason(body []byte) string {
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
	return oneLine(str, 300)
}
