package linkdelay

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var measure = flag.Bool("measure", false, "measure round trips: loopback, the proxy and netem at 0.5 and 2 ms one-way")

// TestMeasureRoundTrips prints, for each way of delaying, the round trip
// of 300 pings (8 bytes, one at a time) and its excess over 2×oneWay.
// Opt in: go test ./loadgen/linkdelay -run Measure -v -args -measure
func TestMeasureRoundTrips(t *testing.T) {
	if !*measure {
		t.Skip("run with -args -measure")
	}
	const n = 300
	var b strings.Builder
	fmt.Fprintf(&b, "\n| link | one-way | p10 | median | p90 | median − 2×one-way |\n|---|---|---|---|---|---|\n")
	row := func(link string, oneWay time.Duration, rtts []time.Duration) {
		s := slices.Sorted(slices.Values(rtts))
		fmt.Fprintf(&b, "| %s | %v | %v | %v | %v | %v |\n", link, oneWay,
			s[len(s)/10].Round(time.Microsecond), Median(s).Round(time.Microsecond),
			s[len(s)*9/10].Round(time.Microsecond), (Median(s) - 2*oneWay).Round(time.Microsecond))
	}
	target := echoServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rtts, err := Ping(ctx, target, n)
	require.NoError(t, err)
	row("loopback", 0, rtts)
	for _, d := range []time.Duration{0, 500 * time.Microsecond, 2 * time.Millisecond} {
		p := startProxy(t, target, d, DefaultRing)
		rtts, err := Ping(ctx, p.Addr(), n)
		require.NoError(t, err)
		row("proxy", d, rtts)
		require.NoError(t, p.Close())
	}
	if reason := namespacesUnavailable(); reason == "" {
		ns, err := NewNamespace("")
		require.NoError(t, err)
		row("namespace lo (helper process)", 0, pingInside(t, ns.Command, "127.0.0.1:40005", n))
		require.NoError(t, ns.Close())
	}
	if ok, reason := Available(); !ok {
		fmt.Fprintf(&b, "\nnetem: %s\n", reason)
	} else {
		for _, d := range []time.Duration{500 * time.Microsecond, 2 * time.Millisecond} {
			ns, err := NewNamespace("")
			require.NoError(t, err)
			require.NoError(t, ns.DelayPorts(d, 40005))
			row("netem", d, pingInside(t, ns.Command, "127.0.0.1:40005", n))
			require.NoError(t, ns.Close())
		}
	}
	t.Log(b.String())
}
