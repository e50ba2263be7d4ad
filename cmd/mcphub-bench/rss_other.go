//go:build !linux

package main

// rssKB reports that the resident set size is not measured: the bench reads
// it from /proc, which only Linux has.
func rssKB(pid int) (kb int, ok bool) { return 0, false }
