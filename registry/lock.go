package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/mcphub/mcphub/internal/filelock"
)

// Edits of one registry are serialized across processes by an exclusive OS
// lock (flock on Unix, LockFileEx on Windows) on a lock file next to it,
// ".hub.toml.lock" for hub.toml, held from before the edit reads the file
// until it has read its result back. The lock is not taken on the registry
// itself because an edit replaces that file by a rename, and a lock on the
// replaced file would guard nothing. The lock file is never removed: a
// process that removed it could do so while another waits on it, and a third
// would then lock a new file and edit alongside the second. The system drops
// the lock when its process dies, so a killed mcphub never blocks the next.
//
// Programs that do not take the lock (an editor, a script) are handled by
// the edit itself: see edit.run.

// ErrEditLocked reports that another process held the registry's edit lock
// for longer than an edit waits.
var ErrEditLocked = errors.New("the registry is being edited by another process")

// editLockTimeout is how long an edit waits for another process's edit of
// the same registry; one edit takes milliseconds.
var editLockTimeout = 10 * time.Second

// lockPath is the lock file of the registry at path.
func lockPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
}

// lockForEdit takes the edit lock of the registry at path, waiting up to
// editLockTimeout, and returns the function that releases it. mkdir creates
// the registry's directory (mode 0700) first when it is missing; the lock
// file is created with mode 0600.
func lockForEdit(path string, mkdir bool) (unlock func(), err error) {
	lp := lockPath(path)
	if mkdir {
		if err := os.MkdirAll(filepath.Dir(lp), 0o700); err != nil {
			return nil, fmt.Errorf("registry: %w", err)
		}
	}
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("registry: edit lock: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), editLockTimeout)
	defer cancel()
	if err := filelock.Lock(ctx, f); err != nil {
		f.Close()
		if errors.Is(err, filelock.ErrLocked) {
			return nil, fmt.Errorf("registry: %w: waited %s for the lock on %s; try again when the other edit is done",
				ErrEditLocked, editLockTimeout, lp)
		}
		return nil, fmt.Errorf("registry: edit lock: %w", err)
	}
	return func() {
		_ = filelock.Unlock(f)
		_ = f.Close()
	}, nil
}

// EnsureExistsLocked is EnsureExists under the edit lock: a concurrent edit
// (another `mcphub add` on a machine with no registry yet) then never reads
// the new file half written, nor has its change overwritten by the default
// text.
func EnsureExistsLocked(path string) (created bool, err error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil // the common case needs no lock, nor a lock file
	}
	unlock, err := lockForEdit(path, true)
	if err != nil {
		return false, err
	}
	defer unlock()
	return EnsureExists(path)
}

// errConcurrent means the file no longer held what an edit was computed
// from when the edit came to replace it; nothing was written.
var errConcurrent = errors.New("file changed while editing")

// editHook, when a test sets it, runs at each stage of writing an edit:
// "check" just before the file is read for the last time before it is
// replaced, "rename" just before the exchange or rename that replaces it,
// "readback" just before the result is read back.
var editHook func(stage string)

// editAttempts bounds how often one edit starts again because a program
// that does not take the edit lock changed the file meanwhile.
const editAttempts = 5

// editFile runs one edit under the registry's edit lock, which
// serializes it with every other mcphub edit of the file, in any process.
// target is the server the edit is about (see compute). See edit.run for
// programs that change the file without the lock.
func editFile(path, target string, create bool,
	change func([]byte, *layout, *Registry) ([]byte, error), verify func(*Registry) error) error {
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r // keep a symlinked hub.toml (dotfiles) a symlink
	}
	if !create {
		// Fail before the lock, which would create a lock file next to a
		// registry that does not exist.
		if _, err := os.Stat(real); err != nil {
			return fmt.Errorf("registry: %w", err)
		}
	}
	unlock, err := lockForEdit(real, create)
	if err != nil {
		return err
	}
	defer unlock()
	e := &edit{path: path, real: real, target: target, create: create, change: change, verify: verify}
	return e.run()
}

// edit is one change of the registry file.
type edit struct {
	path, real string // as given, and with symlinks resolved
	target     string
	create     bool
	change     func([]byte, *layout, *Registry) ([]byte, error)
	verify     func(*Registry) error
}

// run reads the file, computes the change, writes the result and reads it
// back, and starts again when a program that does not take the lock (an
// editor, a script) changed the file in between:
//
//   - changed before the last check: nothing is written, and the edit is
//     computed again on the new content;
//   - saved between the check and the replace (seen in what the replace
//     displaced): that text would be lost, so the edit is computed again on
//     it and written over the first result;
//   - replaced after the write: the read-back lacks the edit, which is
//     computed again on the new content.
//
// What no edit can prevent is another program that read the file before
// this edit and saves it after the read-back without checking: it replaces
// this edit as it would anyone's. Where the system cannot exchange files
// atomically (Windows, a few filesystems), a save by rename in the microseconds between the
// last check and the rename is replaced unseen; see replaceIfUnchanged.
// Nothing returns nil unless the read-back found the edit on disk.
func (e *edit) run() error {
	var base, disk []byte // what the edit is computed from; what the file holds
	var exists, displaced bool
	var mode fs.FileMode
	for attempt := range editAttempts {
		if attempt == 0 || !displaced {
			src, ok, m, err := readForEdit(e.real, e.create)
			if err != nil {
				return err
			}
			base, disk, exists, mode = src, src, ok, m
		}
		out, err := e.compute(base)
		if err != nil || out == nil {
			if displaced {
				return errors.Join(err, e.putBack(base, disk, mode))
			}
			return err
		}
		was, err := writeAtomic(e.real, disk, exists, out, mode)
		held := displaced
		displaced = false
		switch {
		case err != nil && held:
			// The displaced text was not written back (a third save
			// came first, or the write failed): it lives only here
			// now, so it is kept aside.
			return errors.Join(err, e.keepAside(base))
		case errors.Is(err, errConcurrent):
			slog.Debug("registry: the file changed during the edit; editing the new content", "path", e.path, "attempt", attempt+1)
			continue
		case err != nil:
			return err
		case exists && !bytes.Equal(was, disk):
			slog.Debug("registry: another program wrote into the file as it was replaced; editing its text", "path", e.path, "attempt", attempt+1)
			base, disk, exists, displaced = was, out, true, true
			continue
		}
		if editHook != nil {
			editHook("readback")
		}
		if ok, err := e.onDisk(); err != nil || ok {
			return err
		}
		slog.Debug("registry: the file was replaced after the edit; editing the new content", "path", e.path, "attempt", attempt+1)
	}
	err := fmt.Errorf("registry: %s was changed by another program during each of %d attempts to edit it; check the file and try again", e.path, editAttempts)
	if displaced {
		return errors.Join(err, e.putBack(base, disk, mode))
	}
	return err
}

// keepAside saves text that another program wrote into the file, and that
// the file no longer holds, next to it, and fails the edit saying where.
func (e *edit) keepAside(text []byte) error {
	f, err := os.CreateTemp(filepath.Dir(e.real), filepath.Base(e.real)+".displaced-*")
	if err == nil {
		_, err = f.Write(text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("registry: the edit of %s was not made, and the text another program saved into it during the edit could not be kept aside: %w", e.path, err)
	}
	return fmt.Errorf("registry: the edit of %s was not made; the text another program saved into it during the edit, which the file no longer holds, is in %s", e.path, f.Name())
}

// putBack writes text, which another program saved as the file was
// replaced, back over the edit's result, which the file holds (disk): the
// edit has failed, and that text must not be lost with it.
func (e *edit) putBack(text, disk []byte, mode fs.FileMode) error {
	if _, err := writeAtomic(e.real, disk, true, text, mode); err != nil {
		return fmt.Errorf("registry: restoring the text another program wrote into %s: %w", e.path, err)
	}
	return nil
}

// compute applies the change to src and checks the result: it must parse,
// validate (but for unset variables) and pass verify. It
// returns nil, nil when there is nothing to change.
func (e *edit) compute(src []byte) ([]byte, error) {
	reg, errs := parse(e.path, src, os.LookupEnv)
	if reg == nil {
		return nil, fmt.Errorf("registry: cannot edit %s: it does not parse (nothing was changed):\n%w", e.path, errs)
	}
	// Unset variables never block an edit (see edit.go). Nor does another
	// server's bad entry, which the hub shows failed while it serves the
	// rest: an edit must not make anything worse, so it may leave a problem
	// that was there, but not add one, and the server it edits must come
	// out without a problem unless the edit disables or removes it.
	// A bad profile is the same: the hub serves the rest.
	had := map[string]bool{}
	for _, x := range errs {
		had[x.server+"\x00"+x.profile+"\x00"+x.Key] = true
	}
	pre := errs.filter(func(x *Error) bool { return !x.unset && x.server == "" && !x.inProfile })
	if len(pre) > 0 {
		return nil, fmt.Errorf("registry: %s has problems; fix them first (nothing was changed):\n%w", e.path, pre)
	}
	out, err := e.change(src, locate(src), reg)
	if err != nil || out == nil {
		return nil, err
	}
	reg2, errs2 := parse(e.path, out, os.LookupEnv)
	if reg2 == nil {
		return nil, &resultError{path: e.path, errs: errs2}
	}
	post := errs2.filter(func(x *Error) bool {
		if x.unset {
			return false
		}
		if x.server == "" && !x.inProfile || !had[x.server+"\x00"+x.profile+"\x00"+x.Key] {
			return true
		}
		s := reg2.Server(x.server)
		return x.server == e.target && s != nil && s.Enabled
	})
	if len(post) > 0 {
		return nil, &resultError{path: e.path, errs: post}
	}
	if err := e.verify(reg2); err != nil {
		return nil, err
	}
	return out, nil
}

// onDisk reads the file back and reports whether the edit is in it.
func (e *edit) onDisk() (bool, error) {
	data, err := os.ReadFile(e.real)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("registry: reading %s back after the edit: %w", e.path, err)
	}
	reg, _ := parse(e.path, data, os.LookupEnv)
	return reg != nil && e.verify(reg) == nil, nil
}

func readForEdit(path string, create bool) ([]byte, bool, fs.FileMode, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		return nil, false, 0o600, nil
	}
	if err != nil {
		return nil, false, 0, fmt.Errorf("registry: %w", err)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, false, 0, fmt.Errorf("registry: %w", err)
	}
	return src, true, st.Mode().Perm(), nil
}

// writeAtomic replaces path with data (temporary file, fsync, rename, fsync
// of the directory), unless the file no longer holds expect (or, when
// !existed, exists): then it writes nothing and returns errConcurrent. It
// returns what the replaced file held when it was replaced (see
// replaceIfUnchanged).
func writeAtomic(path string, expect []byte, existed bool, data []byte, mode fs.FileMode) (displaced []byte, err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("registry: write %s: %w", path, err)
	}
	if displaced, err = replaceIfUnchanged(tmp, path, expect, existed); err != nil {
		return nil, err
	}
	syncDir(dir)
	return displaced, nil
}

// replaceIfUnchanged puts tmp in place of path if path still holds expect
// (or, when !existed, does not exist), and returns errConcurrent otherwise.
// On success it returns what the replaced file held at the moment it was
// replaced, which differs from expect when another program saved in between.
//
// Where the system can (Linux, macOS; filelock.Exchange), tmp and path are
// exchanged atomically and the replaced file is read under tmp's name: a
// save by rename that lands after the check is seen, and nothing is
// replaced unseen. Elsewhere the file is renamed over, and a save by rename
// in the microseconds between the check and the rename is replaced unseen;
// on Unix the old file stays open across that rename (keepReplacedOpen) and
// is read again after it, so a write into it in place is seen. Either way a
// program that keeps the old file open and writes into it after the replace
// writes into a file that no longer has a name.
func replaceIfUnchanged(tmp, path string, expect []byte, existed bool) ([]byte, error) {
	if !existed {
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			return nil, errConcurrent
		}
		if err := os.Rename(tmp, path); err != nil {
			return nil, fmt.Errorf("registry: %w", err)
		}
		return nil, nil
	}
	if editHook != nil {
		editHook("check")
	}
	old, err := os.Open(path)
	if err != nil {
		return nil, errConcurrent // gone or unreadable: the next read says which
	}
	defer old.Close()
	cur, err := io.ReadAll(old)
	if err != nil || !bytes.Equal(cur, expect) {
		return nil, errConcurrent
	}
	if editHook != nil {
		editHook("rename")
	}
	was, err := exchange(tmp, path)
	if !errors.Is(err, filelock.ErrExchangeUnsupported) {
		return was, err
	}
	return renameOver(tmp, path, old, cur)
}

// exchange swaps tmp and path and returns what path held, removing it from
// under tmp's name.
func exchange(tmp, path string) ([]byte, error) {
	err := filelock.Exchange(tmp, path)
	switch {
	case errors.Is(err, filelock.ErrExchangeUnsupported):
		return nil, err
	case errors.Is(err, fs.ErrNotExist):
		return nil, errConcurrent // removed since the check
	case err != nil:
		return nil, fmt.Errorf("registry: %w", err)
	}
	was, err := os.ReadFile(tmp)
	_ = os.Remove(tmp)
	if err != nil {
		return nil, fmt.Errorf("registry: reading the replaced %s: %w", path, err)
	}
	return was, nil
}

// renameOver renames tmp over path, whose old file is open as old and held
// cur at the check, and returns what the old file holds after the rename
// where it can stay open across it, else cur.
func renameOver(tmp, path string, old *os.File, cur []byte) ([]byte, error) {
	if !keepReplacedOpen {
		old.Close()
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if !keepReplacedOpen {
		return cur, nil
	}
	if _, err := old.Seek(0, io.SeekStart); err != nil {
		return cur, nil
	}
	if after, err := io.ReadAll(old); err == nil {
		return after, nil
	}
	return cur, nil
}

// syncDir makes a rename durable. Some systems cannot sync a directory;
// the rename has happened either way, so errors are ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
