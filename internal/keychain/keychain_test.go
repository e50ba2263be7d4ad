package keychain

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/zalando/go-keyring"
)

// The tests replace go-keyring's global provider, so none runs in parallel.

const service = "mcphub"

// autoEnv makes the Store probe the keychain whatever the environment says.
func autoEnv(t *testing.T) { t.Setenv(EnvBackend, "") }

// fileEnv forces the file.
func fileEnv(t *testing.T) { t.Setenv(EnvBackend, "file") }

// fakeKeyring is an in-memory keychain with a size limit like the real
// ones, an error it can be made to return, and a record of its calls.
type fakeKeyring struct {
	mu      sync.Mutex
	items   map[string]string
	limit   int   // Set of a longer value fails with ErrSetDataTooBig; 0: none
	err     error // returned by every call when set
	calls   int
	probeNS []string // users written by the probe
}

func newFake() *fakeKeyring { return &fakeKeyring{items: map[string]string{}} }

func (f *fakeKeyring) Set(service, user, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return f.err
	}
	if strings.HasPrefix(user, "mcphub-keychain-probe-") {
		f.probeNS = append(f.probeNS, user)
	}
	if f.limit > 0 && len(value) > f.limit {
		return keyring.ErrSetDataTooBig
	}
	f.items[service+"\x00"+user] = value
	return nil
}

func (f *fakeKeyring) Get(service, user string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return "", f.err
	}
	v, ok := f.items[service+"\x00"+user]
	if !ok {
		return "", keyring.ErrNotFound
	}
	return v, nil
}

func (f *fakeKeyring) Delete(service, user string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return f.err
	}
	k := service + "\x00" + user
	if _, ok := f.items[k]; !ok {
		return keyring.ErrNotFound
	}
	delete(f.items, k)
	return nil
}

func (f *fakeKeyring) has(user string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.items[service+"\x00"+user]
	return ok
}

// fileEntries reads the file's entries directly, nil when it is absent.
func fileEntries(t *testing.T, s *Store) map[string]string {
	t.Helper()
	if _, err := os.Stat(s.path); err != nil {
		return nil
	}
	m, err := s.readFile()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustLoad(t *testing.T, s *Store, key string) []byte {
	t.Helper()
	got, err := s.Load(key)
	if err != nil {
		t.Fatalf("Load(%q): %v", key, err)
	}
	return got
}

func TestKeychainRoundTrip(t *testing.T) {
	autoEnv(t)
	keyring.MockInit()
	dir := t.TempDir()
	s := Open(service, dir)
	s.fits = nil // the size rule of the test's own system plays no part here

	if got := mustLoad(t, s, "github"); got != nil {
		t.Fatalf("Load before Save = %q, want nil", got)
	}
	grant := []byte(`{"access_token":"at-123","refresh_token":"rt-456"}`)
	if err := s.Save("github", grant); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, s, "github"); !bytes.Equal(got, grant) {
		t.Fatalf("Load = %q, want %q", got, grant)
	}
	raw, err := keyring.Get(service, "github")
	if err != nil {
		t.Fatalf("the secret is not in the keychain: %v", err)
	}
	if raw != base64.StdEncoding.EncodeToString(grant) {
		t.Errorf("keychain holds %q, want the base64 of the grant", raw)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
		t.Errorf("a secret that fits the keychain was written to the file too")
	}
	if b, n := s.Backend(), s.Notice(); b != "keychain" || n != "" {
		t.Errorf("Backend, Notice = %q, %q; want \"keychain\", \"\"", b, n)
	}
	if err := s.Delete("github"); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, s, "github"); got != nil {
		t.Errorf("Load after Delete = %q, want nil", got)
	}
	if _, err := keyring.Get(service, "github"); !errors.Is(err, keyring.ErrNotFound) {
		t.Errorf("keychain after Delete: %v, want ErrNotFound", err)
	}
}

// TestWindowsSizeRule checks that a value over the Windows limit goes to
// the file, and that moving a key between the two places never leaves an
// older secret where Load would find it first.
func TestWindowsSizeRule(t *testing.T) {
	autoEnv(t)
	keyring.MockInit()
	s := Open(service, t.TempDir())
	s.fits = platformFits("windows", service)

	big := bytes.Repeat([]byte("x"), 2500)
	small := []byte("small")
	if err := s.Save("srv", small); err != nil {
		t.Fatal(err)
	}
	if err := s.Save("srv", big); err != nil {
		t.Fatal(err)
	}
	if _, err := keyring.Get(service, "srv"); !errors.Is(err, keyring.ErrNotFound) {
		t.Errorf("the older small secret is still in the keychain: %v", err)
	}
	if _, ok := fileEntries(t, s)["srv"]; !ok {
		t.Fatalf("the big secret is not in the file")
	}
	if got := mustLoad(t, s, "srv"); !bytes.Equal(got, big) {
		t.Fatalf("Load returned %d bytes, want the %d-byte secret", len(got), len(big))
	}
	if s.Backend() != "keychain" {
		t.Errorf("Backend = %q, want keychain (only that key went to the file)", s.Backend())
	}

	if err := s.Save("srv", small); err != nil {
		t.Fatal(err)
	}
	if m := fileEntries(t, s); m != nil {
		t.Errorf("the file still holds %v after the key moved back to the keychain", m)
	}
	if got := mustLoad(t, s, "srv"); !bytes.Equal(got, small) {
		t.Fatalf("Load = %q, want %q", got, small)
	}

	if err := s.Save("srv", big); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("srv"); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, s, "srv"); got != nil {
		t.Errorf("Load after Delete returned %d bytes", len(got))
	}
	if _, err := os.Stat(s.path); err == nil {
		t.Errorf("the file outlived its last key")
	}
}

func TestErrSetDataTooBigGoesToFile(t *testing.T) {
	autoEnv(t)
	kc := newFake()
	kc.limit = 100
	s := Open(service, t.TempDir())
	s.kc, s.fits = kc, nil

	data := bytes.Repeat([]byte("y"), 200)
	if err := s.Save("big", data); err != nil {
		t.Fatal(err)
	}
	if kc.has("big") {
		t.Errorf("the keychain holds a value it refused")
	}
	if got := mustLoad(t, s, "big"); !bytes.Equal(got, data) {
		t.Errorf("Load returned %d bytes, want %d", len(got), len(data))
	}
	if err := s.Delete("big"); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, s, "big"); got != nil {
		t.Errorf("Load after Delete = %q", got)
	}
}

func TestDarwinSizeRule(t *testing.T) {
	fits := platformFits("darwin", service)
	enc := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	if !fits("github", enc(1500)) {
		t.Errorf("a 1500-byte grant should fit the macOS keychain")
	}
	if fits("github", enc(3000)) {
		t.Errorf("a 3000-byte grant cannot fit the security tool's 4096-byte command")
	}
	if platformFits("linux", service) != nil {
		t.Errorf("the Secret Service has no size rule to apply")
	}
}

func TestFallbackWhenNoKeychain(t *testing.T) {
	autoEnv(t)
	why := `exec: "dbus-launch": executable file not found in $PATH`
	keyring.MockInitWithError(errors.New(why))
	dir := filepath.Join(t.TempDir(), "data")
	s := Open(service, dir)
	path := filepath.Join(dir, FileName)

	n := s.Notice()
	if !strings.Contains(n, why) || !strings.Contains(n, path) || !strings.HasPrefix(n, "no OS keychain answered") {
		t.Errorf("Notice = %q; want it to say why (%q) and where (%s)", n, why, path)
	}
	if b := s.Backend(); b != "file: "+path {
		t.Errorf("Backend = %q, want %q", b, "file: "+path)
	}
	grant := []byte(`{"refresh_token":"rt"}`)
	if err := s.Save("linear", grant); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, s, "linear"); !bytes.Equal(got, grant) {
		t.Fatalf("Load = %q, want %q", got, grant)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("file mode = %o, want 600", m)
		}
		di, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if m := di.Mode().Perm(); m != 0o700 {
			t.Errorf("dir mode = %o, want 700", m)
		}
	}
	if err := s.Delete("linear"); err != nil {
		t.Fatal(err)
	}
}

func TestProbeOnceAndClean(t *testing.T) {
	autoEnv(t)
	kc := newFake()
	s := Open(service, t.TempDir())
	s.kc = kc
	for i := range 3 {
		if err := s.Save(fmt.Sprint("k", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
		s.Backend()
	}
	if len(kc.probeNS) != 1 {
		t.Errorf("probed %d times, want once", len(kc.probeNS))
	}
	for _, user := range kc.probeNS {
		if kc.has(user) {
			t.Errorf("the probe left %q in the keychain", user)
		}
	}

	// A keychain that fails the probe is not asked again.
	bad := newFake()
	bad.err = errors.New("org.freedesktop.DBus.Error.ServiceUnknown: The name org.freedesktop.secrets was not provided")
	s2 := Open(service, t.TempDir())
	s2.kc = bad
	if err := s2.Save("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	calls := bad.calls
	mustLoad(t, s2, "k")
	if err := s2.Delete("k"); err != nil {
		t.Fatal(err)
	}
	if bad.calls != calls {
		t.Errorf("a Store that fell back asked the keychain again")
	}
	if !strings.Contains(s2.Notice(), "ServiceUnknown") {
		t.Errorf("Notice = %q, want the D-Bus error", s2.Notice())
	}
}

func TestForcedFile(t *testing.T) {
	fileEnv(t)
	kc := newFake()
	s := Open(service, t.TempDir())
	s.kc = kc
	if err := s.Save("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, s, "k"); string(got) != "v" {
		t.Fatalf("Load = %q", got)
	}
	if kc.calls != 0 {
		t.Errorf("MCPHUB_KEYCHAIN=file still used the keychain")
	}
	if !strings.HasPrefix(s.Backend(), "file: ") || s.Notice() != "" {
		t.Errorf("Backend, Notice = %q, %q; want the file and no notice", s.Backend(), s.Notice())
	}
}

// TestTwoStores is two processes' view of one file.
func TestTwoStores(t *testing.T) {
	fileEnv(t)
	dir := t.TempDir()
	a, b := Open(service, dir), Open(service, dir)
	if err := a.Save("one", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Save("two", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, b, "one"); string(got) != "1" {
		t.Errorf("b.Load(one) = %q, want 1", got)
	}
	if got := mustLoad(t, a, "two"); string(got) != "2" {
		t.Errorf("a.Load(two) = %q, want 2", got)
	}
	if err := b.Delete("one"); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, a, "one"); got != nil {
		t.Errorf("a.Load(one) after b.Delete = %q, want nil", got)
	}
	if got := mustLoad(t, a, "two"); string(got) != "2" {
		t.Errorf("b's Delete of one lost two: %q", got)
	}
}

func TestConcurrentSave(t *testing.T) {
	fileEnv(t)
	dir := t.TempDir()
	stores := []*Store{Open(service, dir), Open(service, dir)}
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			s := stores[i%len(stores)]
			key := fmt.Sprint("server-", i)
			if err := s.Save(key, []byte(key)); err != nil {
				errs <- err
				return
			}
			if err := s.Save("shared", []byte(key)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range n {
		key := fmt.Sprint("server-", i)
		if got := mustLoad(t, stores[0], key); string(got) != key {
			t.Errorf("Load(%s) = %q: a concurrent Save was lost", key, got)
		}
	}
	if got := mustLoad(t, stores[1], "shared"); !strings.HasPrefix(string(got), "server-") {
		t.Errorf("Load(shared) = %q", got)
	}
	left, err := filepath.Glob(filepath.Join(dir, "*.tmp"))
	if err != nil || len(left) > 0 {
		t.Errorf("temporary files left behind: %v %v", left, err)
	}
}

func TestDeleteAbsent(t *testing.T) {
	autoEnv(t)
	keyring.MockInit()
	s := Open(service, t.TempDir())
	if err := s.Delete("nothing"); err != nil {
		t.Errorf("keychain Store: Delete of an absent key: %v", err)
	}

	fileEnv(t)
	f := Open(service, filepath.Join(t.TempDir(), "missing-dir"))
	if err := f.Delete("nothing"); err != nil {
		t.Errorf("file Store, no file: Delete: %v", err)
	}
	if err := f.Save("other", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := f.Delete("nothing"); err != nil {
		t.Errorf("file Store, key absent: Delete: %v", err)
	}
	if got := mustLoad(t, f, "other"); string(got) != "x" {
		t.Errorf("Delete of an absent key changed another: %q", got)
	}
}

func TestCorruptFile(t *testing.T) {
	fileEnv(t)
	for name, text := range map[string]string{
		"syntax":     `{"github": "c2VjcmV0`,
		"shape":      `["a", "b"]`,
		"null":       `null`,
		"not base64": `{"github": "hunter2!!"}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			s := Open(service, dir)
			_, err := s.Load("github")
			if name != "not base64" {
				// Only Load decodes an entry; the others fail every call.
				if serr := s.Save("github", []byte("x")); serr == nil {
					t.Errorf("Save over a corrupt file succeeded")
				}
			}
			if err == nil {
				t.Fatalf("Load of a corrupt file succeeded")
			}
			msg := err.Error()
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(msg, path) || !strings.Contains(msg, "delete it and log in") {
				t.Errorf("error %q: want ErrCorrupt, the path and how to recover", msg)
			}
			if strings.Contains(msg, "c2VjcmV0") || strings.Contains(msg, "hunter2") {
				t.Errorf("error %q quotes the file's contents", msg)
			}
			if got, _ := os.ReadFile(path); string(got) != text {
				t.Errorf("a corrupt file was overwritten")
			}
		})
	}
}

func TestErrorsHideSecrets(t *testing.T) {
	autoEnv(t)
	kc := newFake()
	s := Open(service, t.TempDir())
	s.kc, s.fits = kc, nil
	s.Backend() // probe while the keychain works
	kc.mu.Lock()
	kc.err = errors.New("the keychain is locked")
	kc.mu.Unlock()

	secret := []byte(`{"access_token":"sekret-token-value"}`)
	err := s.Save("github", secret)
	if err == nil {
		t.Fatal("Save into a failing keychain succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "sekret") || strings.Contains(msg, base64.StdEncoding.EncodeToString(secret)) {
		t.Errorf("error %q contains the secret", msg)
	}
	if !strings.Contains(msg, "OS keychain") || !strings.Contains(msg, "github") {
		t.Errorf("error %q should name the backend and the key", msg)
	}
	if _, err := s.Load("github"); err == nil || !strings.Contains(err.Error(), "OS keychain") {
		t.Errorf("Load from a failing keychain: %v", err)
	}
}

func TestEmptyKey(t *testing.T) {
	fileEnv(t)
	s := Open(service, t.TempDir())
	if err := s.Save("", []byte("x")); err == nil {
		t.Errorf("Save with an empty key succeeded")
	}
	if _, err := s.Load(""); err == nil {
		t.Errorf("Load with an empty key succeeded")
	}
	if err := s.Delete(""); err == nil {
		t.Errorf("Delete with an empty key succeeded")
	}
}

// TestMain gives the tests a session bus address: they use go-keyring's
// mock, which needs no bus, and sessionBusMissing would otherwise keep a
// Store on a machine without one from reaching it.
func TestMain(m *testing.M) {
	os.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/mcphub-test-bus")
	os.Exit(m.Run())
}

func TestSessionBusMissing(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	none := func(string) bool { return false }
	only := func(p string) func(string) bool { return func(q string) bool { return q == p } }
	for _, tc := range []struct {
		goos    string
		env     map[string]string
		exists  func(string) bool
		missing bool
	}{
		{"linux", nil, none, true},
		{"linux", map[string]string{"DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus"}, none, false},
		// Where godbus looks when the variable is unset: the user's
		// runtime directory under /run/user, whatever XDG_RUNTIME_DIR says.
		{"linux", nil, only("/run/user/1000/bus"), false},
		{"linux", map[string]string{"XDG_RUNTIME_DIR": "/tmp/rt"}, only("/tmp/rt/bus"), true},
		{"linux", nil, only("/run/user/1001/bus"), true},
		// godbus takes "autolaunch:" for no address, and launches a daemon.
		{"linux", map[string]string{"DBUS_SESSION_BUS_ADDRESS": "autolaunch:"}, none, true},
		{"linux", map[string]string{"DBUS_SESSION_BUS_ADDRESS": "autolaunch:"}, only("/run/user/1000/bus"), false},
		{"freebsd", nil, none, true},
		{"darwin", nil, none, false},
		{"windows", nil, none, false},
	} {
		if got := sessionBusMissing(tc.goos, env(tc.env), tc.exists, 1000) != ""; got != tc.missing {
			t.Errorf("%s %v: missing = %v, want %v", tc.goos, tc.env, got, tc.missing)
		}
	}
}
