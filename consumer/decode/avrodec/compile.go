package avrodec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
)

// opcode is what one op of a compiled program reads, and what it makes of
// it. Ops that make a value store it at op.col of the slice the program
// fills (the row, or a struct's fields).
type opcode uint8

const (
	// Skips: read past a value without making anything of it.
	opSkipVarint opcode = iota // int, long, enum
	opSkipFixed                // n bytes: boolean, float, double, fixed, null
	opSkipBytes                // bytes, string
	opSkipNode                 // any other type, walked from its node
	opSkipOpt                  // a nullable field of a type above, its skip in inner

	// Programs: a record whose fields are addressed by path fills the
	// same slice as its parent.
	opInline // sub runs into the parent's slice
	opFanout // each value op of sub reads the same field, for columns mapped to one path
	opBranch // the union branch's op in alts runs as a program (skips or inlines)

	// Values.
	opUnion // the value of the union branch's op in alts
	opNull
	opBool
	opIntInt       // int -> int
	opIntLong      // int -> long
	opLongLong     // long -> long
	opLongInt      // long -> int, range checked
	opIntFloat     // int -> float
	opLongFloat    // long -> float
	opFloatFloat   // float -> float
	opIntDouble    // int -> double
	opLongDouble   // long -> double
	opFloatDouble  // float -> double
	opDoubleDouble // double -> double
	opString       // string -> string
	opEnum         // enum -> its symbol
	opBytes        // bytes or string -> binary
	opFixed        // fixed(n) -> binary or fixed[n]
	opBytesFixed   // bytes -> fixed[n], length checked
	opDate         // int (date) -> date
	opTimeMillis   // int (time-millis) -> time
	opTimeMicros   // long (time-micros) -> time
	opTimestamp    // long (timestamp-*) -> timestamp column: times mul, floor-divided by div
	opDecBytes     // decimal on bytes -> decimal
	opDecFixed     // decimal on fixed(n) -> decimal
	opUUIDString   // string -> uuid
	opUUIDFixed    // fixed(16) -> uuid
	opStruct       // record -> struct: sub fills a slice of width fields
	opList         // array -> list of elem
	opMap          // map -> map<string, elem>
)

// op is one step of a compiled program. A program is a []op run over the
// writer's fields in order. What the loop over a wide record's fields
// reads is kept in op itself, small, so that the ops of a record share
// few cache lines; the rest is behind info.
type op struct {
	code opcode
	// nul is the index of a union's null branch, -1 if none: the loop
	// learns that a nullable field is null without reading alts.
	nul int8
	// inner is the skip of an opSkipOpt's value, with n its bytes; and
	// the code of the value branch of an opUnion of two branches, one of
	// them null (zero, a skip code, for any other union).
	inner opcode
	col   int32 // index in the slice being filled, for ops that make a value
	n     int   // opSkipFixed, opFixed, opBytesFixed, opDecFixed: bytes; opStruct: fields
	sub   []op  // opInline, opFanout, opStruct
	alts  []op  // opBranch, opUnion: by branch index
	*info
}

// info is what an op needs off the hot path: its names for errors and the
// parameters of the rarer conversions.
type info struct {
	column string // top-level column, for errors
	path   string // the value's place in the writer's record (user.zip, tags[]), for errors

	elem *op // opList, opMap
	node *node

	symbols []string // opEnum

	mul, div int64 // opTimestamp

	prec, scale, wscale int32 // decimals: column precision and scale, writer scale

	required     []int32 // opStruct: fields that must not be null
	fieldNames   []string
	elemRequired bool // opList, opMap: elements or values must not be null
	elemZero     bool // opList: elements take no bytes
}

// withPath names the field of an op for errors.
func withPath(o op, path string) op {
	if o.info == nil {
		o.info = &info{}
	}
	o.path = path
	return o
}

// column is one top-level column of the table.
type column struct {
	name     string
	required bool
}

// Decoder decodes Avro binary values of one writer schema into Rows of
// one table schema. It is safe for concurrent use.
type Decoder struct {
	prog     []op
	cols     []column
	required []int32 // columns that must not be null
	maxBytes int
	maxDepth int
}

// New compiles the program that decodes Avro binary of writer schema s
// into rows of table. mapping is column name -> path of a field
// ("a.b.c" addresses field c of record b of record a); a nil mapping maps
// each column to the top-level field of the same name. With a mapping,
// an unmapped column is always null, so it must be optional.
//
// A path that the writer schema does not have (a field absent, or a step
// into a field that is not a record) leaves the column null in every
// record, and a required column then drops each record with
// ReasonMissingRequired, as a JSON record lacking the field does: writer
// schemas change while the table stays, and a registry may hold schemas
// older than the table. A field whose type cannot become its column's
// (string into long, double into float, a fixed of another size) is an
// error here, naming the column.
func New(table *iceberg.Schema, mapping map[string]string, s *Schema) (*Decoder, error) {
	if s.root.kind != kRecord {
		return nil, fmt.Errorf("Avro writer schema is %s, not a record", s.root)
	}
	fields := table.Fields()
	for _, name := range slices.Sorted(maps.Keys(mapping)) {
		if !slices.ContainsFunc(fields, func(f iceberg.NestedField) bool { return f.Name == name }) {
			return nil, fmt.Errorf("mapping names column %q, which is not a top-level column of the table", name)
		}
	}
	d := &Decoder{cols: make([]column, len(fields))}
	root := &trie{col: -1}
	for i, f := range fields {
		d.cols[i] = column{name: f.Name, required: f.Required}
		if f.Required {
			d.required = append(d.required, int32(i))
		}
		path := f.Name
		if mapping != nil {
			p, ok := mapping[f.Name]
			if !ok {
				if f.Required {
					return nil, fmt.Errorf("required column %q has no mapping", f.Name)
				}
				continue
			}
			path = p
		}
		if err := root.add(path, i, f); err != nil {
			return nil, err
		}
	}
	c := &compiler{}
	prog, err := c.record(s.root, root, "")
	if err != nil {
		return nil, err
	}
	d.prog = prog
	return d, nil
}

// trie holds the mapped paths: a leaf is a column (or several mapped to
// the same path), an inner node a record whose fields are addressed.
type trie struct {
	col      int // first column index at a leaf, -1 at an inner node
	field    iceberg.NestedField
	more     []leaf // further columns at the same leaf
	children map[string]*trie
}

type leaf struct {
	col   int
	field iceberg.NestedField
}

func (t *trie) add(path string, col int, f iceberg.NestedField) error {
	steps := strings.Split(path, ".")
	for _, s := range steps {
		if s == "" {
			return fmt.Errorf("mapping of column %q: path %q has an empty step", f.Name, path)
		}
	}
	n := t
	for i, s := range steps {
		if n.col >= 0 {
			return fmt.Errorf("mapping of column %q: path %q goes inside the field that column %q takes whole", f.Name, path, n.field.Name)
		}
		if n.children == nil {
			n.children = map[string]*trie{}
		}
		next := n.children[s]
		if next == nil {
			next = &trie{col: -1}
			n.children[s] = next
		}
		if i == len(steps)-1 {
			if next.col >= 0 {
				next.more = append(next.more, leaf{col: col, field: f})
				return nil
			}
			if len(next.children) > 0 {
				return fmt.Errorf("mapping of column %q: path %q is a record whose fields other columns take", f.Name, path)
			}
			next.col, next.field = col, f
		}
		n = next
	}
	return nil
}

type compiler struct{}

// record compiles the program over the fields of writer record rec, at
// path prefix of the writer schema, for the paths under t.
func (c *compiler) record(rec *node, t *trie, prefix string) ([]op, error) {
	prog := make([]op, 0, len(rec.fields))
	for _, f := range rec.fields {
		child := t.children[f.name]
		path := join(prefix, f.name)
		switch {
		case child == nil:
			prog = appendOp(prog, withPath(skipOp(f.typ), path))
		case child.col >= 0:
			leaves := append([]leaf{{child.col, child.field}}, child.more...)
			ops := make([]op, len(leaves))
			for i, l := range leaves {
				o, err := c.value(l.field.Type, f.typ, l.field.Name, path)
				if err != nil {
					return nil, err
				}
				o.col = int32(l.col)
				ops[i] = o
			}
			if len(ops) == 1 {
				prog = append(prog, ops[0])
			} else {
				prog = append(prog, op{code: opFanout, sub: ops})
			}
		default:
			o, err := c.inline(f.typ, child, path)
			if err != nil {
				return nil, err
			}
			prog = appendOp(prog, o)
		}
	}
	return prog, nil
}

// inline compiles a field whose own fields are addressed: a record, or a
// union with records (a nullable record). Anything else does not hold the
// paths, which stay null.
func (c *compiler) inline(n *node, t *trie, path string) (op, error) {
	switch n.kind {
	case kRecord:
		sub, err := c.record(n, t, path)
		return op{code: opInline, sub: sub, info: &info{path: path}}, err
	case kUnion:
		o := op{code: opBranch, nul: -1, info: &info{node: n, path: path}}
		for _, b := range n.branches {
			alt := skipOp(b)
			if b.kind == kRecord {
				sub, err := c.record(b, t, path)
				if err != nil {
					return op{}, err
				}
				alt = op{code: opInline, sub: sub}
			}
			o.alts = append(o.alts, alt)
		}
		return o, nil
	}
	return withPath(skipOp(n), path), nil
}

// appendOp appends o to a program, or the ops of an inlined record in
// its place: the loop then runs them without a call per record.
func appendOp(prog []op, o op) []op {
	if o.code == opInline {
		return append(prog, o.sub...)
	}
	return append(prog, o)
}

// skipOp is the op that reads past a value of n.
func skipOp(n *node) op {
	switch n.kind {
	case kInt, kLong, kEnum:
		return op{code: opSkipVarint}
	case kNull:
		return op{code: opSkipFixed, n: 0}
	case kBoolean:
		return op{code: opSkipFixed, n: 1}
	case kFloat:
		return op{code: opSkipFixed, n: 4}
	case kDouble:
		return op{code: opSkipFixed, n: 8}
	case kFixed:
		return op{code: opSkipFixed, n: n.size}
	case kBytes, kString:
		return op{code: opSkipBytes}
	case kUnion:
		o := op{code: opBranch, nul: nullBranch(n), info: &info{node: n}}
		for _, b := range n.branches {
			o.alts = append(o.alts, skipOp(b))
		}
		if len(o.alts) == 2 && o.nul >= 0 {
			// A nullable field of a simple type, the most common in wide
			// records: skipped without reading alts.
			switch v := o.alts[1-o.nul]; v.code {
			case opSkipVarint, opSkipFixed, opSkipBytes:
				o.code, o.inner, o.n = opSkipOpt, v.code, v.n
			}
		}
		return o
	case kRecord:
		// A record of a known depth is skipped by ops of its fields, which
		// run without walking the nodes; a recursive one by its node,
		// which counts the depth.
		if !recursive(n, map[string]bool{}) {
			o := op{code: opInline, info: &info{node: n}}
			for _, f := range n.fields {
				o.sub = appendOp(o.sub, skipOp(f.typ))
			}
			return o
		}
	}
	return op{code: opSkipNode, info: &info{node: n}}
}

// nullBranch returns the index of union n's null branch, or -1.
func nullBranch(n *node) int8 {
	for i, b := range n.branches {
		if b.kind == kNull {
			return int8(i)
		}
	}
	return -1
}

// recursive tells whether record n contains itself.
func recursive(n *node, onPath map[string]bool) bool {
	switch n.kind {
	case kRecord:
		if onPath[n.name] {
			return true
		}
		onPath[n.name] = true
		defer delete(onPath, n.name)
		for _, f := range n.fields {
			if recursive(f.typ, onPath) {
				return true
			}
		}
	case kUnion:
		for _, b := range n.branches {
			if recursive(b, onPath) {
				return true
			}
		}
	case kArray:
		return recursive(n.items, onPath)
	case kMap:
		return recursive(n.values, onPath)
	}
	return false
}
