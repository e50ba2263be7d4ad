package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// writeTestCert writes a self-signed certificate for 127.0.0.1 and its key
// as PEM files in dir and returns their paths and a pool trusting it.
func writeTestCert(t *testing.T, dir string) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "mcphub test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	leaf, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(leaf)
	return certPath, keyPath, pool
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestServeTLSBeyondLoopback: a hub listening on every interface with TLS
// and token auth serves HTTPS and HTTP/2; the official SDK client calls a
// tool through it; the CLI finds it over HTTPS (trusting exactly its
// certificate); a plain-HTTP request gets no MCP answer.
func TestServeTLSBeyondLoopback(t *testing.T) {
	h := newProcHub(t)
	certPath, keyPath, pool := writeTestCert(t, h.home)
	const token = "tls-test-token-0123456789abcdef"
	tokenPath := filepath.Join(h.home, "token")
	os.WriteFile(tokenPath, []byte(token+"\n"), 0o600)
	_, port, _ := net.SplitHostPort(h.addr)
	h.write(t, fmt.Sprintf("[hub]\nlisten = \"0.0.0.0:%s\"\nauth = \"token\"\ntoken_file = %q\ntls_cert = %q\ntls_key = %q\n\n[servers.demo]\ncommand = \"mcphub\"\nargs = [\"demo\"]\n",
		port, tokenPath, certPath, keyPath))
	r := h.start(nil, "--log-level", "debug")
	base := "https://127.0.0.1:" + port
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: bearer{token, tr}}
	var proto int
	if !poll(20*time.Second, func() bool {
		resp, err := hc.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		proto = resp.ProtoMajor
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("the hub did not become ready over HTTPS within 20 s:\n%s", r.out.String())
	}
	if proto != 2 {
		t.Errorf("/readyz over HTTP/%d; want HTTP/2 over TLS", proto)
	}
	if !strings.Contains(r.out.String(), "serving https://0.0.0.0:"+port+"/mcp") {
		t.Errorf("serve did not announce its https URL:\n%s", r.out.String())
	}

	cs := connectSDK(t, base+"/mcp", sdkOpts{hc: hc, latest: true, within: 20 * time.Second})
	if got, err := cs.call("demo__add", map[string]any{"a": 2, "b": 3}); err != nil || got != "5" {
		t.Fatalf("demo__add over HTTPS: %q %v", got, err)
	}

	// Plain HTTP on the TLS port is not served.
	if resp, err := http.Get("http://127.0.0.1:" + port + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP was served on the TLS port")
		}
	}

	// The CLI reaches the hub over HTTPS by the registry.
	t.Setenv("MCPHUB_CONFIG", h.cfg)
	t.Setenv("MCPHUB_DATA", filepath.Join(h.home, "cli-data"))
	code, out, errOut := runCLI(t, "status")
	if code != 0 || !strings.Contains(out, "demo") || !strings.Contains(out, "https://") {
		t.Errorf("mcphub status against the TLS hub: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestServeRefusesExposureWithoutTLSAndToken: serve --listen on a
// non-loopback address refuses to start unless the hub has both token auth
// and TLS, and says what is missing.
func TestServeRefusesExposureWithoutTLSAndToken(t *testing.T) {
	h := newProcHub(t)
	h.write(t, h.registry(""))
	t.Setenv("MCPHUB_CONFIG", h.cfg)
	t.Setenv("MCPHUB_DATA", h.data)
	code, _, errOut := runCLI(t, "serve", "--listen", "0.0.0.0:0")
	if code == 0 {
		t.Fatal("serve --listen 0.0.0.0:0 without auth or TLS started")
	}
	for _, want := range []string{"refusing to listen", `auth = "token"`, "tls_cert and tls_key", "or listen on 127.0.0.1"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the refusal lacks %q: %s", want, errOut)
		}
	}
}

// useTLSRegistry points the CLI at a registry whose hub listens on listen
// with a certificate of its own (not the one the server there presents).
func useTLSRegistry(t *testing.T, home, listen string) {
	t.Helper()
	certPath, keyPath, _ := writeTestCert(t, home)
	cfg := filepath.Join(home, "hub.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[hub]\nlisten = %q\ntls_cert = %q\ntls_key = %q\n", listen, certPath, keyPath)), 0o600)
	t.Setenv("MCPHUB_CONFIG", cfg)
}

// TestCLIRefusesAnotherCertificate: when the server at the hub's address
// does not present the hub's own tls_cert, the CLI sends it nothing (not
// even the token) and says why, rather than "no mcphub is running".
func TestCLIRefusesAnotherCertificate(t *testing.T) {
	home := freshHome(t)
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("[]"))
	}))
	defer srv.Close()
	useTLSRegistry(t, home, srv.Listener.Addr().String())
	for _, cmd := range []string{"sessions", "status"} {
		code, out, errOut := runCLI(t, cmd)
		if code == 0 || !strings.Contains(out+errOut, "did not present the hub's tls_cert") || strings.Contains(out+errOut, "no mcphub is running") {
			t.Errorf("mcphub %s against a server with another certificate: exit %d\n%s%s", cmd, code, out, errOut)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached a server that did not present tls_cert", n)
	}
}

// TestCLIReportsATLSFailureAsIs: a server that answers at the hub's address
// but fails the TLS handshake (here: it refuses a handshake without a
// server name) is not reported as "no mcphub is running".
func TestCLIReportsATLSFailureAsIs(t *testing.T) {
	home := freshHome(t)
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.TLS = &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return nil, fmt.Errorf("no certificate for a handshake without a server name")
	}}
	srv.StartTLS()
	defer srv.Close()
	useTLSRegistry(t, home, srv.Listener.Addr().String())
	for _, cmd := range []string{"sessions", "status"} {
		code, out, errOut := runCLI(t, cmd)
		if code == 0 || strings.Contains(out+errOut, "no mcphub is running") || !strings.Contains(out+errOut, "tls") {
			t.Errorf("mcphub %s against a server failing the handshake: exit %d\n%s%s", cmd, code, out, errOut)
		}
	}
}
