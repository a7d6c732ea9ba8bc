package proxy

import (
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func durationOf(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

func timestampOf(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

func isUnimplemented(err error) bool { return grpcstatus.Code(err) == codes.Unimplemented }
