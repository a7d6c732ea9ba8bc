package broker

import (
	"strings"
	"sync"

	"github.com/samsamq/samsa/internal/sql92"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// SQL92 subscriptions (RocketMQ's ExpressionType SQL92, evaluated by
// package sql92 against each message's properties, TAGS among them).
//
// As RocketMQ's PullMessageProcessor:
//   - a pull that carries its subscription (the subscription flag) and an
//     SQL92 expression that does not compile: SUBSCRIPTION_PARSE_FAILED;
//   - a pull without it, whose group's heartbeat subscribed with an
//     expression that did not compile: FILTER_DATA_NOT_EXIST (the
//     heartbeat itself succeeds, RocketMQ's ConsumerFilterManager only
//     logs);
//   - then, with enablePropertyFilter off: SYSTEM_ERROR "The broker does
//     not support consumer to filter message by SQL92".
//
// RocketMQ's FILTER_DATA_NOT_LATEST (the broker's filter data older than
// the pull's subVersion) cannot arise apart from SUBSCRIPTION_NOT_LATEST,
// checked before: the compiled expression lives in the subscription.
//
// Expressions are compiled once and cached by their text (sqlCache,
// bounded as RocketMQ's SelectorParser cache, refusals cached too); a
// heartbeat's subscription keeps its compiled expression.
//
// A pull reads records as the store finds them and keeps those that
// match (filterSQL), reading on until maxMsgNums match, the queue ends or
// sqlScanBudget entries were read (RocketMQ's maxFilterMessageSize,
// 16000 bytes of ConsumeQueue entries). A pull that read only
// non-matching messages answers PULL_RETRY_IMMEDIATELY with the offset
// past them (RocketMQ's NO_MATCHED_MESSAGE), unless it read to the end of
// the queue and may be held: then it waits there, and a held pull woken
// by messages it does not want waits again past them, until its deadline
// (sqlReadToTheEnd, reholdSQL). Messages of a retry topic
// are filtered by the retry topic's own subscription ("*"), as RocketMQ
// with filterSupportRetry off (its default).

// sqlScanBudget is how many queue entries one pull reads at most for an
// SQL92 subscription.
const sqlScanBudget = 16000 / 20

// isSQL92 reports whether expType names SQL92.
func isSQL92(expType string) bool { return strings.EqualFold(expType, ExpSQL92) }

// sqlCacheSize bounds the compiled-expression cache (RocketMQ's
// SelectorParser.PARSE_CACHE holds 100).
const sqlCacheSize = 256

// exprCache maps expression text to its compiled form or its refusal.
// When full, it forgets the oldest entry. Safe for concurrent use.
type exprCache struct {
	mu    sync.Mutex
	max   int
	m     map[string]exprEntry
	order []string
}

type exprEntry struct {
	e   *sql92.Expr
	err error
}

var sqlCache = &exprCache{max: sqlCacheSize, m: make(map[string]exprEntry)}

// compile returns src compiled, from the cache when it can.
func (c *exprCache) compile(src string) (*sql92.Expr, error) {
	c.mu.Lock()
	if en, ok := c.m[src]; ok {
		c.mu.Unlock()
		return en.e, en.err
	}
	c.mu.Unlock()
	e, err := sql92.Compile(src)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[src]; !ok {
		if len(c.order) >= c.max {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
		c.m[src] = exprEntry{e, err}
		c.order = append(c.order, src)
	}
	return e, err
}

// sqlFilterOf decides a pull's SQL92 filter: sub is the subscription
// (from the request or the group's heartbeat), fromRequest says which. It
// returns nil, nil for a subscription that is not SQL92.
func (b *Broker) sqlFilterOf(req *protocol.Command, sub Subscription, fromRequest bool) (*sql92.Expr, *protocol.Command) {
	if !isSQL92(sub.ExpType) {
		return nil, nil
	}
	e := sub.SQL
	if fromRequest {
		var err error
		if e, err = sqlCache.compile(sub.SubString); err != nil {
			return nil, protocol.NewResponse(req, protocol.SubscriptionParseFailed, "parse the consumer's subscription failed: "+err.Error())
		}
	}
	if e == nil {
		return nil, protocol.NewResponse(req, protocol.FilterDataNotExist,
			"The broker's consumer filter data is not exist!Your expression may be wrong!")
	}
	if !b.cfg.EnablePropertyFilter {
		return nil, protocol.NewResponse(req, protocol.SystemError, "The broker does not support consumer to filter message by "+sub.ExpType)
	}
	return e, nil
}

// filterSQL reads from offset and keeps the records e matches. The
// result's Whole is nil (the records kept need not lie together); a
// store error after some records matched ends the read with what
// matched (the next pull meets the error).
func (b *Broker) filterSQL(e *sql92.Expr, topic string, queue int32, offset int64, maxMsgs, maxBytes int) (storage.GetResult, error) {
	var out storage.GetResult
	next, scanned := offset, 0
	for {
		res, err := b.store.GetMessages(topic, queue, next, maxMsgs-len(out.Records), maxBytes-out.Bytes, nil)
		if (err != nil || res.Status != storage.Found) && len(out.Records) == 0 && scanned == 0 {
			return res, err
		}
		out.MinOffset, out.MaxOffset = res.MinOffset, res.MaxOffset
		if err != nil || res.Status != storage.Found {
			break
		}
		for i, rec := range res.Records {
			var r record.Record
			if record.DecodeUnchecked(rec, &r) != nil || !e.Match(r.Properties) {
				continue
			}
			out.Records = append(out.Records, rec)
			out.QueueOffsets = append(out.QueueOffsets, res.QueueOffsets[i])
			out.Bytes += len(rec)
		}
		scanned += int(res.NextOffset - next)
		next = res.NextOffset
		if len(out.Records) >= maxMsgs || out.Bytes >= maxBytes || next >= res.MaxOffset || scanned >= sqlScanBudget {
			break
		}
	}
	out.NextOffset = next
	out.Status = storage.Found
	if len(out.Records) == 0 {
		out.Status = storage.NoMatchedMessage
	}
	return out, nil
}

// sqlReadToTheEnd reports whether an SQL92 pull read to the end of its
// queue and found nothing that matches; it then moves the pull's offset
// past what it read, so that a suspending pull waits there, as at the
// tail (RocketMQ checks an arriving message against a held pull's filter
// before waking it, for the same reason: a selective consumer costs no
// round trip per message it does not want).
func sqlReadToTheEnd(pc *pullCtx, res *storage.GetResult) bool {
	if pc.sql == nil || res.Status != storage.NoMatchedMessage || res.NextOffset < res.MaxOffset {
		return false
	}
	pc.h.QueueOffset = res.NextOffset
	return true
}

// reholdSQL handles a held SQL92 pull woken by an arrival: when what
// arrived does not match, the pull goes back to waiting, past it, until
// its original deadline; it reports whether it did.
func (b *Broker) reholdSQL(p *heldPull) bool {
	pc := p.req.(*pullCtx)
	if _, waitOn := b.pullOnce(pc, true); !waitOn || !b.cfg.Clock().Before(p.deadline) {
		return false
	}
	p.offset = pc.h.QueueOffset
	if !b.poll.hold(p) {
		return false
	}
	b.poll.recheck(p, b.store.MaxQueueOffset(pc.h.Topic, pc.h.QueueID))
	return true
}
