package proxy

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"net/netip"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/samsamq/samsa/acl"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

// RocketMQ 5's clients sign a call with the header
//
//	authorization: MQv2-HMAC-SHA1 Credential=<accessKey>, SignedHeaders=x-mq-date-time, Signature=<hex HMAC-SHA1(secretKey, x-mq-date-time)>
//
// With ACL on, a call must carry it with an account of the accounts
// file (or come from a white-listed address); the handlers then check
// the account's rights on the topics and groups the call names.

type identityKey struct{}

// identity is who a call was verified as.
type identity struct {
	req acl.Request // AccessKey and remote address, for CheckResource
}

const authScheme = "MQv2-HMAC-SHA1"

// authenticate verifies ctx's call; it returns the context carrying the
// identity, or a gRPC Unauthenticated error.
func (s *Server) authenticate(ctx context.Context) (context.Context, error) {
	if s.opts.ACL == nil {
		return ctx, nil
	}
	cfg := s.opts.ACL.Config()
	var remote netip.Addr
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		if ap, err := netip.ParseAddrPort(p.Addr.String()); err == nil {
			remote = ap.Addr().Unmap()
		}
	}
	id := identity{req: acl.Request{Remote: remote, Ext: map[string]string{}}}
	for _, m := range cfg.GlobalWhite {
		if m.Match(remote) {
			return context.WithValue(ctx, identityKey{}, id), nil
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	auth, date := first(md, "authorization"), first(md, "x-mq-date-time")
	ak, sig, good := parseAuthorization(auth)
	if !good {
		return nil, grpcstatus.Error(codes.Unauthenticated, "ACL is on: sign calls with an account's access key (authorization header)")
	}
	a := cfg.Accounts[ak]
	if a == nil {
		return nil, grpcstatus.Errorf(codes.Unauthenticated, "no account for access key %q", ak)
	}
	mac := hmac.New(sha1.New, []byte(a.SecretKey))
	mac.Write([]byte(date))
	want := mac.Sum(nil)
	got, err := hex.DecodeString(sig)
	if err != nil || date == "" || !hmac.Equal(want, got) {
		return nil, grpcstatus.Error(codes.Unauthenticated, "bad signature")
	}
	id.req.Ext[acl.FieldAccessKey] = ak
	return context.WithValue(ctx, identityKey{}, id), nil
}

func first(md metadata.MD, k string) string {
	if v := md.Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}

// parseAuthorization reads the access key and hex signature out of an
// authorization header.
func parseAuthorization(h string) (ak, sig string, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(h), authScheme+" ")
	if !found {
		return "", "", false
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			ak = v
		case "Signature":
			sig = v
		}
	}
	return ak, sig, ak != "" && sig != ""
}

func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := s.authenticate(ctx)
	if err != nil {
		s.opts.Logger.Debug("proxy: call refused", "method", info.FullMethod, "err", err)
		return nil, err
	}
	resp, err := h(ctx, req)
	if r, ok := resp.(interface{ GetStatus() *pb.Status }); ok && r.GetStatus().GetCode() != pb.Code_OK {
		s.opts.Logger.Debug("proxy: call answered", "method", info.FullMethod, "code", r.GetStatus().GetCode(),
			"message", r.GetStatus().GetMessage())
	}
	return resp, err
}

type authedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (a authedStream) Context() context.Context { return a.ctx }

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := s.authenticate(ss.Context())
	if err != nil {
		return err
	}
	return h(srv, authedStream{ss, ctx})
}

// allowed checks the call's account's rights on res (nil: allowed). An
// empty name is left to the handler to refuse.
func (s *Server) allowed(ctx context.Context, res acl.Resource) *pb.Status {
	if s.opts.ACL == nil || res.Name == "" {
		return nil
	}
	id, ok := ctx.Value(identityKey{}).(identity)
	if !ok {
		return status(pb.Code_UNAUTHORIZED, "unauthenticated call")
	}
	if d := s.opts.ACL.Config().CheckResource(id.req, res); d != nil {
		return status(pb.Code_FORBIDDEN, d.Remark)
	}
	return nil
}
