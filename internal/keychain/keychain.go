// Package keychain keeps small secrets, mcphub's OAuth grants as JSON, one
// per key: in the OS keychain (macOS Keychain, Windows Credential Manager,
// the Secret Service over D-Bus on Linux and the BSDs) when one answers,
// otherwise in a file readable only by the user, oauth.json in mcphub's data
// directory.
//
// The keychain is probed once, on first use, by writing, reading back and
// deleting a sentinel under the service. Any failure (no session bus on a
// headless Linux, no Secret Service provider, a locked or refused keychain,
// an unsupported system) makes the Store use the file for the rest of its
// life, and Notice says why. Setting MCPHUB_KEYCHAIN=file in the environment
// skips the keychain altogether (tests, CI, machines whose keychain prompts);
// other values of it are ignored.
//
// Values are stored base64-encoded, since the keychain backends take
// strings. A value too big for the platform's keychain (Windows Credential
// Manager takes 2560 bytes, macOS's security tool a 4096-byte command) is
// kept in the file even when the keychain answers, so Load looks in both,
// keychain first, and Delete removes from both.
package keychain

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/zalando/go-keyring"
)

// EnvBackend names the environment variable that, set to "file", makes
// every Store keep its secrets in the file and never touch the OS keychain.
const EnvBackend = "MCPHUB_KEYCHAIN"

// FileName is the name of the file, in the Store's directory, that holds the
// secrets the keychain does not.
const FileName = "oauth.json"

// windowsMaxValue is the largest encoded value sent to Windows Credential
// Manager. go-keyring refuses more than 2560 bytes; the margin keeps clear
// of what the credential API itself allows for a generic credential blob.
const windowsMaxValue = 2000

// darwinMaxCommand is the longest command go-keyring writes to macOS's
// security tool; over it Set fails with ErrSetDataTooBig, after starting
// the tool, which it then leaves running. The Store checks the length
// first so that go-keyring never gets that far.
const darwinMaxCommand = 4096

// darwinPrefix is what go-keyring puts before the base64 form of a value on
// macOS (it encodes once more, to keep the security tool from hex-encoding).
const darwinPrefix = "go-keyring-base64:"

// Store keeps small secrets (OAuth grants as JSON) per key: in the OS keychain
// (macOS Keychain, Windows Credential Manager, Secret Service on Linux) when
// one answers, otherwise in a 0600 file in dir. Its methods are safe for
// concurrent use, and Stores of one dir, in one process or several, share
// the file under a lock.
type Store struct {
	service string
	path    string // the file: dir/oauth.json
	kc      backend

	// fits reports whether an encoded value can go to the keychain under
	// key; nil means any size can.
	fits func(key, value string) bool

	mu     sync.Mutex // guards the fields below and serializes every operation
	probed bool
	useKC  bool
	forced bool   // MCPHUB_KEYCHAIN=file
	reason string // why the keychain is not used, when it is not and not forced
}

// backend is the part of go-keyring a Store uses; tests replace it.
type backend interface {
	Set(service, user, value string) error
	Get(service, user string) (string, error)
	Delete(service, user string) error
}

// osKeyring is go-keyring's package-level provider: the OS keychain, or the
// mock that keyring.MockInit installs.
type osKeyring struct{}

func (osKeyring) Set(service, user, value string) error    { return keyring.Set(service, user, value) }
func (osKeyring) Get(service, user string) (string, error) { return keyring.Get(service, user) }
func (osKeyring) Delete(service, user string) error        { return keyring.Delete(service, user) }

// Open returns the Store of service ("mcphub") whose file lies in dir,
// mcphub's data directory. It touches neither the keychain nor the disk: the
// keychain is probed on first use, and the file and dir (mode 0700) are
// created by the first secret that goes to the file.
func Open(service, dir string) *Store {
	s := &Store{
		service: service,
		path:    filepath.Join(dir, FileName),
		kc:      osKeyring{},
		fits:    platformFits(runtime.GOOS, service),
	}
	if strings.EqualFold(strings.TrimSpace(os.Getenv(EnvBackend)), "file") {
		s.forced = true
		s.probed = true
	}
	return s
}

// platformFits returns the size rule of goos's keychain, nil when it has
// none that matters for small secrets.
func platformFits(goos, service string) func(key, value string) bool {
	switch goos {
	case "windows":
		return func(_, value string) bool { return len(value) <= windowsMaxValue }
	case "darwin":
		return func(key, value string) bool {
			n := len("add-generic-password -U -s ") + quotedLen(service) +
				len(" -a ") + quotedLen(key) +
				len(" -w ") + len(darwinPrefix) + base64.StdEncoding.EncodedLen(len(value)) + len("\n")
			return n <= darwinMaxCommand
		}
	}
	return nil
}

// quotedLen is at least the length of s once go-keyring has quoted it for
// the security tool's command line: in single quotes, each quote in it
// written as '"'"'.
func quotedLen(s string) int {
	return len(s) + 2 + 4*strings.Count(s, "'")
}

// Backend names where the Store keeps secrets, for status and login output:
// "keychain", or "file: <path>". A keychain Store still keeps in the file a
// secret too big for the keychain.
func (s *Store) Backend() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keychainLocked() {
		return "keychain"
	}
	return "file: " + s.path
}

// Notice is one sentence for the user when the Store fell back to the file
// because no keychain answered, and "" otherwise, also when MCPHUB_KEYCHAIN
// chose the file.
func (s *Store) Notice() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keychainLocked() || s.forced {
		return ""
	}
	return fmt.Sprintf("no OS keychain answered (%s); tokens are kept in %s, readable only by you", s.reason, s.path)
}

// Load returns the secret saved under key, or nil and no error when there is
// none. It looks in the keychain first, then in the file.
func (s *Store) Load(key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keychainLocked() {
		value, err := s.kc.Get(s.service, key)
		switch {
		case err == nil:
			data, err := base64.StdEncoding.DecodeString(value)
			if err != nil {
				return nil, fmt.Errorf("keychain: OS keychain entry %q of service %q is not base64 (%w); delete it and log in again",
					key, s.service, err)
			}
			return data, nil
		case !errors.Is(err, keyring.ErrNotFound):
			return nil, fmt.Errorf("keychain: OS keychain: load %q: %w", key, err)
		}
	}
	return s.fileLoad(key)
}

// Save keeps data under key, replacing what was there. It goes to the
// keychain when the Store uses one and data fits in it, else to the file;
// the copy in the other place, if any, is removed, so that Load never
// returns an older secret.
func (s *Store) Save(key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	value := base64.StdEncoding.EncodeToString(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.keychainLocked() {
		return s.fileSave(key, value)
	}
	if s.fits == nil || s.fits(key, value) {
		err := s.kc.Set(s.service, key, value)
		if err == nil {
			return s.fileDelete(key)
		}
		if !errors.Is(err, keyring.ErrSetDataTooBig) {
			return fmt.Errorf("keychain: OS keychain: save %q: %w", key, err)
		}
	}
	slog.Debug("keychain: secret too big for the OS keychain, keeping it in the file",
		"key", key, "bytes", len(value), "path", s.path)
	if err := s.fileSave(key, value); err != nil {
		return err
	}
	if err := s.kc.Delete(s.service, key); err != nil && !errors.Is(err, keyring.ErrNotFound) {
		return fmt.Errorf("keychain: OS keychain: remove the older %q: %w", key, err)
	}
	return nil
}

// Delete removes the secret saved under key from the keychain and the
// file. A key saved nowhere is not an error.
func (s *Store) Delete(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keychainLocked() {
		if err := s.kc.Delete(s.service, key); err != nil && !errors.Is(err, keyring.ErrNotFound) {
			return fmt.Errorf("keychain: OS keychain: delete %q: %w", key, err)
		}
	}
	return s.fileDelete(key)
}

// checkKey refuses the empty key, which the keychains cannot name.
func checkKey(key string) error {
	if key == "" {
		return errors.New("keychain: empty key")
	}
	return nil
}

// keychainLocked reports whether the Store uses the keychain, probing it on
// the first call. s.mu must be held.
func (s *Store) keychainLocked() bool {
	if !s.probed {
		s.probed = true
		if why := sessionBusMissing(runtime.GOOS, os.Getenv, exists, os.Getuid()); why != "" {
			s.reason = why
			return false
		}
		if err := s.probe(); err != nil {
			s.reason = firstLine(err.Error())
			slog.Debug("keychain: no OS keychain, using the file", "service", s.service,
				"path", s.path, "err", err)
		} else {
			s.useKC = true
		}
	}
	return s.useKC
}

// sessionBusMissing says why Secret Service cannot be reached without
// starting a D-Bus daemon, "" when it can: go-keyring's D-Bus library
// (godbus) launches one (dbus-launch) when it finds no session bus, which
// would leave a daemon behind every mcphub process on a headless machine.
// It looks where godbus looks: DBUS_SESSION_BUS_ADDRESS unless it is empty
// or "autolaunch:", then the socket /run/user/UID/bus. (godbus also reads
// an address from /run/user/UID/dbus-session; a machine with only that is
// taken for one without a bus, which only costs it the keychain.) macOS and
// Windows have no session bus to miss.
func sessionBusMissing(goos string, getenv func(string) string, exists func(string) bool, uid int) string {
	if goos == "darwin" || goos == "windows" {
		return ""
	}
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return ""
	}
	bus := "/run/user/" + strconv.Itoa(uid) + "/bus"
	if exists(bus) {
		return ""
	}
	return "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset and there is no " + bus + "), so no Secret Service"
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// probe writes a sentinel under the service, reads it back and deletes it.
// The sentinel's name is random, so that processes probing at once do not
// see each other's.
func (s *Store) probe() error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	user := "mcphub-keychain-probe-" + hex.EncodeToString(b[:])
	want := hex.EncodeToString(b[:])
	if err := s.kc.Set(s.service, user, want); err != nil {
		return err
	}
	got, err := s.kc.Get(s.service, user)
	if err != nil {
		_ = s.kc.Delete(s.service, user)
		if errors.Is(err, keyring.ErrNotFound) {
			return errors.New("it lost a value written to it")
		}
		return err
	}
	if err := s.kc.Delete(s.service, user); err != nil && !errors.Is(err, keyring.ErrNotFound) {
		return err
	}
	if got != want {
		return errors.New("it returned a different value than was written to it")
	}
	return nil
}

// firstLine is s up to its first newline, at most 200 bytes: enough of a
// backend's error to tell what failed.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > 200 {
		n := 200
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}
