// Package dashboard is the broker's web page, in the manner of RocketMQ
// Dashboard, served on the admin listener at /ui/. Its assets (ui/) are
// embedded in the binary: plain HTML, CSS and JavaScript, no build step,
// nothing fetched from elsewhere. The page polls a small JSON API under
// /ui/api/:
//
//	GET  /ui/api/overview      this broker: name, role, totals, rates, per-topic counts
//	GET  /ui/api/cluster       every broker the name servers know: role, rates, disk, replication
//	GET  /ui/api/topics        this broker's topics: queues, offsets, counts
//	GET  /ui/api/topic?topic=  one topic's queues and the groups with offsets on it
//	GET  /ui/api/groups        consumer groups: members online, lag
//	GET  /ui/api/group?group=  members, subscriptions, lag per queue
//	POST /ui/api/group/reset   move a group's offsets (reset.go)
//	GET  /ui/api/messages?...  message search by id, key, or queue and offset
//
// The package holds the HTTP side: routes, parameters and their checks,
// the JSON shapes the page reads, errors as statuses. What the views
// show of this broker comes from a Source, one method per endpoint,
// which the broker implements over its own state; the package never
// sees the broker. The cluster view asks the name servers
// (GET_BROKER_CLUSTER_INFO) and each other broker (GET_BROKER_RUNTIME_INFO,
// and a master's "stats ha" for its slaves' replication) through an
// Admin, which is the Go client's admin API.
//
// Everything sits behind the admin listener's basic auth (with ACL on),
// as /metrics does; the one mutating endpoint needs POST, a JSON body
// and the X-Samsa-UI header (a cross-site form can send none of them),
// and with ACL off refuses unless the admin listener is on loopback.
//
// A Dashboard is safe for concurrent use; it calls its Source and Admin
// from concurrent requests.
package dashboard
