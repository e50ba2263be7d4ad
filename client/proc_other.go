//go:build unix && !linux && !darwin

package client

import (
	"errors"
	"fmt"
)

// readLeader is not implemented on this system: without it Track records
// nothing and ReapLeftovers finds nothing to stop.
func readLeader(pid int) (procStat, error) {
	return procStat{}, fmt.Errorf("process %d: %w", pid, errors.ErrUnsupported)
}
