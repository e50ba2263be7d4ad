package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// rssKB reads the resident set size of process pid from /proc; ok is false
// when it cannot be read.
func rssKB(pid int) (kb int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, found := strings.CutPrefix(line, "VmRSS:"); found {
			f := strings.Fields(v)
			if len(f) == 0 {
				return 0, false
			}
			n, err := strconv.Atoi(f[0])
			return n, err == nil
		}
	}
	return 0, false
}
