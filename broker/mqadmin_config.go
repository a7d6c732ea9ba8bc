package broker

import (
	"regexp"
	"strings"

	"github.com/samsamq/samsa/protocol"
)

// secretProperty matches the names of properties whose values
// GET_BROKER_CONFIG never shows.
var secretProperty = regexp.MustCompile(`(?i)secret|password|passwd|token|credential|privatekey`)

// handleGetBrokerConfig answers GET_BROKER_CONFIG (26): the running
// configuration as RocketMQ's properties text ("key=value" lines), with
// the values of secret keys masked (the broker's secretKey shows as
// "(set)" or nothing). Nothing can change the configuration remotely (no
// UPDATE_BROKER_CONFIG).
func (a *mqadminRequests) handleGetBrokerConfig(_ *conn, req *protocol.Command) *protocol.Command {
	lines := a.cfg.propertyLines()
	for i, l := range lines {
		k, v, _ := strings.Cut(l, "=")
		if secretProperty.MatchString(k) && v != "" && v != "(set)" {
			lines[i] = k + "=******"
		}
	}
	r := protocol.NewResponse(req, protocol.Success, "")
	r.Body = []byte(strings.Join(lines, "\n") + "\n")
	return a.ans.bounded(req, r)
}
