package hubclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mcphub/mcphub/registry"
)

// StatusTimeout bounds asking a hub that may not be running: its status,
// a control call, a probe of /healthz.
const StatusTimeout = 2 * time.Second

// ErrNoHub means that nothing accepts connections where the hub should
// answer: no hub is running there. A hub that answers but refuses, or a
// TLS mismatch, is another error.
var ErrNoHub = errors.New("no mcphub is running")

// Target is where a running hub answers and the token it wants: what every
// call of this package is sent to.
type Target struct {
	// Listen is the hub's listen address, as the registry or the run
	// file records it (a wildcard host is reached on loopback; see URL).
	Listen string
	// Token is the bearer token sent with every request; "" sends none.
	// It is never encoded: a Target printed as JSON holds no secret.
	Token string `json:"-"`
	// TLSCert is the certificate file of a hub that serves HTTPS; the
	// hub must present exactly that certificate (see Do).
	TLSCert string
	// Served is the registry the live hub holding the data directory
	// serves, as its run file records it, and ServedAt where that hub
	// listens; both "" when no run file was read. When Served is another
	// registry than the caller's, the target is the caller's own
	// registry's listen address, and that hub never gets its token.
	Served, ServedAt string
}

// TargetOf is the hub a [hub] table describes, sent token.
func TargetOf(h registry.Hub, token string) Target {
	return Target{Listen: h.Listen, Token: token, TLSCert: h.TLSCert}
}

// RunTarget is the hub a run file records, sent token.
func RunTarget(info *RunInfo, token string) Target {
	return Target{Listen: info.Listen, Token: token, TLSCert: info.TLSCert, Served: info.Config, ServedAt: info.Listen}
}

// OwnTarget is the hub h describes, with token, when the live hub other
// holds the data directory for another registry: it gets no token of this
// registry, even when it listens at h's address.
func OwnTarget(h registry.Hub, token string, other *RunInfo) Target {
	t := TargetOf(h, token)
	if other == nil || other.Config == "" {
		return t
	}
	t.Served, t.ServedAt = other.Config, other.Listen
	if SameAddress(t.Listen, other.Listen) {
		t.Token = ""
	}
	return t
}

// URL is the address of path on the hub, for a client on this machine: a
// hub listening on every interface (0.0.0.0, :: or no host) is reached on
// loopback.
func (t Target) URL(path string) string {
	listen := t.Listen
	if host, port, err := net.SplitHostPort(listen); err == nil {
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			loopback := "127.0.0.1"
			if ip != nil && ip.To4() == nil {
				loopback = "::1"
			}
			listen = net.JoinHostPort(loopback, port)
		}
	}
	return registry.Hub{Listen: listen, TLSCert: t.TLSCert}.URL(path)
}

// Do sends a request to the hub, with its token. A hub that cannot be
// reached at all is ErrNoHub; any other failure (a TLS mismatch, say) is
// reported as it is. Over HTTPS the hub must present exactly its configured
// certificate: a client reaches it by its listen address, which the
// certificate need not name, and trusting that one certificate is narrower
// than trusting any CA.
func (t Target) Do(req *http.Request) (*http.Response, error) {
	if t.Token != "" {
		req.Header.Set("Authorization", "Bearer "+t.Token)
	}
	hc := http.DefaultClient
	if t.TLSCert != "" {
		var err error
		if hc, err = t.PinnedClient(); err != nil {
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
		return nil, fmt.Errorf("%w at %s (start one with: mcphub serve)", ErrNoHub, t.Listen)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("the hub at %s did not answer within %s", t.Listen, StatusTimeout)
	}
	return nil, err
}

// PinnedClient is an HTTPS client that trusts exactly the hub's TLSCert,
// for a caller that speaks to the hub itself (an MCP connection): Do uses
// it too.
func (t Target) PinnedClient() (*http.Client, error) {
	want, err := leafCertificate(t.TLSCert)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // replaced by the exact check below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, want) {
				return fmt.Errorf("the server at %s did not present the hub's tls_cert (%s)", t.Listen, t.TLSCert)
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

// SameAddress reports whether two listen addresses reach the same
// listener on this machine: the same port, and the same host, or a host
// that listens on every interface, or two loopback hosts.
func SameAddress(a, b string) bool {
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
