package broker

import (
	"testing"
	"time"
)

// TestRateSampler: rates over 10 s, 1 min and 10 min from one-second
// samples, with a young broker's windows cut to what it has, and the
// ring wrapping.
func TestRateSampler(t *testing.T) {
	var r rateSampler
	if put, get := r.rates(); put != ([3]float64{}) || get != ([3]float64{}) {
		t.Fatalf("no samples: %v %v", put, get)
	}
	t0 := time.Unix(1_700_000_000, 0)
	// 20 s at 100 puts/s and 50 gets/s
	for i := 0; i <= 20; i++ {
		r.add(rateSample{at: t0.Add(time.Duration(i) * time.Second), put: int64(100 * i), get: int64(50 * i)})
	}
	put, get := r.rates()
	if put != [3]float64{100, 100, 100} || get != [3]float64{50, 50, 50} {
		t.Fatalf("steady: %v %v", put, get)
	}
	// then 15 min at 10 puts/s, no gets: the ring wraps
	base := int64(2000)
	for i := 1; i <= 900; i++ {
		r.add(rateSample{at: t0.Add(time.Duration(20+i) * time.Second), put: base + int64(10*i), get: 1000})
	}
	put, get = r.rates()
	if put != [3]float64{10, 10, 10} || get != [3]float64{0, 0, 0} {
		t.Fatalf("after the change: %v %v", put, get)
	}
	if s := tpsText(put); s != "10.00 10.00 10.00" {
		t.Fatalf("text: %q", s)
	}
}
