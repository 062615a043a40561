package decode

import "time"

func digits2(s string, i int) (int, bool) {
	if i+2 > len(s) {
		return 0, false
	}
	a, b := s[i]-'0', s[i+1]-'0'
	if a > 9 || b > 9 {
		return 0, false
	}
	return int(a)*10 + int(b), true
}

// parseYMD parses YYYY-MM-DD at the start of s.
func parseYMD(s string) (y, m, d int, ok bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, 0, false
	}
	hi, ok1 := digits2(s, 0)
	lo, ok2 := digits2(s, 2)
	m, ok3 := digits2(s, 5)
	d, ok4 := digits2(s, 8)
	if !ok1 || !ok2 || !ok3 || !ok4 || m < 1 || m > 12 || d < 1 {
		return 0, 0, 0, false
	}
	y = hi*100 + lo
	if d > daysIn(y, m) {
		return 0, 0, 0, false
	}
	return y, m, d, true
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// parseClock parses HH:MM:SS[.fraction] at the start of s and returns the
// seconds since midnight, the fraction in nanoseconds (digits beyond the
// ninth are dropped) and the rest of s.
func parseClock(s string) (sec int64, nanos int64, rest string, ok bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, 0, "", false
	}
	hh, ok1 := digits2(s, 0)
	mm, ok2 := digits2(s, 3)
	ss, ok3 := digits2(s, 6)
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 59 {
		return 0, 0, "", false
	}
	i := 8
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		scale := int64(100_000_000)
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			nanos += int64(s[i]-'0') * scale
			scale /= 10
			i++
		}
		if i == start {
			return 0, 0, "", false
		}
	}
	return int64(hh*3600 + mm*60 + ss), nanos, s[i:], true
}

func epochDays(y, m, d int) int64 {
	return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// parseTimestamp parses an RFC 3339 timestamp: YYYY-MM-DD, then optionally
// T (or t or a space) and HH:MM:SS[.fraction], then optionally Z or ±HH:MM.
// A date alone is midnight; no zone means UTC. It returns the UTC instant as
// seconds since the epoch and nanoseconds within the second.
func parseTimestamp(s string) (sec, nanos int64, ok bool) {
	y, m, d, ok := parseYMD(s)
	if !ok {
		return 0, 0, false
	}
	sec = epochDays(y, m, d) * 86400
	if len(s) == 10 {
		return sec, 0, true
	}
	if s[10] != 'T' && s[10] != 't' && s[10] != ' ' {
		return 0, 0, false
	}
	clock, nanos, rest, ok := parseClock(s[11:])
	if !ok {
		return 0, 0, false
	}
	sec += clock
	switch {
	case rest == "":
	case rest == "Z" || rest == "z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits2(rest, 1)
		om, ok2 := digits2(rest, 4)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, 0, false
		}
		off := int64(oh*3600 + om*60)
		if rest[0] == '+' {
			sec -= off
		} else {
			sec += off
		}
	default:
		return 0, 0, false
	}
	return sec, nanos, true
}

// parseDate parses YYYY-MM-DD or an RFC 3339 timestamp; a timestamp gives
// the date of its UTC instant.
func parseDate(s string) (int32, bool) {
	if len(s) == 10 {
		y, m, d, ok := parseYMD(s)
		if !ok {
			return 0, false
		}
		return int32(epochDays(y, m, d)), true
	}
	sec, _, ok := parseTimestamp(s)
	if !ok {
		return 0, false
	}
	days := sec / 86400
	if sec%86400 < 0 {
		days--
	}
	return int32(days), true
}

// parseTimeOfDay parses HH:MM:SS[.fraction] into microseconds since midnight.
func parseTimeOfDay(s string) (int64, bool) {
	sec, nanos, rest, ok := parseClock(s)
	if !ok || rest != "" {
		return 0, false
	}
	return sec*1e6 + nanos/1000, true
}
