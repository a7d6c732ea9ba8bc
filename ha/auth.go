package ha

import (
	"crypto/hmac"
	"crypto/sha1"
	"fmt"
	"time"
)

// Link authentication. With MasterConfig.AdminSecret set (the broker's ACL
// on) the master takes only slaves whose HANDSHAKE names an admin account
// and carries HmacSHA1(secretKey) over the handshake's fields and the
// slave's clock; a slave signs when SlaveConfig.AccessKey is set.

const (
	macSize = sha1.Size
	// maxHandshakeSkew bounds how far a handshake's TIME may be from the
	// master's clock: an old handshake replayed later is refused.
	maxHandshakeSkew = 10 * time.Minute
)

func handshakeMAC(secret string, signed []byte) []byte {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(signed)
	return m.Sum(nil)
}

// authRefusal is why the master refuses hs ("" to accept it).
func (m *Master) authRefusal(hs handshake, now time.Time) string {
	if m.cfg.AdminSecret == nil {
		return ""
	}
	if hs.AccessKey == "" {
		return "ACL is on: the slave must authenticate with an admin account (accessKey/secretKey in broker.conf)"
	}
	secret, ok := m.cfg.AdminSecret(hs.AccessKey)
	if !ok {
		return fmt.Sprintf("ACL is on: accessKey %q is not an admin account", hs.AccessKey)
	}
	if !hmac.Equal(handshakeMAC(secret, hs.Signed), hs.MAC) {
		return fmt.Sprintf("ACL is on: handshake signature check failed for accessKey %q", hs.AccessKey)
	}
	if d := now.Sub(time.UnixMilli(hs.TimeMs)); d > maxHandshakeSkew || d < -maxHandshakeSkew {
		return fmt.Sprintf("ACL is on: handshake time is %v off the master's clock (bound %v)", d.Round(time.Second), maxHandshakeSkew)
	}
	return ""
}
