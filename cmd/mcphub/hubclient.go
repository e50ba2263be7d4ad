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
	"strings"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
)

// hubTarget is where a running hub answers and the token it wants.
type hubTarget struct {
	listen  string
	token   string
	tlsCert string // the certificate file of a hub that serves HTTPS
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

// target finds the running hub: at the registry's listen address, or, when
// the registry does not load (the hub keeps its last good one), at the
// address the hub recorded in the data directory. Registry problems are
// printed, not fatal: status must work precisely when the file is broken.
func (a *app) target() (hubTarget, *registry.Registry, error) {
	reg, err := a.loadRegistry()
	if err == nil {
		tok, _ := hubToken(reg)
		return targetOf(reg.Hub, tok), reg, nil
	}
	fmt.Fprintf(a.stderr, "the registry does not load:\n")
	a.printRegistryErrors(err)
	info, ierr := readRunInfo(a.dataDir)
	if ierr != nil {
		return hubTarget{}, nil, exitError{code: 1}
	}
	return hubTarget{listen: info.Listen, tlsCert: info.TLSCert}, nil, nil
}

// fetchStatus asks the hub at t for its state.
func fetchStatus(ctx context.Context, t hubTarget) (*hub.Status, error) {
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
	case http.StatusOK, http.StatusServiceUnavailable:
	case http.StatusUnauthorized:
		return nil, fmt.Errorf("the hub at %s requires a bearer token: set $MCPHUB_TOKEN or [hub] token_file to the hub's token", t.listen)
	default:
		return nil, fmt.Errorf("the hub at %s answered HTTP %d", t.listen, resp.StatusCode)
	}
	var st hub.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("%s answered, but not with mcphub's status (HTTP %d): %w", t.listen, resp.StatusCode, err)
	}
	return &st, nil
}

// control calls a control endpoint of the running hub and decodes its
// answer into out (when set).
func (a *app) control(ctx context.Context, method, path string, want int, out any) error {
	t, _, err := a.statusTarget()
	if err != nil {
		return err
	}
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
		return fmt.Errorf("the hub answered HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}
