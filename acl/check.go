package acl

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"

	"github.com/samsamq/samsa/protocol"
)

// Reasons a request is refused; they label the refusal counters.
const (
	ReasonUnsigned       = "unsigned"        // no AccessKey and not white-listed
	ReasonUnknownAccount = "unknown_account" // AccessKey not in the file
	ReasonBadSignature   = "bad_signature"   // Signature missing or wrong
	ReasonNotAdmin       = "not_admin"       // admin code, account not admin
	ReasonNoPermission   = "no_permission"   // a topic or group not allowed
	ReasonBadRequest     = "bad_request"     // its resources could not be read
	ReasonForeignBroker  = "foreign_broker"  // a broker name bound to another account
	ReasonAdminAuth      = "admin_auth"      // HTTP basic auth or text auth not an admin account
	ReasonHAAuth         = "ha_auth"         // an HA handshake without an admin account's proof
)

// Request is what Check needs of a request.
type Request struct {
	Code   int32
	Ext    map[string]string // the whole custom header
	Body   []byte
	Remote netip.Addr
}

// Denied is a refusal: Reason for counters, Remark for the client.
type Denied struct {
	Reason string
	Remark string
}

func (d *Denied) Error() string { return d.Remark }

// Grant is an allowed request's identity.
type Grant struct {
	AccessKey   string // "" when let through by a white-listed address
	Admin       bool
	WhiteListed bool
}

// Check decides a request against c, RocketMQ's validate: white lists
// first, then account, signature, admin code, resources.
func (c *Config) Check(r Request) (Grant, *Denied) {
	for _, m := range c.GlobalWhite {
		if m.Match(r.Remote) {
			return Grant{WhiteListed: true, Admin: true}, nil
		}
	}
	name := protocol.RequestName(r.Code)
	ak, ok := r.Ext[FieldAccessKey]
	if !ok || ak == "" {
		return Grant{}, &Denied{ReasonUnsigned, fmt.Sprintf("access denied: request %s(%d) carries no AccessKey (ACL is on: sign requests with an account's accessKey/secretKey)", name, r.Code)}
	}
	a := c.Accounts[ak]
	if a == nil {
		return Grant{}, &Denied{ReasonUnknownAccount, fmt.Sprintf("access denied: no account for accessKey %q", ak)}
	}
	if a.white.Match(r.Remote) {
		return Grant{AccessKey: ak, Admin: a.Admin, WhiteListed: true}, nil
	}
	if !Verify(r.Ext, r.Body, a.SecretKey) {
		return Grant{}, &Denied{ReasonBadSignature, fmt.Sprintf("access denied: signature check failed for accessKey %q", ak)}
	}
	if AdminCode(r.Code) && !a.Admin {
		return Grant{}, &Denied{ReasonNotAdmin, fmt.Sprintf("access denied: request %s(%d) needs an admin account; accessKey %q is not admin", name, r.Code, ak)}
	}
	rs, err := Resources(r.Code, r.Ext, r.Body)
	if err != nil {
		return Grant{}, &Denied{ReasonBadRequest, fmt.Sprintf("access denied: cannot read the resources of %s(%d): %v", name, r.Code, err)}
	}
	for _, res := range rs {
		if d := a.allows(res); d != nil {
			return Grant{}, d
		}
	}
	return Grant{AccessKey: ak, Admin: a.Admin}, nil
}

func (a *Account) allows(r Resource) *Denied {
	owned, ok := a.TopicPerms[r.Name]
	kind, def := "topic", a.DefaultTopicPerm
	if r.Group {
		owned, ok = a.GroupPerms[r.Name]
		kind, def = "group", a.DefaultGroupPerm
	}
	if !ok {
		// RocketMQ: an admin without any perms of its own may do anything.
		if a.Admin && len(a.TopicPerms) == 0 && len(a.GroupPerms) == 0 {
			return nil
		}
		owned = def
	}
	if owned.Allows(r.Perm) {
		return nil
	}
	return &Denied{ReasonNoPermission, fmt.Sprintf("access denied: accessKey %q has %s on %s %q, needs %s", a.AccessKey, owned, kind, r.Name, r.Perm)}
}

// Counters counts refusals by reason and request code. Safe for
// concurrent use; the zero value is ready.
type Counters struct {
	mu sync.Mutex
	m  map[counterKey]int64
}

type counterKey struct {
	reason string
	code   int32
}

// Count is one counter's value.
type Count struct {
	Reason string
	Code   string // the request name, "OTHER" for codes RocketMQ does not define
	N      int64
}

// Add counts one refusal and returns the count of its reason and code (1
// the first time: callers log that one louder).
func (c *Counters) Add(reason string, code int32) int64 {
	if strings.HasPrefix(protocol.RequestName(code), "CODE_") {
		code = -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[counterKey]int64)
	}
	k := counterKey{reason, code}
	c.m[k]++
	return c.m[k]
}

// Snapshot lists the counters by reason and code.
func (c *Counters) Snapshot() []Count {
	c.mu.Lock()
	out := make([]Count, 0, len(c.m))
	for k, n := range c.m {
		name := "OTHER"
		if k.code >= 0 {
			name = protocol.RequestName(k.code)
		}
		out = append(out, Count{Reason: k.reason, Code: name, N: n})
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Reason != out[j].Reason {
			return out[i].Reason < out[j].Reason
		}
		return out[i].Code < out[j].Code
	})
	return out
}

// Total is the sum of every counter.
func (c *Counters) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, v := range c.m {
		n += v
	}
	return n
}

// CheckResource checks one more resource of a request Check let through,
// one known only once the request is served (the topic of the message
// VIEW_MESSAGE_BY_ID reads). White lists pass as in Check.
func (c *Config) CheckResource(r Request, res Resource) *Denied {
	for _, m := range c.GlobalWhite {
		if m.Match(r.Remote) {
			return nil
		}
	}
	a := c.Accounts[r.Ext[FieldAccessKey]]
	if a == nil {
		return &Denied{ReasonUnknownAccount, fmt.Sprintf("access denied: no account for accessKey %q", r.Ext[FieldAccessKey])}
	}
	if a.white.Match(r.Remote) {
		return nil
	}
	return a.allows(res)
}

// TopicResource is the resource of a topic (a retry topic is its group's).
func TopicResource(topic string, p Perm) Resource { return topicRes(topic, p) }
