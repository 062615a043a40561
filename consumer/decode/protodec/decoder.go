package protodec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/icewal/ingestor/consumer/decode"
)

// Decoder decodes protobuf messages of one message type into Rows of one
// table schema. It is safe for concurrent use.
type Decoder struct {
	maxBytes, maxDepth int
	names              []string
	required           []int
	missing            []string
	root               *plan
	// words and strs are the chunk sizes of each row's slab.
	words, strs int
}

// plan is what to do with the fields of one message: for the record's
// message and the messages that mapping paths pass through, slots are the
// row's columns; for a message read into a struct, the struct's fields.
type plan struct {
	// dense holds the targets of field numbers below its length, sparse
	// the others; nil means the field is skipped.
	dense  []*target
	sparse map[protowire.Number]*target
	// implicit are the slots of fields without presence, which take their
	// zero value when the message lacks them.
	implicit []slotZero
	// maps are the slots of map fields, whose repeated keys are resolved
	// (the last entry wins) once the message is read.
	maps []int
	// width and required: for a struct, its number of fields and the
	// fields that must have a value.
	width    int
	required []slotName
}

type target struct {
	convs []slotConv
	// fast is the only conv when it reads a singular scalar into
	// fastSlot and nothing passes through the field.
	fast     *conv
	fastSlot int
	// child is the plan of the field's message, for mapping paths that
	// pass through it.
	child *plan
}

type slotConv struct {
	slot int
	c    *conv
}

type slotZero struct {
	slot int
	zero any
}

type slotName struct {
	slot int
	name string
}

// maxDense bounds the field numbers looked up by index; schemas number
// their fields from 1, so a plan is one small slice.
const maxDense = 1024

func (p *plan) target(num protowire.Number) *target {
	if num < maxDense {
		if int(num) >= len(p.dense) {
			p.dense = append(p.dense, make([]*target, int(num)+1-len(p.dense))...)
		}
		if p.dense[num] == nil {
			p.dense[num] = &target{}
		}
		return p.dense[num]
	}
	if p.sparse == nil {
		p.sparse = map[protowire.Number]*target{}
	}
	if p.sparse[num] == nil {
		p.sparse[num] = &target{}
	}
	return p.sparse[num]
}

func (t *target) setFast() {
	t.fast = nil
	if len(t.convs) == 1 && t.child == nil {
		if c := t.convs[0].c; c.shape == shapeScalar && !c.isList && !c.isMap {
			t.fast, t.fastSlot = c, t.convs[0].slot
		}
	}
}

func (p *plan) add(fd protoreflect.FieldDescriptor, slot int, c *conv) {
	t := p.target(fd.Number())
	t.convs = append(t.convs, slotConv{slot, c})
	t.setFast()
	if c.zero != nil {
		p.implicit = append(p.implicit, slotZero{slot, c.zero})
	}
	if c.isMap {
		p.maps = append(p.maps, slot)
	}
}

// New compiles mapping (column name -> path of field names, a.b.c
// addressing fields of nested messages) for table and message md; a nil
// mapping maps each column to the top-level field of its name. Every key
// must be a top-level column; a column without a path is always null, so
// it must be optional. Each value converts to its column's type as
// TableSchema maps it, and also: int32 kinds to long, float to double,
// enums to int or long (the number), uint64 to long (range checked),
// integers, decimal strings ("-12.30") and confluent.type.Decimal values
// (whatever their own precision and scale) to any decimal exactly, string
// to binary, 16 bytes or a canonical string to uuid, bytes to fixed[L] of
// their length, Timestamp to timestamp and the nanosecond timestamps. Any
// other pair is an error naming the column.
//
// A path whose fields md lacks (a schema older or newer than the table)
// is not an error: the column is null, or a ReasonMissingRequired drop
// when required, as for an absent field. Missing lists such columns, for
// a start-up check that wants the schema to cover the table.
func New(table *iceberg.Schema, mapping map[string]string, md protoreflect.MessageDescriptor) (*Decoder, error) {
	fields := table.Fields()
	for _, name := range slices.Sorted(maps.Keys(mapping)) {
		if !slices.ContainsFunc(fields, func(f iceberg.NestedField) bool { return f.Name == name }) {
			return nil, fmt.Errorf("mapping names column %q, which is not a top-level column of the table", name)
		}
	}
	d := &Decoder{names: make([]string, len(fields)), root: &plan{}}
	for i, f := range fields {
		d.names[i] = f.Name
		if f.Required {
			d.required = append(d.required, i)
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
		fd, p, err := resolve(d.root, md, path, f.Name)
		if err != nil {
			return nil, err
		}
		if fd == nil {
			d.missing = append(d.missing, f.Name)
			continue
		}
		c, err := newConv(fd, f.Type, f.Name, f.Name)
		if err != nil {
			return nil, fmt.Errorf("mapping of column %q (%q): %w", f.Name, path, err)
		}
		p.add(fd, i, c)
	}
	d.words, d.strs = slabSizes(d.root)
	return d, nil
}

// resolve follows path from md, adding the plans of the messages it
// passes through to root. A field md lacks gives a nil descriptor.
func resolve(root *plan, md protoreflect.MessageDescriptor, path, col string) (protoreflect.FieldDescriptor, *plan, error) {
	segs := strings.Split(path, ".")
	p := root
	for i, s := range segs {
		if s == "" {
			return nil, nil, fmt.Errorf("mapping of column %q: %q is not a path of field names a.b.c", col, path)
		}
		fd := md.Fields().ByName(protoreflect.Name(s))
		if fd == nil {
			return nil, nil, nil
		}
		if i == len(segs)-1 {
			return fd, p, nil
		}
		if fd.IsList() || fd.IsMap() || (fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind) {
			return nil, nil, fmt.Errorf("mapping of column %q (%q): field %s is not a singular message, so the path cannot go through it", col, path, fd.FullName())
		}
		t := p.target(fd.Number())
		if t.child == nil {
			t.child = &plan{}
		}
		t.setFast()
		p, md = t.child, fd.Message()
	}
	panic("unreachable")
}

// Missing returns the columns whose mapping path names a field the
// message does not have; they are always null.
func (d *Decoder) Missing() []string { return slices.Clone(d.missing) }

// Limit sets the largest message in bytes and the deepest nesting of
// messages the decoder reads; larger messages are dropped with
// decode.ReasonTooLarge, deeper ones with decode.ReasonTooDeep. Zero leaves
// a limit off. Call it before the first DecodeInto.
func (d *Decoder) Limit(maxBytes, maxDepth int) { d.maxBytes, d.maxDepth = maxBytes, maxDepth }

// Limits returns the limits Limit set.
func (d *Decoder) Limits() (maxBytes, maxDepth int) { return d.maxBytes, d.maxDepth }

func newConv(fd protoreflect.FieldDescriptor, t iceberg.Type, col, path string) (*conv, error) {
	switch {
	case fd.IsMap():
		mt, ok := t.(*iceberg.MapType)
		if !ok {
			return nil, fmt.Errorf("protobuf map %s does not convert to %s", fd.FullName(), t)
		}
		k, err := newSingle(fd.MapKey(), mt.KeyType, col, path+".key")
		if err != nil {
			return nil, err
		}
		if k.out == outBinary {
			// Repeated keys are found by Go map lookups, which []byte
			// does not allow.
			return nil, fmt.Errorf("map %s: binary keys are not supported", path)
		}
		v, err := newSingle(fd.MapValue(), mt.ValueType, col, path+".value")
		if err != nil {
			return nil, err
		}
		return &conv{col: col, path: path, kind: protoreflect.MessageKind, wire: protowire.BytesType,
			isMap: true, out: outMap, key: k, val: v, zero: decode.MapValue{}}, nil
	case fd.IsList():
		lt, ok := t.(*iceberg.ListType)
		if !ok {
			return nil, fmt.Errorf("protobuf repeated %s does not convert to %s", fd.FullName(), t)
		}
		e, err := newSingle(fd, lt.Element, col, path+"[]")
		if err != nil {
			return nil, err
		}
		return &conv{col: col, path: path, kind: fd.Kind(), wire: e.wire, isList: true, out: outList, elem: e, zero: []any{}}, nil
	}
	c, err := newSingle(fd, t, col, path)
	if err != nil {
		return nil, err
	}
	if fd.HasPresence() {
		c.zero = nil
	}
	return c, nil
}

// newSingle makes the conv of one value of fd, ignoring whether it
// repeats; zero is set to the converted zero value.
func newSingle(fd protoreflect.FieldDescriptor, t iceberg.Type, col, path string) (*conv, error) {
	c := &conv{col: col, path: path, kind: fd.Kind(), wire: wireKind(fd.Kind())}
	if c.kind != protoreflect.MessageKind && c.kind != protoreflect.GroupKind {
		if c.kind == protoreflect.EnumKind {
			c.enum = fd.Enum().Values()
		}
		if err := c.scalarOut(t); err != nil {
			return nil, err
		}
		var err error
		if c.wire == protowire.BytesType {
			c.zero, err = c.bytes([]byte{})
		} else {
			c.zero, err = c.bits(0)
		}
		if err != nil {
			c.zero = nil // no zero value (fixed[4], uuid): absent is null
		}
		return c, nil
	}
	md := fd.Message()
	switch md.FullName() {
	case nameTimestamp:
		c.shape = shapeTimestamp
		switch t.(type) {
		case iceberg.TimestampType, iceberg.TimestampTzType:
			c.out = outTimestampUs
		case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			c.out = outTimestampNs
		default:
			return nil, fmt.Errorf("%s %s does not convert to %s", nameTimestamp, path, t)
		}
		return c, nil
	case nameDate:
		c.shape, c.out = shapeDate, outDate
		if _, ok := t.(iceberg.DateType); !ok {
			return nil, fmt.Errorf("%s %s does not convert to %s", nameDate, path, t)
		}
		return c, nil
	case nameDecimal:
		dt, ok := t.(iceberg.DecimalType)
		if !ok {
			return nil, fmt.Errorf("%s %s does not convert to %s", nameDecimal, path, t)
		}
		c.shape, c.out = shapeDecimal, outDecimal
		c.precision, c.scale = int32(dt.Precision()), int32(dt.Scale())
		return c, nil
	}
	if _, ok := wrapperKinds[md.FullName()]; ok {
		inner, err := newSingle(md.Fields().ByNumber(1), t, col, path)
		if err != nil {
			return nil, err
		}
		c.shape, c.out, c.inner = shapeWrapper, inner.out, inner
		return c, nil
	}
	st, ok := t.(*iceberg.StructType)
	if !ok {
		return nil, fmt.Errorf("protobuf message %s %s does not convert to %s", md.FullName(), path, t)
	}
	p := &plan{width: len(st.FieldList)}
	for i, f := range st.FieldList {
		if f.Required {
			p.required = append(p.required, slotName{i, f.Name})
		}
		sub := md.Fields().ByName(protoreflect.Name(f.Name))
		if sub == nil {
			continue
		}
		fc, err := newConv(sub, f.Type, col, path+"."+f.Name)
		if err != nil {
			return nil, err
		}
		p.add(sub, i, fc)
	}
	c.shape, c.out, c.st = shapeMessage, outStruct, p
	return c, nil
}
