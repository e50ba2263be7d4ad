package oauth

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// newOAuthTransport is the transport of the requests to authorization
// servers, whose addresses the MCP server chooses: proxies as the
// connection's (from the environment), and a dialer that refuses
// link-local (cloud metadata), multicast and unspecified addresses, and
// loopback or private ones unless the MCP server itself is on such an
// address. A proxy is dialled as configured.
func newOAuthTransport(conn http.RoundTripper, serverHost string) *http.Transport {
	g := &dialGuard{server: serverHost, proxies: map[string]bool{}}
	t := &http.Transport{
		DialContext:           g.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	proxy := http.ProxyFromEnvironment
	if ct, ok := conn.(*http.Transport); ok {
		proxy = ct.Proxy
		if ct.TLSClientConfig != nil {
			t.TLSClientConfig = ct.TLSClientConfig.Clone()
		}
	}
	if proxy != nil {
		t.Proxy = func(req *http.Request) (*url.URL, error) {
			u, err := proxy(req)
			if u != nil {
				g.allowProxy(u)
			}
			return u, err
		}
	}
	return t
}

// dialGuard is the address check of newOAuthTransport.
type dialGuard struct {
	server string // the MCP server's host

	mu      sync.Mutex
	proxies map[string]bool // host:port of the proxies in use
}

func (g *dialGuard) allowProxy(u *url.URL) {
	g.mu.Lock()
	g.proxies[HostPort(u)] = true
	g.mu.Unlock()
}

// HostPort is the host:port a URL (a server's, or a proxy's) is dialled
// at: its port, else its scheme's default (https 443, socks5 1080, else 80).
func HostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "socks5", "socks5h":
			port = "1080"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

func (g *dialGuard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	g.mu.Lock()
	proxy := g.proxies[addr]
	g.mu.Unlock()
	if !proxy {
		d.ControlContext = g.control
	}
	return d.DialContext(ctx, network, addr)
}

// control runs before each connection is made, with the address it is
// made to (after name resolution).
func (g *dialGuard) control(ctx context.Context, _, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("authorization server address: %w", err)
	}
	ip = ip.Unmap()
	var ok bool
	switch {
	case ip.IsLoopback():
		ok = g.serverOn(ctx, netip.Addr.IsLoopback)
	case isPrivateIP(ip):
		ok = g.serverOn(ctx, isPrivateIP)
	default:
		ok = ip.IsGlobalUnicast()
	}
	if !ok {
		return fmt.Errorf("refusing to reach an authorization server at %s: not a public address", ip)
	}
	return nil
}

// cgnat is the shared address space of RFC 6598, private in all but name.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

func isPrivateIP(ip netip.Addr) bool { return ip.IsPrivate() || cgnat.Contains(ip) }

// serverOn reports whether the MCP server's host is an address of the
// kind is tells, or a name that resolves to one.
func (g *dialGuard) serverOn(ctx context.Context, is func(netip.Addr) bool) bool {
	h := strings.ToLower(g.server)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return is(netip.IPv6Loopback())
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return is(ip.Unmap())
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(ips, func(ip netip.Addr) bool { return is(ip.Unmap()) })
}
