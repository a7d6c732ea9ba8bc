package dashboard

import "net/http"

// Overview is this broker at a glance; the page polls it for the live
// charts (rates from the deltas of the totals between two polls).
type Overview struct {
	BrokerName  string       `json:"brokerName"`
	Cluster     string       `json:"cluster"`
	BrokerID    int64        `json:"brokerId"`
	Role        string       `json:"role"`
	Addr        string       `json:"addr"`
	Version     string       `json:"version"`
	MasterAddr  string       `json:"masterAddr,omitempty"`
	StartedMs   int64        `json:"startedMs"`
	NowMs       int64        `json:"nowMs"`
	PutTotal    int64        `json:"putTotal"`
	GetTotal    int64        `json:"getTotal"`
	PutBytes    int64        `json:"putBytes"`
	GetBytes    int64        `json:"getBytes"`
	PutTps      [3]float64   `json:"putTps"` // 10 s, 1 min, 10 min
	GetTps      [3]float64   `json:"getTps"`
	Connections int64        `json:"connections"`
	Written     int64        `json:"commitLogWritten"`
	DiskRatio   *float64     `json:"diskRatio,omitempty"`
	NameServers []string     `json:"nameServers"`
	Slaves      []Slave      `json:"slaves"`
	Topics      []TopicCount `json:"topics"`
}

// TopicCount is a topic's message counts since the broker started.
type TopicCount struct {
	Topic string `json:"topic"`
	Puts  int64  `json:"puts"`
	Gets  int64  `json:"gets"`
}

// Slave is a slave as its master sees it.
type Slave struct {
	Addr        string `json:"addr"`
	AckOffset   int64  `json:"ackOffset"`
	BehindBytes int64  `json:"behindBytes"`
	LagMs       int64  `json:"lagMs"`
	InSync      bool   `json:"inSync"`
}

func (d *Dashboard) overview(*http.Request) (any, error) {
	o := d.src.Overview()
	o.NameServers = orEmpty(o.NameServers)
	o.Slaves = orEmpty(o.Slaves)
	o.Topics = orEmpty(o.Topics)
	return o, nil
}

// orEmpty is s, or an empty slice for nil (the page wants [] not null).
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
