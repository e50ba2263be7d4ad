package client

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// readLeader reads a process's group and start time from /proc/PID/stat.
// A process that does not exist gives an error matching fs.ErrNotExist.
func readLeader(pid int) (procStat, error) {
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
