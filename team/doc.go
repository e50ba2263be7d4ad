// Package team makes a hub a replica of a team hub: several mcphub serve
// sharing one PostgreSQL store. It owns the replica's identity (its stable
// name and the address the others reach it at), its membership of the
// cluster (store.Cluster) as the hub's Cluster, with the store's takeovers,
// fences and stale heartbeats routed to the hub, and the upstreams of
// replicas = "one" servers, which run once for the whole team and follow
// the replica running them. cmd/mcphub only reads the flags and calls it.
package team
