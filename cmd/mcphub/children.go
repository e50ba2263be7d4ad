package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// children records the process groups of the stdio servers this hub runs,
// in <data-dir>/children.json. A hub that exits cleanly stops every group;
// one killed by SIGKILL cannot, and although its children see stdin EOF and
// exit, a grandchild that ignores stdin would live on. The next serve on the
// same data dir finds such leftovers through this record and stops them.
//
// A group is recorded with its leader's start time. Linux never hands out a
// PID that is still in use as a process group id, so a recorded group whose
// leader is gone is still the same group, and one whose leader is there is
// the same group only if that leader started when the record says. (The
// session id cannot tell: inside a container it reads 0 for every process.)
type children struct {
	path string

	mu     sync.Mutex
	groups map[int]uint64 // pgid → leader start time
}

type childGroup struct {
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"` // /proc/PID/stat starttime, clock ticks since boot
}

type childrenFile struct {
	Groups []childGroup `json:"process_groups"`
}

func newChildren(dataDir string) *children {
	return &children{path: filepath.Join(dataDir, "children.json"), groups: map[int]uint64{}}
}

// track is client.Config.OnProcess.
func (c *children) track(pgid int, started bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if started {
		st, err := readProcStat(pgid)
		if err != nil {
			return // already gone: nothing to leave behind
		}
		c.groups[pgid] = st.start
	} else {
		delete(c.groups, pgid)
	}
	var f childrenFile
	for g, start := range c.groups {
		f.Groups = append(f.Groups, childGroup{PGID: g, Start: start})
	}
	data, _ := json.Marshal(f)
	tmp := c.path + ".tmp"
	if os.WriteFile(tmp, data, 0o600) == nil {
		os.Rename(tmp, c.path)
	}
}

// reapLeftovers stops what a previous hub on this data dir left running:
// every recorded process group that is still the group that hub started.
func reapLeftovers(dataDir string, log *slog.Logger) {
	path := filepath.Join(dataDir, "children.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var f childrenFile
	if err := json.Unmarshal(data, &f); err != nil {
		log.Warn("ignoring an unreadable record of a previous mcphub's processes", "file", path, "err", err)
	}
	for _, g := range f.Groups {
		if g.PGID <= 1 {
			continue
		}
		leader, err := readProcStat(g.PGID)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// The leader is gone; the group id stays reserved while any
			// member lives, so whatever is in the group is a leftover.
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

type procStat struct {
	pgrp  int
	start uint64
}

// readProcStat reads a process's group and start time from /proc/PID/stat.
func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(data))
}

// parseProcStat parses the text of /proc/PID/stat. The command name may
// hold spaces and parentheses: the fields start after the last ')'.
func parseProcStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("proc stat: no command name")
	}
	// state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	// cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime ...
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return procStat{}, errors.New("proc stat: too few fields")
	}
	pgrp, err := strconv.Atoi(fields[2])
	if err != nil {
		return procStat{}, errors.New("proc stat: bad process group")
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return procStat{}, errors.New("proc stat: bad start time")
	}
	return procStat{pgrp: pgrp, start: start}, nil
}
