package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// property is one broker.conf key: how to set it from text and show it.
type property struct {
	name    string
	aliases []string
	set     func(c *Config, v string) error
	get     func(c *Config) string
}

func strProp(name string, f func(c *Config) *string) property {
	return property{name: name,
		set: func(c *Config, v string) error { *f(c) = v; return nil },
		get: func(c *Config) string { return *f(c) }}
}

func intProp(name string, f func(c *Config) *int) property {
	return property{name: name,
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("not an integer: %q", v)
			}
			*f(c) = n
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(*f(c)) }}
}

func int64Prop(name string, f func(c *Config) *int64, aliases ...string) property {
	return property{name: name, aliases: aliases,
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("not an integer: %q", v)
			}
			*f(c) = n
			return nil
		},
		get: func(c *Config) string { return strconv.FormatInt(*f(c), 10) }}
}

func boolProp(name string, f func(c *Config) *bool) property {
	return property{name: name,
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("not a boolean: %q", v)
			}
			*f(c) = b
			return nil
		},
		get: func(c *Config) string { return strconv.FormatBool(*f(c)) }}
}

// msProp is a duration given in milliseconds (RocketMQ's unit), or as a Go
// duration ("250ms", "2s").
func msProp(name string, f func(c *Config) *time.Duration) property {
	return property{name: name,
		set: func(c *Config, v string) error {
			d, err := parseMillis(v)
			if err != nil {
				return err
			}
			*f(c) = d
			return nil
		},
		get: func(c *Config) string { return strconv.FormatInt(f(c).Milliseconds(), 10) }}
}

// durProp is msProp for sub-millisecond settings: it reads ms or a Go
// duration and writes a Go duration ("200µs"), so a value round-trips.
func durProp(name string, f func(c *Config) *time.Duration) property {
	p := msProp(name, f)
	p.get = func(c *Config) string { return f(c).String() }
	return p
}

func parseMillis(v string) (time.Duration, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("not milliseconds or a duration: %q", v)
	}
	return d, nil
}

var properties = []property{
	strProp("brokerClusterName", func(c *Config) *string { return &c.BrokerClusterName }),
	strProp("brokerName", func(c *Config) *string { return &c.BrokerName }),
	int64Prop("brokerId", func(c *Config) *int64 { return &c.BrokerID }),
	{name: "namesrvAddr",
		set: func(c *Config, v string) error {
			c.NamesrvAddrs = nil
			for _, a := range strings.Split(v, ";") {
				if a = strings.TrimSpace(a); a != "" {
					c.NamesrvAddrs = append(c.NamesrvAddrs, a)
				}
			}
			return nil
		},
		get: func(c *Config) string { return strings.Join(c.NamesrvAddrs, ";") }},
	strProp("listenAddr", func(c *Config) *string { return &c.ListenAddr }),
	intProp("listenPort", func(c *Config) *int { return &c.ListenPort }),
	strProp("brokerIP1", func(c *Config) *string { return &c.BrokerIP1 }),
	strProp("storePathRootDir", func(c *Config) *string { return &c.StorePathRootDir }),
	{name: "flushDiskType",
		set: func(c *Config, v string) error { c.FlushDiskType = FlushDiskType(strings.ToUpper(v)); return nil },
		get: func(c *Config) string { return string(c.FlushDiskType) }},
	{name: "brokerRole",
		set: func(c *Config, v string) error { c.BrokerRole = BrokerRole(strings.ToUpper(v)); return nil },
		get: func(c *Config) string { return string(c.BrokerRole) }},
	boolProp("autoCreateTopicEnable", func(c *Config) *bool { return &c.AutoCreateTopicEnable }),
	intProp("defaultTopicQueueNums", func(c *Config) *int { return &c.DefaultTopicQueueNums }),
	int64Prop("mappedFileSizeCommitLog", func(c *Config) *int64 { return &c.MappedFileSizeCommitLog }, "mapedFileSizeCommitLog"),
	intProp("maxOpenConsumeQueueFiles", func(c *Config) *int { return &c.MaxOpenConsumeQueueFiles }),
	intProp("readBlockCacheMB", func(c *Config) *int { return &c.ReadBlockCacheMB }),
	boolProp("directColdReads", func(c *Config) *bool { return &c.DirectColdReads }),
	boolProp("transferMsgByHeap", func(c *Config) *bool { return &c.TransferMsgByHeap }),
	strProp("pullReadCheck", func(c *Config) *string { return &c.PullReadCheck }),
	boolProp("stageAppends", func(c *Config) *bool { return &c.StageAppends }),
	intProp("fileReservedTime", func(c *Config) *int { return &c.FileReservedTime }),
	intProp("diskMaxUsedSpaceRatio", func(c *Config) *int { return &c.DiskMaxUsedSpaceRatio }),
	msProp("flushIntervalCommitLog", func(c *Config) *time.Duration { return &c.FlushIntervalCommitLog }),
	intProp("flushCommitLogLeastPages", func(c *Config) *int { return &c.FlushCommitLogLeastPages }),
	msProp("flushCommitLogThoroughInterval", func(c *Config) *time.Duration { return &c.FlushCommitLogThoroughInterval }),
	msProp("syncFlushTimeout", func(c *Config) *time.Duration { return &c.SyncFlushTimeout }),
	intProp("maxMessageSize", func(c *Config) *int { return &c.MaxMessageSize }),
	boolProp("enablePropertyFilter", func(c *Config) *bool { return &c.EnablePropertyFilter }),
	boolProp("longPollingEnable", func(c *Config) *bool { return &c.LongPollingEnable }),
	msProp("shortPollingTimeMills", func(c *Config) *time.Duration { return &c.ShortPollingTime }),
	msProp("longPollingMaxHoldMillis", func(c *Config) *time.Duration { return &c.LongPollingMaxHold }),
	msProp("channelExpiredTimeout", func(c *Config) *time.Duration { return &c.ClientChannelMaxIdle }),
	msProp("registerNameServerPeriod", func(c *Config) *time.Duration { return &c.RegisterNameServerPeriod }),
	msProp("registerBrokerTimeoutMills", func(c *Config) *time.Duration { return &c.RegisterBrokerTimeout }),
	msProp("flushConsumerOffsetInterval", func(c *Config) *time.Duration { return &c.FlushConsumerOffsetInterval }),
	intProp("maxReconsumeTimes", func(c *Config) *int { return &c.MaxReconsumeTimes }),
	strProp("storeBackend", func(c *Config) *string { return &c.StoreBackend }),
	boolProp("transientStorePoolEnable", func(c *Config) *bool { return &c.TransientStorePoolEnable }),
	boolProp("messageIndexEnable", func(c *Config) *bool { return &c.MessageIndexEnable }),
	intProp("maxHashSlotNum", func(c *Config) *int { return &c.MaxHashSlotNum }),
	intProp("maxIndexNum", func(c *Config) *int { return &c.MaxIndexNum }),
	int64Prop("groupCommitMaxBatchBytes", func(c *Config) *int64 { return &c.GroupCommitMaxBatchBytes }),
	msProp("groupCommitMinInterval", func(c *Config) *time.Duration { return &c.GroupCommitMinInterval }),
	durProp("groupCommitMaxGather", func(c *Config) *time.Duration { return &c.GroupCommitMaxGather }),
	strProp("adminListen", func(c *Config) *string { return &c.AdminListen }),
	boolProp("textProtocolEnable", func(c *Config) *bool { return &c.TextProtocolEnable }),
	intProp("maxFrameSize", func(c *Config) *int { return &c.MaxFrameSize }),
	intProp("maxConcurrentRequests", func(c *Config) *int { return &c.MaxConcurrentRequests }),
	intProp("maxHeldPulls", func(c *Config) *int { return &c.MaxHeldPulls }),
	intProp("haListenPort", func(c *Config) *int { return &c.HAListenPort }),
	strProp("haMasterAddress", func(c *Config) *string { return &c.HAMasterAddress }),
	msProp("haSendHeartbeatInterval", func(c *Config) *time.Duration { return &c.HASendHeartbeatInterval }),
	msProp("haHousekeepingInterval", func(c *Config) *time.Duration { return &c.HAHousekeepingInterval }),
	intProp("haTransferBatchSize", func(c *Config) *int { return &c.HATransferBatchSize }),
	int64Prop("haMaxGapNotInSync", func(c *Config) *int64 { return &c.HAMaxGapNotInSync }),
	msProp("haSlaveAckTimeout", func(c *Config) *time.Duration { return &c.HASlaveAckTimeout }),
	boolProp("haSlaveAckFlushed", func(c *Config) *bool { return &c.HASlaveAckFlushed }),
	boolProp("haFullCopy", func(c *Config) *bool { return &c.HAFullCopy }),
	boolProp("enableControllerMode", func(c *Config) *bool { return &c.EnableControllerMode }),
	{name: "controllerAddr",
		set: func(c *Config, v string) error { c.ControllerAddrs = splitAddrs(v); return nil },
		get: func(c *Config) string { return strings.Join(c.ControllerAddrs, ";") }},
	msProp("brokerHeartbeatInterval", func(c *Config) *time.Duration { return &c.BrokerHeartbeatInterval }),
	msProp("controllerHeartBeatTimeoutMills", func(c *Config) *time.Duration { return &c.ControllerHeartBeatTimeout }),
	msProp("haMaxTimeSlaveNotCatchup", func(c *Config) *time.Duration { return &c.HAMaxTimeSlaveNotCatchup }),
	msProp("diskStallFailoverMillis", func(c *Config) *time.Duration { return &c.DiskStallFailover }),
	intProp("inSyncReplicas", func(c *Config) *int { return &c.InSyncReplicas }),
	intProp("minInSyncReplicas", func(c *Config) *int { return &c.MinInSyncReplicas }),
	intProp("totalReplicas", func(c *Config) *int { return &c.TotalReplicas }),
	boolProp("slaveReadEnable", func(c *Config) *bool { return &c.SlaveReadEnable }),
	intProp("accessMessageInMemoryMaxRatio", func(c *Config) *int { return &c.AccessMessageInMemoryMaxRatio }),
	int64Prop("totalPhysicalMemorySize", func(c *Config) *int64 { return &c.TotalPhysicalMemorySize }),
	msProp("slaveSyncInterval", func(c *Config) *time.Duration { return &c.SlaveSyncInterval }),
	boolProp("autoCreateSubscriptionGroup", func(c *Config) *bool { return &c.AutoCreateSubscriptionGroup }),
	msProp("transactionTimeOut", func(c *Config) *time.Duration { return &c.TransactionTimeout }),
	msProp("transactionCheckInterval", func(c *Config) *time.Duration { return &c.TransactionCheckInterval }),
	intProp("transactionCheckMax", func(c *Config) *int { return &c.TransactionCheckMax }),
	msProp("xaActiveTimeout", func(c *Config) *time.Duration { return &c.XAActiveTimeout }),
	msProp("xaLongPrepared", func(c *Config) *time.Duration { return &c.XALongPrepared }),
}

var propertyIndex = func() map[string]*property {
	m := make(map[string]*property)
	properties = append(properties, scheduleProps...)
	properties = append(properties, netProps...)
	properties = append(properties, aclProps...)
	for i := range properties {
		p := &properties[i]
		m[strings.ToLower(p.name)] = p
		for _, a := range p.aliases {
			m[strings.ToLower(a)] = p
		}
	}
	return m
}()

// ErrUnknownProperty is wrapped by Set for a key this broker does not know.
var ErrUnknownProperty = errors.New("broker: unknown property")

// Set sets one property by its broker.conf key (case-insensitive, aliases
// allowed). Unknown keys give an error wrapping ErrUnknownProperty.
func (c *Config) Set(key, value string) error {
	p, ok := propertyIndex[strings.ToLower(strings.TrimSpace(key))]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownProperty, key)
	}
	if err := p.set(c, strings.TrimSpace(value)); err != nil {
		return fmt.Errorf("broker: property %s: %w", p.name, err)
	}
	if c.setFlags == nil {
		c.setFlags = make(map[string]bool)
	}
	c.setFlags[p.name] = true
	return nil
}

// ParseProperties reads a broker.conf (Java properties: key=value, key:value
// or "key value" lines, # and ! comments, a trailing backslash continues a
// line) into c. Keys this broker does not know are returned in unknown
// (RocketMQ's broker.conf has many; the caller logs them) and are not an
// error; a bad value is, and every bad value is reported at once.
func (c *Config) ParseProperties(r io.Reader) (unknown []string, err error) {
	lines, err := readPropertyLines(r)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, kv := range lines {
		if e := c.Set(kv[0], kv[1]); e != nil {
			if errors.Is(e, ErrUnknownProperty) {
				unknown = append(unknown, kv[0])
				continue
			}
			errs = append(errs, e)
		}
	}
	return unknown, errors.Join(errs...)
}

func readPropertyLines(r io.Reader) ([][2]string, error) {
	var out [][2]string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var pending strings.Builder
	for sc.Scan() {
		line := strings.TrimLeftFunc(sc.Text(), unicode.IsSpace)
		if pending.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if trailingBackslashes(line)%2 == 1 {
			pending.WriteString(line[:len(line)-1])
			continue
		}
		pending.WriteString(line)
		k, v := splitProperty(pending.String())
		pending.Reset()
		if k != "" {
			out = append(out, [2]string{unescapeProperty(k), unescapeProperty(v)})
		}
	}
	if pending.Len() > 0 {
		if k, v := splitProperty(pending.String()); k != "" {
			out = append(out, [2]string{unescapeProperty(k), unescapeProperty(v)})
		}
	}
	return out, sc.Err()
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitProperty splits at the first unescaped '=', ':' or whitespace.
func splitProperty(s string) (key, value string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '=', ':', ' ', '\t', '\f':
			key, rest := s[:i], strings.TrimLeft(s[i:], " \t\f")
			if rest != "" && (rest[0] == '=' || rest[0] == ':') {
				rest = strings.TrimLeft(rest[1:], " \t\f")
			}
			return key, strings.TrimRightFunc(rest, unicode.IsSpace)
		}
	}
	return s, ""
}

func unescapeProperty(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				if n, err := strconv.ParseUint(s[i+1:i+5], 16, 16); err == nil {
					b.WriteRune(rune(n))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// propertyLines returns "key=value" for every property, sorted by key.
func (c *Config) propertyLines() []string {
	out := make([]string, 0, len(properties))
	for i := range properties {
		out = append(out, properties[i].name+"="+properties[i].get(c))
	}
	sort.Strings(out)
	return out
}

// Clone returns c with its own copies of the slices and maps it holds, so a
// template Config can be reused: a Set on the copy (which records the key
// in a map the copies would otherwise share) leaves the template as it
// was. New clones the Config it is given; devcluster clones its template
// once per broker it starts.
func (c Config) Clone() Config {
	c.NamesrvAddrs = slices.Clone(c.NamesrvAddrs)
	c.ControllerAddrs = slices.Clone(c.ControllerAddrs)
	c.setFlags = maps.Clone(c.setFlags)
	return c
}

// PropertyNames lists every broker.conf key the broker knows, sorted.
func PropertyNames() []string {
	out := make([]string, 0, len(properties))
	for i := range properties {
		out = append(out, properties[i].name)
	}
	sort.Strings(out)
	return out
}
