package proxy

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/samsamq/samsa/acl"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

const aclFile = `
accounts:
  - accessKey: writerAK1
    secretKey: writerSK1
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: ["secure=PUB|SUB"]
  - accessKey: readerAK1
    secretKey: readerSK1
    defaultTopicPerm: DENY
    topicPerms: ["secure=SUB"]
`

func sign(secret, date string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(date))
	return hex.EncodeToString(m.Sum(nil))
}

func TestACL(t *testing.T) {
	cfg, err := acl.Parse([]byte(aclFile))
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, 1, func(o *Options) { o.ACL = acl.NewStatic(cfg) })
	e.createTopic("secure", 1)
	send := func(ak, secret string, tamper bool) (*pb.SendMessageResponse, error) {
		ctx := e.ctx("c1")
		if ak != "" {
			date := time.Now().UTC().Format("20060102T150405Z")
			sig := sign(secret, date)
			if tamper {
				sig = sign(secret, date+"x")
			}
			ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-date-time", date,
				"authorization", "MQv2-HMAC-SHA1 Credential="+ak+", SignedHeaders=x-mq-date-time, Signature="+sig)
		}
		return e.rpc.SendMessage(ctx, &pb.SendMessageRequest{Messages: []*pb.Message{msg("secure", "A1", "x")}})
	}
	if _, err := send("", "", false); grpcstatus.Code(err) != codes.Unauthenticated {
		t.Fatalf("unsigned: %v, want Unauthenticated", err)
	}
	if _, err := send("writerAK1", "writerSK1", true); grpcstatus.Code(err) != codes.Unauthenticated {
		t.Fatalf("bad signature: %v, want Unauthenticated", err)
	}
	if _, err := send("nobodyAK1", "writerSK1", false); grpcstatus.Code(err) != codes.Unauthenticated {
		t.Fatalf("unknown account: %v, want Unauthenticated", err)
	}
	if r, err := send("readerAK1", "readerSK1", false); err != nil || r.Status.Code != pb.Code_FORBIDDEN {
		t.Fatalf("reader sends: %v %v, want FORBIDDEN", r, err)
	}
	if r, err := send("writerAK1", "writerSK1", false); err != nil || r.Status.Code != pb.Code_OK {
		t.Fatalf("writer sends: %v %v", r, err)
	}
}
