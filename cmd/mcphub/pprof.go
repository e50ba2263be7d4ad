package main

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"

	"github.com/mcphub/mcphub/registry"
)

// startPprof serves Go's profiler on $MCPHUB_PPROF (a loopback address), for
// finding what stands between a client and its tools. Off unless set.
func startPprof(log *slog.Logger) {
	addr := os.Getenv("MCPHUB_PPROF")
	if addr == "" {
		return
	}
	if _, _, err := net.SplitHostPort(addr); err != nil || !registry.LoopbackListen(addr) {
		log.Warn("MCPHUB_PPROF must be a loopback host:port; profiler not started", "addr", addr)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			log.Warn("profiler stopped", "err", err)
		}
	}()
	log.Info("profiler listening", "addr", addr)
}
