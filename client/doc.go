// Package client is Samsa's Go client for RocketMQ-4.x-compatible brokers
// (Samsa's own, or Apache RocketMQ's): a Producer, a PullConsumer, a
// PushConsumer with consumer groups, and an Admin for topics and offsets.
//
// # Using it
//
// Every kind of client takes an Options struct whose zero fields mean the
// documented defaults (ClientOptions holds the shared ones: name servers,
// timeouts, header encoding, logger, clock), is safe for concurrent use,
// owns its connections and goroutines, and releases them on Close. There
// is no global state: two producers in one process share nothing.
//
//	p, err := client.NewProducer(client.ProducerOptions{
//		ClientOptions: client.ClientOptions{NameServers: []string{"127.0.0.1:9876"}},
//	})
//	res, err := p.Send(ctx, &client.Message{Topic: "orders", Body: body, ShardingKey: customer})
//
//	c, err := client.NewPushConsumer(client.PushConsumerOptions{Group: "billing", ...}, handler)
//	c.Subscribe("orders", "*")
//	c.Start(ctx)
//	defer c.Close()
//
// Errors match with errors.Is against the sentinels (ErrNoRoute,
// ErrTimeout — which also matches context.DeadlineExceeded —,
// ErrBrokerBusy, ErrFlushDiskTimeout, ErrConnection, ErrClosed, ...); an
// error answer of a peer is a *ResponseError carrying its code.
//
// # Producing
//
// Routes come from the name servers (any of several; the next is tried
// when one fails), are cached, refreshed every RouteRefresh and at once
// after a failed send. A Balancer picks each message's queue: RoundRobin
// (default), Random, HashModulo, ConsistentHash and HashSlots; the last
// three send equal ShardingKeys to one queue, so per-key order holds, and
// the last two move few keys when queues are added. A broker that failed
// or answered slowly is avoided for a while (RocketMQ's latency table);
// sync sends retry on another broker. After a send to an address timed
// out, Send and SendBatch send nothing more to it until it answers a
// heartbeat probe, watching the route meanwhile: a paused master being
// replaced by a fail-over costs one SendTimeout, not one per send. Send waits for the answer,
// SendAsync and SendAsyncChan do not (bounded by MaxInFlight), SendOneway
// wants no answer, SendBatch sends many messages in one request, and
// BatchOptions make SendAsync gather messages into batches per queue.
// Every message gets a UNIQ_KEY id laid out as RocketMQ's.
//
// A TransactionProducer sends transactions (producer_txn.go): half
// messages, invisible until their transaction commits, then one
// END_TRANSACTION; one transaction may hold several messages to any
// topics of one broker, committed or rolled back as one, and the broker's
// check-backs are answered from the producer's memory of its decisions or
// by a TransactionChecker.
//
// # Consuming
//
// A PullConsumer reads a queue from an offset the caller gives, optionally
// long-polling. A received MessageExt aliases its pull answer's bytes
// (properties are read from them: Property, PropertyMap); with
// PullOptions.Records a pull answers Records instead, views of the stored
// records decoded field by field when read, with no allocation per
// message. Either way every record's CRC is checked (unless
// SkipCRCCheck) and a record must belong to the queue and offsets pulled
// (ErrMisdirected). A PushConsumer does the rest: in clustering mode the
// group's members divide the queues (an AllocateStrategy: AllocateAveraged
// as RocketMQ's clients do, AllocateAveragedByCircle,
// AllocateConsistentHash, AllocateByConfig) and divide them again when a
// member joins or leaves (the broker's NOTIFY_CONSUMER_IDS_CHANGED, and
// every RebalanceInterval); in broadcasting mode every member reads every
// queue. Each owned queue has a long-polling puller and up to Concurrency
// handler goroutines (one, in queue order, when Orderly; ordered queues
// are also locked on the broker). Delivery is at least once: a queue's
// committed offset is its lowest unhandled message's, committed every
// CommitInterval, when the queue is given up and on Close, so messages are
// repeated only after a crash or around a rebalance, never skipped.
// Pulling a queue pauses while it holds MaxInFlight messages or
// MaxInFlightBytes. A failed message goes back to the broker's retry
// topic (or is retried locally in broadcasting and ordered modes).
//
// A PopConsumer consumes by RocketMQ 5's POP instead: the broker hands
// each Receive messages no other member of the group sees until they are
// acknowledged (Ack) or their invisible time passes (ChangeInvisibleTime
// moves it), so a group may have more members than the topic has queues
// and a stuck member holds back only its own messages.
//
// Pulls go where the broker's last answer for the queue suggested
// (suggestWhichBrokerId: a slave when the broker's slaveReadEnable is on
// and the consumer reads far behind, else the master), else to the
// master; with the master gone from the route they go to a slave, and
// offsets are then read from and committed to the slave, which hands them
// to its master when it is back.
// Offsets live behind OffsetStore: on the brokers (the clustering
// default), in a FileOffsetStore (the broadcasting default), in memory,
// or in the caller's own.
//
// # Inside
//
// One connection per broker address carries every request, multiplexed
// by opaque and pipelined (internal/remoting): a writer goroutine takes
// all queued frames in one write, a reader goroutine hands answers to
// their waiters and serves the broker's own requests. Headers travel in
// RocketMQ's binary encoding unless JSONHeaders is set; pull bodies are
// stored records, decoded with storage/record.
package client
