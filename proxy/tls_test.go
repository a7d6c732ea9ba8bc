package proxy

import (
	"crypto/tls"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/samsamq/samsa/internal/netx/netxtest"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

func TestTLS(t *testing.T) {
	certs := netxtest.New(t)
	cert, err := tls.LoadX509KeyPair(certs.ServerCertFile, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, 1, func(o *Options) {
		o.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	})
	e.createTopic("tls", 1)
	conn, err := grpc.NewClient(e.proxy.Addr(), grpc.WithTransportCredentials(credentials.NewTLS(certs.ClientConfig(t, false))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	e.rpc = pb.NewMessagingServiceClient(conn)
	ctx := e.ctx("tls-client")
	e.send(ctx, msg("tls", "T1", "over TLS"))
	if got := e.receiveAll(ctx, "tg", "tls", 1); string(got[0].Body) != "over TLS" {
		t.Fatalf("received %q", got[0].Body)
	}
	// A plain client gets nowhere.
	plain, err := grpc.NewClient(e.proxy.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := pb.NewMessagingServiceClient(plain).QueryRoute(ctx, &pb.QueryRouteRequest{Topic: res("tls")}); err == nil {
		t.Fatal("a plain client was served by the TLS proxy")
	}
}
