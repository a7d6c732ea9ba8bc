package dashboard

import (
	"context"
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// Source answers the dashboard's views of one broker: one method per
// JSON endpoint, each returning plain data. Requests call it
// concurrently. An error made with NotFound, Invalid, Conflict or
// Unsupported is answered with its status and text; any other with 500.
// Nil slices and maps in an answer are sent as empty ones.
type Source interface {
	// Overview is the broker at a glance (GET /ui/api/overview).
	Overview() Overview
	// Local is the broker as a row of the cluster view: who it is, its
	// runtime figures and its slaves (GET /ui/api/cluster).
	Local() LocalBroker
	// Topics lists the broker's topics (GET /ui/api/topics).
	Topics() []Topic
	// Topic is one topic with its queues and the groups with offsets on
	// it (GET /ui/api/topic?topic=); NotFound when there is no such topic.
	Topic(name string) (TopicDetail, error)
	// Groups lists the consumer groups the broker knows of
	// (GET /ui/api/groups).
	Groups() []Group
	// Group is one group's members, subscriptions and progress in each
	// queue (GET /ui/api/group?group=); NotFound when the broker knows
	// nothing of it.
	Group(name string) (GroupDetail, error)
	// Messages answers a message search (GET /ui/api/messages); q is
	// well-formed (see MessageQuery). NotFound when nothing matches.
	Messages(q MessageQuery) ([]StoredMessage, error)
	// ResetOffsets moves a group's committed offsets in a topic, or with
	// r.DryRun says how it would move them (POST /ui/api/group/reset); r
	// is well-formed (see ResetRequest).
	ResetOffsets(r ResetRequest) (ResetAnswer, error)
}

// Admin is what the cluster view asks of the name servers and the other
// brokers; *client.Admin has these methods. (Package broker cannot
// import package client, whose tests start brokers: the broker's user
// passes in a NewAdmin.)
type Admin interface {
	// ClusterInfoFrom is the name servers' cluster table
	// (GET_BROKER_CLUSTER_INFO) and the address of the one that answered.
	ClusterInfoFrom(ctx context.Context) (*protocol.ClusterInfo, string, error)
	// BrokerRuntimeInfo is a broker's GET_BROKER_RUNTIME_INFO table.
	BrokerRuntimeInfo(ctx context.Context, addr string) (map[string]string, error)
	// BrokerStats is a broker's text stats ("stats <item>").
	BrokerStats(ctx context.Context, addr string, item ...string) ([]protocol.Stat, error)
	// Close releases the connections.
	Close() error
}

// AdminOptions say how an Admin reaches the cluster: as the broker
// itself does.
type AdminOptions struct {
	// NameServers are the broker's name servers (host:port).
	NameServers []string
	// TLS is the broker's client TLS configuration; nil: plain TCP.
	TLS *tls.Config
	// AccessKey and SecretKey are the broker's own account (with ACL on
	// it signs requests and logs in to the text stats); empty: none.
	AccessKey, SecretKey string
	// Timeout bounds each request to a name server or broker.
	Timeout time.Duration
	// Logger receives the client's events.
	Logger *slog.Logger
}

// NewAdmin makes the Admin of a broker's dashboard; cmd/samsa's builds
// a *client.Admin.
type NewAdmin func(AdminOptions) (Admin, error)
