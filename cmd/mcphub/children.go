package main

import (
	"encoding/json"
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
type children struct {
	path string
	sid  int // this hub's session: leftovers still belong to it

	mu     sync.Mutex
	groups map[int]bool
}

type childrenFile struct {
	Session int   `json:"session"`
	Groups  []int `json:"groups"`
}

func newChildren(dataDir string) *children {
	_, sid, _ := procGroup(os.Getpid())
	return &children{path: filepath.Join(dataDir, "children.json"), sid: sid, groups: map[int]bool{}}
}

// track is client.Config.OnProcess.
func (c *children) track(pgid int, started bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if started {
		c.groups[pgid] = true
	} else {
		delete(c.groups, pgid)
	}
	f := childrenFile{Session: c.sid}
	for g := range c.groups {
		f.Groups = append(f.Groups, g)
	}
	data, _ := json.Marshal(f)
	tmp := c.path + ".tmp"
	if os.WriteFile(tmp, data, 0o600) == nil {
		os.Rename(tmp, c.path)
	}
}

// reapLeftovers stops what a previous hub on this data dir left running: the
// members of its recorded process groups that are still in that hub's
// session (so a group id reused by an unrelated process is left alone).
func reapLeftovers(dataDir string, log *slog.Logger) {
	data, err := os.ReadFile(filepath.Join(dataDir, "children.json"))
	if err != nil {
		return
	}
	var f childrenFile
	if json.Unmarshal(data, &f) != nil || f.Session == 0 {
		return
	}
	want := map[int]bool{}
	for _, g := range f.Groups {
		want[g] = true
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		pgrp, sid, ok := procGroup(pid)
		if !ok || !want[pgrp] || sid != f.Session {
			continue
		}
		log.Warn("stopping a process a previous mcphub left behind", "pid", pid, "process_group", pgrp)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	os.Remove(filepath.Join(dataDir, "children.json"))
}

// procGroup reads a process's group and session from /proc/PID/stat.
func procGroup(pid int) (pgrp, sid int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name may hold spaces and parentheses: fields start
	// after the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(s[i+1:])
	// state ppid pgrp session ...
	if len(fields) < 4 {
		return 0, 0, false
	}
	pgrp, err1 := strconv.Atoi(fields[2])
	sid, err2 := strconv.Atoi(fields[3])
	return pgrp, sid, err1 == nil && err2 == nil
}
