package broker

import (
	"fmt"
	"strconv"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// handleGetBrokerRuntimeInfo answers GET_BROKER_RUNTIME_INFO (28): a
// KVTable of the broker's run-time figures, under RocketMQ's key names
// where Samsa has the same figure (brokerVersionDesc, bootTimestamp,
// runtime, commitLogMaxOffset, commitLogMinOffset, commitLogDiskRatio),
// and Samsa's own otherwise: msgPutTotal and msgGetTotal are counts since
// the broker started (not RocketMQ's per-day counts), storeDiskUsedBytes
// and storeDiskTotalBytes the store file system's use. putTps and
// getTransferedTps (also spelt getTransferredTps, as 5.x does) are
// messages stored and delivered per second over 10 s, 1 min and 10 min,
// as RocketMQ gives them (mqadmin_rates.go).
func (a *mqadminRequests) handleGetBrokerRuntimeInfo(_ *conn, req *protocol.Command) *protocol.Command {
	m := a.store.Metrics()
	now := a.now()
	t := map[string]string{
		"brokerVersionDesc":  a.cfg.Version,
		"brokerRole":         string(a.cfg.BrokerRole),
		"bootTimestamp":      strconv.FormatInt(a.started.UnixMilli(), 10),
		"runtime":            runtimeText(now.Sub(a.started)),
		"commitLogMaxOffset": strconv.FormatInt(m.WrittenOffset, 10),
		"commitLogMinOffset": strconv.FormatInt(m.MinOffset, 10),
		"msgPutTotal":        strconv.FormatInt(a.stats.cmdPut.Load(), 10),
		"msgGetTotal":        strconv.FormatInt(a.stats.cmdGet.Load(), 10),
		"timestamp":          strconv.FormatInt(now.UnixMilli(), 10),
	}
	put, get := a.rates.rates()
	t["putTps"] = tpsText(put)
	t["getTransferedTps"] = tpsText(get)  // RocketMQ 4.x's spelling
	t["getTransferredTps"] = tpsText(get) // and 5.x's
	if used, total, err := diskUsage(a.cfg.StorePathRootDir); err == nil && total > 0 {
		t["commitLogDiskRatio"] = strconv.FormatFloat(float64(used)/float64(total), 'f', 4, 64)
		t["storeDiskUsedBytes"] = strconv.FormatInt(used, 10)
		t["storeDiskTotalBytes"] = strconv.FormatInt(total, 10)
	}
	return a.ans.body(req, protocol.KVTable{Table: t})
}

// runtimeText is RocketMQ's runtime figure: "[ 0 days, 1 hours, 2 minutes, 3 seconds ]".
func runtimeText(d time.Duration) string {
	s := int64(d.Seconds())
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", s/86400, s%86400/3600, s%3600/60, s%60)
}
