package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchDebounce is how long Watch waits after the last change event before
// it reads the file, so that an editor's burst of writes, renames and chmods
// gives one reload. Tests may lower it before calling Watch.
var WatchDebounce = 250 * time.Millisecond

// Watch reports the registry at path now and after every change, until ctx
// is done. It calls fn once at the start with the current state, so that no
// change between the caller's own Load and the watch is missed (an unchanged
// file gives an empty Diff), and then once per settled change:
//
//   - fn(reg, nil) when the file parses and validates, but for problems
//     confined to single servers' entries, which ParseServing marks on
//     those servers (Server.Problem);
//   - fn(nil, err) when it does not, or when it was removed (once per
//     removal; recreating the file reloads it). The error is also logged
//     through slog.Default. The caller keeps its last good registry.
//
// A change of the [hub] token_file of the registry in force calls fn again
// with that registry, so that a token replaced on disk (mcphub token
// --force) is read again without an edit of the registry.
//
// A save whose bytes are identical to the last ones seen is ignored. Watch
// watches the file's directory, not the file, so that saves by rename (how
// most editors write) and delete-and-recreate are seen; a symlinked file's
// target directory is watched as well. fn runs on Watch's goroutine, one call
// at a time. Watch returns an error at once when the directory cannot be
// watched, and nil after ctx is done and everything it started has stopped.
func Watch(ctx context.Context, path string, fn func(*Registry, error)) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("registry: watch %s: %w", path, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("registry: watch %s: %w", path, err)
	}
	defer w.Close() // waits for fsnotify's reader goroutine

	names := map[string]bool{abs: true}
	dirs := []string{filepath.Dir(abs)}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		names[real] = true
		if d := filepath.Dir(real); d != dirs[0] {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			return fmt.Errorf("registry: watch %s: %w", d, err)
		}
	}

	st := &watchState{path: path, fn: fn}
	watched := map[string]bool{}
	for _, d := range dirs {
		watched[d] = true
	}
	// followToken watches the directory of the token file the registry in
	// force names, once it is known.
	followToken := func() {
		if st.token == "" {
			return
		}
		if d := filepath.Dir(st.token); !watched[d] {
			if err := w.Add(d); err != nil {
				slog.Default().Warn("registry: not watching the token file; a new token needs an edit of the registry or a restart", "path", st.token, "err", err)
				return
			}
			watched[d] = true
		}
	}
	st.follow = followToken
	st.reload()
	debounce := WatchDebounce
	timer := time.NewTimer(debounce)
	timer.Stop()
	defer timer.Stop()
	tokenChanged := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("registry: file watcher closed")
			}
			// Chmod alone (indexers, backup tools) cannot change content.
			if ev.Op&^fsnotify.Chmod == 0 {
				continue
			}
			switch name := filepath.Clean(ev.Name); {
			case names[name]:
				timer.Reset(debounce)
			case st.token != "" && name == st.token:
				tokenChanged = true
				timer.Reset(debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("registry: file watcher closed")
			}
			slog.Default().Warn("registry: file watcher error", "path", path, "err", err)
		case <-timer.C:
			if !st.reload() && tokenChanged {
				st.retoken()
			}
			tokenChanged = false
		}
	}
}

// watchHook, when set (by tests, before Watch starts), is told about
// reloads that report nothing: "same" for identical content and "missing"
// for a file whose removal was already reported.
var watchHook func(event string)

type watchState struct {
	path    string
	fn      func(*Registry, error)
	last    []byte
	seen    bool   // last holds the content of the file as last read
	missing bool   // the file's absence was already reported
	token   string // the token_file of the last good registry, absolute
	// follow watches the token file's directory; reload calls it before
	// it reports, so a change made right after the report is seen.
	follow func()
}

// reload reads the file and reports it when it changed; it returns whether
// it called fn.
func (st *watchState) reload() bool {
	data, err := os.ReadFile(st.path)
	if err != nil {
		gone := errors.Is(err, fs.ErrNotExist)
		if gone && st.missing {
			st.quiet("missing")
			return false
		}
		st.last, st.seen, st.missing = nil, false, gone
		st.report(nil, fmt.Errorf("registry: reload %s: %w", st.path, err))
		return true
	}
	if st.seen && bytes.Equal(data, st.last) {
		st.quiet("same")
		return false
	}
	st.last, st.seen, st.missing = data, true, false
	reg, err := ParseServing(st.path, data, os.LookupEnv)
	if err == nil {
		st.token = ""
		if tf := reg.Hub.TokenFile; tf != "" {
			if abs, err := filepath.Abs(tf); err == nil {
				st.token = filepath.Clean(abs)
			}
		}
	}
	if err == nil && st.follow != nil {
		st.follow()
	}
	st.report(reg, err)
	return true
}

// retoken reports the registry in force again, parsed anew from the bytes
// last read (the caller owns what it is given), after its token file
// changed.
func (st *watchState) retoken() {
	if !st.seen {
		return
	}
	if reg, err := ParseServing(st.path, st.last, os.LookupEnv); err == nil {
		st.fn(reg, nil)
	}
}

func (st *watchState) report(reg *Registry, err error) {
	if err != nil {
		slog.Default().Error("registry: reload failed; keeping the last good registry", "path", st.path, "err", err)
	}
	st.fn(reg, err)
}

func (st *watchState) quiet(event string) {
	if watchHook != nil {
		watchHook(event)
	}
}
