// Package namesrv is Samsa's name server: the route registry brokers
// register with and clients ask for topic routes, speaking RocketMQ's
// remoting protocol so the official clients use it unmodified.
//
// It has two layers:
//
//   - RouteTable, a plain state machine: clusters, broker groups and their
//     addresses by broker id, each topic's queues per broker group, broker
//     liveness and the KV config. It has no goroutines and no locks; time
//     comes from an injected Clock, so tests drive expiry without sleeping.
//     Its rules follow RocketMQ's RouteInfoManager: a broker registers every
//     30 s with its topic table and data version; the topic table is taken
//     from the master (broker id 0) and only re-read when the data version
//     moves; a broker silent for longer than its expiry (120 s by default)
//     is removed by ScanNotActive; a broker group with no address left
//     leaves its cluster and its topics' queue data.
//   - Server, a TCP server (one goroutine per connection, requests answered
//     concurrently, responses written under a per-connection lock) that
//     decodes frames, calls the RouteTable under one RWMutex and encodes
//     the answers. A connection that sends a bad frame is closed with a
//     logged reason; an unknown request code gets REQUEST_CODE_NOT_SUPPORTED.
//     When a broker's registering connection closes, its registration goes,
//     as RocketMQ's BrokerHousekeepingService does.
//
// Requests served: REGISTER_BROKER, UNREGISTER_BROKER, BROKER_HEARTBEAT,
// QUERY_DATA_VERSION, GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO,
// GET_ALL_TOPIC_LIST_FROM_NAMESERVER, DELETE_TOPIC_IN_NAMESRV, PUT_KV_CONFIG,
// GET_KV_CONFIG, DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE.
package namesrv
