package awsclient

import (
	"context"
	"io"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// SafeBodies keeps an answer from being lost to a race between the SDK and net/http: it
// sends each request body as a plain io.ReadSeeker, hiding its WriteTo.
//
// net/http writes a body of known length straight to the socket, then reads it once more
// to make sure nothing is left. The server may answer in between, and the SDK closes the
// body as soon as the answer's headers arrive; smithy-go's closed body then answers
// WriteTo with io.EOF (Read with 0, io.EOF, which is fine), net/http takes that for a
// failed write and closes the connection, and the answer, still being read, fails: "read
// tcp ...: use of closed network connection", "failed to discard remaining HTTP response
// body". It happens under load, against AWS as against the emulator, and on a call the
// SDK may not retry (the answer's status was 200). Without WriteTo, that last read goes
// through Read and ends cleanly.
func SafeBodies(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("cairnSafeBodies",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			if req, ok := in.Request.(*smithyhttp.Request); ok {
				if s, ok := req.GetStream().(io.ReadSeeker); ok {
					if _, writerTo := s.(io.WriterTo); writerTo {
						if plain, err := req.SetStream(readSeeker{s}); err == nil {
							in.Request = plain
						}
					}
				}
			}
			return next.HandleDeserialize(ctx, in)
		}), middleware.After)
}

// readSeeker is an io.ReadSeeker and nothing else.
type readSeeker struct{ io.ReadSeeker }
