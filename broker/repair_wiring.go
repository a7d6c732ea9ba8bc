package broker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/samsamq/samsa/broker/repair"
	"github.com/samsamq/samsa/protocol"
)

// openRepair makes the repairer (package broker/repair): a damaged range
// of this log is fetched from the master (on a slave) or from the linked
// slaves (on a master) with GetCommitLogRange and written back. Started
// by Start with the other loops.
func (b *Broker) openRepair() error {
	rpc := newRPCClient(b.cfg.MaxFrameSize, b.net.tlsClient).signedBy(b.cfg.AccessKey, b.cfg.SecretKey)
	r, err := repair.New(repair.Config{Store: b.store, Peers: b.repairPeers, Logger: b.log,
		Fetch: func(ctx context.Context, addr string, from, to int64) ([]byte, error) {
			timeout := 10 * time.Second
			if dl, ok := ctx.Deadline(); ok {
				timeout = time.Until(dl)
			}
			req := protocol.NewRequest(protocol.GetCommitLogRange,
				map[string]string{"from": strconv.FormatInt(from, 10), "to": strconv.FormatInt(to, 10)}, nil)
			resp, err := rpc.call(addr, req, timeout)
			if err != nil {
				return nil, err
			}
			if resp.Code != protocol.Success {
				return nil, fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
			}
			return resp.Body, nil
		}})
	if err != nil {
		return err
	}
	b.repair = r
	return nil
}

// repairPeers are the replicas that may hold a healthy copy of this log:
// the master (a slave knows its remoting address from the name server),
// and a master's linked slaves.
func (b *Broker) repairPeers() []string {
	var out []string
	if m := b.repl.MasterAddr(); m != "" && m != b.Addr() {
		out = append(out, m)
	}
	for _, s := range b.repl.Slaves() {
		if s.Addr != "" && s.Addr != b.Addr() {
			out = append(out, s.Addr)
		}
	}
	return out
}
