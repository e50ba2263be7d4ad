//go:build unix

package client

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"syscall"
)

// The record's file format. A group is recorded with its leader's start
// time, in the unit readLeader reports on this OS (clock ticks since boot on
// Linux, microseconds since the epoch on macOS).
type recordedGroup struct {
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"`
}

type recordFile struct {
	Groups []recordedGroup `json:"process_groups"`
}

// procStat is what the record needs to know of a process: its group and
// when it started.
type procStat struct {
	pgrp  int
	start uint64
}

// Track records that the process group pid leads has started (started
// true) or has been stopped whole (started false), and rewrites the file
// atomically. It has the signature of Config.OnProcess. A leader that is
// already gone when Track hears of it leaves nothing to record. Failing to
// write the file only costs the reaping after a crash, so it is not
// reported.
func (r *ProcessRecord) Track(pid int, started bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if started {
		st, err := readLeader(pid)
		if err != nil {
			return
		}
		r.groups[pid] = st.start
	} else {
		delete(r.groups, pid)
	}
	var f recordFile
	for g, start := range r.groups {
		f.Groups = append(f.Groups, recordedGroup{PGID: g, Start: start})
	}
	data, err := json.Marshal(f)
	if err != nil {
		return
	}
	tmp := r.path + ".tmp"
	if os.WriteFile(tmp, data, 0o600) == nil {
		os.Rename(tmp, r.path)
	}
}

// ReapLeftovers stops what a previous hub that kept its record at path left
// running, then removes the file. It kills (SIGKILL) every recorded process
// group that is still the group that hub started, and nothing else.
//
// No Unix hands out a PID that is still in use as a process group id, so a
// recorded group whose leader is gone is still the same group (its id stays
// reserved while any member lives), and one whose leader is there is the
// same group only if that leader started when the record says. (The session
// id cannot tell: inside a container it reads 0 for every process.)
func ReapLeftovers(path string, log *slog.Logger) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var f recordFile
	if err := json.Unmarshal(data, &f); err != nil {
		log.Warn("ignoring an unreadable record of a previous mcphub's processes", "file", path, "err", err)
	}
	for _, g := range f.Groups {
		if g.PGID <= 1 {
			continue
		}
		leader, err := readLeader(g.PGID)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// The leader is gone; whatever is in the group is a leftover.
		case err != nil:
			continue
		case leader.pgrp != g.PGID || leader.start != g.Start:
			continue // the id now belongs to an unrelated process
		}
		if syscall.Kill(-g.PGID, syscall.SIGKILL) == nil {
			log.Warn("stopped what a previous mcphub left behind", "process_group", g.PGID)
		}
	}
	os.Remove(path)
}
