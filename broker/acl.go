package broker

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"net/netip"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/protocol"
)

// Access control (aclEnable=true): one check at dispatch, before a
// request's handler runs (Broker.dispatch, and handleSends for the
// reader's inline sends). With ACL off b.acl is nil and the check is that
// nil test. A refusal answers NO_PERMISSION with the reason as remark and
// is counted by reason and request code (/metrics
// samsa_broker_acl_denied_total, stats acl_denied).
type brokerACL struct {
	store  *acl.Store
	denied acl.Counters
}

// openACL loads the accounts file when ACL is on (nil when off).
func openACL(cfg *Config) (*brokerACL, error) {
	if !cfg.ACLEnable {
		return nil, nil
	}
	s, err := acl.Open(cfg.ACLFile, cfg.ACLReloadInterval, cfg.Logger)
	if err != nil {
		return nil, err
	}
	return &brokerACL{store: s}, nil
}

func (a *brokerACL) close() {
	if a != nil {
		a.store.Close()
	}
}

// aclCheck decides req from c; nil allows it, else the NO_PERMISSION
// answer.
func (b *Broker) aclCheck(c *conn, req *protocol.Command) *protocol.Command {
	_, d := b.acl.store.Config().Check(acl.Request{Code: req.Code, Ext: fullExt(req), Body: req.Body, Remote: remoteIP(c.addr)})
	if d == nil {
		return nil
	}
	level := slog.LevelDebug
	if b.acl.denied.Add(d.Reason, req.Code) == 1 {
		level = slog.LevelInfo // the first of its kind; the rest are counted
	}
	b.log.Log(context.Background(), level, "broker: request refused by ACL", "remote", c.addr, "code", req.Code, "reason", d.Reason, "remark", d.Remark)
	return protocol.NewResponse(req, protocol.NoPermission, d.Remark)
}

// fullExt is every ext field of req: the typed header's (a send's) and the
// others.
func fullExt(req *protocol.Command) map[string]string {
	if req.Header == nil {
		return req.ExtFields
	}
	m := req.Header.Encode()
	for k, v := range req.ExtFields {
		m[k] = v
	}
	return m
}

func remoteIP(addr string) netip.Addr {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// adminCredentials reports whether accessKey/secretKey name an admin
// account (the admin HTTP listener's basic auth, the text protocol's auth
// line). The secret is compared in constant time.
func (a *brokerACL) adminCredentials(accessKey, secretKey string) bool {
	acc := a.store.Config().Accounts[accessKey]
	if acc == nil {
		// Compare anyway, so an unknown key costs what a known one does.
		subtle.ConstantTimeCompare([]byte(secretKey), []byte(secretKey))
		return false
	}
	return subtle.ConstantTimeCompare([]byte(acc.SecretKey), []byte(secretKey)) == 1 && acc.Admin
}

// deniedTotal is the refusals counted so far (stats).
func (a *brokerACL) deniedTotal() int64 {
	if a == nil {
		return 0
	}
	return a.denied.Total()
}

// aclStats are the refusal counters as STAT lines
// (acl_denied:<reason>:<request>).
func (b *Broker) aclStats() []statLine {
	if b.acl == nil {
		return nil
	}
	var lines []statLine
	for _, c := range b.acl.denied.Snapshot() {
		lines = append(lines, statLine{"acl_denied:" + c.Reason + ":" + c.Code, c.N})
	}
	return lines
}

// basicAuth guards the admin HTTP listener with ACL on: every request
// needs HTTP basic auth with an admin account's accessKey and secretKey.
func (a *brokerACL) basicAuth(b *Broker, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ak, sk, ok := r.BasicAuth()
		if !ok || !a.adminCredentials(ak, sk) {
			a.denied.Add(acl.ReasonAdminAuth, 0)
			b.log.Info("broker: admin HTTP request refused by ACL", "remote", r.RemoteAddr, "path", r.URL.Path, "accessKey", ak)
			w.Header().Set("WWW-Authenticate", `Basic realm="samsa broker", charset="UTF-8"`)
			http.Error(w, "access denied: ACL is on; use HTTP basic auth with an admin account's accessKey and secretKey", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// adminSecret is the HA master's check of a slave's account: the secret
// of an admin account (nil with ACL off: no check). A refusal is counted.
func (a *brokerACL) adminSecret() func(accessKey string) (string, bool) {
	if a == nil {
		return nil
	}
	return func(accessKey string) (string, bool) {
		acc := a.store.Config().Accounts[accessKey]
		if acc == nil || !acc.Admin {
			return "", false
		}
		return acc.SecretKey, true
	}
}

// haRefused counts a slave the HA listener refused (the ha package logs it).
func (a *brokerACL) haRefused() func(accessKey, reason string) {
	if a == nil {
		return nil
	}
	return func(string, string) { a.denied.Add(acl.ReasonHAAuth, 0) }
}

// aclCheckTopic checks SUB on a topic known only once the request is
// served (VIEW_MESSAGE_BY_ID: the topic of the message at the offset).
func (b *Broker) aclCheckTopic(c *conn, req *protocol.Command, topic string) *protocol.Command {
	d := b.acl.store.Config().CheckResource(acl.Request{Code: req.Code, Ext: fullExt(req), Remote: remoteIP(c.addr)},
		acl.TopicResource(topic, acl.Sub))
	if d == nil {
		return nil
	}
	b.acl.denied.Add(d.Reason, req.Code)
	return protocol.NewResponse(req, protocol.NoPermission, d.Remark)
}
