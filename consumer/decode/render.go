package decode

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxRenderedValue bounds the offending value quoted in error messages.
const maxRenderedValue = 64

// renderValue writes v as JSON text, cut after about limit bytes.
func renderValue(v any, limit int) string {
	var b strings.Builder
	renderTo(&b, v, limit)
	s := b.String()
	if len(s) > limit {
		// Cut on a rune boundary.
		cut := limit
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func renderTo(b *strings.Builder, v any, limit int) {
	if b.Len() > limit {
		return
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		if len(v) > limit {
			v = v[:limit+1]
		}
		b.WriteString(strconv.Quote(v))
	case json.Number:
		if len(v) > limit {
			v = v[:limit+1]
		}
		b.WriteString(string(v))
	case float64:
		b.WriteString(formatFloat(v))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if b.Len() > limit {
				break
			}
			if i > 0 {
				b.WriteByte(',')
			}
			renderTo(b, e, limit)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if b.Len() > limit {
				break
			}
			if i > 0 {
				b.WriteByte(',')
			}
			renderTo(b, k, limit)
			b.WriteByte(':')
			renderTo(b, v[k], limit)
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "%v", v)
	}
}

// ArrowSchema is the Arrow schema of the table's Parquet files: the one
