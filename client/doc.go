// Package client is Samsa's Go client for RocketMQ-4.x-compatible brokers
// (Samsa's own, or Apache RocketMQ's): a producer, a pull consumer and a
// push consumer with consumer groups.
//
// Building blocks, usable on their own:
//
//   - Balancer chooses a producer's queue: RoundRobin, Random, HashModulo,
//     ConsistentHash and HashSlots (the last three keep a ShardingKey on one
//     queue, so its messages stay in order).
//   - AllocateStrategy divides a topic's queues among a group's members:
//     AllocateAveraged (RocketMQ's default, compatible with its clients),
//     AllocateAveragedByCircle, AllocateConsistentHash, AllocateByConfig.
//   - OffsetStore keeps a group's committed offsets: on the broker (the
//     clustering default), in a local file (FileOffsetStore, the
//     broadcasting default), in memory, or the caller's own.
//
// Errors match with errors.Is against the sentinels of errors.go
// (ErrNoRoute, ErrTimeout, ErrBrokerBusy, ...); error answers of a peer
// are *ResponseError. There is no global state: every Producer and
// consumer owns its connections and goroutines and releases them on Close.
package client
