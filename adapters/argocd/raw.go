package argocd

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relcap/relcap/workflow/secret"
)

// rawInvoker makes a unary gRPC call with the request and response as
// protobuf wire bytes, not Go messages. Project updates go through it: an
// AppProject decoded into argo-cd v2's Go types loses every field that
// v2 does not know, so a read-modify-write through them would strip, on an
// Argo CD 3.x server, the project's sourceIntegrity, the names that narrow
// its cluster resource allow-lists and the andOperator, description and
// syncOverrun of other teams' sync windows. Edited as bytes, everything
// relcap does not touch goes back exactly as the server sent it.
type rawInvoker interface {
	invoke(ctx context.Context, method string, req []byte) ([]byte, error)
}

// rawCodec passes bytes through; it is what grpc.ForceCodec needs to send
// and receive wire bytes unchanged.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot send %T", v)
	}
	return b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: cannot receive into %T", v)
	}
	*p = bytes.Clone(data)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// grpcRaw calls over the adapter's native gRPC connection.
type grpcRaw struct{ conn *grpc.ClientConn }

func (g grpcRaw) invoke(ctx context.Context, method string, req []byte) ([]byte, error) {
	var out []byte
	if err := g.conn.Invoke(ctx, method, req, &out, grpc.ForceCodec(rawCodec{})); err != nil {
		return nil, err
	}
	return out, nil
}

// webRaw calls through gRPC-Web (HTTP/1.1 POSTs of length-prefixed
// frames), as argo-cd's apiclient does for servers behind ingresses that
// do not pass HTTP/2; apiclient keeps its connection to itself, so relcap
// speaks the few lines of the protocol it needs here. Errors are gRPC
// status errors, as over native gRPC.
type webRaw struct {
	base   string // scheme://host[/prefix]
	token  string
	client *http.Client
}

// Frame flags of gRPC-Web: a data frame, or the trailers that end the
// response.
const (
	webFrameData     = 0x00
	webFrameTrailers = 0x80
)

func (w webRaw) invoke(ctx context.Context, method string, req []byte) ([]byte, error) {
	body := make([]byte, 5, 5+len(req))
	binary.BigEndian.PutUint32(body[1:], uint32(len(req)))
	body = append(body, req...)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, w.base+method, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/grpc-web+proto")
	hr.Header.Set("X-Grpc-Web", "1")
	hr.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := w.client.Do(hr)
	if err != nil {
		return nil, status.Error(codes.Unavailable, redactURL(err))
	}
	defer resp.Body.Close()
	if err := webStatus(resp.Header); err != nil {
		return nil, err // trailers-only: an error before any message
	}
	if resp.StatusCode != http.StatusOK {
		return nil, status.Errorf(httpCode(resp.StatusCode), "gRPC-Web call %s: HTTP %s", method, resp.Status)
	}
	var msg []byte
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(resp.Body, hdr[:]); err != nil {
			return nil, status.Errorf(codes.Unavailable, "gRPC-Web call %s: response ended without trailers: %v", method, err)
		}
		n := binary.BigEndian.Uint32(hdr[1:])
		if n > 64<<20 {
			return nil, status.Errorf(codes.ResourceExhausted, "gRPC-Web call %s: a frame of %d bytes", method, n)
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, frame); err != nil {
			return nil, status.Errorf(codes.Unavailable, "gRPC-Web call %s: %v", method, err)
		}
		switch hdr[0] {
		case webFrameData:
			msg = frame
		case webFrameTrailers:
			if err := webStatus(webTrailers(frame)); err != nil {
				return nil, err
			}
			return msg, nil
		default:
			return nil, status.Errorf(codes.Internal, "gRPC-Web call %s: unknown frame flag %#x", method, hdr[0])
		}
	}
}

// webTrailers reads a trailers frame: "key: value" lines, CRLF-ended.
func webTrailers(frame []byte) http.Header {
	h := http.Header{}
	for line := range strings.SplitSeq(string(frame), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return h
}

// webStatus is the gRPC status carried by grpc-status and grpc-message
// (headers or trailers), or nil for OK or none.
func webStatus(h http.Header) error {
	s := h.Get("Grpc-Status")
	if s == "" {
		return nil
	}
	code, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return status.Errorf(codes.Unknown, "gRPC-Web: bad grpc-status %q", s)
	}
	if codes.Code(code) == codes.OK {
		return nil
	}
	msg, err := url.PathUnescape(h.Get("Grpc-Message"))
	if err != nil {
		msg = h.Get("Grpc-Message")
	}
	return status.Error(codes.Code(code), msg)
}

// httpCode maps an HTTP status without a gRPC status to a gRPC code, as
// grpc-go does for HTTP/2 responses.
func httpCode(c int) codes.Code {
	switch c {
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound, http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codes.Unavailable
	}
	return codes.Unknown
}

// redactURL is err's message with its URL redacted by relcap's one URL
// redactor (secret.RedactURL): no credential in its user information or
// query.
func redactURL(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " " + secret.RedactURL(ue.URL) + ": " + ue.Err.Error()
	}
	return err.Error()
}
