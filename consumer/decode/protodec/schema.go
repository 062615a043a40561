package protodec

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Full names of the messages that map to a scalar column rather than a
// struct.
const (
	nameTimestamp = "google.protobuf.Timestamp"
	nameDate      = "google.type.Date"
	// nameDecimal is the decimal of Confluent's serializers: the unscaled
	// value in big-endian two's complement bytes, and its scale.
	nameDecimal = "confluent.type.Decimal"
)

// wrapperKinds are the google.protobuf wrapper messages: one field,
// number 1, of this kind. They map to an optional column of that scalar,
// so a wrapper is how proto3 tells "absent" from the zero value.
var wrapperKinds = map[protoreflect.FullName]protoreflect.Kind{
	"google.protobuf.DoubleValue": protoreflect.DoubleKind,
	"google.protobuf.FloatValue":  protoreflect.FloatKind,
	"google.protobuf.Int64Value":  protoreflect.Int64Kind,
	"google.protobuf.UInt64Value": protoreflect.Uint64Kind,
	"google.protobuf.Int32Value":  protoreflect.Int32Kind,
	"google.protobuf.UInt32Value": protoreflect.Uint32Kind,
	"google.protobuf.BoolValue":   protoreflect.BoolKind,
	"google.protobuf.StringValue": protoreflect.StringKind,
	"google.protobuf.BytesValue":  protoreflect.BytesKind,
}

// TableSchema maps message md to the columns of a table, one per field,
// named as the fields (not their JSON names), with field ids from 1
// assigned as Iceberg assigns fresh ids (a struct's fields first, then
// what nests in each). Types:
//
//	int32, sint32, sfixed32          int
//	int64, sint64, sfixed64          long
//	uint32, fixed32                  long (every value fits)
//	uint64, fixed64                  decimal(20,0): every value fits
//	                                 exactly, where a long would fail on
//	                                 values over 2^63-1; a long column is
//	                                 still accepted by New, range checked
//	float, double, bool              float, double, boolean
//	string                           string
//	bytes                            binary
//	enum                             string, the value's name
//	google.protobuf.Timestamp        timestamptz
//	google.type.Date                 date
//	google.protobuf.*Value wrappers  the wrapped scalar, optional
//	confluent.type.Decimal           decimal(P,S) of the precision and
//	                                 scale in the field's
//	                                 (confluent.field_meta).params; a
//	                                 decimal field without them is an
//	                                 error
//	other messages                   struct, recursively
//	repeated T                       list<T>, elements required
//	map<K, V>                        map<K, V>, values required but for
//	                                 messages
//
// A field is required when it always has a value: a proto3 scalar without
// `optional` (absent, it is its zero value) or a proto2 `required` one;
// repeated and map fields are required too (absent, they are empty).
// Messages, `optional` scalars, oneof members and proto2 optional fields
// are optional columns. A recursive message has no table schema; that is
// an error naming the field.
func TableSchema(md protoreflect.MessageDescriptor) (*iceberg.Schema, error) {
	next := 1
	fields, err := structFields(md, &next, []protoreflect.FullName{md.FullName()}, "")
	if err != nil {
		return nil, err
	}
	return iceberg.NewSchema(0, fields...), nil
}

func structFields(md protoreflect.MessageDescriptor, next *int, stack []protoreflect.FullName, prefix string) ([]iceberg.NestedField, error) {
	fds := md.Fields()
	out := make([]iceberg.NestedField, fds.Len())
	for i := range out {
		out[i].ID = *next
		*next++
	}
	for i := range out {
		fd := fds.Get(i)
		path := prefix + string(fd.Name())
		typ, err := fieldType(fd, next, stack, path)
		if err != nil {
			return nil, err
		}
		out[i].Name = string(fd.Name())
		out[i].Type = typ
		out[i].Required = alwaysHasValue(fd)
	}
	return out, nil
}

// alwaysHasValue tells whether the field has a value in every message:
// without presence (a proto3 scalar is its zero value when absent) or
// proto2 required; repeated and map fields are empty when absent.
func alwaysHasValue(fd protoreflect.FieldDescriptor) bool {
	return fd.Cardinality() == protoreflect.Required || !fd.HasPresence()
}

func fieldType(fd protoreflect.FieldDescriptor, next *int, stack []protoreflect.FullName, path string) (iceberg.Type, error) {
	switch {
	case fd.IsMap():
		kt, vt := fd.MapKey(), fd.MapValue()
		m := &iceberg.MapType{KeyID: *next, ValueID: *next + 1, ValueRequired: vt.Kind() != protoreflect.MessageKind}
		*next += 2
		var err error
		if m.KeyType, err = singleType(kt, next, stack, path+".key"); err != nil {
			return nil, err
		}
		if m.ValueType, err = singleType(vt, next, stack, path+".value"); err != nil {
			return nil, err
		}
		return m, nil
	case fd.IsList():
		l := &iceberg.ListType{ElementID: *next, ElementRequired: true}
		*next++
		var err error
		if l.Element, err = singleType(fd, next, stack, path+".element"); err != nil {
			return nil, err
		}
		return l, nil
	}
	return singleType(fd, next, stack, path)
}

// singleType is the type of one value of fd, ignoring whether it repeats.
func singleType(fd protoreflect.FieldDescriptor, next *int, stack []protoreflect.FullName, path string) (iceberg.Type, error) {
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		md := fd.Message()
		name := md.FullName()
		switch name {
		case nameTimestamp:
			return iceberg.PrimitiveTypes.TimestampTz, nil
		case nameDate:
			return iceberg.PrimitiveTypes.Date, nil
		case nameDecimal:
			p, s, ok := decimalParams(fd)
			if !ok {
				return nil, fmt.Errorf("field %q: a %s needs its precision and scale as (confluent.field_meta).params, for example {key: \"precision\", value: \"12\"}, {key: \"scale\", value: \"2\"}", path, nameDecimal)
			}
			return iceberg.DecimalTypeOf(p, s), nil
		}
		if k, ok := wrapperKinds[name]; ok {
			return kindType(k), nil
		}
		if slices.Contains(stack, name) {
			return nil, fmt.Errorf("field %q: message %s contains itself, which no table schema can hold", path, name)
		}
		fields, err := structFields(md, next, append(stack, name), path+".")
		if err != nil {
			return nil, err
		}
		return &iceberg.StructType{FieldList: fields}, nil
	}
	return kindType(fd.Kind()), nil
}

func kindType(k protoreflect.Kind) iceberg.Type {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return iceberg.PrimitiveTypes.Int32
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return iceberg.PrimitiveTypes.Int64
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return iceberg.DecimalTypeOf(20, 0)
	case protoreflect.FloatKind:
		return iceberg.PrimitiveTypes.Float32
	case protoreflect.DoubleKind:
		return iceberg.PrimitiveTypes.Float64
	case protoreflect.BoolKind:
		return iceberg.PrimitiveTypes.Bool
	case protoreflect.BytesKind:
		return iceberg.PrimitiveTypes.Binary
	}
	// string and enum
	return iceberg.PrimitiveTypes.String
}

// decimalParams reads the precision and scale that Confluent's
// serializers put in a decimal field's options, as the params of the
// confluent.field_meta option (field 1088: a Meta message whose field 2
// is a map of strings). The options are read from their wire form, which
// is the same whether the compiler resolved the extension or kept it as
// unknown bytes.
func decimalParams(fd protoreflect.FieldDescriptor) (precision, scale int, ok bool) {
	b, err := proto.Marshal(fd.Options())
	if err != nil {
		return 0, 0, false
	}
	precision, scale = -1, -1
	for _, meta := range fieldBytes(b, 1088) {
		for _, entry := range fieldBytes(meta, 2) {
			k, v := fieldBytes(entry, 1), fieldBytes(entry, 2)
			if len(k) != 1 || len(v) != 1 {
				continue
			}
			n, err := strconv.Atoi(string(v[0]))
			if err != nil {
				continue
			}
			switch string(k[0]) {
			case "precision":
				precision = n
			case "scale":
				scale = n
			}
		}
	}
	if precision < 1 || precision > 38 || scale < 0 || scale > precision {
		return 0, 0, false
	}
	return precision, scale, true
}

// fieldBytes returns the values of the length-delimited field num of a
// message's wire form; nil when it does not parse.
func fieldBytes(b []byte, num protowire.Number) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil
		}
		b = b[l:]
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return nil
		}
		if n == num && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[:l])
			out = append(out, v)
		}
		b = b[l:]
	}
	return out
}
