package consumer

import "github.com/icewal/ingestor/consumer/decode"

// Row is a decoded record as the segments buffer and write it; the decode
// package defines its values.
type Row = decode.Row
