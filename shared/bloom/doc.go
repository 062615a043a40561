// Package bloom is the bloom-filter sidecar of a data file: for each of a
// dataset's bloomFilterColumns the uploader reads the column from the
// ready WAL segment, adds every non-null value to a Filter and stores the
// filter beside the data file, before the segment's uploaded marker (see
// the uploader package). A reader that looks for one value can then skip
// every data file whose filter says the value is absent: a filter has no
// false negatives, and false positives at about the rate it was built for.
//
// # Values
//
// A value is added and looked up by its canonical encoding, the same bytes
// whether it comes from an Arrow column (AppendValue) or from text typed on
// a command line for a column of a given Iceberg type (QueryValue):
//
//	string                     the UTF-8 bytes, unchanged
//	int, long                  decimal text: -42
//	boolean                    true or false
//	float, double              shortest decimal text that reads back as the
//	                           same float32 or float64 (strconv 'g', -1);
//	                           -0 is written 0; NaN, +Inf, -Inf
//	decimal(P,S)               plain decimal text with exactly S digits after
//	                           the point: -12.30 for decimal(9,2)
//	date                       2006-01-02
//	time                       15:04:05.000000 (microseconds)
//	timestamp, timestamptz     RFC 3339 in UTC with microseconds:
//	                           2006-01-02T15:04:05.000000Z
//	timestamp_ns, timestamptz_ns
//	                           the same with nanoseconds (9 digits)
//	uuid, fixed[N], binary     the raw bytes (QueryValue reads a uuid in any
//	                           form uuid.Parse accepts, binary and fixed as hex)
//
// QueryValue accepts the usual spellings of each type (a timestamp with any
// offset, or none for UTC; a decimal with fewer digits; TRUE, 1...) and
// rejects a value that no column value could equal, such as 1.234 for
// decimal(9,2).
//
// # Sidecar names
//
// The sidecar of a column sits beside its data file <uuid>.parquet as
// <uuid>.bloom.<column> (SidecarName), one object per column, and the
// segment's uploaded_ marker lists them by column. One object per column
// lets a reader fetch only the filter it asks about.
//
// # Sidecar format, version 1
//
// All integers little-endian:
//
//	offset  size  field
//	0       4     magic "IWBF"
//	4       2     version, 1
//	6       1     hash function, 1: XXH64 (seed 0) with double hashing, below
//	7       1     reserved, 0
//	8       2     length L of the column name
//	10      L     column name, UTF-8
//	10+L    8     number of values added (nulls are not added)
//	18+L    8     bit count m, a multiple of 64, at most 2^33
//	26+L    4     hash count k, 1 to 30
//	30+L    m/8   the bitset: m/64 uint64 words; bit j is bit j%64 of word j/64
//	30+L+m/8  4   CRC-32C (Castagnoli) of every preceding byte
//
// Hash function 1: h1 = XXH64(value, seed 0); h2 = SplitMix64's finalizer
// of h1 (z ^= z>>30; z *= 0xbf58476d1ce4e5b9; z ^= z>>27;
// z *= 0x94d049bb133111eb; z ^= z>>31), with its lowest bit set. The value
// sets bits (h1 + i*h2) mod m for i = 0..k-1, in wrapping 64-bit arithmetic.
//
// New sizes a filter for n values and a false-positive rate p the usual
// way: m = ceil(-n ln p / (ln 2)^2) rounded up to a multiple of 64,
// k = round(m/n ln 2).
package bloom
