package delay

import (
	"testing"
	"time"
)

func TestParseLevels(t *testing.T) {
	got, err := ParseLevels(DefaultLevels)
	if err != nil || len(got) != 18 || got[0] != time.Second || got[2] != 10*time.Second || got[17] != 2*time.Hour {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := ParseLevels("300ms 2d"); err != nil || len(got) != 2 || got[0] != 300*time.Millisecond || got[1] != 48*time.Hour {
		t.Fatalf("ms and d: %v %v", got, err)
	}
	for _, bad := range []string{"", "1x", "s", "-1s", "1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s"} {
		if _, err := ParseLevels(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// DecodeOffsets reads what RocketMQ's fastjson writes: bare integer keys.
func TestDecodeOffsets(t *testing.T) {
	f, err := DecodeOffsets([]byte(`{"offsetTable":{1:3,2:0, 18 :7},"dataVersion":{"timestamp":5,"counter":2}}`))
	if err != nil || f.OffsetTable[1] != 3 || f.OffsetTable[18] != 7 || f.DataVersion.Counter != 2 {
		t.Fatalf("%+v %v", f, err)
	}
	if _, err := DecodeOffsets([]byte(`{nope`)); err == nil {
		t.Fatal("garbage decoded")
	}
}
